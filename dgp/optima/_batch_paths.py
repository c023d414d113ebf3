r"""The mini-batch paths of :func:`dgp.optimum` beyond the row problem of exact compositions.

* the sampling spec of an optimum (:func:`batch_spec`) and, for class-balanced batches, the
  classes of the labels as a quotient (:func:`label_quotient`);
* beyond exact enumeration, the expected-batch optimum found on fresh batches and reported on
  others (:func:`stochastic_path`; :func:`labels_path` for a problem read from its labels one
  batch at a time, never as an ``N x N`` array, and so for a sparse weighting's pairs,
  :func:`sparse_pairs_above`);
* sample-level batches in a fixed dimension between the row problem and the stochastic path:
  the exact mean over every subset (:func:`finite_fits`, :func:`finite_path`), as long as its
  estimated time and memory fit (:func:`finite_cost`);
* which of these a batched problem takes (:func:`batch_route`, :data:`BATCH_PATHS`), and the
  time estimates and skips it says (:mod:`dgp.optima._batch_notices`);
* the one place that decides when a structured weighting (sparse, a graph, pairs, or built
  from labels) is read without an ``N x N`` array (:func:`streamed_path`): with
  ``batch_size``, at every ``N``, unless its samples are few enough for an exact path; its
  twins are found from its pairs, so a graph of cliques still takes the exact path of its
  twin classes.

Each path is handed the full-batch optimum as a callable (the certified solve of
:mod:`dgp.optima._api`), evaluated only where the path compares with it. For a dense weighting
above :data:`STOCHASTIC_FULL_BATCH_MAX_K` points, or :data:`STOCHASTIC_FULL_BATCH_MAX_KD`
points times dimensions (:func:`dense_full_batch`), and for a structured one at every size,
the stochastic paths compare with a critical point of the full-batch loss found on row chunks
instead (:func:`chunked_full_point`, never an ``N x N`` array), when its time estimate fits
:data:`CHUNKED_FULL_BATCH_MAX_S`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from functools import partial

import numpy as np
import scipy.sparse as sp

from dgp.display import format_duration, stderr_progress
from dgp.engine.target import LogWeights, Pairs, is_graph, log_weights
from dgp.errors import ParameterError, check_choice, check_dim, check_int
from dgp.optima._structure import Quotient, sparse_quotient, sparse_twins
from dgp.resources import format_bytes, memory_budget, time_budget
from dgp.solver import (
    CHUNKED_FTOL,
    CHUNKED_MAX_EVALS,
    CHUNKED_TYPICAL_EVALS,
    FINITE_MAX_ENTRIES,
    NO_POSITIVE,
    REDUCTIONS,
    BatchOptimum,
    BatchSpec,
    BatchWeights,
    ChunkedFullBatch,
    SparseBatchWeights,
    batch_optimum,
    check_batch,
    check_full_batch,
    chunked_full_batch,
    chunked_seconds,
    composition_count,
    dense_weight_rows,
    exact_rows_fit,
    finite_batch_optimum,
    quotient_batch_optimum,
    random_start,
    rank_d_starts,
    sparse_spectral_start,
    weight_rows,
)

__all__ = [
    "BATCH_PATHS",
    "CHUNKED_FINE_FTOL",
    "CHUNKED_FINE_MAX_EVALS",
    "CHUNKED_FINE_MAX_WORK",
    "CHUNKED_FINE_TYPICAL_EVALS",
    "CHUNKED_FULL_BATCH_MAX_S",
    "FINITE_FROM",
    "FINITE_PEAK_ARRAYS",
    "FINITE_RANDOM_STARTS",
    "FINITE_SECONDS_PER_ENTRY",
    "FINITE_TYPICAL_ITERS",
    "OPTIMUM_SAMPLERS",
    "STOCHASTIC_FULL_BATCH_MAX_K",
    "STOCHASTIC_FULL_BATCH_MAX_KD",
    "batch_route",
    "batch_spec",
    "check_starts",
    "chunked_full_point",
    "dense_full_batch",
    "finite_cost",
    "finite_fits",
    "finite_path",
    "finite_refusal",
    "finite_seconds",
    "finite_starts",
    "label_quotient",
    "labels_path",
    "sparse_pairs_above",
    "start_budget",
    "stochastic_path",
    "streamed_path",
]

#: the samplers of :func:`dgp.optimum` (``class-balanced`` for problems with class labels)
OPTIMUM_SAMPLERS = ("uniform", "class-balanced")
#: the expected-batch optimum of a dense weighting beyond enumeration is compared with the
#: full-batch optimum in the same dimension up to this many (twin) classes (a structured
#: weighting, read without an N x N array, with the chunked point of :func:`chunked_full_point`
#: at every size; one built from labels whose weights are normalised per batch with its dense
#: optimum up to this many samples); that optimum is also a candidate (and the
#: warm start of one run), so the prediction is never worse than it on fresh batches: cold
#: stochastic runs alone ended up to 0.27 nats per anchor above it (k-NN weightings of 2000
#: MNIST digits). Its rank-d solve takes about 18 s at N = 2000, d = 16 and 47 s at d = 128
STOCHASTIC_FULL_BATCH_MAX_K = 2000
#: ... and up to this many points times dimensions (``K * dim``): above, the rank-d search costs
#: minutes where the chunked descent (:func:`chunked_full_point`) costs seconds and lands within
#: the comparison's resolution. Measured at N = 2000, d = 128 (2-D Gaussian labels, one core):
#: tau = 0.1, the rank-d search 170 s of CPU (loss 7.1571014 nats per anchor, not first-order
#: critical), the chunked descent from a random start 5.3 s (68 evaluations, 7.1571124: 1.1e-5
#: above, against a held-out half-width of 0.002); tau = 0.5, 16-20 s against the chunked few.
#: N = 2000, d = 16 (the rank-d search's 18 s) stays at or below it
STOCHASTIC_FULL_BATCH_MAX_KD = 32_000
#: above :data:`STOCHASTIC_FULL_BATCH_MAX_K` points, the most estimated seconds of the chunked
#: full-batch descent (:func:`chunked_full_point`; also at most
#: :func:`dgp.resources.time_budget`): beyond, the summary says what it would take. Six minutes,
#: so that with the stochastic part (3 to 4 minutes) N = 10 000, B = 256, d = 128 stays within
#: the issue's 10. Measured there (2-D Gaussian labels, tau = 0.1, labels read through log_block
#: blocks, shared 2-core machine at load 6-7): 5 to 9 s an evaluation, 71 evaluations in 8 min,
#: 10.5 min in all, so it is skipped at such loads; with the kernel read by rows 3 to 5 s
CHUNKED_FULL_BATCH_MAX_S = 360.0
#: up to this many ``n * n * dim`` (the work of one evaluation, over two) and
#: :data:`STOCHASTIC_FULL_BATCH_MAX_K` points (beyond, as before: at N = 3000, d = 4 the fine
#: descent took a labels test from 42 to 98 s), the chunked full-batch
#: descent (:func:`chunked_full_point`) runs to :data:`CHUNKED_FINE_FTOL` with up to
#: :data:`CHUNKED_FINE_MAX_EVALS` evaluations, where it is the comparison (and a candidate) that
#: the dense rank-d search was before a structured weighting was read without an ``N x N``
#: array: covering every ``n * dim <= STOCHASTIC_FULL_BATCH_MAX_KD`` up to ``n = 2000``. Measured
#: on a symmetrised 10-NN graph of N = 1500 (2-D Gaussian points, tau = 0.5, d = 16, shared
#: 2-core machine): the dense rank-d search 5.5391542 nats per anchor (48 s); the chunked
#: descent from a random start 5.5395684 at the coarse tolerance (138 evaluations, 10 s) and
#: 5.5394253 converged (a worse critical point); from the spectral start 5.5393657 at the coarse
#: tolerance (104 evaluations) and 5.5391215 at 1e-8 (338 evaluations, 22 s): 3e-5 below
CHUNKED_FINE_MAX_WORK = 2.0**26
#: the fine descent's stopping tolerance (nats per anchor over ``CHUNKED_WINDOW`` evaluations)
CHUNKED_FINE_FTOL = 1e-8
#: the fine descent's most evaluations, and its typical number for the time estimate
CHUNKED_FINE_MAX_EVALS = 600
CHUNKED_FINE_TYPICAL_EVALS = 350
#: the fine descent runs in float64 (float32 products stall its line search: a 10-NN graph of
#: N = 800 at tau = 0.1, d = 8 stopped at a relative gradient of 4e-4, every step lost in the
#: loss's float32 noise) from the spectral start and this many seeded random starts, the lowest
#: kept: on that graph the spectral start's critical point is 2.0e-3 nats per anchor above the
#: dense rank-d search's (2.79817), four random starts' 1.3e-4 below to 1.4e-3 above it; the
#: lowest of these three descents 1.0e-3 above (29 s against 4 s for the spectral one alone,
#: under load): the spread of critical points is what one start can miss. The random starts
#: run where ``n * n * dim`` is at most :data:`CHUNKED_MULTI_START_MAX_WORK` (a few seconds a
#: descent; a 10-NN graph of N = 1500 in d = 16 took 35 s with one start, 117 s with three)
CHUNKED_FINE_RANDOM_STARTS = 2
CHUNKED_MULTI_START_MAX_WORK = 2.0**23
#: sample-level batches in a fixed dimension: the row problem up to this many subsets (its KKT
#: and lift certificates), the finite sum of every batch above (N / B times cheaper)
FINITE_FROM = 500
#: seeded random starts of the finite sum, besides the full-batch optimum
FINITE_RANDOM_STARTS = 4
#: the finite sum's seconds per (subset, row, column) entry and L-BFGS iteration at rank 1
#: (value, gradient and the line search's extra values), each unit of rank adding a thirtieth
#: of it (the batched Gram and gradient products): C(28, 5) = 98 280 subsets in d = 3 (five
#: descents and a free one at rank 28) took 35 s of CPU, 133 s wall at load 8 on the shared
#: 2-core machine, that is 1.9e-8 and 7.3e-8 by this model
FINITE_SECONDS_PER_ENTRY = 5e-8
#: L-BFGS iterations of a typical descent of the finite sum, for its time estimate (measured
#: 29 to 75 at C = 3 432 to 98 280 subsets)
FINITE_TYPICAL_ITERS = 100
#: the finite sum's peak memory in float64 arrays of its (subset, row, column) entries
#: (tracemalloc: 12 to 16), and of its (subset, row, rank) entries at the largest rank
FINITE_PEAK_ARRAYS = 16

#: the full-batch optimum's unit rows (one per point of the quotient) in the settings' dim
FullBatch = Callable[[Quotient, dict, Callable[[str], None] | None], np.ndarray]


def batch_spec(sizes: np.ndarray, batch_size: object, sampler: object, reduction: object,
               anchors_without_positives: object) -> BatchSpec | None:
    """The validated sampling spec (``None`` without ``batch_size``, when the other fields
    must be their defaults)."""
    if batch_size is None:
        check_full_batch(sampler=sampler, reduction=reduction,
                         anchors_without_positives=anchors_without_positives)
        return None
    check_choice(sampler, OPTIMUM_SAMPLERS, "sampler")
    check_choice(reduction, REDUCTIONS, "reduction")
    check_choice(anchors_without_positives, NO_POSITIVE, "anchors_without_positives")
    return check_batch(
        sizes, batch_size=batch_size, sampler=sampler, samples_per_class=None,
        reduction=reduction, anchors_without_positives=anchors_without_positives,
    )


def label_quotient(problem) -> Quotient:
    """The classes of a problem with class labels as a quotient (class-level weights: 1 within
    a class, the objective's cross weight across), for class-balanced batches.

    Raises
    ------
    ParameterError
        Naming ``sampler``: without class labels (a weight matrix, continuous labels) there
        are no classes to balance (labels of one class are refused by :class:`dgp.Problem`).
    """
    record = None if problem is None else problem.record
    if record is None or record.labels != "class":
        what = ("a weight matrix" if record is None else
                f"objective {record.name!r}, whose labels are continuous")
        raise ParameterError(
            "sampler", f"= 'class-balanced' needs class labels, and the problem is {what}: use "
            "a class objective (supcon or soft-supcon) with its class labels, or the uniform "
            "sampler")
    lab = problem.labels_for_solver()
    sizes = np.asarray(lab.sizes, dtype=np.int64)
    within, cross = record.block_log_weights(problem.objective_params(), int(sizes.size))
    Wq = np.full((sizes.size, sizes.size), float(np.exp(cross)))
    np.fill_diagonal(Wq, np.exp(within))
    codes = np.asarray(lab.values, dtype=np.int64)
    return Quotient(codes, sizes, Wq, np.unique(codes, return_index=True)[1], True)


def dense_full_batch(K: int, dim: int | None) -> bool:
    """Whether a batch path compares with the certified full-batch optimum of ``K`` points in
    ``dim`` (the rank-d search on the dense weights): up to :data:`STOCHASTIC_FULL_BATCH_MAX_K`
    points and :data:`STOCHASTIC_FULL_BATCH_MAX_KD` points times dimensions; beyond, a critical
    point found on row chunks (:func:`chunked_full_point`)."""
    return K <= STOCHASTIC_FULL_BATCH_MAX_K and (
        dim is None or K * dim <= STOCHASTIC_FULL_BATCH_MAX_KD)


def _full(q: Quotient, kwargs: dict, full_batch: FullBatch,
          progress: bool | None = False) -> np.ndarray | None:
    """The full-batch optimum in ``kwargs["dim"]`` (where :func:`dense_full_batch`), saying on
    stderr that it is being solved, and how it goes, unless ``progress`` is false."""
    if not dense_full_batch(q.K, kwargs["dim"]):
        return None
    report = None
    if progress is None or progress:
        what = f"the full-batch optimum of n = {q.K} in d = {kwargs['dim']}"
        report = stderr_progress(what)
        report("solving it first (a candidate and the start of one expected-batch run)")
    return full_batch(q, kwargs, report)


def chunked_full_point(read, n: int, *, tau: float, dim: int, seed: int,
                       counts: np.ndarray | None = None, progress: bool | None = False,
                       sparse: object = None) -> tuple[np.ndarray | None, str]:
    """Where :func:`dense_full_batch` says no, and for a structured weighting at every size
    (:func:`streamed_path`): a critical point of the full-batch loss
    in ``dim`` found on row chunks (:func:`dgp.solver.chunked_full_batch`, from a seeded random
    start, or from the spectral start of a sparse weighting ``sparse``,
    :func:`dgp.solver.sparse_spectral_start`: independent of the batch prediction either way),
    with what it is in words; or ``None`` and why not (``"not compared: ..."``): the weights
    cannot be read by rows (``read`` is ``None``), or the estimate from a timed evaluation is
    above :data:`CHUNKED_FULL_BATCH_MAX_S` (or :func:`dgp.resources.time_budget`). Up to
    :data:`CHUNKED_FINE_MAX_WORK` (``n * n * dim``) and :data:`STOCHASTIC_FULL_BATCH_MAX_K`
    points the descent runs to :data:`CHUNKED_FINE_FTOL` in float64, and where it is cheap
    (:data:`CHUNKED_MULTI_START_MAX_WORK`) from :data:`CHUNKED_FINE_RANDOM_STARTS` seeded random
    starts besides, the lowest point kept. ``read``: the log-weights of a block
    of rows (:func:`dgp.solver.weight_rows`); ``counts``: samples per point. The estimate and
    progress go to stderr unless ``progress`` is false."""
    not_said = "so whether batching changes the answer beyond noise is not said"
    if read is None:
        return None, ("not compared: this weighting's batch weights are normalised over each "
                      "batch (not one function of the pair), so its full-batch loss cannot be "
                      "read in row chunks, and the dense full-batch optimum is solved only up to "
                      f"{STOCHASTIC_FULL_BATCH_MAX_K} points; " + not_said)
    fine = n <= STOCHASTIC_FULL_BATCH_MAX_K and float(n) * n * dim <= CHUNKED_FINE_MAX_WORK
    evals = (CHUNKED_FINE_MAX_EVALS if fine else CHUNKED_MAX_EVALS,
             CHUNKED_FINE_TYPICAL_EVALS if fine else CHUNKED_TYPICAL_EVALS)
    fb = ChunkedFullBatch(read, n, tau=tau, counts=counts,
                          dtype=np.float64 if fine else np.float32)
    per = fb.seconds_per_evaluation(random_start(n, dim, seed))
    random = (CHUNKED_FINE_RANDOM_STARTS
              if fine and float(n) * n * dim <= CHUNKED_MULTI_START_MAX_WORK else 0)
    # the starts are counted before any is built: a refused point pays for no spectral start
    # (a spectral start exists only for 1 <= dim < n - 1; where its eigensolve fails after
    # all, one start fewer runs than was priced)
    spectral = sparse is not None and 1 <= dim < n - 1
    planned = random + 1 if spectral else max(random, 1)
    est, most = (planned * chunked_seconds(per, e) for e in (evals[1], evals[0]))
    budget = min(CHUNKED_FULL_BATCH_MAX_S, time_budget())
    say = None
    if progress is None or progress:
        say = stderr_progress(f"the full-batch point of n = {n} in d = {dim}")
    if est > budget:
        why = (f"not compared: a full-batch point of n = {n} in d = {dim} on row chunks would "
               f"take about {format_duration(est)} ({per:.2g} s an evaluation, about "
               f"{evals[1]} evaluations), above its budget of "
               f"{format_duration(budget)}; " + not_said)
        if say is not None:
            say(why)
        return None, why
    start = None if sparse is None else sparse_spectral_start(sparse, dim)
    starts = ([] if start is None else [(start, "the spectral start of the sparse weights")])
    starts += [(random_start(n, dim, seed + j), f"seeded random start {seed + j}")
               for j in range(max(random, int(start is None)))]
    if say is not None:
        say(f"about {format_duration(est)}, at most {format_duration(most)} ({per:.2g} s an "
            f"evaluation, about {evals[1]} evaluations, at most {evals[0]}, from each of "
            f"{len(starts)} start{'s' if len(starts) > 1 else ''}): L-BFGS on row chunks (no "
            "N x N array); a candidate and the start of one expected-batch run")
    points = [chunked_full_batch(fb, dim, seed=seed, progress=say,
                                 deadline_s=2.0 * budget / len(starts), max_evals=evals[0],
                                 ftol=CHUNKED_FINE_FTOL if fine else CHUNKED_FTOL, start=Z0,
                                 start_name=name)
              for Z0, name in starts]
    best = min(points, key=lambda p: p.loss)
    anchors = max(float(fb.weight.sum()), 1.0)
    if len(points) == 1:
        return best.embedding, best.statement
    return best.embedding, (f"the lowest of {len(points)} descents (from "
                            f"{', '.join(name for _, name in starts)}; their losses span "
                            f"{(max(p.loss for p in points) - best.loss) / anchors:.2g} "
                            f"nats per anchor), {best.statement}")


def stochastic_path(q: Quotient, spec: BatchSpec, kwargs: dict, progress: bool | None,
                    full_batch: FullBatch) -> BatchOptimum:
    """The expected-batch optimum beyond exact enumeration: optimised on fresh batches, reported
    on others (:mod:`dgp.solver._expected`), beside the full-batch optimum in the same
    dimension (where :func:`dense_full_batch`; beyond, a critical point of the full-batch
    loss on row chunks, :func:`chunked_full_point`)."""
    dim, tau = kwargs["dim"], kwargs["tau"]
    if dim is None:
        raise ParameterError(
            "dim", f"is needed for a mini-batch prediction of {composition_count(q.sizes, spec)}"
            f" compositions (above exact_max = {kwargs['exact_max']}, or above the memory of "
            "exact enumeration): give the embedding dimension you train in"
        )
    started = time.monotonic()  # the full-batch solve counts in the result's seconds
    full, note = _full(q, kwargs, full_batch, progress), None
    if not dense_full_batch(q.K, dim):
        full, note = chunked_full_point(dense_weight_rows(q.weights), q.K, tau=tau, dim=dim,
                                        seed=kwargs["seed"], counts=q.sizes, progress=progress)
    return quotient_batch_optimum(
        q.sizes, q.weights, spec, tau=tau, dim=dim, seed=kwargs["seed"],
        replicates=kwargs["replicates"], min_batches=kwargs["samples"],
        full_batch=full, progress=progress, started=started, full_batch_point=note,
        labels=None if q.K == int(q.sizes.sum()) else q.labels,
    )


def finite_cost(n: int, B: int, dim: int, starts: int) -> tuple[float, float]:
    """Estimated seconds and peak bytes of the exact finite sum over every ``B``-subset of
    ``n`` samples in ``dim``: ``starts`` descents in ``dim`` and one free descent at rank ``n``
    (:func:`dgp.solver.solve_finite`), by :data:`FINITE_SECONDS_PER_ENTRY`,
    :data:`FINITE_TYPICAL_ITERS` and :data:`FINITE_PEAK_ARRAYS`."""
    entries = float(math.comb(n, B)) * B * B
    per_iter = FINITE_SECONDS_PER_ENTRY * entries
    ranks = [dim] * starts + ([n] if dim < n else [])
    seconds = sum(FINITE_TYPICAL_ITERS * per_iter * (1.0 + r / 30.0) for r in ranks)
    peak = 8.0 * (FINITE_PEAK_ARRAYS * entries + 4.0 * entries / B * max(ranks))
    return seconds, peak


def finite_starts(starts: int) -> int:
    """Descents of the finite sum in ``dim``: the full-batch optimum's and the random ones."""
    return 1 + min(starts, FINITE_RANDOM_STARTS)


def finite_seconds(n: int, spec: BatchSpec, dim: int | None, starts: int) -> float:
    """The finite sum's estimated seconds over every subset of ``n`` samples, with the descents
    :func:`finite_path` runs for ``starts`` (:func:`finite_cost`)."""
    return finite_cost(n, spec.batch_size, dim, finite_starts(starts))[0]


def _finite_ok(sizes: np.ndarray, spec: BatchSpec, dim: int | None, exact_max: int,
               starts: int) -> bool:
    if dim is None or spec.sampler != "uniform" or (sizes != 1).any():
        return False
    n, B = int(sizes.size), spec.batch_size
    C = math.comb(n, B)
    return C <= exact_max and not finite_refusal(n, B, dim, starts, C)


def finite_refusal(n: int, B: int, dim: int, starts: int, count: int) -> str:
    """Why the finite sum over the ``count`` ``B``-subsets of ``n`` samples does not answer, in
    words (``""``: it does): the one decision of :func:`finite_fits` beside its reason."""
    what = "the finite sum over every subset"
    if count <= FINITE_FROM:
        return f"{what} is used from {FINITE_FROM + 1} subsets on"
    if count * B**2 > FINITE_MAX_ENTRIES:
        return f"{what} exceeds its {FINITE_MAX_ENTRIES:,} entries (subsets times B squared)"
    seconds, peak = finite_cost(n, B, dim, finite_starts(starts))
    budget = memory_budget()
    if seconds > time_budget():
        return (f"{what} is estimated at about {format_duration(seconds)}, beyond the time "
                f"budget of {format_duration(time_budget())} (DGP_TIME_BUDGET_S)")
    if budget is not None and peak > budget:
        return (f"{what} needs about {format_bytes(peak)}, beyond the memory budget of "
                f"{format_bytes(budget)} (DGP_MEMORY_LIMIT)")
    return ""


def finite_fits(q: Quotient, spec: BatchSpec, dim: int | None, exact_max: int,
                starts: int = FINITE_RANDOM_STARTS) -> bool:
    """Whether the expectation over every batch is taken by the finite sum: sample-level
    batches, no twins, in a fixed dimension, more than :data:`FINITE_FROM` subsets and within
    ``exact_max``, :data:`dgp.solver.FINITE_MAX_ENTRIES`, and the time and memory budgets
    (:func:`finite_cost`, :func:`dgp.resources.time_budget`,
    :func:`dgp.resources.memory_budget`)."""
    return _finite_ok(q.sizes, spec, dim, exact_max, starts)


def batch_route(sizes: np.ndarray, spec: BatchSpec, dim: int | None, exact_max: int,
                starts: int = FINITE_RANDOM_STARTS) -> str:
    """The path of a batched problem of (twin-)class ``sizes``: ``"finite"`` (the exact sum
    over every subset, :func:`finite_fits`), ``"rows"`` (the row problem of every composition,
    :func:`dgp.solver.enumerable`) or ``"stochastic"`` (fresh batches): also for sample-level
    batches in a fixed dimension that the finite sum's budgets refuse, where the row problem
    would be slower still."""
    if _finite_ok(sizes, spec, dim, exact_max, starts):
        return "finite"
    sample_level = spec.sampler == "uniform" and bool((sizes == 1).all())
    if (exact_rows_fit(sizes, spec, dim, exact_max, starts)
            and not (sample_level and dim is not None
                     and math.comb(int(sizes.size), spec.batch_size) > FINITE_FROM)):
        return "rows"
    return "stochastic"


def finite_path(q: Quotient, spec: BatchSpec, kwargs: dict, full_batch: FullBatch,
                progress: bool | None = False) -> BatchOptimum:
    """The exact expected-batch optimum over every subset (:mod:`dgp.solver._finite`), from
    the full-batch optimum and seeded random starts, with its certificates; a time estimate on
    stderr first unless ``progress`` is false."""
    starts = min(kwargs["starts"], FINITE_RANDOM_STARTS)
    if progress is None or progress:
        B = spec.batch_size
        seconds, _ = finite_cost(q.K, B, kwargs["dim"], finite_starts(starts))
        stderr_progress()(
            f"exact expected-batch optimum over all {math.comb(q.K, B)} batches of {B} of "
            f"n = {q.K} in d = {kwargs['dim']}: about {format_duration(seconds)} or less "
            f"({finite_starts(starts)} descents and a free one)")
    return finite_batch_optimum(q.weights, spec, tau=kwargs["tau"], dim=kwargs["dim"],
                                seed=kwargs["seed"], full_batch=_full(q, kwargs, full_batch),
                                starts=starts)


def labels_path(source: BatchWeights, spec: BatchSpec, *, tau: float, dim: object, seed: int,
                replicates: int, samples: int, progress: bool | None,
                full_batch: Callable[[int], np.ndarray] | None) -> BatchOptimum:
    """:func:`stochastic_path` for a weighting read one batch at a time (``source``: a problem
    built from labels, or a sparse weighting's pairs), never as an ``N x N`` array, beside a
    critical point of the full-batch loss read in row chunks (:func:`chunked_full_point`) at
    every ``N``; a weighting that cannot be read in rows (weights normalised over each batch)
    is compared with its dense full-batch optimum (``full_batch(dim)``: one row per sample)
    up to :data:`STOCHASTIC_FULL_BATCH_MAX_K` samples, and not compared beyond."""
    N = source.n
    if dim is None:
        raise ParameterError(
            "dim", f"is needed for a mini-batch prediction of {N} samples in batches of "
            f"{spec.batch_size} (beyond exact enumeration): give the embedding dimension you "
            "train in")
    dim = min(check_dim(dim, "dim"), N)
    started = time.monotonic()  # the full-batch solve counts in the result's seconds
    read = weight_rows(source)
    if read is None and full_batch is not None and N <= STOCHASTIC_FULL_BATCH_MAX_K:
        # weights normalised over each batch have no rows outside a batch: the dense optimum
        full, note = full_batch(dim), None
    else:
        sparse = source.W if isinstance(source, SparseBatchWeights) else None
        full, note = chunked_full_point(read, N, tau=tau, dim=dim, seed=seed, progress=progress,
                                        sparse=sparse)
    return batch_optimum(source, spec, tau=tau, dim=dim, seed=seed, full_batch=full,
                         replicates=replicates, min_batches=samples, progress=progress,
                         started=started, full_batch_point=note)


#: the batch paths that answer with a BatchOptimum, by route
BATCH_PATHS = {"stochastic": stochastic_path, "finite": finite_path}



def sparse_pairs_above(W: object, n_min: int) -> Pairs | None:
    """The positive pairs of a sparse weighting (a ``scipy.sparse`` matrix, a networkx graph,
    or validated log-weights kept as pairs) of more than ``n_min`` samples, validated without
    an ``N x N`` array; ``None`` for any other input. (Read for the batch paths only: a row
    without a positive weight is an anchor without positives in every batch.)"""
    if isinstance(W, LogWeights):
        return W.pairs if W.pairs is not None and W.n > n_min else None
    if not (sp.issparse(W) or is_graph(W)):
        return None
    return log_weights(W, sparse_above=n_min, empty_rows=True).pairs


def check_starts(starts: object) -> int | None:
    """``starts`` checked (``None``: the default budget, :func:`start_budget`)."""
    return None if starts is None else check_int(starts, "starts", minimum=0)


def start_budget(starts: int | None, K: int, dim: int | None) -> int:
    """``starts``, or the one rank-d solver's default budget for ``K`` points in ``dim``."""
    if starts is not None:
        return starts
    return rank_d_starts(K, 1 if dim is None else dim, given=2)


def streamed_path(problem, W: object, batch: dict, kwargs: dict, starts: int | None,
                  progress: bool | None,
                  labels_full_batch: Callable[[int], np.ndarray] | None,
                  exact_quotient: Callable[..., object] | None = None) -> object | None:
    """The one place that decides when a structured weighting (a sparse matrix, a networkx
    graph, log-weights kept as pairs, or a sample-level objective built from labels) is read
    without an ``N x N`` array: always, at every ``N``, with ``batch_size``, unless its samples
    take an exact path (the finite sum or the row problem over every subset: few samples, where
    the dense program is exact); then ``None`` and :func:`dgp.optimum` reads the dense weights.

    * labels: the batches are read from the labels (:func:`labels_path`); the full-batch
      comparison is a critical point read in row chunks (:func:`chunked_full_point`), except
      for weights normalised over each batch, which have no rows outside a batch: their dense
      full-batch optimum (``labels_full_batch(dim)``, one row per sample) up to
      :data:`STOCHASTIC_FULL_BATCH_MAX_K` samples, as before;
    * a sparse weighting: its twins are found from its pairs (:func:`sparse_twins`); where the
      twin classes make the expectation exact (the row problem over their compositions), the
      ``K x K`` twin quotient (:func:`sparse_quotient`) goes to ``exact_quotient(q,
      spread=...)`` (the exact paths of :func:`dgp.optimum`, identical to those of the dense
      weights; ``spread``: the answer where a twin class does not collapse); otherwise the
      batches are read from the pairs, every sample its own point, beside the chunked
      full-batch point.

    ``kwargs``: :func:`dgp.optimum`'s checked settings."""
    if batch["batch_size"] is None:
        return None
    labels = problem is not None and problem.objective is not None and problem.sizes is None
    pairs = None
    if labels:
        n = problem.n_samples
    else:
        pairs = sparse_pairs_above(W if problem is None else problem.solver_weights(), 1)
        if pairs is None:
            return None
        n = pairs.n
    ones = np.ones(n, dtype=np.int64)
    spec = batch_spec(ones, **batch)
    dim = None if kwargs["dim"] is None else min(kwargs["dim"], n)
    if batch_route(ones, spec, dim, kwargs["exact_max"],
                   start_budget(starts, n, dim)) != "stochastic":
        return None  # the samples' exact paths: the dense program (few samples)
    settings = dict(tau=kwargs["tau"], dim=kwargs["dim"], seed=kwargs["seed"],
                    replicates=kwargs["replicates"], samples=kwargs["samples"],
                    progress=progress)
    if labels:
        return labels_path(problem.batch_source(), spec, full_batch=labels_full_batch,
                           **settings)
    weights = pairs.weights()
    stream = partial(labels_path, SparseBatchWeights(weights), spec, full_batch=None,
                     **settings)
    twins = sparse_twins(weights)
    sizes = twins[1]
    if (exact_quotient is not None and sizes.size < n
            and batch_route(sizes, spec, dim, kwargs["exact_max"],
                            start_budget(starts, int(sizes.size), dim)) != "stochastic"):
        return exact_quotient(sparse_quotient(weights, twins), spread=stream)
    return stream()
