r"""L-BFGS on the product of unit spheres: one descent for every smooth function of unit rows.

The rows are normalised inside the objective, :math:`z_i = x_i / \|x_i\|`, and L-BFGS (SciPy's
``L-BFGS-B``, no bounds) runs on the unconstrained ``x``; by the chain rule the gradient in
``x_i`` is the tangent part of the Euclidean gradient in ``z_i`` over :math:`\|x_i\|`. The
expected-batch solvers (:mod:`dgp.solver._finite`, the per-batch relaxation of
:mod:`dgp.solver._stochastic`) and the full-batch descent of the experiments share it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["sphere_lbfgs"]


def sphere_lbfgs(
    value_grad: Callable[[np.ndarray], tuple[float, np.ndarray]],
    X0: np.ndarray,
    *,
    maxiter: int,
    gtol: float,
    ftol: float,
    maxcor: int = 10,
) -> tuple[np.ndarray, int]:
    """Minimise ``f(Z)`` over unit rows ``Z`` (``n x d``) from ``X0`` (any non-zero rows).

    ``value_grad(Z)`` returns ``f(Z)`` and its Euclidean gradient in ``Z`` (``n x d``).
    ``maxiter``, ``gtol``, ``ftol`` and ``maxcor`` are L-BFGS-B's options. Returns the unit
    rows reached and the number of iterations.

    >>> import numpy as np
    >>> c = np.array([[0.0, 1.0]])
    >>> Z, _ = sphere_lbfgs(lambda Z: (float(-np.sum(Z * c)), -c), np.array([[1.0, 0.2]]),
    ...                     maxiter=100, gtol=1e-12, ftol=1e-15)
    >>> np.round(Z, 6).tolist()
    [[0.0, 1.0]]
    """
    from scipy.optimize import minimize  # imported on use

    shape = X0.shape

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        X = x.reshape(shape)
        nrm = np.linalg.norm(X, axis=1, keepdims=True)
        Z = X / nrm
        f, g = value_grad(Z)
        g = (g - np.sum(g * Z, axis=1, keepdims=True) * Z) / nrm
        return f, g.ravel()

    res = minimize(fun, np.asarray(X0, dtype=float).ravel(), jac=True, method="L-BFGS-B",
                   options={"maxiter": maxiter, "gtol": gtol, "ftol": ftol, "maxcor": maxcor})
    X = res.x.reshape(shape)
    return X / np.linalg.norm(X, axis=1, keepdims=True), int(res.nit)
