r"""The result of the expected-batch optimum (:mod:`dgp.solver._expected`): the expected batch
loss with its held-out interval and bound (:class:`BatchEstimate`), its certificate
(:class:`BatchCertificate`) and the optimum itself (:class:`BatchOptimum`), with the notes its
summaries add where an interval or a bound is wider than its target."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from dgp.constants import LOSS_RESOLUTION
from dgp.display import format_summary, html_summary
from dgp.records import CertificateProtocol, Convergence, Record
from dgp.solver._batch import BatchSpec
from dgp.solver._gram_spread import entry_spread, gram_spread, spread_statement
from dgp.solver._identifiability import BatchIdentifiability
from dgp.solver._stochastic import Z95

__all__ = [
    "BOUND_LOOSE_GAP",
    "EXACT_GAP_RTOL",
    "HALF_WIDTH",
    "MAX_EVALUATION_BATCHES",
    "BatchCertificate",
    "BatchEstimate",
    "BatchOptimum",
    "bound_note",
    "interval_note",
    "paired_loss_verdict",
]

#: the most batches of a held-out evaluation
MAX_EVALUATION_BATCHES = 20_000
#: a relaxation gap above this many nats per anchor is said to be loose in the summary (the
#: issue's target for smooth weightings; a k-NN graph of 1500 points left 0.6)
BOUND_LOOSE_GAP = 0.01
#: relative gap under which an exact expected-batch optimum counts as certified
EXACT_GAP_RTOL = 1e-6
#: target half-width (nats per anchor) of the 95% interval of the expected loss
HALF_WIDTH = 0.002
#: up to this many points the summary states the widest and median half-width of the Gram
#: entries' intervals (every entry's, from the runs: ``R`` products of ``n x n``)
SUMMARY_SPREAD_MAX_N = 500


@dataclass(frozen=True)
class BatchEstimate(Record):
    """The expected batch loss and its bound, from batches not used to optimise.

    Attributes
    ----------
    spec : BatchSpec
    expected_loss : float
        Mean batch loss of the embedding over ``batches`` fresh batches (the trainer's
        reduction: with ``mean``, nats per anchor).
    interval : tuple of float
        Its 95% confidence interval.
    lower_bound : float
        A lower bound on the minimum of the expected batch loss over all embeddings (any
        dimension), at confidence ``confidence``: the per-batch relaxation, or where it is
        loose and the points few, the larger of it and the bound of batches sharing one Gram
        matrix (:func:`dgp.solver.relaxation_bound`).
    confidence : float
    gap : float
        ``expected_loss - lower_bound``.
    full_batch_expected_loss : float or None
        The full-batch prediction's expected batch loss on the same fresh batches.
    full_batch_interval : tuple of float or None
    full_batch_excess : float or None
        ``full_batch_expected_loss - expected_loss`` (paired on the same batches).
    full_batch_excess_se : float or None
    batches : int
        Fresh batches of the evaluation.
    bound_batches : int
        Further fresh batches of the lower bound (the per-batch relaxation's, and the shared
        replicates' where they are drawn).
    steps : int
        Optimiser steps (one batch each) of the kept run (0: the full-batch optimum kept).
    epochs : float
        Its passes over the samples.
    seed : int
    expectation : str
        ``"stochastic"``: optimised on fresh batches, reported on held-out ones; ``"exact"``:
        the mean over every batch (interval of width 0, ``confidence`` 1);
        ``"sample-average"``: fitted on a sample of compositions, reported on fresh batches
        (:func:`dgp.solver.held_out_estimate`; ``steps`` and ``epochs`` are 0).
    """

    spec: BatchSpec
    expected_loss: float
    interval: tuple[float, float]
    lower_bound: float
    confidence: float
    gap: float
    full_batch_expected_loss: float | None
    full_batch_interval: tuple[float, float] | None
    full_batch_excess: float | None
    full_batch_excess_se: float | None
    batches: int
    bound_batches: int
    steps: int
    epochs: float
    seed: int
    expectation: str = "stochastic"

    def json_items(self, options):
        yield from self.spec.json_items({})
        for f in ("expectation", "expected_loss", "interval", "lower_bound", "confidence",
                  "gap", "full_batch_expected_loss", "full_batch_interval",
                  "full_batch_excess", "full_batch_excess_se", "batches", "bound_batches",
                  "steps", "epochs", "seed"):
            yield f, getattr(self, f)


@dataclass(frozen=True)
class BatchCertificate(CertificateProtocol):
    """What an expected-batch optimum proves: with ``expectation == "exact"``, the global
    optimum over all Gram matrices when the exact expected loss and the dual lower bound close
    to a relative gap of :data:`EXACT_GAP_RTOL`; with ``"stochastic"``, nothing beyond a lower
    bound that holds at its confidence (the gap bounds the suboptimality at that confidence).

    Attributes
    ----------
    expectation : str
        ``"exact"`` or ``"stochastic"`` (:class:`BatchEstimate`).
    expected_loss : float
    lower_bound : float
    gap : float
        ``expected_loss - lower_bound``.
    confidence : float
        Of the lower bound (1 when exact).
    rtol : float
        The relative gap under which an exact optimum counts as certified.
    """

    kind: ClassVar[str] = "expected-batch"

    expectation: str
    expected_loss: float
    lower_bound: float
    gap: float
    confidence: float
    rtol: float = EXACT_GAP_RTOL

    @classmethod
    def of(cls, b: BatchEstimate) -> BatchCertificate:
        """The certificate of an expected-batch estimate (its expectation, loss, bound, gap and
        confidence)."""
        return cls(expectation=b.expectation, expected_loss=b.expected_loss,
                   lower_bound=b.lower_bound, gap=b.gap, confidence=b.confidence)

    @property
    def certified(self) -> bool:
        """Globally optimal to the relative gap ``rtol`` (exact expectations only, and only
        where the certificate's own numbers check)."""
        return (self.expectation == "exact" and not self.check()
                and self.gap <= self.rtol * max(abs(self.expected_loss), 1.0))

    @property
    def statement(self) -> str:
        if self.expectation == "exact":
            return ("the global optimum over all Gram matrices to a relative gap of "
                    f"{self.rtol:g}: the exact expected loss and a certified lower bound (the "
                    "dual of the convex problem) that close")
        return ("nothing proven: a stochastic optimum; the lower bound holds at "
                f"{self.confidence:.0%} confidence and the gap bounds the suboptimality at "
                "that confidence")

    def claims(self):
        yield ("gap = expected loss - lower bound",
               math.isclose(self.gap, self.expected_loss - self.lower_bound,
                            rel_tol=1e-9, abs_tol=1e-12))
        yield "the gap is not negative", self.gap >= -1e-12 * max(abs(self.expected_loss), 1.0)


@dataclass(frozen=True, eq=False)
class BatchOptimum(Record):
    """The minimiser of the expected mini-batch loss in ``R^dim`` found on fresh batches
    (module docstring).

    Attributes
    ----------
    n : int
        Points (samples, or collapsed classes).
    tau : float
    dim : int
    embedding : ndarray, shape (n, dim)
        Unit rows.
    batch : BatchEstimate
    identifiability : BatchIdentifiability or None
        ``None`` with no replicate run.
    status : str
        Why the kept run stopped.
    monitor : tuple of float
        The kept run's loss on its monitoring batches, per round of its schedule (an epoch,
        or more where epochs are short: :func:`dgp.solver.stochastic_optimum`).
    seconds : float
        Wall time of the whole solve: the runs, the held-out evaluation and the bound, and
        the full-batch optimum given as a start where the caller says when it began
        (``dgp.optimum`` does).
    solver : str
    runs : tuple of ndarray
        The embedding each run reached (independent starts and batch streams) that ended
        within the loss resolution of the kept solution (its identifiability report's), for the
        spread of the prediction's entries.
    runs_left_out : int
        Runs that ended beyond the resolution above it (an optimisation's miss, not sampling
        noise), left out of that spread and said in :attr:`gram_error`.
    restarts : int
        The last ``restarts`` of :attr:`runs`: the kept solution's lineage (its run and restarts
        of it on other batch streams), its batches' noise in its own arrangement.
    restarts_left_out : int
        Restarts of the kept solution made but not in :attr:`runs` (beyond the resolution,
        unmoved, or more than needed), said in :attr:`gram_error`.
    labels : ndarray of int or None
        The row of :attr:`embedding` of each sample when the rows are twin classes
        (samples with identical weights, collapsed); ``None``: one row per sample.
    comparisons : tuple of (float, float)
        For each embedding ``compare`` of :func:`batch_optimum`: its expected batch loss minus
        this optimum's, paired on the reporting batches, and the standard error of that
        difference.
    full_batch_point : str or None
        What the full-batch prediction compared is, in words, when it is not the certified
        full-batch optimum: above a few thousand points, a critical point of the full-batch loss
        found on row chunks (:func:`dgp.solver.chunked_full_batch`), or why none was compared
        (``"not compared: ..."``); ``None``: the certified optimum, or none given.
    kept_full_batch : bool
        :attr:`embedding` is the full-batch prediction, kept (as in :class:`BatchPrediction`).
    """

    n: int
    tau: float
    dim: int
    embedding: np.ndarray
    batch: BatchEstimate
    identifiability: BatchIdentifiability | None
    status: str
    monitor: tuple[float, ...] = field(repr=False)
    seconds: float = 0.0
    solver: str = ("Riemannian Adam on the product of spheres, fresh batches, decaying step, "
                   "iterate averaging")
    runs: tuple[np.ndarray, ...] = field(default=(), repr=False)
    labels: np.ndarray | None = field(default=None, repr=False)
    comparisons: tuple[tuple[float, float], ...] = field(default=(), repr=False)
    full_batch_point: str | None = None
    runs_left_out: int = 0
    restarts: int = 0
    restarts_left_out: int = 0
    kept_full_batch: bool = False

    @property
    def sample_embedding(self) -> np.ndarray:
        """One row per sample: ``embedding[labels]`` (the rows are twin classes when
        ``labels`` is given, else the samples themselves)."""
        return self.embedding if self.labels is None else self.embedding[self.labels]

    @property
    def loss(self) -> float:
        """The expected batch loss (held-out estimate)."""
        return self.batch.expected_loss

    @property
    def lower_bound(self) -> float:
        return self.batch.lower_bound

    @property
    def gram(self) -> np.ndarray:
        """``embedding @ embedding.T`` (``n x n``: mind the size)."""
        return self.embedding @ self.embedding.T

    def gram_entries(self, i: object, j: object
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The entries ``(i, j)`` of :attr:`gram` (index arrays over the rows of
        :attr:`embedding`, broadcast; with :attr:`labels`, sample ``s`` is row
        ``labels[s]``) with their standard errors and 95% intervals: ``(value, se, lower,
        upper)``, from :attr:`runs` (:func:`dgp.solver._gram_spread.entry_spread`: one run's
        spread, the prediction being one candidate, not the runs' mean; ``O(R m d)``, no
        ``n x n`` array). An exact expectation's entries have standard error 0; with fewer
        than two runs the error is not measured (``nan``)."""
        if self.batch.expectation == "exact":
            value, _, _, _ = entry_spread(self.embedding, (), i, j)
            zero = np.zeros(value.shape)
            return value, zero, value, value
        return entry_spread(self.embedding, self.runs, i, j,
                            kept_full_batch=self.kept_full_batch)

    def gram_entry_se(self, i: object, j: object) -> np.ndarray:
        """The standard errors of the entries ``(i, j)`` of :attr:`gram`
        (:meth:`gram_entries`)."""
        return self.gram_entries(i, j)[1]

    def gram_interval(self, i: object, j: object) -> tuple[np.ndarray, np.ndarray]:
        """The 95% intervals ``(lower, upper)`` of the entries ``(i, j)`` of :attr:`gram`
        (:meth:`gram_entries`)."""
        return self.gram_entries(i, j)[2:]

    @property
    def gram_error(self) -> str:
        """How the entries of :attr:`gram` carry their error, in words."""
        if self.batch.expectation == "exact":
            return spread_statement(0, exact="exact: the mean over every batch, so the entries "
                                    "carry no sampling error (standard error 0)")
        return spread_statement(len(self.runs), left_out=self.runs_left_out,
                                restarts=self.restarts,
                                restarts_left_out=self.restarts_left_out,
                                kept_full_batch=self.kept_full_batch) + (
            "; per entry on request (gram_interval(i, j)), for all of them with "
            "to_dict(gram=True)")

    def gram_spread(self) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
        """Every entry's standard error and 95% interval, ``(se, (lower, upper))``, each
        ``n x n`` (mind the size, as for :attr:`gram`; :meth:`gram_entries` for a few);
        computed once (the summary, its HTML and ``to_dict(gram=True)`` read the same)."""
        return self._all_entries

    @cached_property
    def _all_entries(self) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
        G = self.gram
        if self.batch.expectation == "exact":
            return np.zeros_like(G), (G, G)
        return gram_spread(G, (Z @ Z.T for Z in self.runs), runs=len(self.runs), sampled=True,
                           kept_full_batch=self.kept_full_batch)

    @property
    def certificate(self) -> BatchCertificate:
        """What this optimum proves (:class:`BatchCertificate`)."""
        return BatchCertificate.of(self.batch)

    @property
    def convergence(self) -> Convergence:
        b, cert = self.batch, self.certificate
        return Convergence(success=True, status=self.status, nit=b.steps, residual=b.gap,
                           certified=cert.certified, certifies=cert.statement)

    def _summary_pairs(self) -> list[tuple[str, str]]:
        b = self.batch
        s = b.spec
        lo, hi = b.interval
        fb_kind = "optimum" if self.full_batch_point is None else "prediction (below)"
        how = (f"optimised on {b.steps} fresh batches ({b.epochs:.0f} epochs)" if b.steps else
               f"kept the full-batch {fb_kind} (no stochastic run beat it on the selection "
               "batches)")
        if b.expectation == "exact":
            pairs = [
                ("batches", f"B = {s.batch_size}, {s.sampler}, reduction {s.reduction}; exact "
                 f"over all {b.batches} batches"),
                ("dimension", f"d = {self.dim}"),
                ("expected loss", f"{b.expected_loss:.10g} {s.loss_unit} (exact)"),
                ("lower bound", f"{b.lower_bound:.10g} (certified: dual of the convex "
                 f"problem), gap {b.gap:.2g}"),
            ]
        else:
            pairs = [
                ("batches", f"B = {s.batch_size}, {s.sampler}, reduction {s.reduction}; {how}, "
                 f"reported on {b.batches} other fresh batches"),
                ("dimension", f"d = {self.dim}"),
                ("expected loss", f"{b.expected_loss:.6f} {s.loss_unit}; 95% interval "
                 f"[{lo:.6f}, {hi:.6f}]" + interval_note(b)),
                ("lower bound", f"{b.lower_bound:.6f} ({b.confidence:.0%} confidence; "
                 f"per-batch convex relaxation), gap {b.gap:.2g}" + bound_note(b)),
            ]
        if b.full_batch_excess is not None:
            # one difference, in nats per anchor, said once (under reduction="sum" the batch's
            # loss is summed over its anchors)
            pa = b.spec.per_anchor
            hw = Z95 * (b.full_batch_excess_se or 0.0) * pa
            excess = b.full_batch_excess * pa
            verdict = paired_loss_verdict(excess, hw)
            pm = "" if b.expectation == "exact" else f" ± {hw:.2g}"
            if excess < -hw:  # the kept solution lies above the full-batch one: short by it
                verdict += ", so this optimum is short by that much"
            side = (f"{-excess:.2g}{pm} nats per anchor below" if excess < -hw else
                    f"{excess:+.2g}{pm} nats per anchor above")
            what = ("" if self.full_batch_point is None else
                    f"; the full-batch prediction is {self.full_batch_point}")
            if self.kept_full_batch:
                line = ("its prediction is this one: no stochastic run beat it beyond noise on "
                        "the selection batches, so no change from batching was detected here "
                        "(a longer run may still beat it by less than that noise)")
            else:
                line = (f"its prediction's expected batch loss is {side} this one (paired, "
                        f"same batches): {verdict}")
            pairs.append(("full batch", line + what))
        elif self.full_batch_point is not None:
            pairs.append(("full batch", self.full_batch_point))
        elif b.expectation == "stochastic":
            pairs.append(("full batch", "not compared: no full-batch optimum in this "
                          "dimension was given (dgp.optimum gives one: the certified optimum up "
                          "to a few thousand points, a critical point found on row chunks "
                          "beyond, when its time estimate fits), so whether batching changes "
                          "the answer is not said"))
        stopped = self._stopped_short()
        if stopped:
            pairs.append(("stopped", stopped))
        if self.identifiability is not None:
            pairs.append(("identifiable", self.identifiability.statement))
        pairs.append(("Gram entries", self.gram_error + self._spread_note()))
        return pairs

    def _stopped_short(self) -> str:
        """Where the kept stochastic run ended on its budget (rounds or time) rather than on its
        plateau test, how much its monitored loss still fell over its last rounds: a longer run
        may end lower than this optimum (on a 10-NN graph of N = 2000 at tau 0.1 the 200-round
        run lay 0.013 nats per anchor above a 1500-round one); ``""`` otherwise."""
        h = self.monitor[:-1]  # per round; the last entry is the returned (averaged) point's
        if (self.batch.expectation != "stochastic" or not self.batch.steps
                or "budget spent" not in self.status or len(h) < 6):
            return ""
        k = max(5, len(h) // 10)
        drop = h[-k - 1] - h[-1]
        if not drop > 0:
            return ""
        return (f"{self.status}, its monitored loss still falling: {drop:.2g} "
                f"{self.batch.spec.loss_unit} over its last {k} rounds, so a longer run may "
                "end lower than this optimum (the interval is about this embedding, not about "
                "the optimum)")

    def _spread_note(self) -> str:
        """The scale of the entries' intervals, for the summary: their widest and median
        half-width off the diagonal, up to :data:`SUMMARY_SPREAD_MAX_N` points (beyond, per
        entry on request)."""
        if (self.batch.expectation == "exact" or len(self.runs) < 2
                or self.n > SUMMARY_SPREAD_MAX_N or self.n < 2):
            return ""
        _, (lo, hi) = self.gram_spread()
        half = (hi - lo)[np.triu_indices(self.n, 1)] / 2
        return (f"; 95% half-widths off the diagonal: widest {half.max():.2g}, median "
                f"{np.median(half):.2g}")

    def _title(self) -> str:
        return f"Expected-batch optimum: n = {self.n}, tau = {self.tau:g}, d = {self.dim}"

    def summary(self) -> str:
        """The short form (the whole text: no matrix is printed)."""
        return format_summary(self._title(), self._summary_pairs())

    def __str__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:
        return html_summary(self._title(), self._summary_pairs())

    #: ``embedding=True`` adds the ``n x dim`` embedding; ``gram=True`` the ``n x n`` Gram of
    #: that embedding (left out unless asked for, ``None`` or ``False``: one near-optimal
    #: solution, ``n x n``; where it comes from sampled batches, how far other seeds' solutions
    #: move its entries is the ``identifiability`` block beside it), with each entry's 95%
    #: interval (``gram_interval``: ``[lower, upper]``) and standard error (``gram_entry_se``)
    #: over the independent runs; ``gram_error`` (always) says how they are measured
    JSON_OPTIONS: ClassVar[dict[str, Any]] = {"embedding": False, "gram": None}

    def json_items(self, options):
        yield from (("n", self.n), ("tau", self.tau), ("dim", self.dim),
                    ("loss", self.loss), ("lower_bound", self.lower_bound),
                    ("batch", self.batch), ("full_batch_expected_loss",
                                            self.batch.full_batch_expected_loss),
                    ("full_batch_point", self.full_batch_point),
                    ("identifiability", self.identifiability), ("status", self.status),
                    ("seconds", self.seconds), ("solver", self.solver),
                    ("certificate", self.certificate), ("convergence", self.convergence))
        if options["embedding"]:
            yield "embedding", self.embedding
        yield "gram_error", self.gram_error
        yield "gram_runs", len(self.runs)
        yield "gram_runs_left_out", self.runs_left_out
        yield "gram_restarts", self.restarts
        yield "gram_restarts_left_out", self.restarts_left_out
        yield "gram_kept_full_batch", self.kept_full_batch
        if options["gram"]:
            yield "gram", self.gram
            se, (lo, hi) = self.gram_spread()
            yield "gram_interval", [lo, hi]
            yield "gram_entry_se", se


def paired_loss_verdict(excess: float, half: float) -> str:
    """What a paired difference of expected batch losses says, the full-batch prediction's
    minus the batch prediction's (``excess``, nats per anchor, with the half-width ``half`` of
    its 95% interval): beyond noise either way or not, and, where it is beyond noise but under
    :data:`~dgp.constants.LOSS_RESOLUTION` (what a trained run resolves), that training cannot
    tell the two apart, so no summary leads with a difference of no consequence."""
    if excess > half:
        verdict = "batching changes the loss beyond noise"
    elif excess < -half:
        verdict = "the full-batch prediction does better beyond noise"
    else:
        return "no difference beyond noise"
    if abs(excess) < LOSS_RESOLUTION:
        verdict += (f", but by less than the {LOSS_RESOLUTION:g} nats per anchor that training "
                    "resolves: a trained run cannot tell the two apart")
    return verdict


def bound_note(b: BatchEstimate) -> str:
    """What a gap above :data:`BOUND_LOOSE_GAP` nats per anchor says about the bound (empty
    below it)."""
    if b.gap * b.spec.per_anchor <= BOUND_LOOSE_GAP:
        return ""
    return ("; the bound is loose here: it relaxes each batch alone (or, where the points are "
            "few, a few dozen batches together) in any dimension, and such batches can fit far "
            "better than one embedding in this dimension fits them all (sparse or sharply "
            "peaked weights, or more points than the dimension holds apart); the loss may be "
            "closer to optimal than the gap says")


def interval_note(b: BatchEstimate) -> str:
    """What a held-out interval wider than :data:`HALF_WIDTH` nats per anchor each side says
    (empty within it, and for an exact expectation)."""
    lo, hi = b.interval
    half = 0.5 * (hi - lo) * b.spec.per_anchor
    if b.expectation == "exact" or half <= HALF_WIDTH * (1 + 1e-9):
        return ""
    digits = 2
    while float(f"{half:.{digits}g}") <= HALF_WIDTH and digits < 8:  # never "±0.002 > ±0.002"
        digits += 1
    return (f"; ±{half:.{digits}g} nats per anchor, wider than the target ±{HALF_WIDTH:g}: the "
            f"batch losses vary so much that {b.batches} held-out batches (at most "
            f"{MAX_EVALUATION_BATCHES}) did not narrow it further")
