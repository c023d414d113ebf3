"""The identifiability record of a prototype prediction (:class:`Identifiability`: how far the
loss separates the prediction from the geometries it competes with) and what a result in a fixed
dimension or with batches says the loss pins (:func:`settled_identifiability`, which
:class:`~dgp.prototypes.Prototypes` applies when it is built)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dgp.display import format_nats, format_summary, html_summary
from dgp.records import Record
from dgp.solver import Z95, BlockFactor
from dgp.solver._identifiability import report_from_spread, uniqueness_report
from dgp.solver._sublevel_probe import BATCH_NOT_PROBED, factor_loss, probe_refusal

__all__ = ["Identifiability", "pm95", "settled_identifiability"]


@dataclass(frozen=True)
class Identifiability(Record):
    """How far the loss separates the predicted prototypes from the geometries they compete
    with, per anchor: whether a training run can tell them apart at all.

    A geometry claim is testable only where these gaps exceed what training resolves (the
    run-to-run spread of a run's final loss); ``dgp verify`` measures that spread. At the
    temperatures people train SupCon with (0.1) the gap to the simplex under imbalance is
    typically 10^-5 nats per anchor or less: the loss barely prefers the predicted geometry.

    Attributes
    ----------
    simplex_gap : float
        Loss of the regular simplex minus that of the prediction, per anchor (nats; 0 where the
        prediction is the simplex; ``nan``, JSON ``null``, in a dimension ``d`` with
        ``K > d + 1``, where no simplex fits). Full batch: the loss over all ``N`` anchors
        divided by ``N``; with a batch size: the expected batch loss per expected anchor.
    simplex_gap_se : float or None
        Its sampling standard error (sample averages over compositions only).
    full_batch_gap : float or None
        With a batch size: the expected batch loss of the full-batch prediction minus that of
        the batch prediction, per anchor.
    full_batch_gap_se : float or None
    anchors : float
        What "per anchor" divides by (``N``, or the expected anchors of a batch).
    log_simplex_gap : float
        Natural log of ``simplex_gap`` (finite where the gap underflows at small ``tau``;
        ``-inf`` where the prediction is the simplex).
    pinned : dict or None
        In a fixed dimension or with batches: each compared invariant of near-optimal
        solutions (other candidates of the search, independent runs, the sublevel probe's
        witnesses) and whether the loss pins it: ``True``, ``False`` or ``None`` (undecided,
        near the threshold) (:class:`dgp.solver.BatchIdentifiability`); ``None`` otherwise.
    spread : dict or None
        How much each invariant varies over those solutions.
    resolution : float or None
        The loss resolution (nats per anchor) within which solutions count as near-optimal.
    identifiable : bool or None
        Every compared invariant is pinned (``True`` in ``pinned``).
    statement : str or None
        What is pinned and what is not, in words (the same verdict as ``pinned`` and
        ``identifiable``, the summary's ``identifiable`` line).
    probed : tuple or None
        The invariants the sublevel probe pushed within the resolution (empty where it did not
        run: the statement says why); ``None`` until settled.
    solutions : int or None
        Near-optimal solutions compared (other candidates of the search or independent runs
        within the resolution of the best, the best included; the probe's witnesses not
        counted), as :attr:`dgp.solver.BatchIdentifiability.solutions`; ``None`` where nothing
        was compared (full batch in a free dimension).
    """

    simplex_gap: float
    simplex_gap_se: float | None
    full_batch_gap: float | None
    full_batch_gap_se: float | None
    anchors: float
    log_simplex_gap: float = -math.inf
    pinned: dict | None = None
    spread: dict | None = None
    resolution: float | None = None
    identifiable: bool | None = None
    statement: str | None = None
    probed: tuple | None = None
    solutions: int | None = None

    def json_items(self, options):
        for key, value in super().json_items(options):
            if key not in ("pinned", "spread", "resolution", "identifiable", "statement",
                           "probed", "solutions") or (self.pinned is not None):
                yield key, value
        yield "units", "nats per anchor"

    def __str__(self) -> str:
        return format_summary("Identifiability", self.summary_pairs())

    def _repr_html_(self) -> str:
        return html_summary("Identifiability", self.summary_pairs())

    def summary_pairs(self) -> list[tuple[str, str]]:
        """The lines of the text and HTML summaries (each fits 80 columns): where the loss's
        near-optimal solutions were compared, one verdict (``identifiable``: the statement, as
        ``pinned`` and ``identifiable`` say), the gaps below it; else the gaps."""
        pairs = self._gap_pairs()
        if self.statement is not None:
            pairs = [("identifiable", self.statement)] + [("", text) for _, text in pairs]
        return pairs

    def _full_batch_pair(self) -> list[tuple[str, str]]:
        """The loss gap to the full-batch prediction, with its 95% interval where it comes from
        sampled batches (none where it is exact)."""
        if self.full_batch_gap is None:
            return []
        return [("", f"to the full-batch prediction {self.full_batch_gap:.3g}"
                 + pm95(self.full_batch_gap_se) + " nats/anchor")]

    def _gap_pairs(self) -> list[tuple[str, str]]:
        if math.isnan(self.simplex_gap):
            pairs = [("identifiable", "no simplex gap: the simplex is no candidate here (it does "
                                      "not fit in this dim, or a ReLU head excludes it)")]
            return pairs + self._full_batch_pair()
        if self.simplex_gap == 0 and not math.isfinite(self.log_simplex_gap):
            return [("identifiable", "the prediction is the simplex: nothing to tell apart")]
        gap = format_nats(self.simplex_gap, self.log_simplex_gap)
        pairs = [("identifiable", f"loss gap to the simplex {gap}{pm95(self.simplex_gap_se)} "
                  "nats/anchor")]
        pairs += self._full_batch_pair()
        pairs.append(("", "testable where training resolves that (see dgp verify)"))
        return pairs


def _best_rows(p: Any) -> np.ndarray:
    """The prediction's prototypes as unit rows in ``R^dim`` (its factor, else the Gram's top
    ``dim`` eigenvectors: its rank is at most ``dim``)."""
    if p.factor is not None:
        Z = np.asarray(p.factor, dtype=float)
    else:
        lam, V = np.linalg.eigh(p.gram)
        Z = V[:, -p.dim:] * np.sqrt(np.clip(lam[-p.dim:], 0.0, None))
    return Z / np.linalg.norm(Z, axis=1, keepdims=True)


def _probe_loss(p: Any) -> tuple[Any, np.ndarray | None, str]:
    """The deterministic loss per anchor the sublevel probe pushes in (the full-batch class
    loss on the factor, :class:`~dgp.solver.BlockFactor`), the best rows, or ``None`` and why
    not."""
    K = len(p.sizes)
    if p.dim is None:
        return None, None, "no fixed dimension"
    if p.batch is not None:
        return None, None, ("the expected batch loss is a sample average"
                            if not p.batch.exact else BATCH_NOT_PROBED)
    if probe_refusal(K, p.dim):
        return None, None, probe_refusal(K, p.dim)
    if min(p.sizes) < 2:
        return None, None, "a class of one sample"
    Z = _best_rows(p)
    return factor_loss(BlockFactor(np.asarray(p.sizes), p.tau, p.eps), Z), Z, ""


def settled_identifiability(p: Any, resolution: float) -> Identifiability | None:
    """``p.search_identifiability`` with ``pinned``, ``spread``, ``identifiable``, ``statement`` and
    ``probed`` settled (CONTRACT v4: every result in a fixed dimension or with batches says
    what the loss pins), once (``probed`` not ``None``: already settled).

    In a fixed dimension at full batch with at most
    :data:`~dgp.solver._sublevel_probe.PROBE_MAX_SIZE` coordinates, the sublevel probe pushes
    each invariant both ways within ``resolution`` (nats per anchor) of the prediction
    (:func:`dgp.solver.report_from_spread`, the search's candidates' spread kept): a certified
    unique optimum can still leave its cosines free within the resolution (balanced SupCon in
    R^4 at tau 0.1: the simplex's cosines move by 0.75 within 5e-4 nats per anchor). The mean
    norm is that of the class-size-weighted mean of the prototypes (the samples' mean
    embedding, what :class:`dgp.torch.GeometryMonitor` measures). Elsewhere the candidates'
    comparison stands, saying it was not probed; with nothing compared, a certified unique
    optimum is pinned at the optimum, the statement saying that solutions within the
    resolution were not probed."""
    ident = p.search_identifiability
    if (p.dim is None and p.batch is None) or (ident is not None and ident.probed is not None):
        return ident
    if ident is None:
        ident = Identifiability(math.nan, None, None, None, float(sum(p.sizes)), math.nan)
    probe, Z, why = _probe_loss(p)
    res = resolution if ident.resolution is None else ident.resolution
    if probe is not None:
        rep = report_from_spread(ident.spread or {}, ident.solutions or 1, Z,
                                 resolution=res, seed=0, probe=probe,
                                 row_weights=np.asarray(p.sizes, dtype=float))
        return dataclasses.replace(ident, pinned=rep.pinned, spread=rep.spread,
                                   resolution=rep.resolution, identifiable=rep.identifiable,
                                   statement=rep.statement, probed=rep.probed,
                                   solutions=rep.solutions)
    if ident.pinned is not None:
        return dataclasses.replace(ident, probed=())
    certified = p.convergence.certified and (p.rank_d is None or p.rank_d.global_optimal)
    exact = p.batch is None or p.batch.exact or p.method == "closed-form"
    if certified and exact and p.unique:
        how = "a closed form" if p.method == "closed-form" else "KKT certificate"
        rep = uniqueness_report(True, f"certified by {how} and unique: the face of minimisers "
                                "is one Gram", not_probed=why)
        return dataclasses.replace(
            ident, pinned=rep.pinned, spread=rep.spread, resolution=rep.resolution,
            identifiable=True, probed=(), solutions=1, statement=rep.statement)
    why_not = ("not certified globally optimal" if not certified else
               "its expectation is a sample average" if not exact else
               "uniqueness undecided" if p.unique is None else "a face of minimisers")
    return dataclasses.replace(
        ident, pinned={}, spread={}, resolution=resolution, identifiable=False, probed=(),
        solutions=1, statement=f"undecided: one solution ({why_not}) and no other near-optimal one "
        f"compared, and not probed ({why}), so nothing is known to be pinned beyond the loss")


def pm95(se: float | None) -> str:
    """`` ± half-width`` of a 95% interval from a standard error (nothing when exact)."""
    return "" if se is None else f" ± {Z95 * se:.2g} (95%)"
