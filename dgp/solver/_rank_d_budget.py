r"""The budget of the one rank-``d`` search (:mod:`dgp.solver._policy`), in one place: the
policy a search follows (:class:`RankDPolicy`: moves, iterations, rounds, screening, the
trust region's products), the default number of random candidates, and the cost model the
time guards read (:func:`rank_d_cost`), all from ``K`` and ``dim``."""

from __future__ import annotations

from dataclasses import dataclass

from dgp.constants import (
    RANK_D_EVAL_OVERHEAD,
    RANK_D_FACTOR_MAX_EVALS,
    RANK_D_FACTOR_MIN_EVALS,
    RANK_D_FACTOR_POLISH_INNER,
    RANK_D_FACTOR_POLISH_STEPS,
    RANK_D_FACTOR_RESTART_MAX_EVALS,
    RANK_D_FACTOR_RESTART_MEMORY,
    RANK_D_FACTOR_RESTART_SECONDS,
    RANK_D_FACTOR_SECONDS,
    RANK_D_GEMM_RATE,
    RANK_D_HOP_CLASSES,
    RANK_D_HOP_LENGTHEN_MAX,
    RANK_D_HOP_MAX_SIZE,
    RANK_D_HOP_STALL,
    RANK_D_HOPS,
    RANK_D_LARGE_POLISH_INNER,
    RANK_D_LARGE_ROUNDS,
    RANK_D_LARGE_SIZE,
    RANK_D_LARGE_STARTS,
    RANK_D_MOVE_ITERS,
    RANK_D_PASS_RATE,
    RANK_D_POLISH_INNER,
    RANK_D_POLISH_ITERS,
    RANK_D_POLISH_MAX_PRODUCTS,
    RANK_D_POLISH_MIN_PRODUCTS,
    RANK_D_POLISH_SECONDS,
    RANK_D_PRODUCT_EVALS,
    RANK_D_ROUNDS,
    RANK_D_RUN_ITERS,
    RANK_D_SAMPLED_FROM_ROWS,
    RANK_D_SAMPLED_ROWS,
    RANK_D_SCREEN_POINTS,
    RANK_D_SCREEN_STEPS,
    RANK_D_SECOND_ORDER_MAX_SIZE,
    RANK_D_STARTS,
)

__all__ = ["RankDPolicy", "extrapolated_seconds", "rank_d_cost", "rank_d_policy",
           "rank_d_starts"]


@dataclass(frozen=True)
class RankDPolicy:
    """How one rank-``d`` search is run (chosen by :func:`rank_d_policy` from the problem's
    kind and size; the values are the constants ``RANK_D_*`` of :mod:`dgp.constants`).

    Attributes
    ----------
    hops : int
        Most moves of each candidate's chain.
    stall : int
        The chain ends after this many moves in a row that did not lower its loss.
    run_iters : int
        L-BFGS steps (or, on the factor path, evaluations) of a candidate's first descent.
    move_iters : int
        L-BFGS steps of the descent after a move.
    polish_iters : int
        Trust-region steps of a candidate's polish.
    polish_inner : int
        Inner (truncated CG) steps of each trust-region step.
    rounds : int
        Rounds of L-BFGS and trust region towards the stationarity target.
    precondition : bool
        L-BFGS scaled by the columns' curvature (factor path).
    polish_stall : int or None
        The trust region's stall rule (``None``: none).
    polish_products : int or None
        Hessian-vector products of a polish (``None``: no limit).
    hessian : bool
        The certificate estimates the Riemannian Hessian (second order) by Lanczos where it is
        not small enough to be formed densely.
    screen : int
        Seeded random points of which each random candidate starts from the lowest after
        :attr:`screen_steps` batched L-BFGS steps (:func:`dgp.solver._rank_d_screen
        .screened_start`; ``1``: its one random point, no screening).
    screen_steps : int
        Those batched steps.
    first_order_polish : bool
        The polish aims at the first-order target alone (problems above
        :data:`~dgp.constants.RANK_D_SECOND_ORDER_MAX_SIZE` off the factor path, whose
        certificate judges first order only): a point whose stationarity already meets the
        accepted target gets no trust region (``False``: every point gets it, the second-order
        step of small problems).
    restart_memory : int or None
        A descent that stops on the gradient of its unnormalised columns (which grow with every
        step), or spends :attr:`run_iters`, while the Riemannian gradient is above its target
        restarts from the normalised columns with this L-BFGS memory and a fresh preconditioner
        (:func:`dgp.solver.bm_lbfgs`; the factor path,
        :data:`~dgp.constants.RANK_D_FACTOR_RESTART_MEMORY`); ``None``: it stops there.
    restart_iters : int
        L-BFGS steps (evaluations) of those restarts beyond what is left of :attr:`run_iters`.
    """

    hops: int
    stall: int
    run_iters: int
    move_iters: int
    polish_iters: int
    polish_inner: int
    rounds: int
    precondition: bool = False
    polish_stall: int | None = 3
    polish_products: int | None = None
    hessian: bool = True
    screen: int = 1
    screen_steps: int = 0
    first_order_polish: bool = False
    restart_memory: int | None = None
    restart_iters: int = 0


def _factor_eval_seconds(K: int, dim: int) -> float:
    """The cost model of one factor-path evaluation: two products of dim x K by K x K
    (2 dim K^2 flops each) and about 12 passes over the K x K buffer (2.3 s at K = 10^4,
    dim = 128; measured 1.8 s)."""
    return 4.0 * dim * K * K / RANK_D_GEMM_RATE + 12.0 * K * K / RANK_D_PASS_RATE


def _factor_evals(K: int, dim: int) -> int:
    return int(min(max(RANK_D_FACTOR_SECONDS / _factor_eval_seconds(K, dim),
                       RANK_D_FACTOR_MIN_EVALS), RANK_D_FACTOR_MAX_EVALS))


def _factor_restart_evals(K: int, dim: int) -> int:
    """L-BFGS steps of a factor-path candidate's restarts (beyond its first descent's):
    :data:`~dgp.constants.RANK_D_FACTOR_RESTART_SECONDS` of the cost model, at most
    :data:`~dgp.constants.RANK_D_FACTOR_RESTART_MAX_EVALS`."""
    return int(min(RANK_D_FACTOR_RESTART_SECONDS / _factor_eval_seconds(K, dim),
                   RANK_D_FACTOR_RESTART_MAX_EVALS))


def _factor_products(K: int, dim: int) -> int:
    n = RANK_D_POLISH_SECONDS / (RANK_D_PRODUCT_EVALS * _factor_eval_seconds(K, dim))
    return 0 if n < RANK_D_POLISH_MIN_PRODUCTS else int(min(n, RANK_D_POLISH_MAX_PRODUCTS))


def _chain_length(K: int) -> float:
    """How many times :data:`~dgp.constants.RANK_D_HOPS` moves (and
    :data:`~dgp.constants.RANK_D_HOP_STALL` failures) a chain of ``K`` points makes: 1 up to
    :data:`~dgp.constants.RANK_D_HOP_CLASSES` points, then in proportion to ``K`` (a swap picks
    one of ``K (K - 1) / 2`` pairs), at most :data:`~dgp.constants.RANK_D_HOP_LENGTHEN_MAX`.
    A longer chain makes the same moves first (its generator is the candidate's own), so its
    loss before the polish is never higher."""
    return min(max(K / RANK_D_HOP_CLASSES, 1.0), float(RANK_D_HOP_LENGTHEN_MAX))


def rank_d_policy(K: int, dim: int, *, factor_path: bool = False) -> RankDPolicy:
    """The search policy of a rank-``dim`` problem of ``K`` points: moves for small problems
    (``K * dim`` up to :data:`~dgp.constants.RANK_D_HOP_MAX_SIZE`; chains longer above
    :data:`~dgp.constants.RANK_D_HOP_CLASSES` points), a shorter polish above
    :data:`~dgp.constants.RANK_D_LARGE_SIZE`, a polish to first order alone above
    :data:`~dgp.constants.RANK_D_SECOND_ORDER_MAX_SIZE` (where the certificate judges first
    order only, :attr:`RankDPolicy.first_order_polish`), and on the factor path (many classes,
    :class:`~dgp.solver.BlockFactor`) budgets of evaluations and Hessian-vector products in
    seconds of the cost model, preconditioned, without the stall rule, a descent that restarts
    (:attr:`RankDPolicy.restart_memory`) where its columns' growth stopped it."""
    size = K * dim
    if factor_path:
        products = _factor_products(K, dim)
        return RankDPolicy(
            hops=0, stall=1, run_iters=_factor_evals(K, dim), move_iters=0,
            polish_iters=RANK_D_FACTOR_POLISH_STEPS if products else 0,
            polish_inner=RANK_D_FACTOR_POLISH_INNER, rounds=1, precondition=True,
            polish_stall=None, polish_products=products,
            restart_memory=RANK_D_FACTOR_RESTART_MEMORY,
            restart_iters=_factor_restart_evals(K, dim),
        )
    large = size > RANK_D_LARGE_SIZE
    small = size <= RANK_D_HOP_MAX_SIZE
    length = _chain_length(K)
    return RankDPolicy(
        hops=round(RANK_D_HOPS * length) if small else 0,
        stall=round(RANK_D_HOP_STALL * length),
        run_iters=RANK_D_RUN_ITERS,
        move_iters=RANK_D_MOVE_ITERS, polish_iters=RANK_D_POLISH_ITERS,
        polish_inner=(RANK_D_LARGE_POLISH_INNER if size > RANK_D_SECOND_ORDER_MAX_SIZE
                      else RANK_D_POLISH_INNER),
        rounds=RANK_D_LARGE_ROUNDS if large else RANK_D_ROUNDS,
        hessian=size <= RANK_D_SECOND_ORDER_MAX_SIZE,
        screen=RANK_D_SCREEN_POINTS if small else 1,
        screen_steps=RANK_D_SCREEN_STEPS if small else 0,
        first_order_polish=size > RANK_D_SECOND_ORDER_MAX_SIZE,
    )


def rank_d_starts(K: int, dim: int, *, given: int, factor_path: bool = False) -> int:
    """The default budget: random candidates of a rank-``dim`` search with ``given`` starts.
    :data:`~dgp.constants.RANK_D_STARTS` for small problems (``K * dim`` up to
    :data:`~dgp.constants.RANK_D_HOP_MAX_SIZE`, where candidates make moves),
    and above (and on the factor path: many classes, where one candidate costs minutes) none
    besides a given start, else :data:`~dgp.constants.RANK_D_LARGE_STARTS`."""
    if K * dim <= RANK_D_HOP_MAX_SIZE and not factor_path:
        return RANK_D_STARTS
    return 0 if given else RANK_D_LARGE_STARTS


def rank_d_cost(K: int, dim: int, *, starts: int, given: int, rows: int,
                factor_path: bool = False) -> float:
    """The guard's estimate of a rank-``dim`` search, in operations at 1e9 per second (the unit
    of :func:`~dgp.solver.check_time`): every candidate's descents, moves, polish and rounds, and
    the certificate of the answer. A row-problem evaluation (value, gradient and factor products)
    costs about ``3 rows K + 0.4 dim K^2`` (measured 55 ms on one loaded core at K = 1000,
    dim = 128), and at least :data:`~dgp.constants.RANK_D_EVAL_OVERHEAD` (the interpreter's
    share at small K); a trust-region step about two evaluations per inner step, a round half
    a descent, and the moves' descents stop early (a quarter of their budget on average).
    Measured against it: K = 10, d = 2 (moves) 4 s for an estimate of 25 s; N = 500, d = 8
    (no moves) 8.5 s on a loaded core for 7.6 s."""
    policy = rank_d_policy(K, dim, factor_path=factor_path)
    candidates = max(starts + given, 1)
    if not factor_path and rows >= RANK_D_SAMPLED_FROM_ROWS:
        # two phases (dgp.solver.solve_rank_d): the whole search on a sample of the rows, then
        # every candidate descended, polished and the best certified on all of them, no moves
        sampled = rank_d_cost(K, dim, starts=starts, given=given, rows=RANK_D_SAMPLED_ROWS)
        per_eval = max(3.0 * rows * K + 0.4 * dim * K * K, RANK_D_EVAL_OVERHEAD)
        per_candidate = (policy.run_iters + policy.rounds * policy.run_iters / 2
                         + 2.0 * policy.polish_iters * policy.polish_inner)
        return sampled + per_eval * (candidates * per_candidate + 1000)
    if factor_path:
        evals = (policy.run_iters + policy.restart_iters
                 + RANK_D_PRODUCT_EVALS * (policy.polish_products or 0) + 20)
        seconds = _factor_eval_seconds(K, dim) * evals * candidates
        # the certificate: ~300 Lanczos products and one Cholesky factorisation (K^3 / 3)
        seconds += 300 * 2.0 * K * K / RANK_D_PASS_RATE + K**3 / 3 / RANK_D_GEMM_RATE
        return seconds * 1e9
    per_eval = max(3.0 * rows * K + 0.4 * dim * K * K, RANK_D_EVAL_OVERHEAD)
    per_candidate = (policy.run_iters + policy.hops * policy.move_iters / 4
                     + policy.rounds * policy.run_iters / 2
                     + 2.0 * policy.polish_iters * policy.polish_inner)
    # the screen of a random candidate: about two batched evaluations a step, each the work of
    # its points at once (or the interpreter's floor)
    screen = 2.0 * policy.screen_steps * max(policy.screen * (3.0 * rows * K + 0.4 * dim * K * K),
                                             RANK_D_EVAL_OVERHEAD) if policy.screen > 1 else 0.0
    return per_eval * (candidates * per_candidate + 1000) + starts * screen


def extrapolated_seconds(spent: float, first: float, left: int) -> float:
    """The estimate of a search from timed work, made after its first candidate: the seconds
    ``spent`` so far (the screens of the random starts and the first candidate: measured), and
    the ``first`` candidate's seconds for each of the ``left`` others (candidates of one search
    cost alike, within a factor of about 2 measured at K <= 10, d <= 3). The progress lines say
    it: :func:`rank_d_cost` counts budgets, not expectations (the guard's bound before any work),
    and said 26 s for a 1.8 s search of 6 classes in d = 2, whose descents stop long before
    their budgets."""
    return spent + first * left
