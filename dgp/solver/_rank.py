r"""The optimum in a fixed dimension ``d``: Burer–Monteiro at rank ``d`` on the product of spheres
(the oblique manifold).

.. math::

    \min_{X \in \mathbb R^{d \times K},\ \|x_c\| = 1} F(X^\top X)

is non-convex; it is searched by :func:`dgp.solver.solve_rank_d` (the one search policy,
:mod:`dgp.solver._policy`). The certificate of a
point comes from its dual matrix
:math:`S = \nabla F - \operatorname{Diag}(\operatorname{diag}(G\nabla F))`: if :math:`S \succeq 0`
the point is globally optimal for the convex problem over all Gram matrices (so for every
dimension); otherwise :math:`F(G) - K\max(0, -\lambda_{\min}(S))` (with the scaling undone) is a
lower bound on the convex optimum, and the reported gap is the distance to the best lower bound
known (theorem ``rank-d-certificate``).

:func:`rank_d_certificate` adds the local certificates of the factorised problem itself: the
norm of the Riemannian gradient (first order) and the smallest eigenvalue of the Riemannian
Hessian (second order; the rotations of the factor are exact zeros), computed densely for small
problems and by Lanczos on the Hessian-vector product otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import scipy.sparse.linalg as spla

from dgp.constants import (
    HESSIAN_DENSE_MAX,
    HESSIAN_EIG_MAXITER,
    HESSIAN_EIG_RTOL,
    RANK_D_HESSIAN_RTOL,
    SCALE_FLOOR,
)
from dgp.errors import SolverError
from dgp.records import CertificateProtocol
from dgp.solver._blockfactor import BlockFactor
from dgp.solver._program import RowProblem
from dgp.solver._solve import factor
from dgp.tolerance import DEFAULT_POLICY, Margin

#: Lanczos vectors of the estimates of the Riemannian Hessian's extreme eigenvalues: its
#: spectrum crowds at zero (the rotations of the factor and the soft directions of small
#: classes), where 24 vectors did not converge in :data:`~dgp.constants.HESSIAN_EIG_MAXITER`
#: restarts at K = 400, dim = 128 and 80 did (about 2000 products)
HESSIAN_LANCZOS_VECTORS = 80
#: at most this many bytes of Lanczos vectors (fewer vectors for the largest tangent spaces,
#: never fewer than :data:`HESSIAN_LANCZOS_MIN_VECTORS`)
HESSIAN_LANCZOS_BYTES = 2**28
HESSIAN_LANCZOS_MIN_VECTORS = 24

__all__ = [
    "RankDCertificate",
    "rank_d_certificate",
    "set_factor_scale",
    "stationarity",
    "truncate",
]


def stationarity(prob: RowProblem | BlockFactor, X: np.ndarray) -> float:
    r"""The first-order residual of a factor: the norm of the Riemannian gradient
    :math:`2(Xg - X\operatorname{Diag}y)` over the size :math:`\nu` of the scaled gradient's
    parts (the scale of :func:`~dgp.solver.rtr`'s stopping rule; dimensionless)."""
    return prob.on_factor().stationarity(X)


def set_factor_scale(prob: RowProblem | BlockFactor, X: np.ndarray) -> None:
    r"""Fix the objective's scale :math:`\log t` at the factor ``X`` (the ``set_scale`` of its
    factor objective: a row problem reads the Gram of ``X``)."""
    prob.on_factor().set_scale(X)


@dataclass(frozen=True)
class RankDCertificate(CertificateProtocol):
    """Local (and, where the dual is PSD, global) certificate of a rank-``d`` point
    :math:`G = X^\\top X` of :math:`\\min F` over unit vectors in :math:`\\mathbb R^d`.

    Attributes
    ----------
    dim : int
        The dimension ``d`` (rows of the factor).
    gradient_norm : float
        :func:`stationarity`: Riemannian gradient norm over the gradient scale.
    first_order_tol : float
        The largest ``gradient_norm`` accepted (:meth:`dgp.tolerance.Tolerance.accepts` of the
        solver's target).
    hessian_min_eig : float
        Smallest eigenvalue of the Riemannian Hessian over its largest (``nan`` where the
        Lanczos estimate did not converge).
    hessian_max_eig : float
        Largest eigenvalue of the Riemannian Hessian (scaled objective).
    second_order_tol : float
        ``hessian_min_eig >= -second_order_tol`` makes the point second-order critical.
    hessian_method : str
        ``"dense"`` (exact eigenvalues), ``"lanczos"``, or ``"skipped (not first-order
        critical)"`` or ``"skipped (above the size of the second-order check)"`` (then both
        eigenvalues are ``nan``).
    first_order : bool
    second_order : bool
        Whether the two conditions hold (second order: also that the estimate converged).
    dual_min_eig : float
        :math:`\\lambda_{\\min}(S)/\\nu` of the KKT certificate: at least minus the acceptance
        tolerance proves the point globally optimal in every dimension.
    global_optimal : bool
    """

    dim: int
    gradient_norm: float
    first_order_tol: float
    hessian_min_eig: float
    hessian_max_eig: float
    second_order_tol: float
    hessian_method: str
    first_order: bool
    second_order: bool
    dual_min_eig: float
    global_optimal: bool

    kind: ClassVar[str] = "rank-d"
    statement: ClassVar[str] = (
        "X (d x K, unit columns) is first-order critical for min F(X^T X) when the Riemannian "
        "gradient 2 X (g - Diag(y)) is at most first_order_tol of the gradient scale, and "
        "second-order critical when the Riemannian Hessian's smallest eigenvalue is at least "
        "-second_order_tol of its largest (rotations of X give exact zeros); it is globally "
        "optimal, in every dimension, when the dual S = g - Diag(diag(G g)) is PSD"
    )

    @property
    def certified(self) -> bool:
        """What the certificate concludes, as every certificate block says it: the point is
        globally optimal (the dual is PSD). A first- or second-order critical point is not
        certified; :attr:`first_order` and :attr:`second_order` say how far it got."""
        return bool(self.global_optimal)

    @property
    def margins(self) -> tuple[Margin, ...]:
        """The two decisive comparisons (each against zero)."""
        return (
            Margin("first_order_tol - gradient_norm", self.first_order_tol - self.gradient_norm,
                   self.first_order_tol, False),
            Margin("hessian_min_eig + second_order_tol",
                   self.hessian_min_eig + self.second_order_tol, self.second_order_tol, False),
        )

    def claims(self) -> Iterator[tuple[str, bool]]:
        yield ("first_order is gradient_norm <= first_order_tol",
               self.first_order == (self.gradient_norm <= self.first_order_tol))
        yield ("second_order is hessian_min_eig >= -second_order_tol",
               self.second_order == (math.isfinite(self.hessian_min_eig)
                                     and self.hessian_min_eig >= -self.second_order_tol))
        yield ("global_optimal is dual_min_eig >= -first_order_tol",
               self.global_optimal == (self.dual_min_eig >= -self.first_order_tol))


def _hessian_extremes(prob: RowProblem | BlockFactor, X: np.ndarray,
                      seed: int) -> tuple[float, float, str]:
    """Smallest and largest eigenvalue of the projected Riemannian Hessian ``P H P`` (the
    normal directions add zeros, which the rotations of ``X`` give anyway)."""
    r, K = X.shape
    hess = prob.on_factor().hessian(X)

    def proj(Z: np.ndarray) -> np.ndarray:
        return Z - X * np.sum(X * Z, axis=0)

    def apply(v: np.ndarray) -> np.ndarray:
        return hess(proj(v.reshape(r, K))).ravel()

    n = r * K
    if n <= HESSIAN_DENSE_MAX:
        H = np.column_stack([apply(e) for e in np.eye(n)])
        if not np.isfinite(H).all():  # the scaled objective overflowed at this point
            raise SolverError("the Riemannian Hessian of the rank-d point is not finite (its "
                              "scaled objective overflowed)")
        lam = np.linalg.eigvalsh(0.5 * (H + H.T))
        return float(lam[0]), float(lam[-1]), "dense"
    v0 = np.random.default_rng(seed).standard_normal(n)
    op = spla.LinearOperator((n, n), matvec=apply, dtype=float)
    top = _largest(op, v0)
    if not math.isfinite(top):
        return math.nan, math.nan, "lanczos"
    shift = max(top, SCALE_FLOOR)
    flipped = spla.LinearOperator((n, n), matvec=lambda v: shift * v - apply(v), dtype=float)
    low = shift - _largest(flipped, v0)
    return low, top, "lanczos"


def _largest(op: spla.LinearOperator, v0: np.ndarray) -> float:
    """Largest eigenvalue of a symmetric operator by Lanczos (``nan`` if it does not converge);
    the value is away from zero in both uses, so the relative accuracy is meaningful."""
    n = op.shape[0]
    ncv = max(HESSIAN_LANCZOS_MIN_VECTORS, min(HESSIAN_LANCZOS_VECTORS,
                                               HESSIAN_LANCZOS_BYTES // (8 * n)))
    try:
        lam = spla.eigsh(op, k=1, which="LA", v0=v0, tol=HESSIAN_EIG_RTOL,
                         maxiter=HESSIAN_EIG_MAXITER, ncv=min(n, ncv),
                         return_eigenvectors=False)
    except spla.ArpackNoConvergence as exc:
        lam = exc.eigenvalues
    return float(lam[0]) if len(lam) else math.nan


def rank_d_certificate(prob: RowProblem | BlockFactor, X: np.ndarray, *, tol: float,
                       seed: int = 0, hessian: bool = True) -> RankDCertificate:
    """The :class:`RankDCertificate` of the factor ``X`` (``d x K``, unit columns) for ``prob``
    at its current scale; ``tol`` is the solver's target (accepted as
    :meth:`dgp.tolerance.Tolerance.accepts` does) and ``seed`` seeds the Lanczos start.
    ``hessian=False`` skips the Lanczos estimate of the Riemannian Hessian above
    :data:`~dgp.constants.HESSIAN_DENSE_MAX` (the dense one is always computed): the point is
    then not claimed second-order critical."""
    X = X / np.linalg.norm(X, axis=0)
    accept = max(DEFAULT_POLICY.accept_factor * tol, DEFAULT_POLICY.accept_floor)
    grad = stationarity(prob, X)
    if grad <= accept and (hessian or X.size <= HESSIAN_DENSE_MAX):
        low, top, how = _hessian_extremes(prob, X, seed)
    elif grad <= accept:
        low, top, how = math.nan, math.nan, "skipped (above the size of the second-order check)"
    else:  # the Hessian says nothing about a point that is not stationary
        low, top, how = math.nan, math.nan, "skipped (not first-order critical)"
    rel = low / max(abs(top), SCALE_FLOOR) if math.isfinite(low) else math.nan
    # a row problem's exact lambda_min(S); a BlockFactor's certified floor (no K x K eigensolve)
    dual = prob.on_factor().dual_min_eig(X, seed=seed)[0]
    return RankDCertificate(
        dim=int(X.shape[0]), gradient_norm=grad, first_order_tol=accept,
        hessian_min_eig=rel, hessian_max_eig=top, second_order_tol=RANK_D_HESSIAN_RTOL,
        hessian_method=how, first_order=grad <= accept,
        second_order=bool(math.isfinite(rel) and rel >= -RANK_D_HESSIAN_RTOL),
        dual_min_eig=dual, global_optimal=dual >= -accept,
    )


def truncate(G: np.ndarray, dim: int) -> np.ndarray:
    """The top-``dim`` factor of a Gram, columns renormalised (a start at rank ``dim``)."""
    return factor(G, dim)
