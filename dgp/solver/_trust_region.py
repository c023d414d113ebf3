r"""The Riemannian trust region of the rank-``r`` factor objectives: truncated conjugate
gradient on the exact Hessian (Steihaug–Toint), optionally preconditioned by the columns'
curvature, with its stopping criteria as the fields of one :class:`TrustRegionStop` (the polish
of :func:`dgp.solver.solve_rows` and of the rank-d search, :mod:`dgp.solver._policy`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dgp.constants import ROUNDOFF_RTOL, RTR_GTOL, TCG_CURVATURE_FLOOR
from dgp.solver._blockfactor import BlockFactor
from dgp.solver._program import RowProblem, ScaleOverflow

__all__ = ["RTR_REPEAT_MARGIN", "TrustRegionStop", "rtr", "unit_columns"]

#: a rejected step of :func:`rtr` inside its region is the step the next truncated CG would
#: compute again when its length is below the shrunk radius by this relative margin (the inner
#: iterates grow in norm, Steihaug's theorem; the margin covers the rounding of the recursion
#: that tracks their norm)
RTR_REPEAT_MARGIN = 1e-8


def unit_columns(V: np.ndarray) -> np.ndarray:
    """``V`` with each column scaled to unit norm (a point of the product of spheres)."""
    return V / np.linalg.norm(V, axis=0)


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
        X_new = unit_columns(X + eta)
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
