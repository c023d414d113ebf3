r"""What the loss pins among near-optimal solutions of the expected batch loss (different
seeds: starts and batch streams): pairwise cosines, the top of the spectrum and the norm of the
mean embedding, each pinned or free (:func:`identifiability_report`, used by
:func:`dgp.solver.batch_optimum` and by the prototypes' replicate runs)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dgp.records import Record

__all__ = ["PAIRS", "PINNED_SPREAD", "BatchIdentifiability", "identifiability_report"]

#: a pairwise cosine (or a relative eigenvalue) that moves by more than this between
#: near-optimal solutions is not pinned by the loss
PINNED_SPREAD = 0.05
#: pairs of samples on which cosines are compared (O(pairs d), never N x N)
PAIRS = 4000

@dataclass(frozen=True)
class BatchIdentifiability(Record):
    """What the loss pins among near-optimal solutions (from different seeds: starts and batch
    schedules).

    Attributes
    ----------
    pinned : dict
        Each compared invariant and whether it is pinned (its spread at most
        :data:`PINNED_SPREAD`: for the pairwise cosines, every compared pair's).
    spread : dict
        How much each invariant varies over the solutions (largest difference from the best
        solution): ``cosine_max`` / ``cosine_rms`` over sampled pairs, ``spectrum`` (largest
        relative change of the top eigenvalues of ``Z^T Z / N``), ``mean_norm`` (norm of the
        mean embedding), ``loss`` (nats per anchor, paired on the same fresh batches, with its
        standard error ``loss_se``).
    resolution : float
        The loss resolution (nats per anchor): the half-width of the 95% interval.
    identifiable : bool
        Every compared invariant is pinned, including the pairwise cosines (the arrangement).
    solutions : int
        Near-optimal solutions compared (those within the resolution of the best).
    statement : str
    """

    pinned: dict
    spread: dict
    resolution: float
    identifiable: bool
    solutions: int
    statement: str


def _invariants(Z: np.ndarray, pairs: np.ndarray, top: int) -> dict[str, Any]:
    n = Z.shape[0]
    cos = np.einsum("ij,ij->i", Z[pairs[:, 0]], Z[pairs[:, 1]])
    lam = np.linalg.eigvalsh(Z.T @ Z / n)[::-1][:top]
    return {"cos": cos, "spectrum": lam, "mean_norm": float(np.linalg.norm(Z.mean(axis=0)))}


def identifiability_report(runs: list[np.ndarray], losses: list[float], best: int, *,
                           seed: int, resolution: float) -> BatchIdentifiability:
    """What the loss pins among the solutions ``runs`` (unit rows, one per point) whose loss
    (nats per anchor, ``losses``) is within ``resolution`` of the best one's: pairwise cosines
    (every pair up to :data:`PAIRS`, else that many seeded pairs), the top eigenvalues of
    ``Z^T Z / n`` and the norm of the mean row, each pinned when its spread is at most
    :data:`PINNED_SPREAD` (the class's docstring)."""
    n, d = runs[best].shape
    if n * (n - 1) // 2 <= PAIRS:
        pairs = np.argwhere(np.triu(np.ones((n, n), dtype=bool), 1))
    else:
        rng = np.random.default_rng([seed, 4])
        pairs = rng.integers(0, n, size=(PAIRS, 2))
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    top = min(d, n, 16)
    ref = _invariants(runs[best], pairs, top)
    near = [k for k in range(len(runs)) if k != best
            and losses[k] - losses[best] <= resolution]
    spread = {"cosine_max": 0.0, "cosine_rms": 0.0, "spectrum": 0.0, "mean_norm": 0.0,
              "loss": max((losses[k] - losses[best] for k in near), default=0.0)}
    for k in near:
        inv = _invariants(runs[k], pairs, top)
        dc = inv["cos"] - ref["cos"]
        spread["cosine_max"] = max(spread["cosine_max"], float(np.abs(dc).max()))
        spread["cosine_rms"] = max(spread["cosine_rms"], float(np.sqrt(np.mean(dc**2))))
        rel = np.abs(inv["spectrum"] - ref["spectrum"]) / max(float(ref["spectrum"][0]), 1e-300)
        spread["spectrum"] = max(spread["spectrum"], float(rel.max()))
        spread["mean_norm"] = max(spread["mean_norm"],
                                  abs(inv["mean_norm"] - ref["mean_norm"]))
    # every compared cosine, not their RMS: one pair free to move 0.7 leaves the arrangement
    # unpinned however small the RMS (a K = 100 report said "pinned: pairwise cosines" there)
    pinned = {"pairwise cosines": spread["cosine_max"] <= PINNED_SPREAD,
              "spectrum": spread["spectrum"] <= PINNED_SPREAD,
              "mean_norm": spread["mean_norm"] <= PINNED_SPREAD}
    if not near:
        statement = (f"undecided: no other seed's solution came within the loss resolution "
                     f"({resolution:.2g} nats) of the best, so nothing is known about other "
                     "near-optimal solutions")
        return BatchIdentifiability(pinned={}, spread=spread, resolution=resolution,
                                    identifiable=False, solutions=1, statement=statement)
    ident = all(pinned.values())
    free = [k for k, v in pinned.items() if not v]
    fixed = [k for k, v in pinned.items() if v]
    statement = (
        f"yes: {len(near) + 1} near-optimal solutions agree (cosines within "
        f"{spread['cosine_max']:.2g}, RMS {spread['cosine_rms']:.2g})" if ident else
        f"not identifiable: {', '.join(free)} vary over {len(near) + 1} solutions within "
        f"{resolution:.2g} nats (cosine RMS {spread['cosine_rms']:.2g}, max "
        f"{spread['cosine_max']:.2g}); pinned: {', '.join(fixed) or 'none of those compared'}"
    )
    return BatchIdentifiability(pinned=pinned, spread=spread, resolution=resolution,
                                identifiable=ident, solutions=len(near) + 1,
                                statement=statement)
