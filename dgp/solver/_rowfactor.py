r"""The factor-objective protocol: a problem seen through a factor ``X`` (``r x K``, unit columns)
of its Gram :math:`G = X^\top X`, the one interface the factor solvers of
:mod:`dgp.solver._solve` and :mod:`dgp.solver._rank` call.

Two classes implement it: :class:`~dgp.solver.BlockFactor` (the class-block objective of many
classes, evaluated on the factor without ``K x K`` tables) and :class:`RowFactor` (any
:class:`~dgp.solver.RowProblem`, through its Gram). Every method takes the factor; a problem
hands out its factor objective by ``on_factor()`` (a :class:`~dgp.solver.BlockFactor` is its own).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from dgp.constants import SCALE_FLOOR
from dgp.solver._kkt import row_certificate
from dgp.solver._program import RowProblem

__all__ = ["FactorObjective", "RowFactor", "oblique_hessian"]


class FactorObjective(Protocol):
    """What the factor solvers read of a problem, each at a factor ``X`` (unit columns)."""

    K: int
    tau: float

    def set_scale(self, X: np.ndarray) -> float:
        """Fix the objective's scale :math:`\\log t` at ``X``; returns it."""

    def evaluate(self, X: np.ndarray) -> tuple[float, np.ndarray]:
        """The scaled objective and its Euclidean gradient :math:`2Xg` in ``X``."""

    def riemannian_gradient(self, X: np.ndarray) -> np.ndarray:
        """The Euclidean gradient projected on the tangent space of the product of spheres."""

    def gradient_scale(self, X: np.ndarray) -> float:
        """The size of the scaled gradient's parts (the scale of the stopping rules)."""

    def stationarity(self, X: np.ndarray) -> float:
        """The Riemannian gradient's norm over :meth:`gradient_scale`."""

    def hessian(self, X: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        """The Riemannian Hessian at ``X`` as a map of tangent vectors."""

    def column_curvature(self, X: np.ndarray) -> np.ndarray | None:
        """A positive curvature scale of each column (L-BFGS's preconditioner), or ``None``."""

    def dual_min_eig(self, X: np.ndarray, seed: int = 0) -> tuple[float, float]:
        """A lower bound on :math:`\\lambda_{\\min}(S)/\\nu` of the dual matrix and the estimate
        it came from."""

    def on_factor(self) -> FactorObjective:
        """The factor objective itself."""


def _proj(X: np.ndarray, Z: np.ndarray) -> np.ndarray:
    return Z - X * np.sum(X * Z, axis=0)


def oblique_hessian(prob: RowProblem, X: np.ndarray, st, g: np.ndarray, y: np.ndarray):
    r"""The Riemannian Hessian of :math:`X \mapsto \hat F(X^\top X)` on the product of spheres at
    ``X`` (``r x K``, unit columns), as a map of tangent vectors ``xi`` (``r x K``, each column
    orthogonal to that of ``X``): :math:`\operatorname{Proj}_X\big(2\,\xi(g -
    \operatorname{Diag} y) + 2X\,\nabla^2\hat F[\xi^\top X + X^\top\xi]\big)` with ``st``,
    ``g`` the state and scaled gradient at :math:`X^\top X` and :math:`y = \operatorname{diag}
    (X^\top X g)`."""

    def hess(xi: np.ndarray) -> np.ndarray:
        Gd = xi.T @ X
        Gd = Gd + Gd.T
        np.fill_diagonal(Gd, 0.0)
        return _proj(X, 2.0 * (xi @ g - xi * y) + 2.0 * (X @ prob.hvp(st, Gd)))

    return hess


class RowFactor:
    """A :class:`~dgp.solver.RowProblem` on the factor (:class:`FactorObjective`): each method
    forms the Gram of ``X``; the state of the last factor is kept (keyed by the factor object and
    the problem's scale), so that value, gradient and Hessian at one point cost one state."""

    def __init__(self, prob: RowProblem) -> None:
        self.prob = prob
        self.K, self.tau = prob.K, prob.tau
        self._key: tuple[np.ndarray, float] | None = None
        self._cache: tuple = ()

    def on_factor(self) -> RowFactor:
        return self

    def _at(self, X: np.ndarray) -> tuple:
        key = self._key
        if key is None or key[0] is not X or key[1] != self.prob.log_t:
            # the old state goes first: kept while the new one is built, it held a second set
            # of K x K tables at the peak (seven arrays above the measured peak at K = 300)
            self._key, self._cache = None, ()
            st = self.prob.state(X.T @ X)
            g = self.prob.gradient(st)
            XG = X @ g
            self._cache = (st, g, XG, np.sum(X * XG, axis=0))
            self._key = (X, self.prob.log_t)
        return self._cache

    def set_scale(self, X: np.ndarray) -> float:
        """:meth:`dgp.solver.RowProblem.set_scale` at the Gram of ``X``."""
        return self.prob.set_scale(X.T @ X)

    def evaluate(self, X: np.ndarray) -> tuple[float, np.ndarray]:
        st, _, XG, _ = self._at(X)
        return self.prob.value(st), 2.0 * XG

    def riemannian_gradient(self, X: np.ndarray) -> np.ndarray:
        _, _, XG, y = self._at(X)
        return 2.0 * (XG - X * y)

    def gradient_scale(self, X: np.ndarray) -> float:
        ge, gl = self.prob.gradient_parts(self._at(X)[0])
        return max(float(np.linalg.norm(ge)), float(np.linalg.norm(gl)), SCALE_FLOOR)

    def stationarity(self, X: np.ndarray) -> float:
        return float(np.linalg.norm(self.riemannian_gradient(X))) / self.gradient_scale(X)

    def hessian(self, X: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        st, g, _, y = self._at(X)
        return oblique_hessian(self.prob, X, st, g, y)

    def column_curvature(self, X: np.ndarray) -> None:
        """``None``: a row problem's L-BFGS runs unpreconditioned."""
        return None

    def dual_min_eig(self, X: np.ndarray, seed: int = 0) -> tuple[float, float]:
        """The exact :math:`\\lambda_{\\min}(S)/\\nu` of the KKT certificate at the Gram of
        ``X`` (dense eigenvalues; ``seed`` is unused), twice."""
        low = row_certificate(self.prob, X.T @ X).min_eig_dual
        return low, low
