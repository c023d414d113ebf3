"""Result classes of :func:`dgp.supcon_prototypes`, with readable text and notebook display."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from dgp.constants import SCALE_FLOOR
from dgp.display import format_nats, format_summary, html_summary
from dgp.geometry import canonical_frame, embedding_from_gram
from dgp.prototypes._closed_forms import equiangular_gram
from dgp.records import Convergence, Record
from dgp.resources import check_memory
from dgp.solver import BatchPrediction, KKTCertificate, LiftCertificate, RankDCertificate

__all__ = [
    "GRAM_JSON_MAX_K",
    "BatchPrediction",
    "FirstOrderApproximation",
    "Prototypes",
    "gram_summary",
]

#: largest number of classes whose K x K Gram ``to_dict`` includes by default (a 500 x 500 Gram
#: is about 5 MB of JSON); beyond it the JSON says how to ask for it
GRAM_JSON_MAX_K = 500
_TABLE_MAX_K = 8


def gram_summary(G: np.ndarray) -> dict[str, Any]:
    """Extreme off-diagonal cosines and where they are (class indices from 0)."""
    K = G.shape[0]
    iu = np.triu_indices(K, 1)
    off = G[iu]
    lo, hi = int(np.argmin(off)), int(np.argmax(off))
    return {
        "min_cosine": float(off[lo]),
        "min_pair": [int(iu[0][lo]), int(iu[1][lo])],
        "max_cosine": float(off[hi]),
        "max_pair": [int(iu[0][hi]), int(iu[1][hi])],
        "simplex_cosine": -1.0 / (K - 1),
    }


@dataclass(frozen=True, eq=False)
class FirstOrderApproximation(Record):
    """What the first-order formula is and is not.

    Attributes
    ----------
    min_eigenvalue : float
        Smallest eigenvalue of the first-order Gram.
    psd_defect : float
        ``max(0, -min_eigenvalue)``: how far it is from being a Gram of unit vectors.
    projected_gram : ndarray or None
        The nearest point of the elliptope (Frobenius), ``None`` when too large to compute.
    distance : float or None
        Frobenius distance from the first-order Gram to ``projected_gram``.
    converged : bool
        Whether the projection converged to tolerance (else it is feasible but not nearest).
    note : str
    """

    min_eigenvalue: float
    psd_defect: float
    projected_gram: np.ndarray | None
    distance: float | None
    converged: bool
    note: str

    #: ``to_dict(gram=True)`` adds the projected Gram
    JSON_OPTIONS: ClassVar[dict[str, Any]] = {"gram": False}

    def json_items(self, options):
        yield from (("min_eigenvalue", self.min_eigenvalue), ("psd_defect", self.psd_defect),
                    ("distance", self.distance), ("converged", self.converged),
                    ("note", self.note))
        if options["gram"] and self.projected_gram is not None:
            yield "projected_gram", self.projected_gram


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
        solutions (other candidates of the search, or independent runs) and whether the loss
        pins it (:class:`dgp.solver.BatchIdentifiability`); ``None`` otherwise.
    spread : dict or None
        How much each invariant varies over those solutions.
    resolution : float or None
        The loss resolution (nats per anchor) within which solutions count as near-optimal.
    identifiable : bool or None
        Every compared invariant is pinned.
    statement : str or None
        What is pinned and what is not, in words.
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

    def json_items(self, options):
        for key, value in super().json_items(options):
            if key not in ("pinned", "spread", "resolution", "identifiable", "statement") or (
                    self.pinned is not None):
                yield key, value
        yield "units", "nats per anchor"

    def summary_pairs(self) -> list[tuple[str, str]]:
        """The lines of the text and HTML summaries (each fits 80 columns)."""
        pairs = self._gap_pairs()
        if self.statement is not None:
            pairs.insert(0, ("pinned", self.statement))
        return pairs

    def _gap_pairs(self) -> list[tuple[str, str]]:
        if math.isnan(self.simplex_gap):
            pairs = [("identifiable", "no simplex gap: the simplex does not fit in this dim")]
            if self.full_batch_gap is not None:
                pairs.append(("", f"to the full-batch prediction {self.full_batch_gap:.3g}"))
            return pairs
        if self.simplex_gap == 0 and not math.isfinite(self.log_simplex_gap):
            return [("identifiable", "the prediction is the simplex: nothing to tell apart")]
        gap = format_nats(self.simplex_gap, self.log_simplex_gap)
        pairs = [("identifiable", f"loss gap to the simplex {gap} nats/anchor")]
        if self.full_batch_gap is not None:
            pairs.append(("", f"to the full-batch prediction {self.full_batch_gap:.3g}"))
        pairs.append(("", "testable where training resolves that (see dgp verify)"))
        return pairs


@dataclass(frozen=True, eq=False)
class Prototypes(Record):
    """The optimal prototype Gram of SupCon / Soft SupCon and how it was obtained.

    Attributes
    ----------
    objective : str
        ``"supcon"`` or ``"soft-supcon"``.
    sizes : tuple of int
        Class sizes ``n_1..n_K``.
    tau : float
    eps : float or None
        Soft SupCon cross-class weight (``None`` for SupCon).
    method : str
        ``"closed-form"``, ``"numeric"`` (certified solver) or ``"first-order"`` (an
        approximation).
    loss : float
        Full batch: the w-InfoNCE loss of the collapsed configuration, summed over all ``N``
        anchors (nats). With a batch size: the expected batch loss under the stated reduction.
        For ``first-order``: the loss at the projected Gram, an upper bound on the optimum.
    entropic_bound : float
        :math:`\\sum_i H(p_i)` (nats) of the same objective (expected, for batches).
    excess_loss : float
        ``loss - entropic_bound`` without cancellation (it can be :math:`10^{-50}` at small
        ``tau``, or underflow to 0 while ``log_excess_loss`` stays finite).
    log_excess_loss : float
        Natural log of ``excess_loss`` (``-inf`` where the bound is attained).
    kkt_residual : float or None
        The certificate's residual; ``None`` for closed forms and approximations.
    certificate : KKTCertificate or None
    collapse : LiftCertificate or None
        Optimality of the collapsed configuration for the ``N x N`` problem, and uniqueness.
    rank : int
        Rank of the prototype Gram (the embedding dimension it needs).
    unique : bool or None
        Whether the ``N x N`` minimiser is unique up to rotation (``None``: undecided).
    stop_reason : str
        Why the solver stopped, or which closed form applies.
    equiangular : float or None
        The common off-diagonal cosine when the Gram is equiangular.
    matrix : ndarray or None
        The Gram when it is not equiangular (use :attr:`gram`).
    approximation : FirstOrderApproximation or None
        For ``first-order``.
    batch : BatchPrediction or None
        For mini-batch predictions.
    identifiability : Identifiability or None
        The loss gaps to the simplex (and, for batches, to the full-batch prediction) per
        anchor; ``None`` above ``K = 1500`` classes and for ``first-order``.
    dim : int or None
        The dimension the prototypes are constrained to (``None``: free dimension).
    lower_bound : float or None
        With ``dim``: a certified lower bound (nats, same units as ``loss``) on the optimum in
        ``R^dim``: the largest of the entropic bound, the free-dimension optimum's certified
        loss and the convex (dual) bound at the point itself; ``loss - lower_bound`` is the gap.
    factor : ndarray or None
        ``K x dim`` unit rows with Gram :attr:`gram`, kept by a rank-``dim`` solve of many
        classes (then :attr:`embedding` is this factor, no eigendecomposition needed).
    rank_d : RankDCertificate or None
        With ``dim`` below the free optimum's rank: first- and second-order certificates of
        the rank-``dim`` point (:func:`dgp.solver.rank_d_certificate`).
    """

    objective: str
    sizes: tuple[int, ...]
    tau: float
    eps: float | None
    method: str
    loss: float
    entropic_bound: float
    excess_loss: float
    log_excess_loss: float
    kkt_residual: float | None
    certificate: KKTCertificate | None
    collapse: LiftCertificate | None
    rank: int
    unique: bool | None
    stop_reason: str
    equiangular: float | None = None
    matrix: np.ndarray | None = None
    approximation: FirstOrderApproximation | None = None
    batch: BatchPrediction | None = None
    identifiability: Identifiability | None = None
    dim: int | None = None
    lower_bound: float | None = None
    rank_d: RankDCertificate | None = None
    factor: np.ndarray | None = None

    @property
    def K(self) -> int:
        """Number of classes."""
        return len(self.sizes)

    @cached_property
    def gram(self) -> np.ndarray:
        """The ``K x K`` prototype Gram :math:`G_{cc'} = \\langle\\mu_c, \\mu_{c'}\\rangle`
        (built on first access for equiangular closed forms).

        Raises
        ------
        ValueError
            If an equiangular Gram would not fit in memory (use :attr:`equiangular`).
        """
        if self.matrix is not None:
            return self.matrix
        check_memory(
            8 * self.K**2,
            what=f"the {self.K} x {self.K} prototype Gram",
            hint=f"it is equiangular: every off-diagonal cosine is {self.equiangular!r} "
            "(attribute equiangular)",
        )
        return equiangular_gram(self.K, float(self.equiangular))

    @cached_property
    def embedding(self) -> np.ndarray:
        """Prototype vectors ``K x rank`` with ``Z Z^T = gram`` (for ``first-order``: of the
        projected Gram, the nearest Gram of unit vectors), signs fixed.

        Raises
        ------
        ValueError
            As :attr:`gram`.
        """
        if self.factor is not None:  # a rank-dim solve's own factor: no eigendecomposition
            return self.factor
        G = self.gram
        if self.approximation is not None and self.approximation.projected_gram is not None:
            G = self.approximation.projected_gram
        # a solved Gram is PSD to within its certificate's primal residual, not to roundoff
        slack = 0.0 if self.certificate is None else self.certificate.primal_residual
        return embedding_from_gram(G, rank=self.rank, psd_atol=slack)

    @cached_property
    def prototypes(self) -> np.ndarray:
        """The prototypes as fixed targets: ``K x dim`` unit rows (``K x rank`` without ``dim``)
        with Gram :attr:`gram`, in the canonical orientation of
        :func:`dgp.geometry.canonical_frame` (class 0 on the first axis, class 1 in the first
        coordinate plane, ...: the same array for the same Gram).

        Raises
        ------
        ValueError
            As :attr:`gram`.
        """
        d = self.rank if self.dim is None else self.dim
        Z = self.embedding
        if Z.shape[1] < d:
            Z = np.hstack([Z, np.zeros((Z.shape[0], d - Z.shape[1]))])
        Z = canonical_frame(Z[:, :d])
        return Z / np.linalg.norm(Z, axis=1, keepdims=True)

    def _summary_pairs(self) -> list[tuple[str, str]]:
        N = sum(self.sizes)
        pairs = []
        if self.rank_d is not None:
            how = (f"numeric in R^{self.dim} (rank-{self.dim} Burer-Monteiro, non-convex): "
                   f"{self.stop_reason}")
        elif self.method == "numeric" and self.certificate is not None:
            how = f"numeric (certified: KKT residual {self.kkt_residual:.1e})"
        elif self.method == "first-order":
            how = "first-order (an O(tau^2) approximation, not certified)"
        elif self.method == "stochastic":
            how = ("stochastic: optimised on fresh batches, reported on others (not certified; "
                   "a lower bound at 95% confidence)")
        else:
            how = f"closed form ({self.stop_reason})"
        pairs.append(("method", how))
        if self.batch is not None:
            s = self.batch.spec
            sampler = s.sampler + (
                f", m = {s.samples_per_class}" if s.samples_per_class is not None else ""
            )
            est = self.batch.estimate
            exp = (
                f"exact over {self.batch.compositions} compositions"
                if self.batch.exact
                else f"{self.batch.compositions:.3g} compositions: optimised on {est.steps} fresh "
                f"batches, reported on {est.batches} others"
                if est is not None
                else f"sample average of {self.batch.drawn} compositions (seed {self.batch.seed})"
            )
            red = s.reduction + (
                f", anchors without positives: {s.anchors_without_positives}"
                if s.reduction == "mean"
                else ""
            )
            pairs += [
                ("batches", f"B = {s.batch_size}, sampler {sampler}"),
                ("reduction", red),
                ("expectation", exp),
            ]
        bound_word = "<=" if self.method == "first-order" else "="
        where = "expected per batch" if self.batch is not None else f"summed over {N} anchors"
        loss = f"{bound_word} {self.loss:.10g} nats ({where})"
        if self.batch is not None and self.batch.estimate is not None:
            lo, hi = self.batch.estimate.interval
            loss += f", 95% interval [{lo:.6f}, {hi:.6f}]"
        elif self.batch is not None and self.batch.loss_se is not None:
            loss += f", standard error {self.batch.loss_se:.2g}"
        pairs.append(("loss", loss))
        if self.dim is None and self.method == "stochastic" and self.lower_bound is not None:
            pairs.append(("bound", f"lower bound {self.lower_bound:.10g} (95% confidence; "
                          f"per-batch convex relaxation), gap {self.loss - self.lower_bound:.3g}"))
        if self.dim is not None and self.lower_bound is not None:
            gap = max(0.0, self.loss - self.lower_bound)
            share = 100 * gap / max(abs(self.loss), SCALE_FLOOR)
            pairs.append(("in R^d", f"dim = {self.dim}; lower bound {self.lower_bound:.10g}, gap "
                          f"{gap:.3g} nats ({share:.2g}% of the loss)"))
            if self.rank_d is not None:
                r = self.rank_d
                pairs.append(("critical", f"gradient {r.gradient_norm:.1e}, Hessian min "
                              f"{r.hessian_min_eig:+.1e} ("
                              + ("second-order critical" if r.second_order else
                                 "NOT second-order critical")
                              + ("; global optimum)" if r.global_optimal else
                                 "; not proven global)")))
        if not math.isnan(self.excess_loss):
            ex = format_nats(self.excess_loss, self.log_excess_loss)
            excess = f"{bound_word} {ex} nats above the entropic bound {self.entropic_bound:.10g}"
            if self.certificate is not None and self.dim is None:  # in R^d: the line above
                gap = format_nats(self.certificate.gap_bound, self.certificate.log_gap_bound)
                excess += f" (gap to optimum <= {gap})"
            pairs.append(("excess", excess))
        if self.approximation is not None:
            a = self.approximation
            if a.psd_defect > 0:
                pairs.append((
                    "PSD defect",
                    f"{a.psd_defect:.3g} (lowest eigenvalue {a.min_eigenvalue:+.3g}: not a Gram of "
                    "unit vectors)",
                ))
            if a.distance is not None:
                pairs.append(("projected", f"nearest point of the elliptope at distance "
                              f"{a.distance:.3g}; the loss above is taken there"))
        uniq = {True: "unique minimiser up to rotation", False: "not unique: a face of minimisers",
                None: "uniqueness undecided"}[self.unique]
        pairs.append(("rank", f"{self.rank} ({uniq})"))
        if self.K > 2:
            if self.equiangular is not None:
                pairs.append(("cosines", f"all {self.equiangular:+.6f} (equiangular)"))
            else:
                gs = gram_summary(self.gram)
                pm = {"min": "", "max": ""}
                if self.batch is not None and self.batch.gram_interval is not None:
                    lo, hi = self.batch.gram_interval
                    for key in pm:  # each cosine from sampled batches with its interval
                        i, j = gs[f"{key}_pair"]
                        pm[key] = f" in [{lo[i, j]:+.3f}, {hi[i, j]:+.3f}]"
                pairs.append((
                    "cosines",
                    f"min {gs['min_cosine']:+.6f}{pm['min']} (classes {gs['min_pair'][0]},"
                    f"{gs['min_pair'][1]}), max {gs['max_cosine']:+.6f}{pm['max']} (classes "
                    f"{gs['max_pair'][0]},{gs['max_pair'][1]}); "
                    f"simplex {gs['simplex_cosine']:+.6f}",
                ))
        elif self.matrix is not None or self.equiangular is not None:
            pairs.append(("cosine", f"{float(self.gram[0, 1]):+.6f}"))
        if self.identifiability is not None:
            pairs += self.identifiability.summary_pairs()
        if self.batch is not None and self.batch.gram_interval is not None:
            lo, hi = self.batch.gram_interval
            G_full = self.batch.full_batch_gram
            iu = np.triu_indices(self.K, 1)
            beyond = int(np.sum((G_full[iu] < lo[iu]) | (G_full[iu] > hi[iu])))
            half = float(np.max((hi - lo)[iu]) / 2)
            pairs.append(("moved", f"{beyond} of {iu[0].size} cosines moved from the full "
                          f"batch beyond their 95% interval over independent runs (widest "
                          f"half-width {half:.2g}; max |G_batch - G_full| = "
                          f"{self.batch.shift:.3g})"))
            pp = self.batch.positive_pair_probability
        elif self.batch is not None:
            pp = self.batch.positive_pair_probability
            pairs.append(("moved", f"max |G_batch - G_full| = {self.batch.shift:.3g}" + (
                f" (sampling error {self.batch.gram_se:.2g})" if self.batch.gram_se else "")))
        if self.batch is not None:
            more = " ..." if len(pp) > 6 else ""
            pairs.append(("P(pair)", "probability of a positive pair: "
                          + ", ".join(f"{p:.3g}" for p in pp[:6]) + more))
        return pairs

    def _title(self) -> str:
        name = "SupCon" if self.eps is None else f"Soft SupCon (eps = {self.eps:g})"
        return f"{name} prototypes: K = {self.K}, N = {sum(self.sizes)}, tau = {self.tau:g}"

    def __str__(self) -> str:
        text = format_summary(self._title(), self._summary_pairs())
        if self.K <= _TABLE_MAX_K:
            G = self.gram
            head = "".join(f"{f'c{c}':>10}" for c in range(self.K))
            rows = [f"  {'':6}{head}"] + [
                f"  {f'c{c}':<6}" + "".join(f"{v:>+10.4f}" for v in G[c]) for c in range(self.K)
            ]
            text += "\n  prototype Gram:\n" + "\n".join(rows)
        return text

    def _repr_html_(self) -> str:
        small = self.K <= _TABLE_MAX_K
        return html_summary(
            self._title(),
            self._summary_pairs(),
            matrix=self.gram if small else None,
            labels=[f"c{c} (n={n})" for c, n in enumerate(self.sizes)] if small else None,
            caption="prototype Gram (cosines)",
        )

    @property
    def convergence(self) -> Convergence:
        """How the solve ended (:class:`dgp.records.Convergence`): closed forms need none,
        numeric results are returned only when the acceptance rule holds, a first-order
        approximation is not a solution; a rank-``dim`` point is certified when it is first-
        and second-order critical (:attr:`rank_d`)."""
        cert = self.certificate
        if self.rank_d is not None:  # a rank-d point: certified first and second order
            r = self.rank_d
            what = (f"a first- and second-order critical point of the loss over Grams of rank "
                    f"<= {r.dim} (residual: the Riemannian gradient); "
                    + ("also the global optimum (the dual is PSD)" if r.global_optimal else
                       "not proven globally optimal: see lower_bound and gap"))
            return Convergence(success=r.first_order, status=self.stop_reason,
                               residual=self.kkt_residual,
                               certified=r.first_order and r.second_order and not r.check(),
                               certifies=what)
        if self.method == "first-order":
            what = "nothing: a first-order approximation (the loss is an upper bound)"
        elif self.method == "closed-form":
            what = "the optimum (a closed form)"
        else:
            what = ("the optimum over the elliptope, within the certificate's gap_bound "
                    "(KKT: residual is the certificate's kkt_residual)")
        return Convergence(
            success=self.method != "first-order",
            status=self.stop_reason,
            residual=self.kkt_residual,
            certified=self.method == "closed-form" or (cert is not None and not cert.check()),
            certifies=what,
        )

    #: ``gram=None`` includes the ``K x K`` Gram for ``K <= GRAM_JSON_MAX_K`` (500) and
    #: otherwise sets ``gram`` to ``None`` with ``gram_omitted`` saying why and how to get it
    #: (``gram=True``); ``gram_summary`` is always there. ``embedding=True`` adds the prototype
    #: vectors.
    JSON_OPTIONS: ClassVar[dict[str, Any]] = {"gram": None, "embedding": False}

    def json_items(self, options):
        """``objective``, ``sizes``, ``tau``, ``eps``, ``gram``, ``loss``, ``method``,
        ``kkt_residual`` and the other attributes (``JSON_OPTIONS``)."""
        include = self.K <= GRAM_JSON_MAX_K if options["gram"] is None else bool(options["gram"])
        yield from (("objective", self.objective), ("sizes", self.sizes), ("tau", self.tau),
                    ("eps", self.eps), ("gram", self.gram if include else None),
                    ("loss", self.loss))
        if self.dim is not None:
            yield from (("lower_bound", self.lower_bound), ("dim", self.dim),
                        ("gap", None if self.lower_bound is None
                         else max(0.0, self.loss - self.lower_bound)))
        yield from (("method", self.method),
                    ("kkt_residual", self.kkt_residual), ("entropic_bound", self.entropic_bound),
                    ("excess_loss", self.excess_loss), ("log_excess_loss", self.log_excess_loss),
                    ("rank", self.rank), ("unique", self.unique),
                    ("stop_reason", self.stop_reason), ("equiangular", self.equiangular),
                    ("certificate", self.certificate), ("collapse", self.collapse))
        if not include:
            yield "gram_omitted", (
                f"the {self.K} x {self.K} Gram is left out above K = {GRAM_JSON_MAX_K} classes "
                "(about 20 bytes per entry as JSON); ask for it with gram=True (CLI: --gram) or "
                "write it with --save-gram FILE"
                + ("" if self.equiangular is None
                   else f"; it is equiangular with off-diagonal cosine {self.equiangular!r}")
            )
        if self.equiangular is None:
            yield "gram_summary", gram_summary(self.gram)
        else:
            yield "gram_summary", {"equiangular": self.equiangular,
                                   "simplex_cosine": -1.0 / (self.K - 1)}
        if self.approximation is not None:
            yield "approximation", self.approximation.to_dict(gram=include)
        if self.batch is not None:
            yield "batch", self.batch.to_dict(gram=include)
        yield "identifiability", self.identifiability
        if self.rank_d is not None:
            yield "rank_d", self.rank_d
        yield "convergence", self.convergence
        if options["embedding"]:
            yield "embedding", self.embedding
