"""Result classes of :mod:`dgp.optima`: the optimum and the loss floor, with readable display."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from dgp.display import SUMMARY_TABLE_MAX, format_nats, format_summary, html_summary
from dgp.geometry import embedding_from_gram
from dgp.records import Convergence, Record, closing_items, gram_included, gram_omitted
from dgp.resources import check_memory
from dgp.solver import (
    BatchIdentifiability,
    BatchPrediction,
    KKTCertificate,
    LiftCertificate,
    RankDCertificate,
)
from dgp.solver._identifiability import DeferredProbe

__all__ = ["GRAM_JSON_MAX_N", "LossFloor", "Optimum"]

#: largest N whose N x N Gram ``Optimum.to_dict`` includes by default
GRAM_JSON_MAX_N = 500


@dataclass(frozen=True, eq=False)
class Optimum(Record):
    """The minimiser of a cosine w-InfoNCE loss (free dimension, or in ``R^dim``) and its
    certificates.

    Attributes
    ----------
    n : int
        Number of samples ``N``.
    tau : float
    dim : int or None
        The embedding dimension asked for (``None``: free).
    labels : ndarray of int, shape (N,)
        Twin class of each sample (samples with identical rows and columns of ``W``).
    sizes : tuple of int
        Size of each twin class.
    quotient_gram : ndarray, shape (K, K)
        Gram of the class points; :attr:`gram` lifts it to the samples.
    loss : float
        Loss at the optimum (nats, summed over anchors; expected per batch with a batch size).
    entropic_bound : float
        :math:`\\sum_i H(p_i)`.
    excess_loss : float
        ``loss - entropic_bound``, computed without cancellation.
    log_excess_loss : float
        Its natural log (finite where the excess underflows).
    lower_bound : float
        Certified lower bound on the minimum of the convex problem over all Gram matrices (a
        lower bound in every dimension).
    gap : float
        ``loss - lower_bound``: a certified upper bound on how far the loss is from the convex
        optimum (the name every result uses: :class:`LossFloor`, ``Prototypes.to_dict()``,
        ``batch.gap``; ``duality_gap`` is its deprecated alias).
    dual_min_eig : float
        :math:`\\lambda_{\\min}(S)/\\nu` of the dual matrix (relative).
    certified_global : bool
        The dual matrix is PSD (to the solver tolerance): the point is optimal for the convex
        problem, hence in every dimension.
    rank : int
        Rank of the optimum (strict complementarity; see :attr:`certificate`).
    rank_tol : float
    unique : bool or None
        Whether the minimiser is unique up to rotation (``None``: undecided, or not asked in a
        fixed dimension where the problem is not convex).
    uniqueness : str
        Why.
    certificate : KKTCertificate
        KKT certificate of the quotient point.
    collapse : LiftCertificate
        Optimality of the collapsed twin classes for the ``N x N`` problem.
    structure : str
        ``"quotient"`` (twins collapsed, ``K < N``) or ``"dense"``.
    stop_reason : str
    starts : int
        Burer–Monteiro starts tried (fixed dimension), else 0.
    batch : BatchPrediction or None
        For mini-batch predictions (the full-batch Gram there is the quotient one).
    free_rank : int or None
        Rank of the free-dimension optimum, when it was computed.
    identifiability : BatchIdentifiability or None
        In a fixed dimension or with batches: what the loss pins among near-optimal solutions
        (the rank-d search's candidates within :data:`~dgp.constants.LOSS_RESOLUTION` nats per
        anchor of the best and, where the problem is small, the sublevel probe's witnesses;
        the certified uniqueness of a convex optimum). Computed on first read (the probe
        costs 0.3 to 0.9 s), from :attr:`search_identifiability` and :attr:`probe`.
    search_identifiability : BatchIdentifiability or None
        The search's own solutions compared, before the sublevel probe.
    probe : DeferredProbe or None
        The sublevel probe :attr:`identifiability` runs (``None``: nothing to probe).
    rank_d : RankDCertificate or None
        In a fixed dimension, when the one rank-``dim`` solver ran (the free optimum's rank
        exceeds ``dim``): the first- and second-order certificates of its point
        (:func:`dgp.solver.rank_d_certificate`); ``None`` in free dimension or when the free
        optimum fits in ``dim`` (its KKT :attr:`certificate` is then global).
    solver : str
    """

    n: int
    tau: float
    dim: int | None
    labels: np.ndarray
    sizes: tuple[int, ...]
    quotient_gram: np.ndarray
    loss: float
    entropic_bound: float
    excess_loss: float
    log_excess_loss: float
    lower_bound: float
    gap: float
    dual_min_eig: float
    certified_global: bool
    rank: int
    rank_tol: float
    unique: bool | None
    uniqueness: str
    certificate: KKTCertificate
    collapse: LiftCertificate
    structure: str
    stop_reason: str
    starts: int = 0
    batch: BatchPrediction | None = None
    free_rank: int | None = None
    search_identifiability: BatchIdentifiability | None = None
    rank_d: RankDCertificate | None = None
    solver: str = "dgp certified solver (Burer-Monteiro, L-BFGS, Riemannian trust region)"
    probe: DeferredProbe | None = field(default=None, repr=False, compare=False)

    @cached_property
    def identifiability(self) -> BatchIdentifiability | None:
        # documented in the class's Attributes (a docstring here would take its row away)
        found = self.search_identifiability
        return found if found is None or self.probe is None else self.probe.settle(found)

    @cached_property
    def gram(self) -> np.ndarray:
        """The ``N x N`` optimal Gram matrix (the quotient lifted to the samples).

        Raises
        ------
        ValueError
            If it would not fit in memory (use :attr:`quotient_gram` and :attr:`labels`).
        """
        check_memory(
            8.0 * self.n**2,
            what=f"the {self.n} x {self.n} Gram",
            hint="use quotient_gram and labels (gram = quotient_gram[labels][:, labels])",
        )
        return self.quotient_gram[np.ix_(self.labels, self.labels)]

    @cached_property
    def eigenvalues(self) -> np.ndarray:
        """Eigenvalues of :attr:`gram`, descending (from the quotient: ``N - K`` zeros)."""
        s = np.sqrt(np.asarray(self.sizes, dtype=float))
        lam = np.linalg.eigvalsh(s[:, None] * self.quotient_gram * s[None, :])
        out = np.zeros(self.n)
        out[: lam.size] = np.sort(lam)[::-1]
        return out

    @cached_property
    def embedding(self) -> np.ndarray:
        """``Z`` (``N x rank``) with ``Z Z^T = gram``: the class points, repeated per sample."""
        # a solved Gram is PSD to within its certificate's primal residual, not to roundoff
        return embedding_from_gram(self.quotient_gram, rank=self.rank,
                                   psd_atol=self.certificate.primal_residual)[self.labels]

    @property
    def sample_embedding(self) -> np.ndarray:
        """One row per sample: :attr:`embedding` itself (already repeated per sample), named as
        :attr:`dgp.solver.BatchOptimum.sample_embedding` is, so that either result gives the
        samples' rows the same way."""
        return self.embedding

    @property
    def K(self) -> int:
        """Number of twin classes."""
        return len(self.sizes)

    @property
    def duality_gap(self) -> float:
        """Deprecated name of :attr:`gap` (a :class:`DeprecationWarning`): results say ``gap``."""
        warnings.warn("Optimum.duality_gap is deprecated: use Optimum.gap (the same number)",
                      DeprecationWarning, stacklevel=2)
        return self.gap

    def _summary_pairs(self) -> list[tuple[str, str]]:
        unit = (self.batch.spec.loss_unit if self.batch is not None else
                "nats (summed over anchors)")
        pairs = [
            ("structure", f"{self.n} samples on {self.K} points (twins, samples with the same "
             "weights to every other sample, share one point where their class collapses)"
             if self.structure == "quotient" else f"dense ({self.n} samples, each its own "
             "point)"),
            ("dimension", "free" if self.dim is None else f"d = {self.dim} ({self.starts} starts)"),
            ("loss", f"{self.loss:.10g} {unit}"),
            ("excess", f"{format_nats(self.excess_loss, self.log_excess_loss)} nats above the "
             f"entropic bound {self.entropic_bound:.10g}"),
            ("certified", ("globally optimal: dual PSD" if self.certified_global
                           else "not proven optimal: dual not PSD")
             + f", gap to the convex lower bound {self.gap:.3g} nats"),
            ("rank", f"{self.rank}"),
            ("unique", {True: "yes", False: "no", None: "undecided"}[self.unique]
             + f" ({self.uniqueness})"),
        ]
        if self.rank_d is not None:
            r = self.rank_d
            pairs.append(("critical", f"rank-{r.dim} point: gradient {r.gradient_norm:.1e}, "
                          f"Hessian min {r.hessian_min_eig:+.1e} ("
                          + ("second-order critical" if r.second_order else
                             f"NOT second-order critical: {r.hessian_method}")
                          + ("; global optimum)" if r.global_optimal else
                             "; not proven global)")))
        if self.identifiability is not None:
            pairs.append(("pinned", self.identifiability.statement))
        if self.batch is not None:
            s = self.batch.spec
            exp = ("exact" if self.batch.exact
                   else f"sample average of {self.batch.drawn} batches (seed {self.batch.seed})")
            pairs.insert(2, ("batches", f"B = {s.batch_size}, {s.sampler}, reduction "
                             f"{s.reduction}, {exp}"))
            pairs.append(("moved", f"max |G_batch - G_full| = {self.batch.shift:.3g}"
                          + (" (exact: every composition enumerated, so the Gram's entries "
                             "carry no sampling error)" if self.batch.exact else "")))
        return pairs

    def _title(self) -> str:
        return f"Optimum of a cosine w-InfoNCE: N = {self.n}, tau = {self.tau:g}"

    def summary(self) -> str:
        """The short form: the titled summary without the optimal Gram's table (what
        ``str`` shows first; the command line prints its own table after it)."""
        return format_summary(self._title(), self._summary_pairs())

    def __str__(self) -> str:
        text = self.summary()
        if self.n <= SUMMARY_TABLE_MAX:
            G = self.gram
            rows = [f"  {'':4}" + "".join(f"{j:>9}" for j in range(self.n))]
            rows += [f"  {i:<4}" + "".join(f"{v:>+9.4f}" for v in G[i]) for i in range(self.n)]
            text += "\n  optimal Gram:\n" + "\n".join(rows)
        return text

    def _repr_html_(self) -> str:
        small = self.n <= SUMMARY_TABLE_MAX
        return html_summary(self._title(), self._summary_pairs(),
                            matrix=self.gram if small else None, caption="optimal Gram")

    @property
    def convergence(self) -> Convergence:
        """How the solve ended (:class:`dgp.records.Convergence`): results are returned only when
        the acceptance rule holds; ``certified`` when the dual matrix is PSD (globally optimal)
        and the certificate's own numbers support it."""
        return Convergence(
            success=True,
            status=self.stop_reason,
            residual=self.certificate.kkt_residual,
            certified=self.certified_global and not self.certificate.check(),
            certifies="the global optimum: the dual matrix is PSD and the certificate's "
            "numbers support it",
        )

    #: ``gram=None`` includes the ``N x N`` Gram for ``N <= GRAM_JSON_MAX_N`` (500) and
    #: otherwise says how to get it; ``embedding=True`` adds the ``N x rank`` embedding
    JSON_OPTIONS: ClassVar[dict[str, Any]] = {"gram": None, "embedding": False}

    def json_items(self, options):
        include = gram_included(self.n, GRAM_JSON_MAX_N, options["gram"])
        yield from (("n", self.n), ("tau", self.tau), ("dim", self.dim),
                    ("structure", self.structure), ("classes", self.K), ("sizes", self.sizes),
                    ("labels", self.labels), ("loss", self.loss),
                    ("entropic_bound", self.entropic_bound), ("excess_loss", self.excess_loss),
                    ("log_excess_loss", self.log_excess_loss),
                    ("lower_bound", self.lower_bound), ("gap", self.gap),
                    ("dual_min_eig", self.dual_min_eig),
                    ("certified_global", self.certified_global), ("rank", self.rank),
                    ("rank_tol", self.rank_tol), ("unique", self.unique),
                    ("uniqueness", self.uniqueness),
                    ("eigenvalues", self.eigenvalues[: max(self.rank + 1, 1)]),
                    ("quotient_gram", self.quotient_gram if self.K <= GRAM_JSON_MAX_N else None),
                    ("gram", self.gram if include else None),
                    ("certificate", self.certificate), ("collapse", self.collapse),
                    ("stop_reason", self.stop_reason), ("starts", self.starts),
                    ("free_rank", self.free_rank), ("solver", self.solver))
        if not include:
            yield "gram_omitted", gram_omitted(self.n, "N", GRAM_JSON_MAX_N,
                                               "; it is quotient_gram[labels][:, labels]")
        if self.batch is not None:
            yield "batch", self.batch.to_dict(gram=self.K <= GRAM_JSON_MAX_N)
            if self.batch.estimate is not None:  # beside it, as every batch result says it
                yield "full_batch_expected_loss", self.batch.estimate.full_batch_expected_loss
        if self.identifiability is not None:
            yield "identifiability", self.identifiability
        yield from closing_items(self, options)


#: the statement of a loss floor's certificate (kind ``"loss-floor-interval"``)
_INTERVAL_STATEMENT = (
    "the floor (the least excess over the entropic bound in R^d) lies in [lower, upper]: lower "
    "is the convex lower bound (every dimension), upper the excess of an embedding in R^d; "
    "certified when its dual matrix is PSD, so that the two agree to the solver tolerance"
)


@dataclass(frozen=True)
class LossFloor(Record):
    """The loss floor of a cosine weighting in dimension ``d``: the excess of the best embedding
    in :math:`\\mathbb R^d` over the entropic bound, certified as an interval.

    Attributes
    ----------
    lower : float
        Certified lower bound on the floor (nats): the floor is at least this.
    upper : float
        Excess of the best embedding found in :math:`\\mathbb R^d` (nats): the floor is at most
        this (it is attained by that embedding).
    gap : float
        ``upper - lower``.
    certified : bool
        The embedding found is globally optimal (its dual matrix is PSD): ``lower`` and ``upper``
        agree to the solver tolerance.
    dim : int
    rank : int
        Rank of the embedding found.
    free_rank : int or None
        Rank of the free-dimension optimum when it was computed: for ``dim >= free_rank`` the
        floor is the free optimum's excess.
    entropic_bound : float
    log_upper : float
        Natural log of ``upper`` (finite where it underflows).
    """

    lower: float
    upper: float
    gap: float
    certified: bool
    dim: int
    rank: int
    free_rank: int | None
    entropic_bound: float
    log_upper: float

    def json_items(self, options):
        """The fields, then the common certificate block (``kind``, ``statement``,
        ``certified``, the ``lower_bound`` and ``gap`` of the interval)."""
        yield from super().json_items(options)
        yield "certificate", {
            "kind": "loss-floor-interval", "statement": _INTERVAL_STATEMENT,
            "certified": self.certified, "lower_bound": self.lower, "gap": self.gap}

    def _summary_pairs(self) -> list[tuple[str, str]]:
        return [
            ("interval", f"[{self.lower:.6g}, {format_nats(self.upper, self.log_upper)}] nats "
             "above the entropic bound"),
            ("certified", "yes (dual PSD)" if self.certified else f"no: gap {self.gap:.3g} nats"),
            ("rank", f"{self.rank}" + ("" if self.free_rank is None
                                       else f" (free optimum: {self.free_rank})")),
        ]

    def __str__(self) -> str:
        return format_summary(f"Loss floor in dimension d = {self.dim}", self._summary_pairs())

    def _repr_html_(self) -> str:
        return html_summary(f"Loss floor in dimension d = {self.dim}", self._summary_pairs())
