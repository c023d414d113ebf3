r"""The certified solver of row problems (:mod:`dgp.solver._program`) over the elliptope.

Burer–Monteiro: :math:`M = X^\top X` with :math:`X \in \mathbb R^{r \times K}` of unit columns,
a product of spheres. The solver

1. runs L-BFGS on the scaled objective (columns normalised inside the objective) from the best
   of the given starts, in rounds of growing length;
2. after each round polishes to high accuracy: a Riemannian trust region (truncated conjugate
   gradient on the exact Hessian, Steihaug–Toint) at the ranks suggested by the spectrum, and,
   for full-batch class-block problems, Newton's method on the reduced KKT system
   (:math:`S = UU^\top` of rank ``q``, :math:`MU = 0`), whose unknowns are ``K (q + 1)`` numbers
   even when the optimum has rank ``K - 1``;
3. stops as soon as the KKT certificate of :mod:`dgp.solver._kkt`, computed from ``M``
   alone, is below the tolerance, and otherwise returns the best certified point with the
   reason it stopped.

At rank ``r < K`` (a fixed embedding dimension) the same steps give a second-order critical
point of the non-convex problem, certified globally optimal only when its dual matrix is PSD.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from threadpoolctl import ThreadpoolController

from dgp.constants import (
    ARMIJO,
    BM_GTOL,
    CURVATURE_FLOOR,
    LINE_SEARCH_MIN_STEP,
    LINEAR_GTOL,
    ROUNDOFF_RTOL,
    SCALE_FLOOR,
    SOLVER_TOL,
    START_PERTURBATION,
)
from dgp.solver._blockfactor import BlockFactor
from dgp.solver._dual_polish import DualBlocks, dual_ranks, newton_polish, primal_ranks
from dgp.solver._guards import check_solver_tau
from dgp.solver._kkt import KKTCertificate, row_certificate
from dgp.solver._program import RowProblem, ScaleOverflow
from dgp.solver._rowfactor import oblique_hessian
from dgp.solver._trust_region import rtr, unit_columns

__all__ = [
    "SolveResult",
    "bm_lbfgs",
    "bm_lbfgs_linear",
    "factor",
    "frank_wolfe_bound",
    "lbfgs",
    "oblique_hessian",
    "single_threaded",
    "solve_rows",
]


@dataclass(frozen=True, eq=False)
class SolveResult:
    """Outcome of :func:`solve_rows`.

    Attributes
    ----------
    gram : ndarray
        The best point found (exactly PSD with unit diagonal: a Gram of unit vectors).
    certificate : KKTCertificate
        Its certificate.
    stop_reason : str
        Why the solver stopped.
    iterations : int
        L-BFGS iterations plus trust-region steps, over all rounds.
    """

    gram: np.ndarray
    certificate: KKTCertificate
    stop_reason: str
    iterations: int


@functools.cache
def _controller() -> ThreadpoolController:
    # one scan of the loaded BLAS/OpenMP libraries per process: a scan per call (reading
    # /proc/self/maps) cost 1 ms, 14% of a phase-map cell
    return ThreadpoolController()


def single_threaded():
    """One thread for BLAS and OpenMP (a context manager): these solvers work on matrices of at
    most a few thousand rows, where threaded BLAS is barely faster on an idle machine and many
    times slower on a loaded one (measured 2x to 100x on the shared 2-core machines dgp is
    tested on). The libraries are found once per process."""
    return _controller().limit(limits=1)


def factor(G: np.ndarray, r: int) -> np.ndarray:
    """``r x K`` factor of the PSD part of ``G`` (clipped eigenvalues, unit columns)."""
    lam, Q = np.linalg.eigh(0.5 * (G + G.T))
    lam = np.clip(lam, 0.0, None)
    idx = np.argsort(lam)[::-1][:r]
    V = (Q[:, idx] * np.sqrt(lam[idx])).T
    norms = np.linalg.norm(V, axis=0)
    V[:, norms == 0] = 1.0
    return V / np.linalg.norm(V, axis=0)


def lbfgs(
    fun: Callable[[np.ndarray], tuple[float, np.ndarray]],
    x: np.ndarray,
    *,
    maxiter: int,
    gtol: float,
    memory: int = 8,
    precondition: np.ndarray | None = None,
) -> tuple[np.ndarray, int]:
    """Plain L-BFGS (two-loop recursion, Armijo backtracking): O(memory * n) per iteration.

    Returns the last iterate and the number of iterations; stops when ``max |g| <= gtol``, when
    the objective stalls for 5 iterations, when even the shortest step lands where the scaled
    objective overflows (:class:`~dgp.solver._program.ScaleOverflow`: no float step leaves
    ``x``) or after ``maxiter``."""
    f, g = fun(x)
    s_hist: list[np.ndarray] = []
    y_hist: list[np.ndarray] = []
    stall = 0
    it = 0
    for it in range(1, maxiter + 1):
        if float(np.max(np.abs(g))) <= gtol:
            break
        d = -g
        alphas = []
        for s_k, y_k in zip(reversed(s_hist), reversed(y_hist), strict=True):
            a_k = float(s_k @ d) / float(y_k @ s_k)
            alphas.append(a_k)
            d -= a_k * y_k
        if s_hist and precondition is not None:  # initial inverse Hessian gamma P^-1
            y_p = y_hist[-1] / precondition
            d *= float(s_hist[-1] @ y_hist[-1]) / float(y_hist[-1] @ y_p) / precondition
        elif s_hist:
            d *= float(s_hist[-1] @ y_hist[-1]) / float(y_hist[-1] @ y_hist[-1])
        else:
            d /= max(1.0, float(np.linalg.norm(g)))
        for (s_k, y_k), a_k in zip(zip(s_hist, y_hist, strict=True), reversed(alphas), strict=True):
            b_k = float(y_k @ d) / float(y_k @ s_k)
            d += (a_k - b_k) * s_k
        slope = float(g @ d)
        if slope >= 0:  # not a descent direction: restart with steepest descent
            s_hist.clear()
            y_hist.clear()
            d = -g / max(1.0, float(np.linalg.norm(g)))
            slope = float(g @ d)
        step = 1.0
        while True:
            x_new = x + step * d
            try:
                f_new, g_new = fun(x_new)
            except ScaleOverflow:  # far worse than x: a shorter step
                if step < LINE_SEARCH_MIN_STEP:  # no representable step leaves x
                    return x, it
                step *= 0.5
                continue
            if f_new <= f + ARMIJO * step * slope or step < LINE_SEARCH_MIN_STEP:
                break
            step *= 0.5
        s_k, y_k = x_new - x, g_new - g
        s_y = float(np.linalg.norm(s_k)) * float(np.linalg.norm(y_k))
        if float(s_k @ y_k) > CURVATURE_FLOOR * s_y:
            s_hist.append(s_k)
            y_hist.append(y_k)
            if len(s_hist) > memory:
                s_hist.pop(0)
                y_hist.pop(0)
        stall = stall + 1 if f - f_new <= ROUNDOFF_RTOL * max(1.0, abs(f)) else 0
        x, f, g = x_new, f_new, g_new
        if stall >= 5:
            break
    return x, it


def bm_lbfgs(
    prob: RowProblem | BlockFactor, X0: np.ndarray, *, maxiter: int, gtol: float = BM_GTOL,
    memory: int = 8, precondition: bool = False, restart_memory: int | None = None,
    restart_iters: int = 0,
) -> tuple[np.ndarray, int]:
    """L-BFGS on the product of spheres at the rank of ``X0`` (``r x K``, unit columns); returns
    the final factor (unit columns) and the iteration count (over all its descents). ``gtol`` is
    relative to the first gradient. ``precondition`` (a :class:`~dgp.solver.BlockFactor` only)
    scales each column by its curvature at ``X0``
    (:meth:`~dgp.solver.BlockFactor.column_curvature`): class weights that differ by orders of
    magnitude otherwise make L-BFGS crawl.

    The columns are normalised inside the objective, so every step (tangent to the sphere)
    lengthens them, and the gradient L-BFGS sees, in the unnormalised columns, is the
    Riemannian gradient over their lengths: a long descent stops on ``gtol`` where the columns
    have grown, not where the point is stationary (K = 1000, d = 128, tau = 0.1: after 1047
    steps the columns had grown 7e3- to 1e5-fold and the Riemannian gradient was 8e3 times its
    target), with a preconditioner of a point it has left (the columns' curvature had changed
    up to 35-fold). With ``restart_memory``, such a stop is not the end, nor is the end of the
    first descent's ``maxiter`` steps: the descent restarts from the normalised columns with
    that memory, a fresh preconditioner and the iterations left of ``maxiter`` and
    ``restart_iters`` (the restarts' own budget), until the Riemannian gradient itself meets
    the target (or another stop: a stall, an overflow, the iterations). At K = 200, d = 16,
    tau = 0.5 the first 5000 steps end at a relative gradient of 7.7e-4 and a restart reaches
    2.2e-7 in 2000 more. ``None``: one descent, as before."""
    check_solver_tau(prob.tau)  # above 2^53 the loss is flat: nothing to resolve
    r, K = X0.shape
    obj = prob.on_factor()
    evaluate = obj.evaluate

    def fun(v: np.ndarray) -> tuple[float, np.ndarray]:
        V = v.reshape(r, K)
        norms = np.linalg.norm(V, axis=0)
        X = V / norms
        f, Gam = evaluate(X)
        dots = np.sum(X * Gam, axis=0)
        return f, ((Gam - X * dots) / norms).ravel()

    g0 = float(np.max(np.abs(fun(X0.ravel())[1])))
    target = max(gtol * g0, SCALE_FLOOR)
    X, done, mem, budget = X0, 0, memory, maxiter
    while True:
        pre = obj.column_curvature(X) if precondition else None
        if pre is not None:
            pre = np.broadcast_to(pre, (r, K)).ravel()
        budget_was = budget - done
        v, its = lbfgs(fun, X.ravel(), maxiter=budget_was, gtol=target, memory=mem,
                       precondition=pre)
        done += its
        X = unit_columns(v.reshape(r, K))
        if restart_memory is None:
            return X, done
        if budget == maxiter:  # after the first descent: the restarts' own iterations
            budget += restart_iters
        if done >= budget:
            return X, done
        # restart where the descent stopped on the unnormalised gradient or spent its steps,
        # and the Riemannian gradient is above the target (not after a stall or an overflow)
        spent = its == budget_was
        if ((not spent and float(np.max(np.abs(fun(v)[1]))) > target)
                or float(np.max(np.abs(fun(X.ravel())[1]))) <= target):
            return X, done
        mem = restart_memory


def bm_lbfgs_linear(C: np.ndarray, *, rank: int, maxiter: int) -> np.ndarray:
    """An approximate minimiser of the linear problem ``min <C, G>`` over the elliptope (the
    Frank–Wolfe direction), by L-BFGS at rank ``rank`` from a deterministic start."""
    K = C.shape[0]
    r = min(rank, K)
    V0 = np.cos(np.outer(np.arange(1, r + 1), np.arange(K)) * 0.7 + 0.3)
    V0 /= np.linalg.norm(V0, axis=0)
    scale = max(float(np.abs(C).max()), SCALE_FLOOR)
    Cs = C / scale

    def fun(v: np.ndarray) -> tuple[float, np.ndarray]:
        V = v.reshape(r, K)
        norms = np.linalg.norm(V, axis=0)
        X = V / norms
        Gam = 2.0 * (X @ Cs)
        dots = np.sum(X * Gam, axis=0)
        return float(np.sum(X * (X @ Cs))), ((Gam - X * dots) / norms).ravel()

    v, _ = lbfgs(fun, V0.ravel(), maxiter=maxiter, gtol=LINEAR_GTOL)
    X = unit_columns(v.reshape(r, K))
    return X.T @ X


def frank_wolfe_bound(prob: RowProblem, gram: np.ndarray, *, maxiter: int = 300) -> float:
    r"""A certified lower bound (nats) on :math:`\min_{\mathcal E_K} F` from any feasible ``gram``.

    By convexity :math:`F^\star \ge F(G) + \min_{G' \in \mathcal E_K}\langle g, G' - G\rangle`,
    and for every :math:`y`, :math:`\langle g, G'\rangle \ge \sum_c y_c + K\lambda_{\min}(g -
    \operatorname{Diag}(y))` (as :math:`\operatorname{tr}G' = K`). The multipliers ``y`` are taken
    from a Burer–Monteiro solution of the linear problem :math:`\min\langle g, G'\rangle` (the
    Frank–Wolfe direction) and from ``gram`` itself; the larger bound is returned. Whatever the
    quality of that inner solution, the bound is valid: only ``y`` comes from it.
    """
    G = 0.5 * (gram + gram.T)
    K = G.shape[0]
    st = prob.state(G)
    g = prob.gradient(st)
    base = -float(np.sum(g * G))
    best = -math.inf
    G_lin = bm_lbfgs_linear(g, rank=math.ceil(math.sqrt(2 * K)) + 1, maxiter=maxiter)
    for M in (G, G_lin):
        y = np.einsum("ij,ji->i", M, g)
        lam = float(np.linalg.eigvalsh(g - np.diag(y))[0])
        best = max(best, base + float(y.sum()) + K * min(0.0, lam))
    loss = prob.loss(G)[0]
    if best >= 0:
        return loss
    return loss - math.exp(math.log(-best) + math.log(prob.alpha_total) + prob.log_t)


def _full_rank_start(X: np.ndarray) -> np.ndarray:
    """A factor with no zero row: gradient steps never leave the row space of the factor, so a
    start of lower rank than the optimum would be a trap; a small deterministic perturbation
    (:data:`~dgp.constants.START_PERTURBATION` of the column norm) frees it."""
    r, K = X.shape
    if np.linalg.matrix_rank(X) >= r:
        return X
    pattern = np.cos(np.outer(np.arange(1, r + 1), np.arange(K)) * 1.3 + 0.7)
    return unit_columns(X + START_PERTURBATION * pattern)


def _scaled_value(prob: RowProblem, G: np.ndarray) -> float:
    """The scaled objective at ``G``, ``inf`` where it does not fit a float."""
    try:
        return prob.value(prob.state(G))
    except ScaleOverflow:
        return math.inf


def solve_rows(
    prob: RowProblem,
    *,
    starts: list[np.ndarray],
    tol: float = SOLVER_TOL,
    rank: int | None = None,
    rounds: tuple[int, ...] = (60, 400, 4000),
) -> SolveResult:
    """Minimise a row problem over the elliptope (free rank) or over rank ``<= rank``.

    ``starts`` are Gram matrices (the best one, by the scaled objective at the scale it fixes,
    is used). Returns the best point by KKT residual; at a fixed rank the residual measures
    second-order stationarity of the factorised problem and the certificate's dual part tells
    whether the point is also globally optimal.
    """
    check_solver_tau(prob.tau)  # above 2^53 the loss is flat: nothing to resolve
    prob.set_scale(starts[0])  # a common scale to compare the starts
    G0 = min(starts, key=lambda G: _scaled_value(prob, G))
    prob.set_scale(G0)
    K = prob.K
    r = K if rank is None else min(rank, K)
    X = _full_rank_start(factor(G0, r))
    best = X.T @ X
    cert = row_certificate(prob, best, target=tol)
    iters = 0
    reason = f"iteration budget spent (rounds of {', '.join(map(str, rounds))} L-BFGS steps)"
    dual = DualBlocks(prob) if (prob.block is not None and rank is None) else None

    def measure(c: KKTCertificate) -> float:
        # free rank: the full KKT residual; fixed rank: stationarity of the factorised problem
        if rank is None:
            return c.kkt_residual
        return max(c.primal_residual, c.complementarity_residual)

    def consider(G: np.ndarray) -> bool:
        nonlocal best, cert
        try:
            c = row_certificate(prob, G, target=tol)
        except ScaleOverflow:  # a candidate astronomically worse than the best: not taken
            return measure(cert) <= tol
        if measure(c) < measure(cert):
            best, cert = G, c
        return measure(cert) <= tol

    if measure(cert) <= tol:
        return SolveResult(best, cert, "the start satisfies the KKT conditions", 0)
    for maxiter in rounds:
        X, its = bm_lbfgs(prob, X, maxiter=maxiter)
        iters += its
        G = X.T @ X
        if consider(G):
            reason = "KKT residual below tolerance after L-BFGS"
            break
        done = False
        if dual is not None:
            for q in dual_ranks(dual, G):
                if consider(newton_polish(dual, G, q=q)):
                    reason = f"KKT residual below tolerance after Newton (dual rank {q})"
                    done = True
                    break
        if not done:
            ranks = [r] if rank is not None else primal_ranks(G, cap=K)
            for rr in ranks:
                if rr * K > 200_000:
                    continue  # the exact Hessian is too costly; the next L-BFGS round helps
                try:
                    Xr, its = rtr(prob, factor(G, rr))
                except ScaleOverflow:  # the rank-rr truncation of G is already far worse
                    continue
                iters += its
                if consider(Xr.T @ Xr):
                    reason = f"KKT residual below tolerance after trust region (rank {rr})"
                    done = True
                    break
        if done:
            break
    return SolveResult(best, cert, reason, iters)
