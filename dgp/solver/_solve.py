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
    RTR_GTOL,
    SCALE_FLOOR,
    SOLVER_TOL,
    START_PERTURBATION,
    TCG_CURVATURE_FLOOR,
)
from dgp.solver._blockfactor import BlockFactor
from dgp.solver._dual_polish import DualBlocks, dual_ranks, newton_polish, primal_ranks
from dgp.solver._guards import check_solver_tau
from dgp.solver._kkt import KKTCertificate, row_certificate
from dgp.solver._program import RowProblem, ScaleOverflow
from dgp.solver._rowfactor import oblique_hessian

#: a rejected step of :func:`rtr` inside its region is the step the next truncated CG would
#: compute again when its length is below the shrunk radius by this relative margin (the inner
#: iterates grow in norm, Steihaug's theorem; the margin covers the rounding of the recursion
#: that tracks their norm)
RTR_REPEAT_MARGIN = 1e-8

__all__ = [
    "SolveResult",
    "TrustRegionStop",
    "bm_lbfgs",
    "bm_lbfgs_linear",
    "factor",
    "frank_wolfe_bound",
    "lbfgs",
    "oblique_hessian",
    "rtr",
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


def _normalise(V: np.ndarray) -> np.ndarray:
    return V / np.linalg.norm(V, axis=0)


def bm_lbfgs(
    prob: RowProblem | BlockFactor, X0: np.ndarray, *, maxiter: int, gtol: float = BM_GTOL,
    memory: int = 8, precondition: bool = False,
) -> tuple[np.ndarray, int]:
    """L-BFGS on the product of spheres at the rank of ``X0`` (``r x K``, unit columns); returns
    the final factor (unit columns) and the iteration count. ``gtol`` is relative to the first
    gradient. ``precondition`` (a :class:`~dgp.solver.BlockFactor` only) scales each column by
    its curvature at ``X0`` (:meth:`~dgp.solver.BlockFactor.column_curvature`): class weights
    that differ by orders of magnitude otherwise make L-BFGS crawl."""
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
    pre = obj.column_curvature(X0) if precondition else None
    if pre is not None:
        pre = np.broadcast_to(pre, (r, K)).ravel()
    v, its = lbfgs(fun, X0.ravel(), maxiter=maxiter, gtol=max(gtol * g0, SCALE_FLOOR),
                   memory=memory, precondition=pre)
    return _normalise(v.reshape(r, K)), its


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
    X = _normalise(v.reshape(r, K))
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
    return _normalise(X + START_PERTURBATION * pattern)


def _tcg(
    grad, hess, radius: float, maxinner: int, scale: float
) -> tuple[np.ndarray, np.ndarray, bool, int]:
    """Truncated CG (Steihaug–Toint) for ``min <grad, e> + <e, H e>/2`` in a ball; stops when the
    residual is below ``|grad| min(|grad| / scale, 0.1)`` (superlinear, scale-free) or at the
    rounding level ``1e-15 scale``. Returns the step, its product with ``H``, whether it ends on
    the boundary and the number of products taken."""
    eta = np.zeros_like(grad)
    Heta = np.zeros_like(grad)
    r = grad.copy()
    rr = float(np.sum(r * r))
    norm_r0 = math.sqrt(rr)
    delta = -r
    e_e, e_d, d_d = 0.0, 0.0, rr
    floor = 0.0
    for j in range(maxinner):
        Hd = hess(delta)
        dHd = float(np.sum(delta * Hd))
        if j == 0:
            floor = TCG_CURVATURE_FLOOR * abs(dHd) / d_d
        elif abs(dHd) <= floor * d_d:
            # curvature at rounding level: a symmetry direction (rotations of the factor), not
            # negative curvature; stepping to the boundary along it would only add noise
            break
        alpha = rr / dHd if dHd > 0 else math.inf
        e_e_new = e_e + 2 * alpha * e_d + alpha * alpha * d_d
        if dHd <= 0 or e_e_new >= radius * radius:
            tau = (-e_d + math.sqrt(max(e_d * e_d + d_d * (radius * radius - e_e), 0.0))) / d_d
            return eta + tau * delta, Heta + tau * Hd, True, j + 1
        eta = eta + alpha * delta
        Heta = Heta + alpha * Hd
        e_e = e_e_new
        r = r + alpha * Hd
        rr_new = float(np.sum(r * r))
        if math.sqrt(rr_new) <= max(norm_r0 * min(norm_r0 / scale, 0.1), ROUNDOFF_RTOL * scale):
            break
        beta = rr_new / rr
        rr = rr_new
        delta = -r + beta * delta
        e_d = beta * (e_d + alpha * d_d)
        d_d = rr + beta * beta * d_d
    return eta, Heta, False, j + 1


def _scaled_value(prob: RowProblem, G: np.ndarray) -> float:
    """The scaled objective at ``G``, ``inf`` where it does not fit a float."""
    try:
        return prob.value(prob.state(G))
    except ScaleOverflow:
        return math.inf


def _local_model(obj):
    """``X -> (value, Riemannian gradient, hessian)`` at a factor of the factor objective
    ``obj``, ``hessian()`` building the Riemannian Hessian there on demand (a stale state is
    evaluated again)."""

    def at(X):
        f, _ = obj.evaluate(X)
        return f, obj.riemannian_gradient(X), lambda: obj.hessian(X)

    return at


def _column_scaling(obj, X: np.ndarray) -> np.ndarray | None:
    """The preconditioner of :func:`rtr` at ``X``: :math:`s_c = w_c^{-1/2}` of the columns'
    curvature, the largest 1 (that column keeps its scale), or ``None`` where ``obj`` gives no
    curvature."""
    w = obj.column_curvature(X)
    if w is None:
        return None
    s = 1.0 / np.sqrt(w)
    return s / float(np.max(s))


@dataclass(frozen=True)
class TrustRegionStop:
    """When :func:`rtr` stops: the stopping criteria as fields, checked in one place
    (:meth:`reason`, as pymanopt's optimisers check theirs), so that a caller can ask the same
    question of a point before running the trust region at all.

    Attributes
    ----------
    gradient : float
        The Riemannian gradient's norm over the gradient scale at which the point is stationary
        enough (:func:`~dgp.solver.stationarity`'s measure).
    iterations : int
        Most trust-region steps.
    products : int or None
        Most Hessian-vector products in all (``None``: no limit).
    stall : int or None
        Accepted steps in a row that do not halve the gradient (``None``: no such rule).
    rejections : int
        Rejected steps in a row (the floating-point floor of the objective).
    radius : float
        The smallest trust region (a collapsed region stops).
    """

    gradient: float = RTR_GTOL
    iterations: int = 60
    products: int | None = None
    stall: int | None = 3
    rejections: int = 3
    radius: float = ROUNDOFF_RTOL

    def reason(self, *, gradient: float = math.inf, iteration: int = 0, products: int = 0,
               stalled: int = 0, rejected: int = 0, radius: float = math.inf) -> str | None:
        """Why the trust region stops at this state (``gradient`` relative, as the field), or
        ``None`` while it goes on. The gradient comes first: a point already stationary enough
        takes no step.

        >>> TrustRegionStop(gradient=1e-6).reason(gradient=2e-8)
        'stationary'
        >>> TrustRegionStop(gradient=1e-6).reason(gradient=1e-3) is None
        True
        """
        if gradient <= self.gradient:
            return "stationary"
        if iteration >= self.iterations:
            return "iterations"
        if self.products is not None and products >= self.products:
            return "products"
        if rejected >= self.rejections:
            return "rejections"
        if self.stall is not None and stalled >= self.stall:
            return "stall"
        if radius < self.radius:
            return "radius collapsed"
        return None


def rtr(
    prob: RowProblem | BlockFactor,
    X: np.ndarray,
    *,
    maxiter: int = 60,
    gtol: float = RTR_GTOL,
    maxinner: int = 300,
    stall: int | None = 3,
    products: int | None = None,
    precondition: bool = False,
    rejections: int = 3,
) -> tuple[np.ndarray, int]:
    r"""Riemannian trust region on the product of spheres at the rank of ``X``.

    Stops when the Riemannian gradient :math:`2XS` is below ``gtol`` times the size of the
    gradient's parts, when ``stall`` accepted steps in a row no longer halve it (``None``: no
    such rule, for the long descents of flat landscapes, which end in Newton's quadratic regime)
    or ``rejections`` steps in a row are rejected (the floating-point floor; a step where the
    scaled objective overflows is rejected), after ``maxiter`` steps or ``products``
    Hessian-vector products in all (``None``: no limit; the inner solves get what is left), or
    when the trust region collapses: the criteria of :class:`TrustRegionStop`, checked in one
    place before every step. Returns the last accepted point and the number of steps (a point
    already stationary takes none). A step rejected inside the region, where a quarter of the
    radius still holds it, would be computed again to the same vector and rejected again: it is
    counted so (a step, a rejection, its products) without the truncated CG, so the iterates are
    those of the plain algorithm, bit for bit, at less cost (measured at N = 2000, d = 128: one
    of the three steps of a 40 s polish was such a repeat). Raises
    :class:`~dgp.solver._program.ScaleOverflow` when the objective overflows at ``X`` itself.

    ``precondition``: the truncated CG runs in the metric scaled per column by the objective's
    column curvature :math:`w_c` (:meth:`~dgp.solver.BlockFactor.column_curvature`; none where
    it gives ``None``, as a row problem's does): with :math:`s_c = w_c^{-1/2}` (scaled so that the
    largest is 1) it solves the model :math:`\tilde g = Dg`, :math:`\tilde H = DHD` and steps by
    :math:`\eta = D\tilde\eta`, the trust region of Absil, Baker and Gallivan (2007) in the
    metric :math:`\langle\eta, D^{-2}\eta\rangle` (Manopt's preconditioned ``tCG``). The
    scaling is per column, so it maps tangent vectors of the product of spheres to tangent
    vectors. The class weights of a long-tailed problem differ by two orders of magnitude, and so
    do the Hessian's blocks: unpreconditioned, the inner solves spend their products on the head
    classes (measured at K = 1000, d = 128, tau = 0.1 from the same L-BFGS point: 900 products
    lowered the loss by 0.155 nats preconditioned, 0.112 without; on K = 40, d = 4 the
    preconditioned one reaches a relative gradient of 1e-8 where the plain one stops at 1.5e-7,
    ``tests/test_rank_d_trust.py``)."""
    r, K = X.shape
    obj = prob.on_factor()
    at = _local_model(obj)
    f, grad, hessian = at(X)
    scaling = _column_scaling(obj, X) if precondition else None
    scale = obj.gradient_scale(X)
    radius_max = math.pi * math.sqrt(K)
    radius = radius_max / 8
    maxinner = min(max(r * K - K, 1), maxinner)
    stop = TrustRegionStop(gradient=gtol, iterations=maxiter, products=products, stall=stall,
                           rejections=rejections)
    it = stalled = rejected = used = 0

    def stopped() -> bool:
        return stop.reason(gradient=float(np.linalg.norm(grad)) / scale, iteration=it,
                           products=used, stalled=stalled, rejected=rejected,
                           radius=radius) is not None

    def repeats(length: float, hit: bool, limit: int, taken: int, shrink: float) -> None:
        """The rejected interior step again while the region (``shrink`` times smaller each
        time, as the rejection made it) still holds it and the inner budget allows the same
        truncated CG: the same vector, rejected again; counted, not computed."""
        nonlocal it, rejected, used, radius
        while not hit and length * (1.0 + RTR_REPEAT_MARGIN) < radius and not stopped():
            again = maxinner if products is None else min(maxinner, products - used)
            if again < taken or (taken == limit and again != limit):
                return  # a shorter inner solve: not the same step
            it += 1
            used += taken
            rejected += 1
            radius /= shrink

    while not stopped():
        it += 1
        before = radius
        inner = maxinner if products is None else min(maxinner, products - used)
        hess = hessian()
        if scaling is None:
            eta, Heta, hit, taken = _tcg(grad, hess, radius, inner, scale)
            model = -(float(np.sum(grad * eta)) + 0.5 * float(np.sum(eta * Heta)))
            length = float(np.linalg.norm(eta))
        else:
            d = scaling
            g_t = d * grad
            eta_t, Heta_t, hit, taken = _tcg(g_t, lambda v, d=d, h=hess: d * h(d * v), radius,
                                             inner, scale)
            eta = d * eta_t
            model = -(float(np.sum(g_t * eta_t)) + 0.5 * float(np.sum(eta_t * Heta_t)))
            length = float(np.linalg.norm(eta_t))
        used += taken
        X_new = _normalise(X + eta)
        try:
            f_new, grad_new, hessian_new = at(X_new)
        except ScaleOverflow:  # far worse than X: a smaller region
            radius /= 4.0
            rejected += 1
            repeats(length, hit, inner, taken, 4.0)
            continue
        reg = 1e3 * np.finfo(float).eps * max(1.0, abs(f))
        rho = (f - f_new + reg) / (model + reg)
        if rho < 0.25:
            radius /= 4.0
        elif rho > 0.75 and hit:
            radius = min(2.0 * radius, radius_max)
        gn, gn_new = float(np.linalg.norm(grad)), float(np.linalg.norm(grad_new))
        # at the floating-point floor of f, ratios are noise: accept only what shrinks the
        # gradient
        if abs(f - f_new) <= reg and gn_new >= gn:
            rho = 0.0
            radius /= 4.0
        rejected = rejected + 1 if rho <= 0.1 else 0
        if rho > 0.1:
            stalled = 0 if gn_new < 0.5 * gn else stalled + 1
            X, f, grad, hessian = X_new, f_new, grad_new, hessian_new
            if scaling is not None:
                scaling = _column_scaling(obj, X)
        else:
            repeats(length, hit, inner, taken, before / radius)
    return X, it


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
    cert = row_certificate(prob, best)
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
            c = row_certificate(prob, G)
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
