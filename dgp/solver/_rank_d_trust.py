r"""A preconditioned Riemannian trust region for the factor path of the rank-``d`` search (many
classes, :class:`~dgp.solver.BlockFactor`).

The class weights of a long-tailed problem differ by two orders of magnitude (``n_c`` from 500
to 5 at K = 1000), and so do the blocks of the Riemannian Hessian that belong to each column:
an unpreconditioned truncated CG spends its products on the head classes and hardly moves the
tail (measured at K = 1000, d = 128, tau = 0.1: 2600 products took the relative Riemannian
gradient from 2.6e-3 to 1.4e-3). Here each column's tangent is scaled by
:math:`s_c = w_c^{-1/2}` with :math:`w_c` the column's curvature
(:meth:`~dgp.solver.BlockFactor.column_curvature`): the trust region runs on
:math:`\tilde H = DHD`, :math:`\tilde g = Dg` and steps by :math:`\eta = D\tilde\eta` — the
trust region of Absil, Baker and Gallivan (2007) in the metric :math:`\langle\eta,
D^{-2}\eta\rangle` (Manopt's preconditioned ``tCG``). The scaling is per column, so it maps
tangent vectors of the product of spheres to tangent vectors. Measured from the same L-BFGS point
at K = 1000, d = 128, tau = 0.1: 900 products lowered the loss by 0.155 nats (0.112
unpreconditioned), and with at most 50 inner steps 1200 products by 0.245 (0.191 with 1000); on
K = 40, d = 4 it reaches a relative gradient of 1e-8 where the unpreconditioned one stops at
1.5e-7 (``tests/test_rank_d_trust.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from dgp.constants import ROUNDOFF_RTOL, SCALE_FLOOR
from dgp.solver._program import ScaleOverflow

__all__ = ["preconditioned_rtr"]


def _tcg(grad: np.ndarray, hess: Callable[[np.ndarray], np.ndarray], radius: float,
         maxinner: int, scale: float,
         kappa: float = 0.1) -> tuple[np.ndarray, np.ndarray, bool, int]:
    """Steihaug–Toint truncated CG for :math:`\\min \\langle g, e\\rangle + \\langle e,
    He\\rangle/2`, :math:`\\|e\\| \\le` ``radius``; stops when the residual is below
    :math:`\\|g\\|\\min(\\|g\\|/\\nu, \\kappa)` with :math:`\\nu` the gradient's ``scale``
    (superlinear, scale-free). Returns the step, its product with ``H``, whether it ends on the
    boundary and the products taken."""
    eta = np.zeros_like(grad)
    Heta = np.zeros_like(grad)
    r = grad.copy()
    rr = float(np.vdot(r, r))
    r0 = math.sqrt(rr)
    stop = max(r0 * min(r0 / scale, kappa), ROUNDOFF_RTOL * scale)
    delta = -r
    e_e, e_d, d_d = 0.0, 0.0, rr
    for j in range(maxinner):
        Hd = hess(delta)
        dHd = float(np.vdot(delta, Hd))
        alpha = rr / dHd if dHd > 0 else math.inf
        e_e_new = e_e + 2 * alpha * e_d + alpha * alpha * d_d
        if dHd <= 0 or e_e_new >= radius * radius:
            t = (-e_d + math.sqrt(max(e_d * e_d + d_d * (radius * radius - e_e), 0.0))) / d_d
            return eta + t * delta, Heta + t * Hd, True, j + 1
        eta = eta + alpha * delta
        Heta = Heta + alpha * Hd
        e_e = e_e_new
        r = r + alpha * Hd
        rr_new = float(np.vdot(r, r))
        if math.sqrt(rr_new) <= stop:
            return eta, Heta, False, j + 1
        beta = rr_new / rr
        rr = rr_new
        delta = -r + beta * delta
        e_d = beta * (e_d + alpha * d_d)
        d_d = rr + beta * beta * d_d
    return eta, Heta, False, maxinner


def preconditioned_rtr(obj, X: np.ndarray, *, gtol: float, products: int,
                       maxinner: int = 1000) -> tuple[np.ndarray, int]:
    """Riemannian trust region on the product of spheres from ``X`` (``d x K``, unit columns)
    for the factor objective ``obj`` (:class:`~dgp.solver._rowfactor.FactorObjective`),
    preconditioned by its column curvature (module docstring; none where ``obj`` gives none).

    Stops when the relative Riemannian gradient (:meth:`stationarity`) is at most ``gtol``,
    after ``products`` Hessian-vector products in all, or when the region collapses at the
    floating-point floor. Returns the point and the products used."""
    K = X.shape[1]
    f, _ = obj.evaluate(X)
    used = 0
    radius_max = math.pi * math.sqrt(K)
    radius = radius_max / 8
    rejected = 0
    while used < products:
        grad = obj.riemannian_gradient(X)
        scale = obj.gradient_scale(X)
        if float(np.linalg.norm(grad)) <= gtol * scale:
            break
        w = obj.column_curvature(X)
        s = np.ones(K) if w is None else 1.0 / np.sqrt(w)
        s = s / float(np.max(s))  # the largest column keeps its scale
        hess = obj.hessian(X)

        def scaled(v: np.ndarray, hess=hess, s=s) -> np.ndarray:
            return s * hess(s * v)

        g_t = s * grad
        eta_t, Heta_t, hit, taken = _tcg(g_t, scaled, radius, min(maxinner, products - used),
                                         scale)
        used += taken
        eta = s * eta_t
        model = -(float(np.vdot(g_t, eta_t)) + 0.5 * float(np.vdot(eta_t, Heta_t)))
        Y = X + eta
        Y = Y / np.linalg.norm(Y, axis=0)
        try:
            f_new, _ = obj.evaluate(Y)
        except ScaleOverflow:  # far worse than X
            f_new = math.inf
        reg = 1e3 * np.finfo(float).eps * max(1.0, abs(f))
        rho = (f - f_new + reg) / (model + reg) if math.isfinite(f_new) else -math.inf
        if rho < 0.25:
            radius /= 4.0
        elif rho > 0.75 and hit:
            radius = min(2.0 * radius, radius_max)
        if rho > 0.1:
            X, f = Y, f_new
            rejected = 0
        else:
            obj.evaluate(X)  # the state of the kept point
            rejected += 1
            if rejected >= 5 or radius < ROUNDOFF_RTOL * max(radius_max, SCALE_FLOOR):
                break
    return X, used
