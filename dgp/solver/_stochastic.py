r"""The expected mini-batch loss of any weighting, optimised on fresh batches (DESIGN §13).

SGD on batches of size ``B`` minimises :math:`\mathbb E_b L_b(Z)`. A sample-level weighting
(kernels of labels, soft labels, k-NN graphs) has no class structure to enumerate, so the
expectation is optimised stochastically: a Riemannian Adam on the product of unit spheres (one
sphere per point), each step on a fresh batch, the step decaying as :math:`1/\sqrt t`, with
averaging of the iterates over the last part of the run. One step costs :math:`O(B^2 d)`; the
weights are read per batch (:class:`BatchWeights`), never as an ``N x N`` array.

A *batch* is a multiset of points with counts ``m`` (a sample-level batch: ``B`` distinct
points, each counted once; a class-collapsed batch: the classes present with their counts). An
anchor of point ``c`` sees :math:`\mu_{cd} = m_d - [c = d]` copies of point ``d`` and puts target
mass :math:`p_{cd} \propto \mu_{cd} w_{cd}` on them; its loss is

.. math::

    \ell_c = \log\sum_d \mu_{cd}\, e^{G_{cd}/\tau} - \sum_d p_{cd}\,G_{cd}/\tau

(with :math:`G_{cc} = 1`); the batch loss is :math:`\rho\sum_c m_c\,[\text{positives}]\,\ell_c`
with the reduction :math:`\rho` of :mod:`dgp.solver._batch` (``sum``: 1; ``mean`` with anchors
without positives dropped: one over the anchors that have positives; ``mean`` counting them as
zero: :math:`1/B`). This is exactly the loss of :func:`dgp.solver.batch_rows` for one
composition, so the exact (enumerated) and the stochastic paths optimise one function.

Honest numbers, each from batches the optimiser never saw (:func:`evaluate`,
:func:`relaxation_bound`): the expected batch loss with a 95% interval; a lower bound on the
optimum of the expectation, :math:`\mathbb E_b[\min_{G_b \in \mathcal E_B} L_b(G_b)] \le
\min_Z \mathbb E_b L_b(Z)` (each batch's loss is convex in its own Gram matrix), each term
bounded below by the dual bound of the per-batch convex problem, and the mean of these bounds
reported at its one-sided 95% lower confidence limit. Where a batch holds few positives per
anchor (a k-NN graph) a free Gram fits each batch alone and this bound lies far below the loss;
there, and where the points are few enough for batches to overlap, batches sharing one Gram
matrix are bounded too (:mod:`dgp.solver._shared_bound`) and the larger limit is reported.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
from scipy.special import ndtri, stdtrit

from dgp.constants import (
    ROUND_PARTNER_TERMS,
    ROUND_POSITIVE_MAX_EPOCHS,
    ROUND_POSITIVE_TERMS,
)
from dgp.errors import ParameterError
from dgp.solver._batch import BatchSpec
from dgp.solver._batch_sources import (
    BatchFunction,
    BatchWeights,
    ClassBatches,
    SampleBatches,
    batch_function,
)
from dgp.solver._shared_bound import (
    SHARED_REPLICATES,
    SHARED_WHEN_GAP,
    dual_bound,
    shared_batches,
    shared_gaps,
)
from dgp.solver._sphere_lbfgs import row_lbfgs

__all__ = ["MONITOR_BATCHES", "Estimate", "RelaxationBound", "StepTimes", "StochasticRun",
           "evaluate", "relaxation_bound", "round_steps", "step_timings", "stochastic_optimum"]

#: seconds between two progress lines of a run
PROGRESS_EVERY_S = 5.0
#: fixed monitoring batches of a run, read after every round for its plateau test (the same
#: batches each time: readings differ by the embedding's change, not by sampling). 16 gave 64's
#: halvings and stop step for step (N = 2000, B = 256, d = 128, tau 0.1) in 7.0 s of CPU, not 12.4
MONITOR_BATCHES = 16
#: Adam's moment decays and its denominator floor
ADAM_BETA1 = 0.9
ADAM_BETA2 = 0.999
ADAM_EPS = 1e-12
#: the relaxation bound stops drawing batches (past its least number) once the mean gap's
#: standard error is at most this share of the loss's
GAP_SE_SHARE = 0.25
#: L-BFGS iterations of the linear problem choosing a batch bound's multipliers (_linear_rows)
DUAL_LINEAR_ITERS = 100
#: the two-sided 95% normal quantile and the one-sided one
Z95 = float(ndtri(0.975))
Z95_ONE_SIDED = float(ndtri(0.95))


# ---------------------------------------------------------------------------------- results
@dataclass(frozen=True, eq=False)
class StochasticRun:
    """Outcome of :func:`stochastic_optimum`.

    Attributes
    ----------
    embedding : ndarray, shape (n, d)
        Unit rows: the averaged iterate.
    steps : int
        Optimiser steps (one batch each).
    epochs : float
        Passes over the points.
    seconds : float
    monitor : tuple of float
        The loss on the fixed monitoring batches at the start and after each round
        (:func:`round_steps`), and last the returned embedding's (a stream of batches that is
        never used to optimise and never used for the reported numbers).
    status : str
        Why it stopped, in words.
    spread : float
        Standard deviation of the batch loss over the monitoring batches at the returned
        embedding (what sets the batches an evaluation of it needs; ``nan`` with fewer than
        two monitoring batches).
    """

    embedding: np.ndarray
    steps: int
    epochs: float
    seconds: float
    monitor: tuple[float, ...]
    status: str
    spread: float = math.nan


class _RiemannianAdam:
    """Adam on the product of unit spheres, updating the rows of one batch at a time (the
    gradient projected on each row's tangent space, the first moment carried to the new point
    by projection, one second moment per row, per-row bias corrections, the projection
    retraction ``retract``: :func:`_unit_rows`, or :func:`_nonnegative_rows` for a ReLU head's
    embeddings). ``Z`` is updated in place."""

    def __init__(self, Z: np.ndarray, weights: BatchWeights, tau: float, spec: BatchSpec,
                 retract: Callable[[np.ndarray], np.ndarray] | None = None):
        self.Z, self.weights, self.tau, self.spec = Z, weights, tau, spec
        self.retract = _unit_rows if retract is None else retract
        self.M1 = np.zeros_like(Z)
        self.V = np.zeros(Z.shape[0])
        self.T = np.zeros(Z.shape[0])  # per-row step counts

    def step(self, idx: np.ndarray, counts: np.ndarray, eta: float) -> None:
        Zb = self.Z[idx]
        fn = batch_function(self.weights, idx, counts, tau=self.tau, spec=self.spec)
        _, g = fn.value_grad(Zb)
        g -= np.sum(g * Zb, axis=1, keepdims=True) * Zb  # tangent part
        self.T[idx] += 1
        mb = self.M1[idx]
        mb -= np.sum(mb * Zb, axis=1, keepdims=True) * Zb  # transport by projection
        mb = ADAM_BETA1 * mb + (1 - ADAM_BETA1) * g
        vb = ADAM_BETA2 * self.V[idx] + (1 - ADAM_BETA2) * np.sum(g * g, axis=1)
        self.M1[idx], self.V[idx] = mb, vb
        t = self.T[idx]
        mhat = mb / (1 - ADAM_BETA1**t)[:, None]
        vhat = vb / (1 - ADAM_BETA2**t)
        Y = Zb - eta * mhat / (np.sqrt(vhat) + ADAM_EPS)[:, None]
        self.Z[idx] = self.retract(Y)


def _unit_rows(Z: np.ndarray) -> np.ndarray:
    return Z / np.linalg.norm(Z, axis=1, keepdims=True)


def _nonnegative_rows(Y: np.ndarray) -> np.ndarray:
    """The nearest non-negative unit rows: negative entries clipped, then normalised (a row
    with no positive entry keeps its largest coordinate alone)."""
    P = np.maximum(Y, 0.0)
    empty = ~(P > 0).any(axis=1)
    if empty.any():
        P[empty, np.argmax(Y[empty], axis=1)] = 1.0
    return _unit_rows(P)


def _losses(Z, batches: list[tuple[np.ndarray, BatchFunction]]) -> np.ndarray:
    return np.array([fn.terms(Z[idx], gradient=False)[0] for idx, fn in batches])


def _mean_loss(Z, batches: list[tuple[np.ndarray, BatchFunction]]) -> float:
    return float(np.mean(_losses(Z, batches)))


def round_steps(sampler: SampleBatches | ClassBatches, spec: BatchSpec, *,
                partner_terms: float = ROUND_PARTNER_TERMS,
                positives: float = math.inf) -> int:
    r"""Optimiser steps of one *round* of :func:`stochastic_optimum`, the unit of its schedule
    and budget: one epoch (``sampler.steps_per_epoch``), or more steps where an epoch gives each
    point fewer than ``partner_terms`` partner terms (:data:`dgp.constants.ROUND_PARTNER_TERMS`).

    A step on a batch of ``B`` draws gives the ``n`` points :math:`B(B-1)/n` partner terms each
    on average (at sample level each point of the batch gets ``B - 1``, once an epoch); the
    variance of a point's update falls as one over its terms, so an epoch of small batches is a
    small part of the work an epoch of large ones does. A round is the steps of
    :math:`\max(\text{epoch}, \lceil \text{partner\_terms}\, n / (B(B-1)) \rceil)`: one
    epoch at ``B = 256`` and for class-collapsed problems, 160 steps (8.9 epochs) at
    ``N = 300``, ``B = 16``; ``partner_terms = 0``: always one epoch. ``positives``: the typical
    number of positive partners of a point among the ``N - 1`` other samples
    (:func:`dgp.solver.positive_partners`; ``inf``: not counted); a round also gives each point
    :data:`~dgp.constants.ROUND_POSITIVE_TERMS` (:math:`T_+`) terms with them on average,
    :math:`\lceil T_+\, N(N-1) / (\text{positives}\, B(B-1)) \rceil` steps (11 epochs on
    a 10-NN graph of 2000 points at ``B = 256``, where an epoch meets 1.3), at most
    :data:`~dgp.constants.ROUND_POSITIVE_MAX_EPOCHS` epochs."""
    if not (isinstance(partner_terms, (int, float)) and 0 <= partner_terms < math.inf):
        raise ParameterError("partner_terms", f"must be a finite number >= 0, got "
                             f"{partner_terms!r}")
    if not (isinstance(positives, (int, float)) and positives > 0):
        raise ParameterError("positives", f"must be a number > 0 (inf: not counted), got "
                             f"{positives!r}")
    B, n, N = spec.batch_size, sampler.n, sampler.samples
    pairs = B * max(B - 1, 1)
    epoch = sampler.steps_per_epoch
    sparse = (0 if positives == math.inf else
              min(math.ceil(ROUND_POSITIVE_TERMS * N * max(N - 1, 1) / (positives * pairs)),
                  ROUND_POSITIVE_MAX_EPOCHS * epoch))
    return max(epoch, math.ceil(partner_terms * n / pairs), sparse)


def _batch_stream(sampler: SampleBatches | ClassBatches,
                  rng: np.random.Generator) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Batches of one shuffled pass after another (the next pass drawn only when needed, so a
    round of exactly one epoch consumes ``rng`` as one pass does)."""
    while True:
        yield from sampler.epoch(rng)


def stochastic_optimum(
    weights: BatchWeights,
    sampler: SampleBatches | ClassBatches,
    spec: BatchSpec,
    *,
    tau: float,
    dim: int,
    seed: int,
    start: np.ndarray | None = None,
    lr: float = 0.5,
    max_epochs: int = 200,
    min_epochs: int = 20,
    patience: int = 5,
    plateaus: int = 4,
    rtol: float = 1e-5,
    monitor_batches: int = MONITOR_BATCHES,
    anneal_epochs: float = 10.0,
    progress: Callable[[str], None] | None = None,
    deadline_s: float | None = None,
    nonnegative: bool = False,
    partner_terms: float = ROUND_PARTNER_TERMS,
    positives: float = math.inf,
) -> StochasticRun:
    r"""Minimise :math:`\mathbb E_b L_b(Z)` over unit rows ``Z`` (``n x dim``) on fresh batches.

    The schedule counts *rounds* of ``T`` steps (:func:`round_steps` with ``partner_terms`` and
    ``positives``: one epoch where epochs are long, enough steps to give each point
    ``partner_terms`` partner terms where they are short, and enough to meet its positives
    where they are few); ``max_epochs``, ``min_epochs``, ``patience`` and
    ``anneal_epochs`` are numbers of rounds (of epochs wherever a round is one). Riemannian
    Adam (:class:`_RiemannianAdam`) with the step :math:`\mathrm{lr}/\sqrt{1 + t/T}`. After
    each round the loss on ``monitor_batches`` fixed batches of a separate stream is read; when
    the best of the last ``patience`` rounds improved on the round before them by less than
    ``rtol`` (relative), the step is halved, and after ``plateaus`` halvings (and at least
    ``min_epochs`` rounds) the descent stops; or after ``max_epochs`` rounds or ``deadline_s``.
    Then ``anneal_epochs`` rounds with the step decaying linearly to zero, whose iterates are
    averaged (renormalised); the average is returned unless the last iterate monitors better.
    ``nonnegative``: every iterate has non-negative rows (a ReLU head; the start is projected
    onto them).
    """
    n = weights.n
    per_epoch = sampler.steps_per_epoch
    per_round = round_steps(sampler, spec, partner_terms=partner_terms, positives=positives)
    unit = _nonnegative_rows if nonnegative else _unit_rows
    rng = np.random.default_rng([seed, 0])
    mon_rng = np.random.default_rng([seed, 1])
    if start is None:
        Z = rng.standard_normal((n, dim))
        Z = unit(np.abs(Z) if nonnegative else Z)
    else:
        Z = unit(np.array(start, dtype=float))
    mon = [(idx, batch_function(weights, idx, m, tau=tau, spec=spec))
           for idx, m in (sampler.draw(mon_rng) for _ in range(monitor_batches))]
    opt = _RiemannianAdam(Z, weights, tau, spec, retract=unit)
    unit_words = ("epochs" if per_round == per_epoch else
                  f"rounds of {per_round} steps, {per_round / per_epoch:.3g} epochs each")
    stream = _batch_stream(sampler, rng)
    t0 = last_said = time.monotonic()
    history: list[float] = [_mean_loss(Z, mon)]
    step = 0
    scale, plateau_at, halvings = 1.0, 0, 0
    status = f"budget spent ({max_epochs} {unit_words})"
    for rnd in range(max_epochs):
        for idx, m in itertools.islice(stream, per_round):
            step += 1
            opt.step(idx, m, scale * lr / math.sqrt(1.0 + step / per_round))
        history.append(_mean_loss(Z, mon))
        if progress is not None and time.monotonic() - last_said >= PROGRESS_EVERY_S:
            last_said = time.monotonic()
            where = (f"epoch {rnd + 1}" if per_round == per_epoch else
                     f"round {rnd + 1} of at most {max_epochs} ({step} steps, "
                     f"{step / per_epoch:.0f} epochs)")
            progress(f"{where}: monitored loss {history[-1]:.6f} ({last_said - t0:.0f} s)")
        if rnd + 1 - plateau_at >= patience and len(history) > patience:
            before = history[-patience - 1]
            if before - min(history[-patience:]) <= rtol * max(abs(before), 1.0):
                if rnd + 1 >= min_epochs and halvings >= plateaus:
                    status = (f"monitored loss improved by less than {rtol:g} (relative) over "
                              f"{patience} rounds after {halvings} halvings of the step "
                              f"({rnd + 1} {unit_words})")
                    break
                scale, plateau_at = scale * 0.5, rnd + 1  # a plateau: halve the step
                halvings += 1
        if deadline_s is not None and time.monotonic() - t0 > deadline_s:
            status = f"time budget spent ({deadline_s:g} s, {rnd + 1} {unit_words})"
            break
    eta0 = scale * lr / math.sqrt(1.0 + step / per_round)
    anneal = max(1, int(anneal_epochs * per_round))
    avg = np.zeros_like(Z)
    for k in range(anneal):
        idx, m = sampler.draw(rng)
        step += 1
        opt.step(idx, m, eta0 * (1.0 - k / anneal))
        avg[idx] += Z[idx]
    seen = np.linalg.norm(avg, axis=1) > 0
    A = Z.copy()
    A[seen] = _unit_rows(avg[seen])
    last = _losses(Z, mon)
    averaged = _losses(A, mon)
    out, kept = (A, averaged) if averaged.mean() <= last.mean() else (Z, last)
    history.append(float(kept.mean()))
    status += f", then {anneal} annealing steps (step decaying to zero, iterates averaged)"
    spread = float(np.std(kept, ddof=1)) if kept.size > 1 else math.nan
    return StochasticRun(out, step, step / per_epoch, time.monotonic() - t0, tuple(history),
                         status, spread)


@dataclass(frozen=True)
class StepTimes:
    """Seconds of the pieces of an expected-batch solve, timed on a few batches before the
    work (:func:`step_timings`), for its time estimate.

    Attributes
    ----------
    step : float
        One optimiser step: drawing the batch, building its loss, the gradient and the update.
    build : float
        Drawing a batch and building its loss (:func:`batch_function`).
    value : float
        The loss of one embedding on a built batch (no gradient).
    bound_batch : float
        One batch's relaxation bound (its L-BFGS iterations and dual eigenvalue).
    spread : float
        Standard deviation of the batch loss over the timed batches, at the embedding given
        (else at the random start): what sets the batches an evaluation needs.
    bound_gap : float
        The timed batch's relaxation gap (its loss less its bound, nats per batch), at the
        embedding given (else at the random start, where it is large): whether the shared-Gram
        bound is likely drawn (:data:`~dgp.solver._shared_bound.SHARED_WHEN_GAP`).
    """

    step: float
    build: float
    value: float
    bound_batch: float
    spread: float
    bound_gap: float = math.nan


def step_timings(weights: BatchWeights, sampler, spec: BatchSpec, *, tau: float, dim: int,
                 seed: int, at: np.ndarray | None = None, steps: int = 40,
                 bound_iters: int = 100) -> StepTimes:
    """Time ``steps`` optimiser steps (from ``at``, else a random start), as many evaluations
    and one batch's relaxation bound of ``bound_iters`` iterations (stream ``[seed, 6]``,
    which no reported number uses; the bound's iterations do not cost alike, so one whole
    batch is timed)."""
    rng = np.random.default_rng([seed, 6])
    Z = (_unit_rows(rng.standard_normal((weights.n, dim))) if at is None
         else _unit_rows(np.array(at, dtype=float)))
    Z0 = Z.copy()
    opt = _RiemannianAdam(Z, weights, tau, spec)
    opt.step(*sampler.draw(rng), 1e-3)  # first call: imports and caches out of the timing
    t0 = time.perf_counter()
    for _ in range(steps):
        idx, m = sampler.draw(rng)
        opt.step(idx, m, 1e-3)
    step = (time.perf_counter() - t0) / steps
    t0 = time.perf_counter()
    fns = []
    for _ in range(steps):
        idx, m = sampler.draw(rng)
        fns.append((idx, batch_function(weights, idx, m, tau=tau, spec=spec)))
    build = (time.perf_counter() - t0) / steps
    t0 = time.perf_counter()
    vals = [fn.terms(Z0[idx], gradient=False)[0] for idx, fn in fns]
    value = (time.perf_counter() - t0) / steps
    idx, fn = fns[0]
    t0 = time.perf_counter()
    f0, low = _relaxed_batch_bound(Z0[idx], fn, rank=None, iters=bound_iters)
    bound = time.perf_counter() - t0
    return StepTimes(step, build, value, bound, float(np.std(vals, ddof=1)), f0 - low)


# ------------------------------------------------------------------------------ evaluation
@dataclass(frozen=True)
class Estimate:
    """A mean over independent batches with its standard error."""

    mean: float
    se: float
    batches: int
    values: np.ndarray = field(repr=False, compare=False, default=None)

    @property
    def interval(self) -> tuple[float, float]:
        return (self.mean - Z95 * self.se, self.mean + Z95 * self.se)


def evaluate(
    embeddings: list[np.ndarray], weights: BatchWeights, sampler, spec: BatchSpec, *,
    tau: float, seed: int, half_width: float = 0.002, min_batches: int = 200,
    max_batches: int = 20_000, stream: int = 2,
    progress: Callable[[str], None] | None = None,
) -> list[Estimate]:
    """The expected batch loss of each embedding, estimated on the same fresh batches (drawn
    from the stream ``[seed, 2]``, which no optimiser uses), in rounds until the 95% interval
    of every estimate has at most ``half_width`` (or ``max_batches`` are spent). Another
    ``stream`` gives other batches (a selection among runs uses its own). ``progress``: a line
    at most every :data:`PROGRESS_EVERY_S` seconds."""
    rng = np.random.default_rng([seed, stream])
    vals: list[list[float]] = [[] for _ in embeddings]
    want = min_batches
    last_said = time.monotonic()
    while True:
        while len(vals[0]) < want:
            idx, m = sampler.draw(rng)
            fn = batch_function(weights, idx, m, tau=tau, spec=spec)
            for k, Z in enumerate(embeddings):
                vals[k].append(fn.terms(Z[idx], gradient=False)[0])
            if progress is not None and time.monotonic() - last_said >= PROGRESS_EVERY_S:
                last_said = time.monotonic()
                progress(f"held-out evaluation: {len(vals[0])} of {want} fresh batches "
                         f"(at most {max_batches})")
        se = [float(np.std(v, ddof=1) / math.sqrt(len(v))) for v in vals]
        worst = max(se)
        if Z95 * worst <= half_width or want >= max_batches:
            break
        want = min(max_batches, int(want * (Z95 * worst / half_width) ** 2 * 1.1) + 1)
    return [Estimate(float(np.mean(v)), s, len(v), np.array(v))
            for v, s in zip(vals, se, strict=True)]


@dataclass(frozen=True)
class RelaxationBound:
    r"""A lower bound on :math:`\min_Z \mathbb E_b L_b(Z)` (module docstring).

    ``value`` is the one-sided 95% lower confidence limit of
    :math:`\mathbb E_b[\underline L_b]`, where :math:`\underline L_b \le \min_{G_b \in
    \mathcal E} L_b(G_b)` is the dual bound of batch ``b``'s convex problem at an improved
    point; it is estimated as the expected loss of ``embedding`` (from the large evaluation)
    less the mean gap :math:`L_b(Z) - \underline L_b` over further fresh batches (a paired
    difference: its spread is far smaller than the loss's). Where the points are few
    (:func:`dgp.solver._shared_bound.shared_batches` gives ``m > 1``) the limits of the loss
    and of the gaps are each taken at one third of the miss, and where the per-batch gap is
    then loose (a sparse weighting), the shared-Gram bound of ``replicates`` replicates of
    ``m`` batches is drawn too (:mod:`dgp.solver._shared_bound`: the per-batch relaxation is
    its ``m = 1``) and ``value`` is the larger of the two limits: all three hold together at
    ``confidence``.

    Attributes
    ----------
    value : float
    mean_gap : float
        The per-batch relaxation's mean gap.
    gap_se : float
        Its standard error.
    batches : int
        Fresh batches drawn by both bounds.
    confidence : float
    m : int
        Batches of a shared replicate (1: the rule shares none; with ``replicates`` 0, none
        were drawn: the per-batch bound was tight).
    replicates : int
        Shared replicates (0: none).
    shared_gap : float
        Their mean gap (``nan`` without them).
    shared_gap_se : float
    """

    value: float
    mean_gap: float
    gap_se: float
    batches: int
    confidence: float = 0.95
    m: int = 1
    replicates: int = 0
    shared_gap: float = math.nan
    shared_gap_se: float = math.nan


def _relaxed_batch_bound(Zb: np.ndarray, fn: BatchFunction, *, rank: int | None,
                         iters: int) -> tuple[float, float]:
    """(loss of ``Zb``, a certified lower bound on the batch's free-Gram minimum): L-BFGS on a
    factor of rank ``rank`` (``None``: the batch's size, the whole elliptope) from ``Zb``, then
    the better of two dual bounds at the point reached
    (:func:`dgp.solver._shared_bound.dual_bound`, with :func:`_linear_rows`)."""
    u = Zb.shape[0]
    f0, _ = fn.terms(Zb, gradient=False)
    r = u if rank is None else min(u, rank)
    X0 = np.zeros((u, r))
    X0[:, : min(r, Zb.shape[1])] = Zb[:, : min(r, Zb.shape[1])]
    if r > Zb.shape[1]:  # room to leave the dimension: a small seeded push off it
        X0[:, Zb.shape[1]:] = 1e-2 * np.random.default_rng(u).standard_normal(
            (u, r - Zb.shape[1]))
    if Zb.shape[1] > r:  # more coordinates than points: the Gram has rank <= u anyway
        U, s, _ = np.linalg.svd(Zb, full_matrices=False)
        X0 = U[:, :r] * s[:r]

    Z = row_lbfgs(fn.value_grad, X0, iters=iters)
    f = fn.terms(Z, gradient=False)[0]
    if not f <= f0:
        Z, f = Zb, f0
    return f0, dual_bound(Z, f, fn, linear=_linear_rows)


def _linear_rows(C: np.ndarray, Z: np.ndarray) -> np.ndarray:
    """Rows that lower :math:`\\langle C, X X^T\\rangle` (:data:`DUAL_LINEAR_ITERS` L-BFGS
    iterations from ``Z``): the multipliers of :func:`dgp.solver._shared_bound.dual_bound`
    at the batch's linear problem (far tighter than the point's own where the descent has not
    closed: at tau = 0.1, B = 256 the gap of a batch fell from 0.0097 to 0.0053 at 100
    iterations)."""
    return row_lbfgs(lambda X: (float(np.sum((C @ X) * X)), 2.0 * (C @ X)), Z,
                     iters=DUAL_LINEAR_ITERS)




def relaxation_bound(
    Z: np.ndarray, loss: Estimate, weights: BatchWeights, sampler, spec: BatchSpec, *,
    tau: float, seed: int, batches: int = 32, rank: int | None = None, iters: int = 200,
    min_batches: int | None = None, progress: Callable[[str], None] | None = None,
    shared: bool = True,
) -> RelaxationBound:
    """The lower bound of :class:`RelaxationBound` from ``batches`` fresh batches (stream
    ``[seed, 3]``) and the evaluated expected loss ``loss`` of ``Z``: each batch's convex
    problem descended by ``iters`` L-BFGS iterations on a factor of rank ``rank`` (``None``:
    the batch's size; a smaller rank cannot reach a minimiser of higher rank, and its dual
    bound then stays loose: at tau = 0.1, B = 256, d = 128 the rank d + 16 left 0.004 to 0.016
    nats per anchor per batch where the full rank left 0.002), then its dual bound.
    ``min_batches``: stop after that many batches once the gaps' standard error is at most
    :data:`GAP_SE_SHARE` of the loss's (the gaps vary far less than the loss: 2e-5 against
    1e-3 at N = 10 000, B = 256), else go on to ``batches``; ``None``: ``batches`` always.
    Then, for sample-level batches where the rule gives ``m > 1``
    (:func:`dgp.solver._shared_bound.shared_batches`: points few enough that batches overlap)
    and the per-batch gap exceeds :data:`~dgp.solver._shared_bound.SHARED_WHEN_GAP` nats per
    anchor (a sparse weighting, such as a k-NN graph), the shared-Gram bound
    (``shared=False``: never).
    ``progress``: a line at most every :data:`PROGRESS_EVERY_S` seconds."""
    rng = np.random.default_rng([seed, 3])
    gaps: list[float] = []
    last_said = time.monotonic()
    for _ in range(batches):
        idx, m = sampler.draw(rng)
        fn = batch_function(weights, idx, m, tau=tau, spec=spec)
        f0, low = _relaxed_batch_bound(Z[idx], fn, rank=rank, iters=iters)
        gaps.append(f0 - low)
        if progress is not None and time.monotonic() - last_said >= PROGRESS_EVERY_S:
            last_said = time.monotonic()
            progress(f"relaxation bound: {len(gaps)} of at most {batches} batches, mean gap "
                     f"{np.mean(gaps):.3g} per batch")
        if (min_batches is not None and len(gaps) >= max(2, min_batches)
                and np.std(gaps, ddof=1) / math.sqrt(len(gaps)) <= GAP_SE_SHARE * loss.se):
            break
    g = np.array(gaps)
    mean_gap = float(g.mean())
    gap_se = float(g.std(ddof=1) / math.sqrt(g.size)) if g.size > 1 else math.inf
    m = (shared_batches(sampler.n, spec.batch_size)
         if shared and isinstance(sampler, SampleBatches) else 1)
    if m == 1:
        value = loss.mean - mean_gap - Z95_ONE_SIDED * math.hypot(loss.se, gap_se)
        return RelaxationBound(value, mean_gap, gap_se, int(g.size))
    # the limits of the loss and of both gaps each miss with a third of the chance, whether
    # or not the shared replicates are drawn (a choice from the per-batch gap, so the three
    # limits hold together at the confidence either way)
    miss = (1.0 - RelaxationBound.confidence) / 3.0
    z = float(ndtri(1.0 - miss))
    per_batch = loss.mean - z * loss.se - mean_gap - z * gap_se
    if not mean_gap * spec.per_anchor > SHARED_WHEN_GAP:
        return RelaxationBound(per_batch, mean_gap, gap_se, int(g.size), m=m)
    if progress is not None:
        progress(f"shared-Gram bound: {SHARED_REPLICATES} replicates of {m} batches sharing "
                 "one Gram matrix (a sparse weighting: the per-batch bound is loose)")
    sg = shared_gaps(Z, weights, sampler, spec, tau=tau, seed=seed, m=m,
                     replicates=SHARED_REPLICATES, iters=iters, progress=progress)
    shared_gap = float(sg.mean())
    shared_se = float(sg.std(ddof=1) / math.sqrt(sg.size))
    value = max(per_batch, loss.mean - z * loss.se - shared_gap
                - float(stdtrit(sg.size - 1, 1.0 - miss)) * shared_se)
    return RelaxationBound(value, mean_gap, gap_se, int(g.size) + m * int(sg.size), m=m,
                           replicates=int(sg.size), shared_gap=shared_gap,
                           shared_gap_se=shared_se)
