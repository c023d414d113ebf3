r"""The expected-batch optimum at dataset scale: what mini-batch training reaches, with numbers
measured on batches the optimiser never saw (DESIGN §13).

:func:`batch_optimum` runs :func:`dgp.solver.stochastic_optimum` (a Riemannian Adam on fresh
batches) from ``1 + replicates`` seeds, keeps the best, and reports

* the expected batch loss of the embedding with its 95% interval, from fresh batches;
* a lower bound on the optimum of the expectation at 95% confidence (the per-batch convex
  relaxation, :func:`dgp.solver.relaxation_bound`) and the gap;
* the full-batch optimum's expected batch loss on the same fresh batches, when a full-batch
  embedding is given, so that one sees whether batching changes the answer beyond noise;
* what the loss pins (:class:`BatchIdentifiability`): the solutions of the other seeds lie
  within the loss resolution of the best one or not, and which invariants they share.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dgp.constants import LOSS_RESOLUTION
from dgp.display import format_duration, stderr_progress
from dgp.solver._batch import BatchSpec
from dgp.solver._batch_result import (
    HALF_WIDTH,
    MAX_EVALUATION_BATCHES,
    BatchCertificate,
    BatchEstimate,
    BatchOptimum,
    bound_note,
    interval_note,
)
from dgp.solver._batch_sources import (
    BatchWeights,
    ClassBatches,
    DenseBatchWeights,
    SampleBatches,
)
from dgp.solver._full_batch_chunks import positive_partners
from dgp.solver._identifiability import (
    BatchIdentifiability,
    identifiability_report,
)
from dgp.solver._shared_bound import SHARED_WHEN_GAP, shared_batches, shared_seconds
from dgp.solver._solve import single_threaded
from dgp.solver._stochastic import (
    MONITOR_BATCHES,
    Z95,
    Estimate,
    StepTimes,
    StochasticRun,
    evaluate,
    relaxation_bound,
    round_steps,
    step_timings,
    stochastic_optimum,
)

__all__ = [
    "HALF_WIDTH",
    "BatchCertificate",
    "BatchEstimate",
    "BatchIdentifiability",
    "BatchOptimum",
    "batch_estimate",
    "batch_optimum",
    "bound_note",
    "identifiability_report",
    "interval_note",
    "quotient_batch_optimum",
]

#: the step of a run from a random start, and of one from the full-batch optimum (already
#: near: a large first step would throw it away)
COLD_LR = 0.5
WARM_LR = 0.01
#: the step of a restart of the kept solution on another batch stream, where fewer independent
#: runs than asked came near it (for its Gram entries' spread): five times the warm step, so that
#: a restart leaves its start, not so large that it leaves its arrangement (sizes
#: [200, 120, 80, 50, 30, 20, 12, 8, 5, 3], tau = 0.2, d = 4, B = 64: three restarts at 0.01 and
#: 0.05 moved entries by at most 0.09 and 0.14 and ended 1e-4 to 2e-4 nats per anchor below it;
#: at 0.2 and 0.5 they moved entries by 0.8, into other arrangements)
RESTART_LR = 0.05
#: batches (of their own stream) on which the kept run is chosen: the candidates are compared
#: paired, on the same batches, and their differences vary far less than the loss (at N = 2000,
#: B = 256, d = 128, tau = 0.1 a paired difference of 5.9e-4 had a standard error of 1.8e-7 on
#: 2000 batches: about 5e-7 on 300 by the square root), so a few hundred batches choose as well
#: as the 1000 used before
SELECT_BATCHES = 300
#: batches on which the calibrated estimate decides whether restarts lie ahead
#: (:func:`_restarts_ahead`)
PROBE_BATCHES = 32
#: a restart whose rows all moved by at most this from its start never left it (a ReLU corner)
MOVED_TOL = 1e-12
#: rounds of a typical run from a random start (:func:`dgp.solver._stochastic.round_steps`: one
#: epoch where epochs are long), annealing included, for the estimate before the work
#: (measured: 36 to 48 at K = 100 classes, B = 256; 80 to 100 at N = 300 to 10 000 samples; 94
#: and 95 at N = 2000, d = 128, tau = 0.5, 169 at tau = 0.1; 106 to 120 at K = 1000, d = 128; 78
#: to 93 rounds of 160 steps at N = 300, B = 16, d = 8); the estimate said once the first such
#: run is done is calibrated on it instead (:func:`_calibrated_rest`)
TYPICAL_ROUNDS = 100
#: rounds of a typical run from the full-batch optimum (the least a run makes: ``min_epochs``
#: and one ``patience``; measured 25 at N = 2000, d = 128, tau = 0.1, seeds 0 and 1)
WARM_ROUNDS = 25
#: monitoring batches of a run of collapsed classes (:data:`dgp.solver.MONITOR_BATCHES`, 16, at
#: sample level): their batches vary more beside a run's progress, and 16 moved a run's stop
#: (sizes [6, 9, 30, 4], B = 12, tau = 0.2: 77 rounds against 72, the kept Gram's exact excess
#: 1.6e-5 against 1.0e-5, and one entry of the three runs' 95% interval missed the exact
#: prediction by 0.003); such runs are short, so they keep the 64 of before
CLASS_MONITOR_BATCHES = 64
#: L-BFGS iterations of each batch's relaxation bound, on a factor of the batch's full rank
#: (measured at N = 10 000, B = 256, d = 128, tau = 0.1: the mean gap of a batch 0.0056 at
#: 100 iterations, 0.0022 at 200, 0.0015 at 300; at tau = 0.5 and at K = 100 and K = 1000
#: classes 100 iterations had closed), and the least number of bound batches (more are drawn
#: while the gaps' spread is not small beside the loss's, up to ``bound_batches``)
BOUND_ITERS = 300
BOUND_MIN_BATCHES = 8


def batch_optimum(
    weights: BatchWeights,
    spec: BatchSpec,
    *,
    tau: float,
    dim: int,
    seed: int = 0,
    sizes: np.ndarray | None = None,
    full_batch: np.ndarray | None = None,
    replicates: int = 1,
    bound_batches: int = 32,
    half_width: float = HALF_WIDTH,
    min_batches: int = 200,
    progress: bool | None = None,
    compare: tuple[np.ndarray, ...] = (),
    nonnegative: bool = False,
    started: float | None = None,
    full_batch_point: str | None = None,
    labels: np.ndarray | None = None,
) -> BatchOptimum:
    """The expected-batch optimum of ``weights`` in ``R^dim`` (module docstring).

    ``sizes``: class sizes when the points are collapsed classes (``None``: every point is one
    sample). ``full_batch``: the full-batch prediction's embedding (``n x d'``), evaluated on
    the same fresh batches. ``replicates``: further seeds for the identifiability report.
    Progress lines go to stderr (also when it is not a terminal) unless ``progress`` is false:
    a time estimate before the work (from timed batches), then one calibrated on the first run
    from a random start (the seconds left: the other runs as long as it, the evaluation and
    the bound at the load it ran under).
    ``compare``: further embeddings (``n x dim``) evaluated on the reporting batches beside the
    optimum (:attr:`BatchOptimum.comparisons`), at the cost of their loss alone.
    ``nonnegative``: every run keeps non-negative rows (a ReLU head); the relaxation bound
    holds for them too (it has no sign constraint). ``started``: the ``time.monotonic()`` at
    which the caller's work began (its full-batch solve), so that ``seconds`` counts it too.
    ``full_batch_point``: what ``full_batch`` is, or why there is none, where it is not the
    certified full-batch optimum (:attr:`BatchOptimum.full_batch_point`). ``labels``: the
    point of every original sample where the points are twin classes
    (:attr:`BatchOptimum.labels`). BLAS runs on one thread throughout
    (:func:`dgp.solver.single_threaded`: matrices of ``B`` rows, where a second thread on the
    loaded 2-core machine made N = 2000, d = 128, tau = 0.1 take 428 s of CPU and 679 s of wall
    against 49 s and 99 s).
    """
    with single_threaded():
        return _batch_optimum(
            weights, spec, tau=tau, dim=dim, seed=seed, sizes=sizes, full_batch=full_batch,
            replicates=replicates, bound_batches=bound_batches, half_width=half_width,
            min_batches=min_batches, progress=progress, compare=compare,
            nonnegative=nonnegative, started=started, full_batch_point=full_batch_point,
            labels=labels)


def near_optimal(est: list[Estimate], best: int, per_anchor: float) -> list[int]:
    """The candidates not shown to lie beyond the loss resolution above the best ``est[best]``
    (itself included): what training resolves, :data:`~dgp.constants.LOSS_RESOLUTION` nats per
    anchor, the one resolution of every identifiability report. Each candidate is decided on
    its own paired comparison with the best on the same batches: within the resolution, or
    within its own 95% half-width where that is wider (a noisy candidate widens nothing for
    the others; the loss interval's half-width is a different quantity: it is not paired).
    ``per_anchor``: the factor from a batch's loss to nats per anchor
    (:attr:`~dgp.solver.BatchSpec.per_anchor`)."""
    e = est[best].values
    near = []
    for k, o in enumerate(est):
        d = (o.values - e) * per_anchor
        half = (Z95 * float(np.std(d, ddof=1)) / math.sqrt(d.size)) if d.size > 1 else 0.0
        if float(d.mean()) <= max(LOSS_RESOLUTION, half):
            near.append(k)
    return near


def _batch_optimum(
    weights: BatchWeights, spec: BatchSpec, *, tau: float, dim: int, seed: int,
    sizes: np.ndarray | None, full_batch: np.ndarray | None, replicates: int,
    bound_batches: int, half_width: float, min_batches: int, progress: bool | None,
    compare: tuple[np.ndarray, ...], nonnegative: bool, started: float | None,
    full_batch_point: str | None, labels: np.ndarray | None,
) -> BatchOptimum:
    """:func:`batch_optimum`'s work (its arguments), on the one BLAS thread it sets."""
    t0 = time.monotonic() if started is None else started
    n = weights.n
    sampler = (SampleBatches(n, spec.batch_size) if sizes is None
               else ClassBatches(np.asarray(sizes, dtype=np.int64), spec))
    # a sparse weighting's samples meet few positives an epoch: longer rounds (round_steps);
    # counted at sample level, also where a few twins are merged (most points one sample),
    # not for classes, whose points gather the terms of their many samples
    sample_level = sizes is None or (spec.sampler == "uniform" and np.median(sizes) == 1)
    positives = (positive_partners(weights, seed=seed, sizes=sizes) if sample_level
                 else math.inf)
    say = stderr_progress() if progress is None or progress else None
    runs_n = 1 + replicates
    ahead = 0  # the restarts the calibrated estimate counts
    candidates = runs_n + (full_batch is not None) + len(compare)
    monitor = MONITOR_BATCHES if sizes is None else CLASS_MONITOR_BATCHES
    plan = None
    if say is not None:
        plan = _estimate(weights, sampler, spec, tau=tau, dim=dim, seed=seed, runs=runs_n,
                         warm=full_batch is not None, min_batches=min_batches,
                         bound_batches=bound_batches, candidates=candidates,
                         half_width=half_width, at=full_batch, monitor=monitor,
                         positives=positives)
        per_round = round_steps(sampler, spec, positives=positives)
        per_epoch = sampler.steps_per_epoch
        rounds = (f"{TYPICAL_ROUNDS} epochs" if per_round == per_epoch else
                  f"{TYPICAL_ROUNDS} rounds of {per_round} steps ({per_round / per_epoch:.2g} "
                  "epochs each: short epochs give each sample few partners, or few "
                  "positive ones)")
        say(f"expected-batch optimum of n = {n} in d = {dim}, B = {spec.batch_size}: about "
            f"{format_duration(plan.total)} before the work (from timed batches: {runs_n} runs, "
            f"those from a random start of about {rounds}, held-out evaluation, bound; said "
            "again, calibrated, after the first run from a random start)")
    runs, infos = [], []
    calibrated = False
    for r in range(runs_n):
        warm = r == 0 and full_batch is not None
        if say is not None:
            say(f"stochastic run {r + 1} of {runs_n} (n = {n}, B = {spec.batch_size}, "
                f"d = {dim}, " + ("from the full-batch optimum)" if warm else
                                  "from a random start)"))
        run = stochastic_optimum(weights, sampler, spec, tau=tau, dim=dim, seed=seed + r,
                                 start=full_batch if warm else None,
                                 lr=WARM_LR if warm else COLD_LR, progress=say,
                                 monitor_batches=monitor, nonnegative=nonnegative,
                                 positives=positives)
        runs.append(run.embedding)
        infos.append(run)
        if plan is not None and not calibrated and (not warm or r == runs_n - 1):
            calibrated = True
            shared = _shared_drawn(plan, run.embedding, weights, sampler, spec, tau=tau,
                                   seed=seed)
            rest, load = _calibrated_rest(plan, run, cold_left=runs_n - 1 - r,
                                          min_batches=min_batches, half_width=half_width,
                                          shared=shared)
            ahead = (_restarts_ahead(runs, weights, sampler, spec, tau=tau, seed=seed,
                                     full_batch=full_batch) * replicates
                     if r > 0 and replicates else 0)
            rest += ahead * infos[0].seconds  # a restart: about as long as the warm run
            elapsed = time.monotonic() - t0
            say(f"calibrated on run {r + 1} ({run.seconds:.1f} s, {len(run.monitor) - 2} "
                f"rounds; {load:.2g} times its timed batches' seconds): about "
                f"{_seconds(rest)} left, {_seconds(elapsed + rest)} in all" + (
                    f" ({ahead} restart{'s' if ahead > 1 else ''} of the kept solution "
                    "included: this run ended beyond "
                    "the loss resolution above the one from the full-batch optimum)"
                    if ahead else ""))
    # the full-batch optimum is a candidate too (the answer is never worse than it); the kept
    # candidate is chosen on batches of a stream of its own, then reported on others
    cands = runs + ([full_batch] if full_batch is not None else [])
    select = evaluate(cands, weights, sampler, spec, tau=tau, seed=seed, half_width=half_width,
                      min_batches=SELECT_BATCHES, max_batches=SELECT_BATCHES, stream=5)
    best = _kept(select, full=full_batch is not None)
    fb = len(runs)  # the full-batch candidate's place among cands
    # where fewer independent runs than asked came near the kept solution (on the selection
    # batches; decided again on the reporting ones), restarts of it on other batch streams
    # fill the Gram entries' spread (its batches' noise in its own arrangement); not where the
    # full-batch candidate is kept: a deterministic point, which restarts leave towards the
    # batch optimum, so their spread about it is a bias, not its noise (REF5: the exact optimum
    # outside 7 of 28 intervals that held none of the restarts either). So a restarted kept
    # solution is always a run (best < fb)
    short = (runs_n - len(_spread_runs(near_optimal(select, best, spec.per_anchor), best, fb))
             if replicates and best != fb else 0)
    rinfo, rseeds = [], []
    for j in range(short):
        if say is not None:
            say(f"restart {j + 1} of {short} from the kept solution on another batch stream "
                "(for the Gram entries' spread: fewer independent runs came near it"
                + ("" if ahead else "; not in the estimate said") + ")")
        rseed = seed + runs_n + 1 + j  # the full-batch candidate's is seed + runs_n
        run = stochastic_optimum(weights, sampler, spec, tau=tau, dim=dim, seed=rseed,
                                 start=cands[best], lr=RESTART_LR, progress=say,
                                 monitor_batches=monitor, nonnegative=nonnegative,
                                 positives=positives)
        # a restart that never left its start (a ReLU corner) measured nothing: not used
        if float(np.abs(run.embedding - cands[best]).max()) > MOVED_TOL:
            rinfo.append(run)
            rseeds.append(rseed)
    restarts = [R.embedding for R in rinfo]
    # a restart continues the kept solution's descent on other batches: it replaces it where
    # lower beyond the paired noise on selection batches of their own
    top = None
    if restarts:
        pick = _kept(evaluate([*restarts, cands[best]], weights, sampler, spec, tau=tau,
                              seed=seed, min_batches=SELECT_BATCHES, max_batches=SELECT_BATCHES,
                              stream=7), full=True)
        top = pick if pick < len(restarts) else None
    if say is not None:
        say(f"held-out evaluation of {len(cands) + len(restarts) + len(compare)} embeddings on "
            f"at least {min_batches} fresh batches")
    est = evaluate(cands + restarts + [np.asarray(c, dtype=float) for c in compare], weights,
                   sampler, spec, tau=tau, seed=seed, half_width=half_width,
                   min_batches=min_batches, max_batches=MAX_EVALUATION_BATCHES, progress=say)
    n_c, n_r = len(cands), len(cands) + len(restarts)
    est, restart_est, others = est[:n_c], est[n_c:n_r], est[n_r:]
    ref = best if top is None else n_c + top  # the reported solution's place
    Z, e = (cands + restarts)[ref], (est + restart_est)[ref]
    comparisons = tuple(
        (float(d.mean()), float(d.std(ddof=1) / math.sqrt(d.size)))
        for d in (o.values - e.values for o in others))
    if say is not None:
        say(f"relaxation bound on {min(bound_batches, BOUND_MIN_BATCHES)} to {bound_batches} "
            "fresh batches")
    # the run (or restart) reported, aligned with cands + restarts; None: the full-batch
    # candidate (a slot only where one was given: without it, a kept restart was read one
    # place off, and the first as the full-batch optimum)
    kept = [*infos, *([None] if full_batch is not None else []), *rinfo][ref]
    # a kept restart was optimised on the batches of the run it started from too
    line = [r for r in (kept, infos[best] if top is not None else None) if r]
    batch = batch_estimate(Z, e, est[-1] if full_batch is not None else None, weights, sampler,
                           spec, tau=tau, seed=seed, bound_batches=bound_batches,
                           steps=sum(r.steps for r in line),
                           epochs=sum(r.epochs for r in line),
                           kept_seed=seed + best if top is None else rseeds[top],
                           progress=say)
    # near the kept candidate (the full-batch optimum included), on the reporting batches; the
    # mean norm that of the samples' mean embedding (collapsed classes weighted by their sizes)
    near = near_optimal(est + restart_est, ref, spec.per_anchor)
    # each entry's spread over the runs that reached the reported solution to the resolution (a
    # run that ended in another arrangement far above it is an optimisation's miss, not
    # sampling noise: one such run made every interval [-1, 1] beside a report of pinned
    # cosines), then its lineage's that did (the restarts, and the run they started from);
    # with fewer than two the spread is not measured, and the summary says why
    spread = [k for k in _spread_runs(near, best, fb) if not (restarts and k == best)]
    lineage = list(dict.fromkeys(k for k in (ref, best, *range(n_c, n_r)) if k in near))[
        # the reported one first
        :max(0, runs_n - len(spread))] if restarts else []  # only as many as are short
    left_out = sum(k not in near for k in range(fb))  # a restart that misses is not used
    # the restarts made and not in the spread (beyond the resolution, unmoved, or beyond the
    # number short): said, not silently dropped
    unused = short - sum(k >= n_c for k in lineage)
    # the identifiability report: the reported solution in its lineage's place; the rest of
    # its lineage near it counts in the spread, never as independent solutions
    cands_i, est_i = list(cands), list(est)
    cands_i[best], est_i[best] = Z, e
    near_i = [best, *(k for k in near if k < n_c and k != best)]
    witnesses = tuple((cands + restarts)[k] for k in near if k != ref and (
        k >= n_c or (restarts and k == best)))
    if full_batch is not None and 0 in near_i and fb in near_i:  # keep the kept one, or lower
        keep = best if best in (0, fb) else min((0, fb), key=lambda k: est[k].mean)
        near_i.remove(fb if keep == 0 else 0)
    ident = (identifiability_report(cands_i, [x.mean * spec.per_anchor for x in est_i], best,
                                    seed=seed, resolution=LOSS_RESOLUTION, near=near_i,
                                    row_weights=sizes,
                                    not_probed="the expected loss is estimated from sampled "
                                    "batches", restarts=witnesses) if replicates else None)
    status = ("the full-batch optimum: no stochastic run did better on the selection batches"
              if kept is None else kept.status if top is None else
              "a restart of the kept solution on another batch stream, lower on selection "
              f"batches of their own beyond their noise: {kept.status}")
    runs_out = tuple((cands + restarts)[k] for k in (*spread, *lineage))
    return BatchOptimum(n=n, tau=tau, dim=dim, embedding=Z, batch=batch, identifiability=ident,
                        status=status, monitor=kept.monitor if kept else (),
                        seconds=time.monotonic() - t0, runs=runs_out,
                        runs_left_out=left_out, restarts=len(lineage),
                        restarts_left_out=unused,
                        comparisons=comparisons, full_batch_point=full_batch_point,
                        labels=labels, kept_full_batch=kept is None)


def batch_estimate(
    Z: np.ndarray, e: Estimate, full: Estimate | None, weights: BatchWeights, sampler,
    spec: BatchSpec, *, tau: float, seed: int, bound_batches: int, steps: int, epochs: float,
    kept_seed: int, expectation: str = "stochastic",
    progress: Callable[[str], None] | None = None,
) -> BatchEstimate:
    """The :class:`BatchEstimate` of the embedding ``Z`` from its held-out :class:`Estimate`
    ``e``: the relaxation bound on further fresh batches (:func:`relaxation_bound`) and, given
    ``full`` (the full-batch prediction's estimate on the same batches), the paired comparison.
    ``steps``, ``epochs`` and ``kept_seed`` describe the run that made ``Z``; ``progress``:
    the bound's lines."""
    bound = relaxation_bound(Z, e, weights, sampler, spec, tau=tau, seed=seed,
                             batches=bound_batches, iters=BOUND_ITERS,
                             min_batches=min(bound_batches, BOUND_MIN_BATCHES),
                             progress=progress)
    fb = fb_int = fb_ex = fb_se = None
    if full is not None:
        fb, fb_int, fb_ex = full.mean, full.interval, full.mean - e.mean
        diff = full.values - e.values  # paired: the same fresh batches
        fb_se = float(diff.std(ddof=1) / math.sqrt(diff.size))
    lower = min(bound.value, e.mean)
    return BatchEstimate(
        spec=spec, expected_loss=e.mean, interval=e.interval, lower_bound=lower,
        confidence=bound.confidence, gap=e.mean - lower, full_batch_expected_loss=fb,
        full_batch_interval=fb_int, full_batch_excess=fb_ex, full_batch_excess_se=fb_se,
        batches=e.batches, bound_batches=bound.batches, steps=steps, epochs=epochs,
        seed=kept_seed, expectation=expectation,
    )


@dataclass(frozen=True)
class _Plan:
    """The estimate before the work (:func:`_estimate`): the timed pieces ``t`` and the
    modelled seconds of each part. ``shared``: the shared-Gram replicates' seconds where the
    rule shares batches (:func:`dgp.solver._shared_bound.shared_batches`), 0 elsewhere; they
    are drawn only where the per-batch bound is loose, so they count in ``total`` where the
    timed batch's gap says so (``shared_likely``) and the calibrated estimate decides again at
    the first run's embedding (:func:`_shared_drawn`)."""

    t: StepTimes
    candidates: int
    monitor: int
    bound_batches: int
    runs: float
    evaluation: float
    bound: float
    shared: float = 0.0
    shared_likely: bool = False

    @property
    def total(self) -> float:
        return (self.runs + self.evaluation + self.bound
                + (self.shared if self.shared_likely else 0.0))


def _evaluation_seconds(t: StepTimes, spread: float, *, candidates: int, min_batches: int,
                        half_width: float) -> float:
    """The selection and the held-out evaluation of ``candidates`` embeddings by the timed
    pieces ``t``: on as many batches as ``spread`` asks for a 95% half-width of
    ``half_width``, at least ``min_batches``."""
    spread = spread if math.isfinite(spread) else 0.0
    report = min(MAX_EVALUATION_BATCHES,
                 max(min_batches, math.ceil(1.1 * (Z95 * spread / half_width) ** 2)))
    return (SELECT_BATCHES + report) * (t.build + candidates * t.value)


def _run_seconds(t: StepTimes, steps: int, readings: int, monitor_batches: int) -> float:
    """A run of ``steps`` steps and ``readings`` readings of its monitor by the timed pieces."""
    return steps * t.step + monitor_batches * (t.build + readings * t.value)


def _estimate(weights: BatchWeights, sampler, spec: BatchSpec, *, tau: float, dim: int,
              seed: int, runs: int, warm: bool, min_batches: int, bound_batches: int,
              candidates: int, half_width: float, at: np.ndarray | None = None,
              bound_iters: int = BOUND_ITERS, monitor: int = MONITOR_BATCHES,
              positives: float = math.inf) -> _Plan:
    """The time estimate before the work, from the pieces timed on a few batches
    (:func:`dgp.solver.step_timings`, at the start ``at`` when given): ``runs`` runs, the
    first of :data:`WARM_ROUNDS` rounds when ``warm`` and the others of
    :data:`TYPICAL_ROUNDS` (each round's steps, :func:`round_steps`, and a reading of its
    ``monitor`` batches), the selection and the held-out evaluation of ``candidates`` embeddings
    (:func:`_evaluation_seconds`, with the timed batches' spread) and the relaxation bound,
    with the shared-Gram replicates where the rule shares batches
    (:func:`dgp.solver._shared_bound.shared_seconds`; counted where the timed batch's gap
    exceeds :data:`~dgp.solver._shared_bound.SHARED_WHEN_GAP`, as at a random start)."""
    t = step_timings(weights, sampler, spec, tau=tau, dim=dim, seed=seed, at=at,
                     bound_iters=bound_iters)
    m = (shared_batches(sampler.n, spec.batch_size) if isinstance(sampler, SampleBatches)
         else 1)
    shared = (shared_seconds(weights, sampler, spec, tau=tau, dim=dim, seed=seed, m=m)
              if m > 1 else 0.0)
    per_round = round_steps(sampler, spec, positives=positives)
    rounds = [WARM_ROUNDS if warm and r == 0 else TYPICAL_ROUNDS for r in range(runs)]
    optimise = sum(_run_seconds(t, k * per_round, k + 2, monitor) for k in rounds)
    evaluation = _evaluation_seconds(t, t.spread, candidates=candidates,
                                     min_batches=min_batches, half_width=half_width)
    nb = min(bound_batches, BOUND_MIN_BATCHES)
    return _Plan(t, candidates, monitor, nb, optimise, evaluation,
                 nb * (t.build + t.bound_batch), shared,
                 not t.bound_gap * spec.per_anchor <= SHARED_WHEN_GAP)


def _shared_drawn(plan: _Plan, Z: np.ndarray, weights: BatchWeights, sampler,
                  spec: BatchSpec, *, tau: float, seed: int) -> bool:
    """Whether the shared-Gram replicates of ``plan`` will likely be drawn: where the rule
    shares batches, one batch's relaxation gap at ``Z`` (the first run's embedding; the first
    batch of the bound's own stream, :func:`dgp.solver.relaxation_bound` with one batch)
    exceeds :data:`~dgp.solver._shared_bound.SHARED_WHEN_GAP`, the test that bound applies to
    its mean gap."""
    if not plan.shared > 0:
        return False
    probe = relaxation_bound(Z, Estimate(0.0, 0.0, 1), weights, sampler, spec, tau=tau,
                             seed=seed, batches=1, iters=BOUND_ITERS, shared=False)
    return not probe.mean_gap * spec.per_anchor <= SHARED_WHEN_GAP


def _calibrated_rest(plan: _Plan, run: StochasticRun, *, cold_left: int, min_batches: int,
                     half_width: float, shared: bool = False) -> tuple[float, float]:
    """Seconds left after ``run`` (the first run from a random start, or the last run), and
    the load factor: ``cold_left`` further runs as long as ``run`` was (the same problem and
    settings from another seed: 94 and 95 rounds, 169 and 169 at N = 2000), then the
    evaluation (on the batches ``run``'s spread asks for) and the bound, each the timed
    pieces' seconds times the factor by which ``run`` took longer than its own steps and
    monitor readings by those pieces (the machine's load, measured on the run itself);
    ``shared``: the shared-Gram replicates (``plan.shared``) will be drawn too."""
    model = _run_seconds(plan.t, run.steps, len(run.monitor) + 1, plan.monitor)
    load = run.seconds / model if model > 0 else 1.0
    evaluation = _evaluation_seconds(plan.t, run.spread, candidates=plan.candidates,
                                     min_batches=min_batches, half_width=half_width)
    bound = plan.bound + (plan.shared if shared else 0.0)
    return cold_left * run.seconds + load * (evaluation + bound), load


def _seconds(seconds: float) -> str:
    """A duration for the estimate's line: tenths of a second below ten seconds."""
    return f"{seconds:.1f} s" if seconds < 10 else format_duration(seconds)


def _restarts_ahead(runs: list[np.ndarray], weights: BatchWeights, sampler, spec: BatchSpec,
                    *, tau: float, seed: int, full_batch: np.ndarray | None) -> bool:
    """Whether restarts of the kept solution will likely fill the Gram entries' spread, for the
    calibrated estimate: the last of ``runs`` (the first from a random start) ended beyond the
    loss resolution above the first (from the full-batch optimum), paired on
    :data:`PROBE_BATCHES` batches of a stream of their own (a paired difference's noise is far
    below the resolution: see :data:`SELECT_BATCHES`), so the other random starts likely miss
    too; and the full-batch candidate (``full_batch``), which no restart follows, is not the
    one those batches would keep (:func:`_kept`)."""
    cands = [runs[0], runs[-1]] + ([] if full_batch is None else [full_batch])
    probe = evaluate(cands, weights, sampler, spec, tau=tau, seed=seed,
                     min_batches=PROBE_BATCHES, max_batches=PROBE_BATCHES, stream=8)
    if full_batch is not None and _kept(probe, full=True) == 2:
        return False
    return 1 not in near_optimal(probe[:2], 0, spec.per_anchor)


def _spread_runs(near: list[int], best: int, fb: int) -> list[int]:
    """The runs (places among the candidates, the full-batch one at ``fb``) whose entries
    measure the kept solution's spread: those ``near`` it, but not run 0 where the full-batch
    candidate is kept (a run started from the full-batch candidate descends from it: the two
    are one solution, not two, and counted as two they made a verdict "pinned" beside cold runs
    that disagreed; where that candidate is kept, the run from it is no independent run)."""
    return [k for k in near if k < fb and not (k == 0 and best == fb)]


def _kept(select: list, *, full: bool) -> int:
    """The candidate kept: the lowest mean on the selection batches; with the full-batch
    optimum as the last candidate, a stochastic run replaces it only when it is better beyond
    the noise of the paired difference (95%)."""
    means = [e.mean for e in select]
    if not full:
        return int(np.argmin(means))
    ref = select[-1]
    better = []
    for k, e in enumerate(select[:-1]):
        diff = e.values - ref.values
        se = float(diff.std(ddof=1) / math.sqrt(diff.size))
        if diff.mean() < -Z95 * se:
            better.append(k)
    return min(better, key=lambda k: means[k]) if better else len(select) - 1


def quotient_batch_optimum(
    sizes: np.ndarray, weights: np.ndarray, spec: BatchSpec, *, tau: float, dim: int,
    seed: int, replicates: int, min_batches: int, full_batch: np.ndarray | None,
    progress: bool | None = None, started: float | None = None,
    full_batch_point: str | None = None, labels: np.ndarray | None = None,
) -> BatchOptimum:
    """:func:`batch_optimum` of a (twin-)class quotient: ``weights[c, d]`` the weight of a
    sample of class ``c`` for one of class ``d`` (diagonal: within the class), ``sizes`` the
    class sizes (all ones: every sample its own point); ``labels``: the class of every sample,
    where they are twin classes."""
    with np.errstate(divide="ignore"):
        L = np.log(weights)
    source = DenseBatchWeights(L)
    return batch_optimum(source, spec, tau=tau, dim=dim, seed=seed,
                         sizes=(None if (sizes == 1).all() and spec.sampler == "uniform"
                                else sizes),
                         full_batch=full_batch, replicates=replicates,
                         min_batches=min_batches, progress=progress, started=started,
                         full_batch_point=full_batch_point, labels=labels)
