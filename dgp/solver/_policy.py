r"""The one rank-``d`` (fixed-dimension) solver: its search policy, its default budget and its
certificate, for every fixed-dimension solve of dgp (:func:`dgp.optimum` with ``dim``,
:func:`dgp.supcon_prototypes` with ``dim``, the loss floors that go through them).

The problem is Burer–Monteiro at rank ``d`` on the product of spheres,
:math:`\min_{X \in \mathbb R^{d\times K},\ \|x_c\| = 1} F(X^\top X)`, non-convex. The search is
a set of *candidates*, each computed on its own:

* candidate ``j`` of the given starts (the free optimum's top-``d`` factor, a spectral start of
  the weights) and candidate ``i`` of the ``starts`` random ones (unit Gaussian columns drawn
  from ``np.random.default_rng([seed, 1, i])``) is descended by L-BFGS; on small problems
  (``K * d`` up to :data:`~dgp.constants.RANK_D_HOP_MAX_SIZE`) random candidate ``i`` starts
  from the lowest of its own :data:`~dgp.constants.RANK_D_SCREEN_POINTS` points (that one and
  more from ``default_rng([seed, 4, i])``) after a short batched descent of all of them
  (:mod:`dgp.solver._rank_d_screen`: a chain rarely leaves the basin of its first descent);
* then improved by its own deterministic chain of :data:`~dgp.constants.RANK_D_HOPS` moves
  (drawn from ``default_rng([seed, 2, i])``, given starts ``[seed, 3, j]``): two of its points
  exchanged (which class sits where; cheap and known-good) or seeded Gaussian noise, each move
  descended again and kept when its loss is lower; above
  :data:`~dgp.constants.RANK_D_HOP_CLASSES` points the chain lengthens in proportion to their
  number, up to :data:`~dgp.constants.RANK_D_HOP_LENGTHEN_MAX` times (a swap picks one of
  ``K (K - 1) / 2`` pairs: at K = 30, d = 8 chains of 60 moves ended 0.014 nats above the best
  of 256 descents, chains of 120 below it);
* then polished by the Riemannian trust region (rounds of L-BFGS and trust region until its
  stationarity reaches the target; on the factor path, many classes, the trust region is
  preconditioned by the columns' curvature, :func:`~dgp.solver.rtr` with ``precondition``).
  The trust region's stopping criteria are decided in one place (:func:`_polish_stop`, a
  :class:`~dgp.solver._trust_region.TrustRegionStop`) and asked before it runs: on large problems,
  whose certificate judges first order only, a descent that already met the target is not
  polished further.

Given a ``progress`` callable, the search calls it with one line (candidate, phase, seconds,
loss, stationarity) at most every :data:`~dgp.constants.RANK_D_PROGRESS_S` seconds; without
one it prints nothing.

The answer is the candidate of lowest loss (excess over the entropic bound, in nats, computed
at the point's own scale exactly as the results report it; ties go to the earlier candidate).
No candidate depends on another, so a budget of ``s + k`` random starts contains the
computation of ``s``: **the loss never gets worse with a larger budget**, exactly. (A screening
that threw starts away after a few steps is what broke this before: at K = 14, d = 4, 16 starts
beat 256, which beat 64.)

Every result carries :func:`~dgp.solver.rank_d_certificate` of its point (first- and
second-order criticality, and global optimality where the dual matrix is PSD), computed from
the point alone, never from a solver status.

The non-negative (ReLU-head) factors follow the same policy in
:func:`~dgp.solver.nonnegative_factor` (the same budget, seeds and moves).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dgp.constants import (
    RANK_D_GTOL,
    RANK_D_HOP_SIZE,
    RANK_D_PRECONDITIONED_INNER,
    RANK_D_SAMPLED_FROM_ROWS,
    RANK_D_SAMPLED_ROWS,
    RANK_D_SWAP_PERIOD,
    RANK_D_TRUST_REJECTIONS,
    SCALE_FLOOR,
    SOLVER_TOL,
    SPECTRAL_START_PERTURBATION,
)
from dgp.solver._blockfactor import BlockFactor
from dgp.solver._program import RowProblem
from dgp.solver._rank import RankDCertificate, rank_d_certificate, stationarity
from dgp.solver._rank_d_budget import (
    RankDPolicy,
    extrapolated_seconds,
    rank_d_policy,
    rank_d_starts,
)
from dgp.solver._rank_d_screen import screened_start
from dgp.solver._search_clock import SearchClock, watched
from dgp.solver._solve import bm_lbfgs, factor
from dgp.solver._trust_region import TrustRegionStop, rtr
from dgp.tolerance import DEFAULT_POLICY

__all__ = [
    "RankDSolution",
    "rank_d_solve",
    "sampled_rows",
    "solve_rank_d",
    "spectral_start",
]


def spectral_start(weights: np.ndarray, dim: int) -> np.ndarray | None:
    """``dim x K`` unit columns from the top eigenvectors of the symmetrised row-normalised
    weights (similar samples start close); ``None`` when the weights have no off-diagonal
    mass (a class-block quotient of SupCon: the spectrum says nothing)."""
    A = np.array(weights, dtype=float)
    np.fill_diagonal(A, 0.0)
    if not (A > 0).any():
        return None
    P = A / np.maximum(A.sum(axis=1, keepdims=True), SCALE_FLOOR)
    lam, U = np.linalg.eigh(0.5 * (P + P.T))
    V = U[:, ::-1][:, :dim].T * np.sqrt(np.abs(lam[::-1][:dim]))[:, None]
    if V.shape[0] < dim:
        V = np.vstack([V, np.zeros((dim - V.shape[0], V.shape[1]))])
    # a deterministic perturbation: no zero column
    V = V + SPECTRAL_START_PERTURBATION * (np.arange(V.size).reshape(V.shape) % 7 - 3)
    norms = np.linalg.norm(V, axis=0)
    if not (np.isfinite(norms).all() and (norms > 0).all()):
        return None
    return V / norms


@dataclass(frozen=True, eq=False)
class RankDSolution:
    """Outcome of :func:`solve_rank_d`.

    Attributes
    ----------
    factor : ndarray, shape (dim, K)
        The best point found (unit columns); its Gram is :attr:`gram`.
    loss : float
        At :attr:`factor`, in nats, with the scale set at the point (what results report).
    excess_loss : float
        Its excess over the entropic bound (nats).
    log_excess_loss : float
        The natural log of the excess (finite where it underflows).
    certificate : RankDCertificate
        :func:`~dgp.solver.rank_d_certificate` of :attr:`factor`.
    starts : int
        Candidates searched (given and random).
    random_starts : int
        Of which random (the budget).
    candidate_losses : tuple of float
        Each candidate's final loss (nats), given starts first.
    hits : int
        Candidates whose loss is within rounding of the best (how often the basin was found;
        a hint, not a certificate).
    reason : str
        How the point was found.
    candidate_factors : tuple of ndarray
        Each candidate's final point (``dim x K``), in the order of ``candidate_losses``: the
        near-optimal ones tell what the loss pins (:func:`dgp.solver.identifiability_report`).
    cpu_seconds : float
        CPU seconds of the search (:func:`time.process_time`: this process's work, whatever the
        machine's load), its certificate included.
    estimated_cpu_seconds : float
        The search's CPU seconds as estimated after its first candidate
        (:func:`~dgp.solver._rank_d_budget.extrapolated_seconds`: the time spent so far and the
        first candidate's time for each one left; ``nan`` where there was no candidate left to
        estimate).
    """

    factor: np.ndarray
    loss: float
    excess_loss: float
    log_excess_loss: float
    certificate: RankDCertificate
    starts: int
    random_starts: int
    candidate_losses: tuple[float, ...]
    hits: int
    reason: str
    candidate_factors: tuple[np.ndarray, ...] = ()
    cpu_seconds: float = math.nan
    estimated_cpu_seconds: float = math.nan

    @property
    def gram(self) -> np.ndarray:
        return self.factor.T @ self.factor


def _scale_at(prob: RowProblem | BlockFactor, X: np.ndarray) -> None:
    """Fix the objective's scale at ``X`` whatever the previous scale (a row problem's
    ``set_scale`` evaluates its state in the units of the old scale, which overflow where the
    old point was astronomically better: reset to the unit scale first)."""
    if isinstance(prob, RowProblem):
        prob.log_t = 0.0
        prob.set_scale(X.T @ X)
    else:
        prob.set_scale(X)


def _nats(prob: RowProblem | BlockFactor, X: np.ndarray) -> tuple[float, float, float]:
    """``(loss, excess, log_excess)`` at ``X`` with the scale set at ``X``: a function of ``X``
    alone, the same every caller reports."""
    _scale_at(prob, X)
    if isinstance(prob, BlockFactor):
        return prob.loss(X)
    G = X.T @ X
    return prob.loss(G)


def _key(parts: tuple[float, float, float]) -> tuple[float, float]:
    """Order of candidates: the excess (its log, resolved where the loss rounds), then the loss."""
    return (parts[2], parts[0])


def _unit(X: np.ndarray) -> np.ndarray:
    return X / np.linalg.norm(X, axis=0)


def _descend(prob, X0: np.ndarray, iters: int, policy: RankDPolicy,
             clock: SearchClock | None = None) -> np.ndarray:
    _scale_at(prob, X0)
    X, _ = bm_lbfgs(watched(prob, clock), X0, maxiter=iters, gtol=RANK_D_GTOL,
                    precondition=policy.precondition, restart_memory=policy.restart_memory,
                    restart_iters=policy.restart_iters)
    return X


def _move(X: np.ndarray, h: int, rng: np.random.Generator) -> np.ndarray:
    """Move ``h`` of a chain: two points exchanged, or Gaussian noise every
    :data:`~dgp.constants.RANK_D_SWAP_PERIOD`-th move (always noise with two points)."""
    dim, K = X.shape
    if K > 2 and h % RANK_D_SWAP_PERIOD != RANK_D_SWAP_PERIOD - 1:
        i, j = rng.choice(K, size=2, replace=False)
        Y = X.copy()
        Y[:, [i, j]] = X[:, [j, i]]
        return Y
    return _unit(X + RANK_D_HOP_SIZE * rng.standard_normal(X.shape) / math.sqrt(dim))


def _polish_stop(policy: RankDPolicy) -> TrustRegionStop:
    """The stopping criteria of a candidate's trust region, in one place
    (:func:`_trust_region` runs :func:`~dgp.solver.rtr` with them; :func:`_skips_trust_region`
    asks them first): the gradient :data:`~dgp.constants.RANK_D_GTOL`, the policy's steps,
    products and stall rule, and on the factor path (many classes, a product budget) no stall
    rule and :data:`~dgp.constants.RANK_D_TRUST_REJECTIONS` rejected steps."""
    factor = bool(policy.precondition and policy.polish_products)
    return TrustRegionStop(
        gradient=RANK_D_GTOL, iterations=policy.polish_iters, products=policy.polish_products,
        stall=None if factor else policy.polish_stall,
        rejections=RANK_D_TRUST_REJECTIONS if factor else TrustRegionStop.rejections,
    )


def _skips_trust_region(stop: TrustRegionStop, policy: RankDPolicy, res: float,
                        target: float) -> bool:
    """Whether a point of stationarity ``res`` is left as it is: the trust region would stop
    there at once (``stop``), or the policy polishes to first order alone
    (:attr:`RankDPolicy.first_order_polish`: large problems, whose certificate judges first order
    only) and ``res`` already meets the accepted ``target`` the certificate asks for (measured
    at N = 2000, d = 128, tau = 0.5: the descent ended at 1.5e-8, the trust region then spent
    a fifth of the solve's CPU time reaching 7e-15, with the same certificate). Small problems
    always get the trust region: there it is the second-order step the certificate checks."""
    return (not policy.polish_iters or stop.reason(gradient=res) is not None
            or (policy.first_order_polish and res <= target))


def _trust_region(prob, X: np.ndarray, policy: RankDPolicy, stop: TrustRegionStop,
                  clock: SearchClock | None) -> np.ndarray:
    """The trust region of a polish, :func:`~dgp.solver.rtr`, stopped by ``stop``
    (:func:`_polish_stop`): on the factor path (many classes, a product budget) preconditioned
    by the columns' curvature with at most :data:`~dgp.constants.RANK_D_PRECONDITIONED_INNER`
    inner steps (measured at K = 1000, d = 128, tau = 0.1 from the L-BFGS point: 900 products
    lowered the loss by 0.155 nats against 0.112 unpreconditioned, 1200 products by 0.245 with
    at most 50 inner steps, 0.191 with 1000)."""
    factor = bool(policy.precondition and policy.polish_products)
    inner = min(policy.polish_inner, RANK_D_PRECONDITIONED_INNER) if factor else policy.polish_inner
    X, _ = rtr(watched(prob, clock), X, maxiter=stop.iterations, gtol=stop.gradient,
               maxinner=inner, stall=stop.stall, products=stop.products, precondition=factor,
               rejections=stop.rejections)
    return X


def _trust_region_unless_met(prob, X: np.ndarray, policy: RankDPolicy, stop, target: float,
                             clock: SearchClock | None) -> tuple[np.ndarray, float]:
    """``X`` (its scale set) improved by the trust region unless :func:`_skips_trust_region`
    leaves it as it is, and its stationarity."""
    _scale_at(prob, X)
    res = stationarity(prob, X)
    if not _skips_trust_region(stop, policy, res, target):
        X = _trust_region(prob, X, policy, stop, clock)
        res = stationarity(prob, X)
    return X, res


def _polish(prob, X: np.ndarray, policy: RankDPolicy, target: float,
            clock: SearchClock | None = None, candidate: int = 0) -> np.ndarray:
    """Trust region, then rounds of L-BFGS and trust region until the stationarity target;
    each trust region runs unless :func:`_skips_trust_region` says its point is left as it
    is."""
    if clock is not None:
        clock.at(candidate, "trust region")
    stop = _polish_stop(policy)
    X, res = _trust_region_unless_met(prob, X, policy, stop, target, clock)
    best = _key(_nats(prob, X))
    done = 1
    while res > target and done < policy.rounds:
        if clock is not None:
            clock.at(candidate, f"round {done + 1} of {policy.rounds}")
        Y, r = _trust_region_unless_met(prob, _descend(prob, X, policy.run_iters, policy, clock),
                                        policy, stop, target, clock)
        k = _key(_nats(prob, Y))
        if k <= best or r < res:
            X, res, best = Y, r, min(k, best)
        done += 1
    return X


def _candidate(prob, X0: np.ndarray, rng: np.random.Generator, policy: RankDPolicy,
               target: float, clock: SearchClock | None = None,
               index: int = 0) -> tuple[np.ndarray, tuple[float, float, float]]:
    """One candidate: descent, its chain of moves, polish; its point and losses."""
    if clock is not None:
        clock.at(index, "L-BFGS descent")
    X = _descend(prob, _unit(np.asarray(X0, dtype=float)), policy.run_iters, policy, clock)
    parts = _nats(prob, X)
    failed = 0
    for h in range(policy.hops):
        if clock is not None:
            clock.at(index, f"move {h + 1}")
        Y = _descend(prob, _move(X, h, rng), policy.move_iters, policy, clock)
        p = _nats(prob, Y)
        if _key(p) < _key(parts):
            X, parts, failed = Y, p, 0
        else:
            failed += 1
            if failed >= policy.stall:
                break
    X = _polish(prob, X, policy, target, clock, index)
    return X, _nats(prob, X)


def solve_rank_d(
    prob: RowProblem | BlockFactor,
    dim: int,
    *,
    free_gram: np.ndarray | None = None,
    weights: np.ndarray | None = None,
    given: list[np.ndarray] | None = None,
    starts: int | None = None,
    seed: int = 0,
    tol: float,
    policy: RankDPolicy | None = None,
    progress: Callable[[str], None] | None = None,
) -> RankDSolution:
    """The best rank-``dim`` point of ``prob`` found by the search of the module docstring.

    Parameters
    ----------
    prob : RowProblem or BlockFactor
        The problem (a :class:`~dgp.solver.BlockFactor` works on the factor: many classes).
    dim : int
    free_gram : ndarray, optional
        The free-dimension optimum: its top-``dim`` factor is the first given start.
    weights : ndarray, optional
        The (quotient) weights: their spectral start is given when they have cross mass.
    given : list of ndarray, optional
        Further given starts (``dim x K``), after those two.
    starts : int, optional
        Random candidates; ``None``: the default budget (:func:`rank_d_starts`).
    seed : int
        Seed of the random candidates and of every chain of moves.
    tol : float
        The solver's target; a candidate's rounds stop at the accepted stationarity
        (:meth:`dgp.tolerance.Tolerance.accepts`).
    policy : RankDPolicy, optional
        ``None``: :func:`rank_d_policy` of the problem.
    progress : callable, optional
        Called with one line of text (the candidate, its phase, the time spent, the loss and
        the stationarity) at most every :data:`~dgp.constants.RANK_D_PROGRESS_S` seconds while
        the search runs; ``None`` (the default): silent. The solver prints nothing itself.

    Returns
    -------
    RankDSolution
        With the :func:`~dgp.solver.rank_d_certificate` of its point.
    """
    cpu_start = time.process_time()
    if (isinstance(prob, RowProblem) and policy is None
            and prob.anchor.size >= RANK_D_SAMPLED_FROM_ROWS):
        found, reason = _sampled_then_all_rows(prob, dim, free_gram=free_gram, weights=weights,
                                               given=given, starts=starts, seed=seed, tol=tol,
                                               progress=progress)
    else:
        found = _search(prob, dim, free_gram=free_gram, weights=weights, given=given,
                        starts=starts, seed=seed, tol=tol, policy=policy, progress=progress)
        reason = (f"best of {found.starts} candidates ({found.random} seeded random, "
                  f"{found.starts - found.random} given{found.how}, polished by the trust "
                  f"region; {found.hits} reached the best)")
    X, parts = found.factors[found.chosen], found.losses[found.chosen]
    _scale_at(prob, X)
    if found.clock is not None:
        found.clock.at(found.chosen, "certificate of the best")
    cert = rank_d_certificate(watched(prob, found.clock), X, tol=tol, seed=seed,
                              hessian=found.policy.hessian)
    return RankDSolution(
        factor=X, loss=parts[0], excess_loss=parts[1], log_excess_loss=parts[2],
        certificate=cert, starts=found.starts, random_starts=found.random,
        candidate_losses=tuple(p[0] for p in found.losses), hits=found.hits, reason=reason,
        candidate_factors=found.factors, cpu_seconds=time.process_time() - cpu_start,
        estimated_cpu_seconds=found.estimate,
    )


@dataclass(frozen=True)
class _Found:
    """The candidates of one search (:func:`_search`), before any certificate: each one's final
    point and ``(loss, excess, log excess)``, the best's index, how many candidates and of which
    random, how many reached the best, the estimate after the first, the policy, the clock, and
    how the random ones were made and improved (for the reason)."""

    factors: tuple[np.ndarray, ...]
    losses: tuple[tuple[float, float, float], ...]
    chosen: int
    starts: int
    random: int
    hits: int
    estimate: float
    policy: RankDPolicy
    clock: SearchClock | None
    how: str


def _search(prob, dim: int, *, free_gram, weights, given, starts, seed: int, tol: float,
            policy: RankDPolicy | None, progress) -> _Found:
    """The candidates of the search of the module docstring (no certificate: the caller
    certifies the best, on the problem it answers)."""
    cpu_start = time.process_time()
    K = prob.K
    factor_path = isinstance(prob, BlockFactor)
    pool = []
    if free_gram is not None:
        pool.append(factor(free_gram, dim))
    if weights is not None:
        spec = spectral_start(weights, dim)
        if spec is not None:
            pool.append(spec)
    pool += [np.asarray(X, dtype=float) for X in (given or [])]
    if starts is None:
        starts = rank_d_starts(K, dim, given=len(pool), factor_path=factor_path)
    if policy is None:
        policy = rank_d_policy(K, dim, factor_path=factor_path)
    target = max(DEFAULT_POLICY.accept_factor * tol, DEFAULT_POLICY.accept_floor)
    jobs = [(X0, np.random.default_rng([seed, 3, j])) for j, X0 in enumerate(pool)]
    # screened on full-batch problems only (one row per class: constants.py says why)
    screen = policy.screen > 1 and isinstance(prob, RowProblem) and prob.anchor.size <= K
    for i in range(starts):
        X0 = np.random.default_rng([seed, 1, i]).standard_normal((dim, K))
        if screen:
            # the candidate's own points: the first is X0, the others seeded by its index
            more = np.random.default_rng([seed, 4, i]).standard_normal(
                (policy.screen - 1, dim, K))
            X0 = screened_start(prob, np.concatenate([X0[None], more]), policy.screen_steps)
        jobs.append((X0, np.random.default_rng([seed, 2, i])))
    if not jobs:  # no budget and nothing given: one random candidate all the same
        jobs.append((np.random.default_rng([seed, 1, 0]).standard_normal((dim, K)),
                     np.random.default_rng([seed, 2, 0])))
    clock = None if progress is None else SearchClock(progress, len(jobs), target)
    chosen = 0
    losses = []
    factors = []
    estimate = math.nan
    for index, (X0, rng) in enumerate(jobs):
        began = time.process_time()
        X, parts = _candidate(prob, X0, rng, policy, target, clock, index)
        if index == 0 and len(jobs) > 1:
            now = time.process_time()
            estimate = extrapolated_seconds(now - cpu_start, now - began, len(jobs) - 1)
            if clock is not None:
                clock.estimate = estimate
        losses.append(parts)
        factors.append(X)
        if _key(parts) < _key(losses[chosen]):
            chosen = index
    best = losses[chosen][0]
    spread = max(abs(best), 1.0) * 1e3 * np.finfo(float).eps
    moves = f", each improved by {policy.hops} moves (swaps and noise)" if policy.hops else ""
    screened = (f", each random one the lowest of {policy.screen} seeded points after "
                f"{policy.screen_steps} batched L-BFGS steps" if screen else "")
    return _Found(factors=tuple(factors), losses=tuple(losses), chosen=chosen,
                  starts=len(jobs), random=len(jobs) - len(pool),
                  hits=sum(1 for p in losses if p[0] <= best + spread), estimate=estimate,
                  policy=policy, clock=clock,
                  how=f"{screened}; each descended by L-BFGS{moves}")


def sampled_rows(prob: RowProblem, rows: int, seed: int) -> RowProblem:
    """``rows`` rows of ``prob`` drawn with replacement by their weight (stream ``[seed, 11]``),
    each weighing the same, ``alpha_total / rows`` per draw: an unbiased sample of its loss,
    with the same total weight (so its losses read in the same units)."""
    rng = np.random.default_rng([seed, 11])
    idx = rng.choice(prob.anchor.size, size=rows, replace=True, p=prob.alpha_hat)
    idx, counts = np.unique(idx, return_counts=True)
    return RowProblem(tau=prob.tau, anchor=prob.anchor[idx],
                      alpha=counts * (prob.alpha_total / rows), log_mu=prob.log_mu[idx],
                      target=prob.P[idx])


def _sampled_then_all_rows(prob: RowProblem, dim: int, *, free_gram, weights, given, starts,
                           seed: int, tol: float, progress) -> tuple[_Found, str]:
    """The search of a row problem of many rows (:data:`~dgp.constants.RANK_D_SAMPLED_FROM_ROWS`
    or more): the whole search (its given starts, random candidates and moves) on
    :data:`~dgp.constants.RANK_D_SAMPLED_ROWS` rows drawn by their weight
    (:func:`sampled_rows`), then every candidate it found descended and polished on all the
    rows without moves (the sample's best is never certified: only the best on all the rows
    is, by :func:`solve_rank_d`). A larger budget still contains a smaller one's candidates
    (the sample depends on ``seed`` alone), so its answer is never worse. Returns the
    candidates on all the rows and how they were found."""
    sample = sampled_rows(prob, RANK_D_SAMPLED_ROWS, seed)
    first = _search(sample, dim, free_gram=free_gram, weights=weights, given=given,
                    starts=starts, seed=seed, tol=tol, policy=None, progress=progress)
    polish = dataclasses.replace(rank_d_policy(prob.K, dim), hops=0, screen=1, screen_steps=0)
    found = _search(prob, dim, free_gram=None, weights=None, given=list(first.factors),
                    starts=0, seed=seed, tol=tol, policy=polish, progress=progress)
    found = dataclasses.replace(found, random=first.random)
    return found, (f"best of the {first.starts} candidates ({first.random} seeded random, "
                   f"{first.starts - first.random} given{first.how}) of a search on "
                   f"{RANK_D_SAMPLED_ROWS} of its {prob.anchor.size} rows drawn by their "
                   f"weight, each then descended by L-BFGS and polished by the trust region on "
                   f"all the rows; {found.hits} reached the best")


def rank_d_solve(
    prob: RowProblem,
    dim: int,
    *,
    starts: list[np.ndarray],
    n_random: int,
    seed: int,
    tol: float = SOLVER_TOL,
) -> tuple[np.ndarray, int, str]:
    """:func:`solve_rank_d` from the given ``starts`` and ``n_random`` random candidates.
    Returns the Gram, the number of candidates and how the point was found."""
    out = solve_rank_d(prob, dim, given=starts, starts=n_random, seed=seed, tol=tol)
    return out.gram, out.starts, out.reason
