r"""The start of one random candidate of the rank-``d`` search (:mod:`dgp.solver._policy`): the
best of several seeded random points after a short descent of all of them at once.

On small problems (``K * d`` up to :data:`~dgp.constants.RANK_D_HOP_MAX_SIZE`) the landscape of
:math:`\min_{\|x_c\| = 1} F(X^\top X)` has many local minima, and a candidate's chain of moves
rarely leaves the basin its first descent fell into (measured: K = 11, d = 3, 4 of 33 chains
reached the best known configuration). Each random candidate therefore starts from the lowest
of :data:`~dgp.constants.RANK_D_SCREEN_POINTS` seeded random points after
:data:`~dgp.constants.RANK_D_SCREEN_STEPS` steps of a batched L-BFGS (every point descended in
the same array operations, so the points cost about as much as one). The points are the
candidate's own (seeded by the candidate's index), so candidates stay independent and a larger
budget still contains the computation of a smaller one.

The batched loss is the row problem's (:class:`~dgp.solver.RowProblem`) up to a constant:
:math:`\sum_r \alpha_r\big(\log\sum_d \mu_{rd}e^{G_{a_r d}/\tau} - \sum_d P_{rd}G_{a_r d}/\tau
\big)`, the same in every point, so it ranks points as the row problem's loss does.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dgp.constants import RANK_D_SCREEN_BACKTRACKS as BACKTRACKS
from dgp.constants import RANK_D_SCREEN_CHUNK_ENTRIES as SCREEN_CHUNK_ENTRIES
from dgp.solver._program import RowProblem

__all__ = ["batched_row_loss", "screened_start"]


def batched_row_loss(prob: RowProblem) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
    r"""``X -> (values, gradients)`` for a stack of factors ``X`` (``B x d x K``, unit columns):
    the row problem's loss up to a constant (module docstring) and its Euclidean gradient in
    ``X``, for every factor of the stack at once."""
    anchor, alpha, log_mu, P, tau = prob.anchor, prob.alpha, prob.log_mu, prob.P, prob.tau
    K = prob.K
    # rows grouped into a scatter matrix: the gradient in G of row r lands in row anchor[r]
    scatter = np.zeros((K, anchor.size))
    scatter[anchor, np.arange(anchor.size)] = alpha / tau

    def fun(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        G = np.matmul(X.transpose(0, 2, 1), X)  # B x K x K
        S = G[:, anchor, :] / tau  # B x R x K: row r reads the row of its anchor
        A = S + log_mu
        top = np.max(A, axis=2, keepdims=True)
        E = np.exp(A - top)
        Z = np.sum(E, axis=2, keepdims=True)
        lse = (top + np.log(Z))[..., 0]
        lin = np.sum(P * S, axis=2)
        values = (lse - lin) @ alpha
        D = E / Z - P  # B x R x K, d loss / d S_rd per unit alpha
        dG = np.matmul(scatter, D)  # B x K x K (not symmetric)
        grad = np.matmul(X, dG + dG.transpose(0, 2, 1))
        return values, grad

    return fun


def _tangent(X: np.ndarray, V: np.ndarray) -> np.ndarray:
    return V - X * np.sum(X * V, axis=1, keepdims=True)


def screened_start(prob: RowProblem, points: np.ndarray, steps: int,
                   memory: int = 8) -> np.ndarray:
    """The lowest of ``points`` (``B x d x K``, any non-zero columns) after ``steps`` steps of
    a batched L-BFGS on the product of spheres (columns normalised inside the objective, Armijo
    backtracking per point), as a ``d x K`` factor with unit columns; ties go to the first."""
    fun = batched_row_loss(prob)
    B = points.shape[0]
    x = points / np.linalg.norm(points, axis=1, keepdims=True)
    shape = x.shape

    def value_grad(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        V = v.reshape(shape[0] if v.shape[0] == B else v.shape[0], *shape[1:])
        nrm = np.linalg.norm(V, axis=1, keepdims=True)
        X = V / nrm
        f, g = fun(X)
        return f, (_tangent(X, g) / nrm).reshape(V.shape[0], -1)

    v = x.reshape(B, -1)
    f, g = value_grad(v)
    # trial points per backtracking call: about SCREEN_CHUNK_ENTRIES entries of the B x R x K
    # arrays of one evaluation
    chunk = max(1, SCREEN_CHUNK_ENTRIES // (prob.anchor.size * prob.K))
    S, Y = [], []
    for _ in range(steps):
        q = g.copy()
        coeffs = []
        for s, y in zip(reversed(S), reversed(Y), strict=True):
            rho = 1.0 / np.maximum(np.sum(s * y, axis=1), 1e-300)
            a = rho * np.sum(s * q, axis=1)
            q -= a[:, None] * y
            coeffs.append((rho, a))
        if S:
            s, y = S[-1], Y[-1]
            q *= (np.sum(s * y, axis=1) / np.maximum(np.sum(y * y, axis=1), 1e-300))[:, None]
        else:
            q /= np.maximum(np.linalg.norm(g, axis=1), 1.0)[:, None]
        for (s, y), (rho, a) in zip(zip(S, Y, strict=True), reversed(coeffs), strict=True):
            b = rho * np.sum(y * q, axis=1)
            q += (a - b)[:, None] * s
        p = -q
        slope = np.sum(g * p, axis=1)
        bad = ~(slope < 0)
        if bad.any():  # not a descent direction: the scaled gradient
            p[bad] = -g[bad] / np.maximum(np.linalg.norm(g[bad], axis=1), 1.0)[:, None]
            slope = np.sum(g * p, axis=1)
        v_new = v + p
        f_new, g_new = value_grad(v_new)
        ok = f_new <= f + 1e-4 * slope
        # Armijo backtracking of the points that failed, halvings 1 to BACKTRACKS: 1, 2, 4, 8
        # ... halvings of all of them in one call (a point that has converged fails every
        # halving by round-off: one call per halving made ~2 400 calls a start, this ~500).
        # Each point takes its first accepted halving, as halving one at a time would.
        k, m = 0, 1
        while k < BACKTRACKS and not ok.all():
            r = np.flatnonzero(~ok)
            m = min(BACKTRACKS - k, m, max(1, chunk // r.size))
            halves = np.ldexp(1.0, -np.arange(k + 1, k + m + 1))  # 2^-(k+1) ... : exact
            trial = v[r, None, :] + halves[None, :, None] * p[r, None, :]  # |r| x m x n
            f_t, g_t = value_grad(trial.reshape(r.size * m, -1))
            f_t, g_t = f_t.reshape(r.size, m), g_t.reshape(r.size, m, -1)
            accept = f_t <= f[r, None] + 1e-4 * halves[None, :] * slope[r, None]
            hit = accept.any(axis=1)
            first = np.argmax(accept, axis=1)[hit]
            r = r[hit]
            v_new[r] = trial[hit, first]
            f_new[r] = f_t[hit, first]
            g_new[r] = g_t[hit, first]
            ok[r] = True
            k, m = k + m, 2 * m
        s = np.where(ok[:, None], v_new - v, 0.0)
        y = np.where(ok[:, None], g_new - g, 0.0)
        good = np.sum(s * y, axis=1) > 0
        S.append(np.where(good[:, None], s, 0.0))
        Y.append(np.where(good[:, None], y, 0.0))
        if len(S) > memory:
            S.pop(0)
            Y.pop(0)
        v = np.where(ok[:, None], v_new, v)
        f = np.where(ok, f_new, f)
        g = np.where(ok[:, None], g_new, g)
    best = int(np.argmin(np.where(np.isfinite(f), f, np.inf)))
    X = v[best].reshape(shape[1:])
    return X / np.linalg.norm(X, axis=0)
