r"""What the loss pins among near-optimal solutions (within the loss resolution, nats per
anchor, of the best): pairwise cosines, the top of the spectrum and the norm of the (weighted)
mean row, each pinned, free or undecided (near the threshold: :data:`PINNED_BAND`)
(:func:`identifiability_report`, used by :func:`dgp.solver.batch_optimum`, the fixed-dimension
searches and the prototypes' replicate runs).

The solutions compared are those a caller found (seeds: starts and batch streams) and, where the
loss is deterministic and small, the witnesses of the sublevel probe
(:mod:`dgp.solver._sublevel_probe`), which pushes each invariant both ways within the
resolution: local minima alone do not explore the near-optimal set (nine seeds' minima of an
imbalanced SupCon in R^4 within 1.6e-6 of each other, where the spectrum moves by 0.48 within
5e-4 nats per anchor). The statement says which invariants were probed, or "not probed" and
why."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dgp.constants import LOSS_RESOLUTION
from dgp.records import Record
from dgp.solver._sublevel_probe import (
    PROBE_SECONDS,
    probe_refusal,
    sublevel_probe,
)

__all__ = ["INVARIANTS", "NOT_PROBED", "PAIRS", "PINNED_BAND", "PINNED_SPREAD",
           "BatchIdentifiability", "DeferredProbe", "identifiability_report",
           "pinned_verdict", "report_from_spread", "uniqueness_report"]

#: the threshold of a pinned invariant: a pairwise cosine (or a relative eigenvalue, or the
#: norm of the mean) that moves by this much among near-optimal solutions is not pinned
PINNED_SPREAD = 0.05
#: the margin of the verdict (a factor either side of :data:`PINNED_SPREAD`): pinned when the
#: spread is at most ``PINNED_SPREAD / PINNED_BAND``, free above ``PINNED_SPREAD *
#: PINNED_BAND``, undecided (``None``: near the threshold) in between; a spread measured from a
#: few seeds crossed the bare threshold by chance (k-NN N = 500: 0.037-0.044 in eight seeds,
#: 0.060 in one)
PINNED_BAND = 2.0
#: why the sublevel set was not probed, where the caller does not say
NOT_PROBED = "no deterministic loss to push on this path"
#: the invariants compared, in the report's order
INVARIANTS = ("pairwise cosines", "spectrum", "mean_norm")
#: pairs of samples on which cosines are compared (O(pairs d), never N x N)
PAIRS = 4000

@dataclass(frozen=True)
class BatchIdentifiability(Record):
    """What the loss pins among near-optimal solutions (from different seeds: starts and batch
    schedules).

    Attributes
    ----------
    pinned : dict
        Each compared invariant and its verdict (:func:`pinned_verdict`): ``True`` when its
        spread is clearly below :data:`PINNED_SPREAD` (at most ``PINNED_SPREAD /
        PINNED_BAND``), ``False`` clearly above it (over ``PINNED_SPREAD * PINNED_BAND``),
        ``None`` (JSON ``null``: undecided, near the threshold) in between; for the pairwise
        cosines, every compared pair's.
    spread : dict
        How much each invariant varies over the solutions (largest difference from the best
        solution, the sublevel probe's witnesses included where it ran): ``cosine_max`` /
        ``cosine_rms`` over sampled pairs, ``spectrum`` (largest relative change of the top
        eigenvalues of ``Z^T Z / N``), ``mean_norm`` (norm of the weighted mean row: the mean
        embedding of the samples, for prototypes the class-size-weighted mean of the
        prototypes), ``loss`` (nats per anchor, the largest excess over the best among the
        compared solutions). Empty where nothing was compared (the ``undecided`` verdict of
        one solution, not probed): no spread was measured.
    resolution : float
        The loss resolution (nats per anchor) within which solutions count as near-optimal:
        what training resolves (:data:`dgp.constants.LOSS_RESOLUTION`); from sampled batches a
        candidate counts where its paired difference from the best is within it, or within
        that comparison's own 95% half-width where wider.
    identifiable : bool
        Every compared invariant is pinned (``True`` in :attr:`pinned`), including the pairwise
        cosines (the arrangement).
    solutions : int
        Near-optimal solutions compared (those within the resolution of the best), the probe's
        witnesses not counted.
    statement : str
        The verdict in words: ``"identifiable: ..."``, ``"not identifiable: ..."`` or
        ``"undecided: ..."``, naming what is pinned, what is free, what is near the threshold,
        and whether the sublevel set was probed.
    probed : tuple
        The invariants pushed by the sublevel probe (:mod:`dgp.solver._sublevel_probe`);
        empty where it did not run (a loss from sampled batches, or too large).
    restarts : int
        Restarts of the best on other batch streams in :attr:`spread`, not in :attr:`solutions`:
        they can show an invariant free, never pinned.
    """

    pinned: dict
    spread: dict
    resolution: float
    identifiable: bool
    solutions: int
    statement: str
    probed: tuple = ()
    restarts: int = 0


@dataclass(frozen=True)
class DeferredProbe:
    """The sublevel probe of a search's comparison, kept to run where the report is read (a
    result's ``identifiability``, computed on first read), not where the result is built:
    the scans that never show the report (``recommend``, ``phase``, ``loss_floors``) do not
    pay its 0.3 to 0.9 s per solve.

    ``best``: the best solution's unit rows; ``probe``: the deterministic loss per anchor and
    its Euclidean gradient in the rows; ``row_weights`` and ``seed``: as
    :func:`identifiability_report`."""

    best: np.ndarray
    probe: Callable[[np.ndarray], tuple[float, np.ndarray]]
    row_weights: np.ndarray | None
    seed: int

    def settle(self, compared: BatchIdentifiability) -> BatchIdentifiability:
        """``compared`` (the search's solutions compared, not probed: the report
        :func:`identifiability_report` makes without ``probe``) with the probe's witnesses: the
        report :func:`identifiability_report` makes with it."""
        return report_from_spread(compared.spread, compared.solutions, self.best,
                                  resolution=compared.resolution, seed=self.seed,
                                  probe=self.probe, row_weights=self.row_weights)


def pinned_verdict(spread: float, threshold: float = PINNED_SPREAD) -> bool | None:
    """``True`` when ``spread`` is clearly below ``threshold`` (at most ``threshold /
    PINNED_BAND``), ``False`` clearly above (over ``threshold * PINNED_BAND``), ``None`` near it
    (undecided).

    >>> [pinned_verdict(s) for s in (0.01, 0.05, 0.2)]
    [True, None, False]
    """
    if spread <= threshold / PINNED_BAND:
        return True
    if spread > threshold * PINNED_BAND:
        return False
    return None


def _invariants(Z: np.ndarray, pairs: np.ndarray, top: int, w: np.ndarray) -> dict[str, Any]:
    n = Z.shape[0]
    cos = np.einsum("ij,ij->i", Z[pairs[:, 0]], Z[pairs[:, 1]])
    lam = np.linalg.eigvalsh(Z.T @ Z / n)[::-1][:top]
    return {"cos": cos, "spectrum": lam, "mean_norm": float(np.linalg.norm(w @ Z))}


def _statement(pinned: dict, spread: dict, resolution: float, solutions: int,
               probed: tuple, not_probed: str, restarts: int = 0,
               unshown: tuple = ()) -> str:
    """The verdict in words, one wording for every caller (text, JSON and ``str``).
    ``unshown``: the invariants that moved too little to be free among ``restarts`` restarts
    alone, which cannot show them pinned."""
    fixed = [k for k, v in pinned.items() if v is True]
    free = [k for k, v in pinned.items() if v is False]
    near = [k for k, v in pinned.items() if v is None and k not in unshown]
    band = (f"{PINNED_SPREAD / PINNED_BAND:.2g} to {PINNED_SPREAD * PINNED_BAND:.2g}")
    found = f"{solutions} solution{'s' if solutions > 1 else ''} found" + (
        f" and {restarts} restart{'s' if restarts > 1 else ''} of the best on other batch "
        "streams" if restarts else "")
    alone = (f"{', '.join(unshown)} not shown pinned (restarts stay in the best's arrangement: "
             "they can show an invariant free, never pinned)")
    how = (f"among {found} within {resolution:.2g} nats/anchor of the best found and the "
           f"sublevel probe's witnesses ({', '.join(probed)} pushed)" if probed else
           f"among {found} within {resolution:.2g} nats/anchor of the best found; not probed "
           f"({not_probed})")
    cos = f"cosines move up to {spread['cosine_max']:.2g} (RMS {spread['cosine_rms']:.2g})"
    if free:
        head = f"not identifiable: {', '.join(free)} free"
    elif near:
        head = f"undecided: {', '.join(near)} near the threshold (spread {band})"
    elif unshown:
        head = f"undecided: {alone}"
    else:
        head = "identifiable: pinned: " + ", ".join(fixed)
    parts = [head, how, cos]
    if free and near:
        parts.append(f"near the threshold: {', '.join(near)}")
    if unshown and (free or near):
        parts.append(alone)
    if free or near:
        parts.append(f"pinned: {', '.join(fixed) or 'none of those compared'}")
    return "; ".join(parts)


def identifiability_report(runs: list[np.ndarray], losses: list[float], best: int, *,
                           seed: int, resolution: float, near: list[int] | None = None,
                           probe: Callable[[np.ndarray], tuple[float, np.ndarray]] | None = None,
                           row_weights: np.ndarray | None = None,
                           not_probed: str = NOT_PROBED,
                           restarts: tuple[np.ndarray, ...] = ()) -> BatchIdentifiability:
    """What the loss pins among the solutions ``runs`` (unit rows, one per point) whose loss
    (nats per anchor, ``losses``) is within ``resolution`` of the best one's: pairwise cosines
    (every pair up to :data:`PAIRS`, else that many seeded pairs), the top eigenvalues of
    ``Z^T Z / n`` and the norm of the mean row (weighted by ``row_weights``, e.g. class sizes;
    uniform by default), each with :func:`pinned_verdict` of its spread (the class's docstring).
    ``near``: the candidates the caller decided are within the resolution (each on its own
    paired comparison, as the stochastic solver does), instead of ``losses``'s
    differences alone.

    ``probe``: the loss per anchor and its Euclidean gradient in the rows, deterministic; where
    given and the best solution has at most :data:`~dgp.solver._sublevel_probe.PROBE_MAX_SIZE`
    coordinates, every invariant not already free is pushed both ways within the resolution
    (:func:`~dgp.solver._sublevel_probe.sublevel_probe`) and the witnesses' moves count in the
    spread. ``not_probed``: why it was not run, for the statement. ``restarts``: restarts of the
    best on other batch streams, decided within the resolution by the caller: their moves count
    in the spread (they can show an invariant free), but they are no independent solutions
    (they stay in the best's arrangement) and pin nothing
    (:attr:`BatchIdentifiability.restarts`)."""
    n, d = runs[best].shape
    if n * (n - 1) // 2 <= PAIRS:
        pairs = np.argwhere(np.triu(np.ones((n, n), dtype=bool), 1))
    else:
        rng = np.random.default_rng([seed, 4])
        pairs = rng.integers(0, n, size=(PAIRS, 2))
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    w = np.ones(n) if row_weights is None else np.asarray(row_weights, dtype=float)
    w = w / w.sum()
    top = min(d, n, 16)
    ref = _invariants(runs[best], pairs, top, w)
    if near is None:
        near = [k for k in range(len(runs)) if losses[k] - losses[best] <= resolution]
    # another solution within the resolution, each counted once: a run that never left its
    # start (a warm ReLU run at a corner) is the same point as that start, not a second one
    others: list[int] = []
    for k in near:
        if k != best and not any(np.array_equal(runs[k], runs[j]) for j in (best, *others)):
            others.append(k)
    # the kept solution is chosen on batches of its own: on these another may lie lower
    spread = {"cosine_max": 0.0, "cosine_rms": 0.0, "spectrum": 0.0, "mean_norm": 0.0,
              "loss": max([0.0, *(losses[k] - losses[best] for k in others)])}
    for Z in (*(runs[k] for k in others), *restarts):
        inv = _invariants(Z, pairs, top, w)
        dc = inv["cos"] - ref["cos"]
        spread["cosine_max"] = max(spread["cosine_max"], float(np.abs(dc).max()))
        spread["cosine_rms"] = max(spread["cosine_rms"], float(np.sqrt(np.mean(dc**2))))
        rel = (np.abs(inv["spectrum"] - ref["spectrum"])
               / max(float(ref["spectrum"][0]), np.finfo(float).tiny))
        spread["spectrum"] = max(spread["spectrum"], float(rel.max()))
        spread["mean_norm"] = max(spread["mean_norm"],
                                  abs(inv["mean_norm"] - ref["mean_norm"]))
    return report_from_spread(spread, len(others) + 1, runs[best], resolution=resolution,
                              seed=seed, probe=probe, row_weights=w, not_probed=not_probed,
                              restarts=len(restarts))


def report_from_spread(spread: dict, solutions: int, best: np.ndarray, *,
                       resolution: float,
                       seed: int,
                       probe: Callable[[np.ndarray], tuple[float, np.ndarray]] | None = None,
                       row_weights: np.ndarray | None = None,
                       not_probed: str = NOT_PROBED,
                       restarts: int = 0) -> BatchIdentifiability:
    """The report from the spread among ``solutions`` near-optimal solutions already compared
    (the keys of :attr:`BatchIdentifiability.spread`; ``solutions = 1``: the best alone), and
    ``restarts`` restarts of the best (in the spread, never pinning), and the best solution
    ``best`` (unit rows), with the sublevel probe where ``probe`` is given (as
    :func:`identifiability_report`); the one place verdicts and statements are made."""
    spread = dict(spread)
    for k in ("cosine_max", "cosine_rms", "spectrum", "mean_norm", "loss"):
        spread.setdefault(k, 0.0)
    n, d = best.shape
    key = {"pairwise cosines": "cosine_max", "spectrum": "spectrum", "mean_norm": "mean_norm"}
    # every compared cosine, not their RMS: one pair free to move 0.7 leaves the arrangement
    # unpinned however small the RMS (a K = 100 report said "pinned: pairwise cosines" there)
    pinned = {k: pinned_verdict(spread[v]) for k, v in key.items()}
    probed: tuple = ()
    too_large = probe_refusal(n, d)
    if probe is not None and too_large:
        not_probed = too_large
    elif probe is not None:
        todo = tuple(k for k in INVARIANTS if pinned[k] is not False)
        found = sublevel_probe(probe, best, resolution=resolution, invariants=todo,
                               row_weights=row_weights, seed=seed) if todo else None
        if found is not None:
            probed = found.probed
            for k in probed:
                spread[key[k]] = max(spread[key[k]], found.moves[k])
                spread["loss"] = max(spread["loss"], found.excess.get(k, 0.0))
            spread["cosine_rms"] = max(spread["cosine_rms"], found.cosine_rms)
            pinned = {k: pinned_verdict(spread[v]) for k, v in key.items()}
        not_probed = (f"the probe's {PROBE_SECONDS:g} s ran out"
                      if found is not None and len(probed) < len(todo) else
                      "every invariant already free among the solutions found")
    if solutions <= 1 and not probed and not restarts:
        statement = (f"undecided: no other solution came within the loss resolution "
                     f"({resolution:.2g} nats/anchor) of the best found and the loss was not "
                     f"probed ({not_probed}), so nothing is known about other near-optimal "
                     "solutions")
        # nothing compared, nothing measured: no spread (zeros read as "pinned exactly")
        return BatchIdentifiability(pinned={}, spread={}, resolution=resolution,
                                    identifiable=False, solutions=1, statement=statement)
    unshown: tuple = ()
    if solutions <= 1 and not probed:  # restarts alone: they can show freedom, never pinning
        unshown = tuple(k for k, v in pinned.items() if v is True)
        pinned = {k: None if v is True else v for k, v in pinned.items()}
    ident = all(v is True for v in pinned.values())
    statement = _statement(pinned, spread, resolution, solutions, probed, not_probed,
                           restarts, unshown)
    return BatchIdentifiability(pinned=pinned, spread=spread, resolution=resolution,
                                identifiable=ident, solutions=solutions,
                                statement=statement, probed=probed, restarts=restarts)


def uniqueness_report(unique: bool | None, why: str,
                      not_probed: str = "no probe kept") -> BatchIdentifiability:
    """What the loss pins when the optimum is the convex one and no other solution was
    compared: everything at the optimum when it is unique up to rotation (certified: ``why``),
    not the arrangement on a face of minimisers (the spectrum and the mean there undecided),
    nothing known where uniqueness is undecided. The one wording of :func:`dgp.optimum` and
    :func:`dgp.supcon_prototypes`; settled by the sublevel probe where the result keeps one
    (:meth:`DeferredProbe.settle`), else ``not_probed`` says why not."""
    pinned = (dict.fromkeys(INVARIANTS, True) if unique else
              {"pairwise cosines": False, "spectrum": None, "mean_norm": None}
              if unique is False else dict.fromkeys(INVARIANTS, None))
    statement = (f"identifiable: pinned at the optimum: its cosines, spectrum and mean ({why}); "
                 f"among 1 solution found; not probed ({not_probed}): how far they move within "
                 f"{LOSS_RESOLUTION:.2g} nats/anchor of it is not known (at tau 0.1 the "
                 "balanced simplex's cosines move by 0.75 within 5e-4)" if unique else
                 "not identifiable: " + why if unique is False else "undecided: " + why)
    return BatchIdentifiability(pinned=pinned, spread={}, resolution=LOSS_RESOLUTION,
                                identifiable=bool(unique), solutions=1, statement=statement)
