r"""Mini-batch predictions for class-block weightings: the expected batch loss of a sampler.

SGD on batches of size ``B`` minimises :math:`\mathbb E_b L_b(Z)`, not the full loss. With every
class collapsed on a prototype (the expected loss is convex in the Gram matrix and invariant
under permutations within a class, so block averaging never raises it, and for SupCon raising a
within-class cosine to 1 lowers every batch term that sees it), a batch enters only through its
class counts :math:`m \in \mathbb N^K`. An anchor of class ``c`` in batch ``m`` sees
:math:`m_d - [d = c]` samples of class ``d`` and puts target mass
:math:`P_d \propto (m_d - [d = c])\,w_{cd}` on them; it *has positives* when that mass is
positive. The batch loss is

.. math::

    L_m(M) = \rho(m) \sum_{c} m_c\,[\text{positives}]\;\ell_{c,m}(M), \qquad
    \rho(m) = \begin{cases} 1 & \texttt{reduction="sum"},\\
        1/A(m) & \texttt{"mean"}, \texttt{anchors\_without\_positives="drop"},\\
        1/B & \texttt{"mean"}, \texttt{"zero"},\end{cases}

with :math:`A(m)` the number of anchors that have positives. ``"drop"`` is
pytorch-metric-learning's ``SupConLoss`` (``AvgNonZeroReducer``: anchors without positives are
left out of the mean) and :func:`dgp.torch.losses.winfonce` with ``reduction="mean"``; ``"zero"``
is the SupContrast reference, whose anchors without positives count as zero in a mean over the
whole batch; ``"sum"`` is dgp's own default. (pytorch-metric-learning also returns 0 for a batch
without any negative pair; under collapse such a batch's loss does not depend on the Gram, so
this changes the reported loss, never the prediction.)

Samplers (counts ``m`` of a batch):

* ``uniform``: ``B`` samples without replacement — multivariate hypergeometric;
* ``class-balanced``: each draw picks a class uniformly, then a sample of it (PyTorch's
  ``WeightedRandomSampler`` with weights :math:`1/n_c`, with replacement) — multinomial
  :math:`(B, 1/K)`, whatever the class sizes;
* ``m-per-class``: :math:`B/m` distinct classes uniformly at random, ``m`` samples each
  (pytorch-metric-learning's ``MPerClassSampler``).

The expectation is exact (all compositions, probabilities from log-gamma functions) when there
are at most ``exact_max`` compositions; otherwise it is a sample-average approximation over
``samples`` seeded compositions, and the standard error of the expected loss is reported.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from scipy.special import gammaln

from dgp.constants import EXACT_MAX_DEFAULT
from dgp.errors import ParameterError, check_choice, check_dim, check_int
from dgp.records import Record
from dgp.solver._gram_spread import spread_statement
from dgp.solver._pair_rates import uniform_pair_rates
from dgp.solver._program import RowProblem
from dgp.solver._rank_d_budget import rank_d_cost

__all__ = [
    "NO_POSITIVE",
    "REDUCTIONS",
    "SAMPLERS",
    "BatchPrediction",
    "BatchSpec",
    "Compositions",
    "batch_rows",
    "check_batch",
    "composition_count",
    "compositions",
    "enumerable",
    "positive_pair_probability",
    "row_budget_samples",
]

SAMPLERS = ("uniform", "class-balanced", "m-per-class")
REDUCTIONS = ("sum", "mean")
NO_POSITIVE = ("drop", "zero")

#: largest number of (row x point) entries a batch problem may hold (about 160 MB per array)
ROW_BUDGET = 20_000_000


@dataclass(frozen=True)
class BatchSpec(Record):
    """How batches are drawn and reduced (module docstring).

    Attributes
    ----------
    batch_size : int
    sampler : {"uniform", "class-balanced", "m-per-class"}
    samples_per_class : int or None
        ``m`` of the ``m-per-class`` sampler.
    reduction : {"sum", "mean"}
    anchors_without_positives : {"drop", "zero"}
        For ``reduction="mean"``: left out of the mean (pytorch-metric-learning) or counted as
        zeros (SupContrast).
    """

    batch_size: int
    sampler: str
    samples_per_class: int | None
    reduction: str
    anchors_without_positives: str

    @property
    def per_anchor(self) -> float:
        """The factor that turns a batch's loss (or a gap between two) into nats per anchor:
        ``1 / batch_size`` under ``sum`` (the batch's anchors summed), 1 under ``mean``."""
        return 1.0 / self.batch_size if self.reduction == "sum" else 1.0

    @property
    def loss_unit(self) -> str:
        """How one batch's loss is counted, in words, for every summary that prints an
        expected batch loss: per anchor under ``mean`` (the batch's mean over its anchors), per
        batch under ``sum``."""
        if self.reduction == "mean":
            return "nats per anchor, expected over batches"
        return "nats per batch (summed over its anchors), expected over batches"



#: the most estimated seconds (dgp.solver.rank_d_cost) of a rank-d search over the row problem
#: of every class composition; beyond, fresh batches answer: that search's cost grows with the
#: compositions (23 248 of K = 8 classes in d = 3: estimated 791 s, still running after 15 min
#: wall, 3 min of CPU, at load 8-10), where the free optimum of 90 178 took 13 s
EXACT_RANK_D_MAX_S = 600.0


def rows_rank_d_seconds(sizes: np.ndarray, spec: BatchSpec, dim: int | None,
                        starts: int) -> float:
    """The rank-``dim`` search's estimated seconds over the row problem of every composition
    (:func:`dgp.solver.rank_d_cost` at its 1e9 operations per second); 0 where none runs (free
    dimension, or ``dim`` at least the number of points)."""
    K = int(sizes.size)
    if dim is None or dim >= K:
        return 0.0
    rows = composition_count(sizes, spec) * min(K, spec.batch_size)
    return rank_d_cost(K, dim, starts=starts, given=2, rows=rows) / 1e9


def exact_rows_fit(sizes: np.ndarray, spec: BatchSpec, dim: int | None, exact_max: int,
                   starts: int) -> bool:
    """Whether the row problem of every composition answers: at most ``exact_max`` of them
    (:func:`enumerable`) and, in a dimension that needs the rank-``dim`` search, that search
    estimated within :data:`EXACT_RANK_D_MAX_S` (beyond, fresh batches answer faster)."""
    return (enumerable(sizes, spec, exact_max)
            and rows_rank_d_seconds(sizes, spec, dim, starts) <= EXACT_RANK_D_MAX_S)


#: the mini-batch options and their defaults, which a full-batch call must leave as they are
BATCH_OPTION_DEFAULTS = {"sampler": "uniform", "samples_per_class": None, "reduction": "mean",
                         "anchors_without_positives": "drop"}


def check_full_batch(**options: object) -> None:
    """Refuse a mini-batch option given without ``batch_size`` (one of
    :data:`BATCH_OPTION_DEFAULTS`, by keyword, away from its default).

    Raises
    ------
    ParameterError
        Naming the first such option.

    >>> check_full_batch(sampler="uniform", reduction="mean")
    """
    for name, value in options.items():
        if value != BATCH_OPTION_DEFAULTS[name]:
            raise ParameterError(name, f"applies to mini-batch predictions only; give "
                                       f"batch_size=B as well (got {name}={value!r})")


def check_batch(
    sizes: np.ndarray,
    *,
    batch_size: object,
    sampler: object,
    samples_per_class: object,
    reduction: object,
    anchors_without_positives: object,
) -> BatchSpec:
    """Validate the batch arguments against the class sizes.

    Raises
    ------
    ValueError, TypeError
        Naming the argument: a batch size below 3 (every batch loss is then constant) or, for
        ``uniform``, above ``N``; an unknown sampler, reduction or treatment; ``m-per-class``
        without ``samples_per_class >= 2`` dividing ``batch_size`` into 2 to ``K`` classes;
        ``samples_per_class`` with another sampler; ``anchors_without_positives="zero"`` with
        ``reduction="sum"`` (it means something with ``mean`` only).
    """
    # a batch of 2 samples or fewer has the same loss for every embedding
    B = check_int(batch_size, "batch_size", minimum=3)
    check_choice(sampler, SAMPLERS, "sampler")
    check_choice(reduction, REDUCTIONS, "reduction")
    check_choice(anchors_without_positives, NO_POSITIVE, "anchors_without_positives")
    if reduction == "sum" and anchors_without_positives == "zero":
        raise ParameterError(
            "anchors_without_positives", "= 'zero' applies to reduction='mean' only (it counts "
            "them in the mean's denominator; a sum adds nothing for them either way): give "
            "reduction='mean', or leave it at 'drop'")
    N, K = int(sizes.sum()), sizes.size
    m = None
    if sampler == "uniform" and B > N:
        raise ParameterError(
            "batch_size", f"= {B} exceeds N = {N} samples (uniform batches have no replacement)"
        )
    if sampler == "m-per-class":
        if samples_per_class is None:
            raise ParameterError("samples_per_class", "is required with sampler='m-per-class'")
        m = check_dim(samples_per_class, "samples_per_class")
        if m < 2:
            raise ParameterError("samples_per_class", f"must be >= 2 (positives), got {m}")
        if B % m or not 2 <= B // m <= K:
            raise ParameterError(
                "samples_per_class",
                f"= {m} must divide batch_size = {B} into between 2 and K = {K} classes",
            )
    elif samples_per_class is not None:
        raise ParameterError(
            "samples_per_class", f"applies to sampler='m-per-class' only (sampler is {sampler!r})"
        )
    return BatchSpec(
        batch_size=B,
        sampler=str(sampler),
        samples_per_class=m,
        reduction=str(reduction),
        anchors_without_positives=str(anchors_without_positives),
    )


def _count_bounded(sizes: np.ndarray, B: int) -> int:
    """Number of count vectors ``0 <= m_c <= n_c`` with ``sum m = B`` (dynamic programming)."""
    ways = np.zeros(B + 1, dtype=object)
    ways[0] = 1
    for n_c in sizes:
        new = np.zeros(B + 1, dtype=object)
        for k in range(min(int(n_c), B) + 1):
            new[k:] += ways[: B + 1 - k]
        ways = new
    return int(ways[B])


def composition_count(sizes: np.ndarray, spec: BatchSpec) -> int:
    """How many count vectors the sampler can draw.

    >>> composition_count(np.array([2, 3]), BatchSpec(3, "uniform", None, "sum", "drop"))
    3
    """
    K, B = sizes.size, spec.batch_size
    if spec.sampler == "uniform":
        return _count_bounded(sizes, B)
    if spec.sampler == "class-balanced":
        return math.comb(B + K - 1, K - 1)
    return math.comb(K, B // int(spec.samples_per_class))


def enumerable(sizes: np.ndarray, spec: BatchSpec, exact_max: int) -> bool:
    """Whether the expectation over the sampler's compositions is computed exactly: at most
    ``exact_max`` compositions, whose rows (anchors present in each) over ``K`` points fit in
    :data:`ROW_BUDGET` entries."""
    count = composition_count(sizes, spec)
    K = sizes.size
    return count <= exact_max and count * min(K, spec.batch_size) * K <= ROW_BUDGET


def _enumerate_bounded(caps: np.ndarray, B: int) -> np.ndarray:
    K = caps.size
    suffix = np.concatenate([np.cumsum(caps[::-1])[::-1], [0]])
    parts = np.zeros((1, 0), dtype=np.int64)
    sums = np.zeros(1, dtype=np.int64)
    for c in range(K):
        rows, new_sums = [], []
        for k in range(int(min(caps[c], B)) + 1):
            s = sums + k
            ok = (s <= B) & (B - s <= suffix[c + 1])
            if ok.any():
                rows.append(np.hstack([parts[ok], np.full((int(ok.sum()), 1), k)]))
                new_sums.append(s[ok])
        parts, sums = np.vstack(rows), np.concatenate(new_sums)
    return parts


@dataclass(frozen=True, eq=False)
class Compositions:
    """Count vectors with their probabilities.

    Attributes
    ----------
    counts : ndarray of int, shape (C, K)
    prob : ndarray, shape (C,)
        Probability of each (exact), or its share of the sample (sample average).
    exact : bool
    drawn : int
        Compositions drawn (sample average) or enumerated (exact).
    seed : int or None
    """

    counts: np.ndarray
    prob: np.ndarray
    exact: bool
    drawn: int
    seed: int | None


def compositions(
    sizes: np.ndarray,
    spec: BatchSpec,
    *,
    exact_max: int = EXACT_MAX_DEFAULT,
    samples: int = 2000,
    seed: int = 0,
) -> Compositions:
    """All compositions of the sampler with their probabilities when there are at most
    ``exact_max``, else ``samples`` compositions drawn with ``numpy.random.default_rng(seed)``
    (identical draws merged, with their frequencies)."""
    n = sizes.astype(np.int64)
    K, B = n.size, spec.batch_size
    count = composition_count(n, spec)
    if count <= exact_max:
        if spec.sampler == "m-per-class":
            m = int(spec.samples_per_class)
            from itertools import combinations

            chosen = np.array(list(combinations(range(K), B // m)), dtype=np.int64)
            counts = np.zeros((chosen.shape[0], K), dtype=np.int64)
            np.put_along_axis(counts, chosen, m, axis=1)
            logp = np.full(counts.shape[0], -math.log(counts.shape[0]))
        elif spec.sampler == "uniform":
            counts = _enumerate_bounded(n, B)
            logp = (
                np.sum(gammaln(n + 1) - gammaln(counts + 1) - gammaln(n - counts + 1), axis=1)
                - (gammaln(n.sum() + 1) - gammaln(B + 1) - gammaln(n.sum() - B + 1))
            )
        else:
            counts = _enumerate_bounded(np.full(K, B), B)
            logp = gammaln(B + 1) - np.sum(gammaln(counts + 1), axis=1) - B * math.log(K)
        prob = np.exp(logp)
        return Compositions(counts, prob / prob.sum(), True, counts.shape[0], None)
    rng = np.random.default_rng(seed)
    if spec.sampler == "uniform":
        draws = rng.multivariate_hypergeometric(n, B, size=samples)
    elif spec.sampler == "class-balanced":
        draws = rng.multinomial(B, np.full(K, 1.0 / K), size=samples)
    else:
        m = int(spec.samples_per_class)
        order = np.argsort(rng.random((samples, K)), axis=1)[:, : B // m]
        draws = np.zeros((samples, K), dtype=np.int64)
        np.put_along_axis(draws, order, m, axis=1)
    counts, freq = np.unique(draws, axis=0, return_counts=True)
    return Compositions(counts, freq / float(samples), False, samples, seed)


def batch_rows(
    comps: Compositions, weights: np.ndarray, spec: BatchSpec, *, tau: float
) -> tuple[RowProblem, np.ndarray]:
    """The row problem of the expected batch loss over ``comps`` for class-block ``weights``
    (``weights[c, d]``: the weight an anchor of class ``c`` gives a sample of class ``d``).

    Returns the problem and, per row, the index of its composition (for standard errors).

    Raises
    ------
    ValueError
        If no composition has an anchor with positives (every batch loss is constant).
    """
    counts = comps.counts.astype(float)
    C, K = counts.shape
    ci, cls = np.nonzero(counts > 0)
    mu = counts[ci] - np.eye(K)[cls]
    mass = mu * weights[cls]
    tot = mass.sum(axis=1)
    has = tot > 0
    anchors_pos = np.zeros(C)
    np.add.at(anchors_pos, ci[has], counts[ci[has], cls[has]])
    if spec.reduction == "sum":
        red = np.ones(C)
    elif spec.anchors_without_positives == "drop":
        red = np.divide(1.0, anchors_pos, out=np.zeros(C), where=anchors_pos > 0)
    else:
        red = np.full(C, 1.0 / spec.batch_size)
    alpha = comps.prob[ci] * counts[ci, cls] * red[ci]
    keep = has & (alpha > 0)
    if not keep.any():
        raise ParameterError(
            "batch_size",
            f"= {spec.batch_size}: no batch of this sampler has an anchor with a positive, so "
            "every batch loss is constant",
        )
    with np.errstate(divide="ignore"):
        log_mu = np.log(mu[keep])
    P = mass[keep] / tot[keep][:, None]
    prob = RowProblem(
        tau=tau, anchor=cls[keep], alpha=alpha[keep], log_mu=log_mu, target=P
    )
    return prob, ci[keep]


def positive_pair_probability(sizes: np.ndarray, spec: BatchSpec) -> np.ndarray:
    """Probability that a batch holds at least two samples of each class (exact).

    >>> p = positive_pair_probability(np.array([2, 2]), BatchSpec(4, "uniform", None, "sum",
    ...     "drop"))
    >>> p.tolist()
    [1.0, 1.0]
    """
    from scipy.stats import binom  # imported on use: scipy.stats is slow to import

    n = sizes.astype(np.int64)
    K, B = n.size, spec.batch_size
    if spec.sampler == "uniform":  # the positive-pair rates' products, exact to rounding
        return uniform_pair_rates(n, B)[1]
    if spec.sampler == "class-balanced":
        return np.full(K, float(binom(B, 1.0 / K).sf(1)))
    return np.full(K, (B // int(spec.samples_per_class)) / K)


def row_budget_samples(K: int, requested: int) -> int:
    """The number of sampled compositions that keeps a batch problem within ``ROW_BUDGET``."""
    return max(50, min(requested, ROW_BUDGET // (K * K)))


@dataclass(frozen=True, eq=False)
class BatchPrediction(Record):
    """How a mini-batch prediction was made, and how far it moves from the full batch.

    Attributes
    ----------
    spec : BatchSpec
        Batch size, sampler, reduction and treatment of anchors without positives.
    exact : bool
        Exact expectation over every composition, or a sample average.
    compositions : int
        Distinct compositions in the expectation.
    drawn : int
        Compositions drawn (sample average) or enumerated (exact).
    seed : int or None
    loss_se : float or None
        Standard error of the expected loss (sample average only).
    gram_se : float or None
        The largest of :attr:`gram_entry_se`; ``0`` for a closed form, ``None`` where nothing
        is sampled (exact) or nothing was replicated.
    replicates : int
    full_batch_gram : ndarray
        The full-batch prediction.
    shift : float
        ``max |G_batch - G_full|``.
    positive_pair_probability : tuple of float
        Probability that a batch holds two samples of each class.
    estimate : BatchEstimate or None
        Beyond exact enumeration: the expected loss and its bound from fresh batches
        (:class:`dgp.solver.BatchEstimate`).
    gram_interval : (ndarray, ndarray) or None
        Beyond exact enumeration: each Gram entry's 95% interval over the runs (``t`` quantile
        times :attr:`gram_entry_se`).
    excess_se : float or None
        Sample average only: the standard error of the excess over the entropic bound (both
        averaged over the same sampled compositions).
    gram_entry_se : ndarray or None
        ``K x K``: each entry's standard deviation over the ``1 + replicates`` runs (one run's
        spread); zeros for a closed form, ``None`` where exact (:attr:`gram_error` says why).
    runs_left_out : int
        Runs that ended beyond the loss resolution above the kept prototypes (another
        arrangement), left out of the entries' spread (``replicates`` counts the others).
    restarts : int
        Of those runs, the kept prototypes' lineage (their run and its restarts).
    restarts_left_out : int
        Restarts of the kept prototypes made but not among those runs (as
        :attr:`dgp.solver.BatchOptimum.restarts_left_out`).
    from_runs : bool
        Optimised by runs on sampled batches.
    kept_full_batch : bool
        The Gram is the full-batch optimum, kept (no run lower beyond the noise).
    runs_interval : (ndarray, ndarray) or None
        Then the runs' own 95% intervals, about their mean, which :attr:`gram_interval` widens.
    """

    spec: BatchSpec
    exact: bool
    compositions: int
    drawn: int
    seed: int | None
    loss_se: float | None
    gram_se: float | None
    replicates: int
    full_batch_gram: np.ndarray
    shift: float
    positive_pair_probability: tuple[float, ...]
    estimate: Any = None
    gram_interval: tuple[np.ndarray, np.ndarray] | None = None
    excess_se: float | None = None
    gram_entry_se: np.ndarray | None = None
    runs_left_out: int = 0
    restarts: int = 0
    from_runs: bool = False
    restarts_left_out: int = 0
    kept_full_batch: bool = False
    runs_interval: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def closed_form(self) -> bool:
        """Beyond enumeration, a closed form decided on sampled compositions: no runs were
        made, and no sample moves its entries."""
        return not self.exact and not self.from_runs and self.replicates == 0

    @property
    def unmeasured(self) -> str | None:
        """Why the entries' intervals were not measured, in words, where they come from runs on
        sampled batches but fewer than two ended within the loss resolution of the kept
        prototypes; ``None`` otherwise."""
        if self.exact or self.replicates > 0 or not (self.runs_left_out or self.from_runs):
            return None
        return ("each entry's interval not measured: fewer than two runs near these prototypes"
                + (f" ({self.runs_left_out} ended beyond the loss resolution above them)"
                   if self.runs_left_out else ""))

    @property
    def gram_error(self) -> str:
        """How the Gram's entries carry their error, in words: exact (every composition
        enumerated), a closed form (no sample moves it), or each entry's interval over the
        runs (:func:`dgp.solver._gram_spread.spread_statement`)."""
        if self.exact:
            return ("exact: every composition enumerated, so the entries carry no sampling "
                    "error (standard error 0)")
        if self.closed_form:
            return ("a closed form: no sample moves its entries (standard error 0, intervals "
                    "of width 0)")
        return spread_statement(self.replicates + 1, left_out=self.runs_left_out,
                                restarts=self.restarts,
                                restarts_left_out=self.restarts_left_out,
                                kept_full_batch=self.kept_full_batch)

    @property
    def moved_beyond_interval(self) -> int | None:
        """Off-diagonal entries (each pair once) where the full-batch Gram lies outside the 95%
        intervals (:attr:`runs_interval` if kept): the cosines batching moves beyond noise
        (``None`` without intervals; with exact entries, :attr:`shift` says it all)."""
        if self.gram_interval is None:
            return None
        lo, hi = self.gram_interval if self.runs_interval is None else self.runs_interval
        iu = np.triu_indices(lo.shape[0], 1)
        G = self.full_batch_gram[iu]
        return int(np.sum((G < lo[iu]) | (G > hi[iu])))

    #: ``to_dict(gram=True)`` adds the full-batch Gram (and the Gram's interval and its
    #: entries' standard errors)
    JSON_OPTIONS: ClassVar[dict[str, Any]] = {"gram": False}

    def json_items(self, options):
        yield from self.spec.json_items({})
        if self.estimate is not None:  # fitted elsewhere, reported on fresh batches
            yield "expectation", self.estimate.expectation
            for key, value in self.estimate.json_items({}):
                if key not in ("expectation", *self.spec.__dataclass_fields__):
                    yield key, value
        else:
            yield "expectation", "exact" if self.exact else "sample-average"
        yield from (("compositions", self.compositions), ("drawn", self.drawn),
                    ("seed", self.seed), ("loss_se", self.loss_se), ("gram_se", self.gram_se),
                    ("excess_se", self.excess_se),
                    ("replicates", self.replicates), ("runs_left_out", self.runs_left_out),
                    ("restarts", self.restarts),
                    ("restarts_left_out", self.restarts_left_out),
                    ("kept_full_batch", self.kept_full_batch),
                    ("shift_from_full_batch", self.shift),
                    ("positive_pair_probability", self.positive_pair_probability),
                    ("gram_error", self.gram_error),
                    ("moved_beyond_interval", self.moved_beyond_interval))
        if options["gram"]:
            yield "full_batch_gram", self.full_batch_gram
            if self.gram_interval is not None:
                yield "gram_interval", [self.gram_interval[0], self.gram_interval[1]]
            if self.runs_interval is not None:
                yield "runs_interval", [self.runs_interval[0], self.runs_interval[1]]
            if self.gram_entry_se is not None:
                yield "gram_entry_se", self.gram_entry_se
