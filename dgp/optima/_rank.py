r"""The optimum in a fixed dimension ``d``: Burer–Monteiro at rank ``d`` on the product of spheres.

.. math::

    \min_{X \in \mathbb R^{d \times K},\ \|x_c\| = 1} F(X^\top X)

is non-convex. It is solved from several seeded starts (random unit vectors, the top-``d``
factor of the free-dimension optimum when one is known, a spectral embedding of the weights):
each is screened by a short L-BFGS run, the best two (the second only if within 1% of the first)
are run further and the best is polished by the Riemannian trust region. The certificate of the
best point comes from its dual matrix
:math:`S = \nabla F - \operatorname{Diag}(\operatorname{diag}(G\nabla F))`: if :math:`S \succeq 0`
the point is globally optimal for the convex problem over all Gram matrices (so for every
dimension); otherwise :math:`F(G) - K\max(0, -\lambda_{\min}(S))` (with the scaling undone) is a
lower bound on the convex optimum, and the reported gap is the distance to the best lower bound
known (theorem ``rank-d-certificate``).
"""

from __future__ import annotations

import numpy as np

from dgp.constants import RANK_D_GTOL, SCALE_FLOOR, SCREEN_SLACK, SPECTRAL_START_PERTURBATION
from dgp.solver import RowProblem, bm_lbfgs, factor, rtr

__all__ = ["rank_d_solve", "spectral_start", "truncate"]


def spectral_start(weights: np.ndarray, dim: int) -> np.ndarray:
    """``dim x K`` unit columns from the top eigenvectors of the symmetrised row-normalised
    weights (similar samples start close)."""
    P = weights / np.maximum(weights.sum(axis=1, keepdims=True), SCALE_FLOOR)
    lam, U = np.linalg.eigh(0.5 * (P + P.T))
    V = U[:, ::-1][:, :dim].T * np.sqrt(np.abs(lam[::-1][:dim]))[:, None]
    # a deterministic perturbation: no zero column
    V = V + SPECTRAL_START_PERTURBATION * (np.arange(V.size).reshape(V.shape) % 7 - 3)
    return V / np.linalg.norm(V, axis=0)


def rank_d_solve(
    prob: RowProblem,
    dim: int,
    *,
    starts: list[np.ndarray],
    n_random: int,
    seed: int,
    screen_iters: int = 40,
    keep: int = 2,
    gtol: float = RANK_D_GTOL,
) -> tuple[np.ndarray, int, str]:
    """Best rank-``dim`` Gram over the given starts (``dim x K`` factors) and ``n_random`` seeded
    random starts. Returns the Gram, the number of starts and why it stopped."""
    K = prob.K
    rng = np.random.default_rng(seed)
    pool = [np.asarray(X, dtype=float) for X in starts]
    for _ in range(n_random):
        X = rng.standard_normal((dim, K))
        pool.append(X / np.linalg.norm(X, axis=0))
    prob.set_scale(pool[0].T @ pool[0])
    screened = []
    for X0 in pool:
        X, _ = bm_lbfgs(prob, X0, maxiter=screen_iters)
        screened.append((prob.value(prob.state(X.T @ X)), len(screened), X))
    screened.sort(key=lambda item: (item[0], item[1]))
    best_f, best = np.inf, None
    lead = screened[0][0]
    for f0, _, X in screened[:keep]:
        if f0 > lead + SCREEN_SLACK * abs(lead):
            continue  # clearly behind after screening: not worth running further
        X, _ = bm_lbfgs(prob, X, maxiter=200, gtol=gtol)
        f = prob.value(prob.state(X.T @ X))
        if f < best_f:
            best_f, best = f, X
    assert best is not None
    best, _ = rtr(prob, best, maxiter=10, gtol=gtol, maxinner=60)
    return best.T @ best, len(pool), (
        f"best of {len(pool)} starts (each screened by {screen_iters} L-BFGS steps, the best "
        f"{min(keep, len(pool))} run further, the best polished by the trust region)"
    )


def truncate(G: np.ndarray, dim: int) -> np.ndarray:
    """The top-``dim`` factor of a Gram, columns renormalised (a start at rank ``dim``)."""
    return factor(G, dim)
