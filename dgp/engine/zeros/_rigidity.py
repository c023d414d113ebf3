"""The family :math:`X_0/t + tY` of a strict configuration: the rigidity map, its
least-norm solution, the polish of the unit-length equations and the slack of the other pairs."""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from dgp.engine.zeros._pattern import LIST_MAX_N, ComponentDecision
from dgp.tolerance import NEAR, Margin

#: ridge of the sparse least-norm solve, relative to the largest entry of R R^T
RIDGE_RTOL = 1e-13
#: the polish of the unit-length equations stops at this residual (float64 rounding of a unit
#: squared length, about 4.5 units of roundoff)
POLISH_FLOOR = 1e-15


def rigidity_map(X: np.ndarray, E: np.ndarray) -> sp.csr_matrix:
    r"""The rigidity map :math:`Y \mapsto (2\langle x_i - x_j, y_i - y_j\rangle)_{ij}` (sparse,
    ``m x (n d)``)."""
    n, d = X.shape
    m = E.shape[0]
    diff = 2.0 * (X[E[:, 0]] - X[E[:, 1]])
    rows = np.repeat(np.arange(m), 2 * d)
    cols = np.concatenate([E[:, :1] * d + np.arange(d), E[:, 1:] * d + np.arange(d)], axis=1)
    vals = np.concatenate([diff, -diff], axis=1)
    return sp.csr_matrix((vals.ravel(), (rows, cols.ravel())), shape=(m, n * d))


def least_norm(R: sp.csr_matrix, b: np.ndarray) -> np.ndarray:
    r"""A least-norm (least-squares when inconsistent) solution of ``R y = b``: dense for small
    systems, else :math:`y = R^\top (RR^\top + \lambda I)^{-1} b` with a sparse factorisation
    and a tiny ridge :math:`\lambda` (the caller checks the residual)."""
    if R.shape[0] * R.shape[1] <= 250_000:
        return np.linalg.lstsq(R.toarray(), b, rcond=None)[0]
    from scipy.sparse.linalg import splu

    RRt = (R @ R.T).tocsc()
    lam = RIDGE_RTOL * float(abs(RRt).max())
    lu = splu((RRt + lam * sp.identity(RRt.shape[0], format="csc")).tocsc())
    y = R.T @ lu.solve(b)
    r = b - R @ y
    return y + R.T @ lu.solve(r)  # one step of iterative refinement


def polish(X: np.ndarray, E: np.ndarray, steps: int = 12) -> np.ndarray:
    """Gauss–Newton on the unit-length equations of the positive pairs (least-norm steps),
    until the residual stops halving."""
    n, d = X.shape
    prev = math.inf
    for _ in range(steps):
        dx = X[E[:, 0]] - X[E[:, 1]]
        res = (dx * dx).sum(axis=1) - 1.0
        top = float(np.abs(res).max())
        if top <= POLISH_FLOOR or top > 0.5 * prev:
            break
        prev = top
        step = least_norm(rigidity_map(X, E), -res)
        X = X + step.reshape(n, d)
    return X


def non_edge_slack(X: np.ndarray, E: np.ndarray) -> tuple[float, tuple[int, int]]:
    """Smallest squared distance minus 1 over the non-positive pairs, and the pair."""
    from scipy.spatial import cKDTree

    n = X.shape[0]
    key_e = np.sort(E, axis=1)
    keys = set((key_e[:, 0] * n + key_e[:, 1]).tolist())
    radius = 2.0
    while True:
        pairs = cKDTree(X).query_pairs(radius, output_type="ndarray")
        if pairs.size:
            k = pairs[:, 0].astype(np.int64) * n + pairs[:, 1]
            pairs = pairs[~np.isin(k, np.fromiter(keys, dtype=np.int64, count=len(keys)))]
        if pairs.size or radius > 1e6 * max(1.0, float(np.ptp(X)) if X.size else 1.0):
            break
        radius *= 4.0
    if not pairs.size:
        return math.inf, (-1, -1)
    dd = ((X[pairs[:, 0]] - X[pairs[:, 1]]) ** 2).sum(axis=1)
    k = int(np.argmin(dd))
    return float(dd[k] - 1.0), (int(pairs[k, 0]), int(pairs[k, 1]))


def scaled_family(base, how, X0, E, delta, tol, tau) -> ComponentDecision:
    """The family X0 / t + t Y of a strict configuration X0 (unit positive pairs)."""
    R = rigidity_map(X0, E)
    rhs = delta - float(delta.mean()) if delta.size else delta
    Y = least_norm(R, rhs).reshape(X0.shape)
    resid = float(np.abs(R @ Y.ravel() - rhs).max()) if rhs.size else 0.0
    dx = X0[E[:, 0]] - X0[E[:, 1]]
    edge = float(np.abs((dx * dx).sum(axis=1) - 1.0).max())
    slack, pair = non_edge_slack(X0, E)
    info = dict(base, construction=how, min_slack=slack, tightest_pair=list(pair),
                edge_residual=edge, delta_residual=resid,
                delta_constant=float(delta.mean()) if delta.size else 0.0)
    if X0.shape[0] <= LIST_MAX_N:
        info.update(X0=X0.tolist(), Y=Y.tolist())
    atol = tol.residual_atol(delta, tau)
    smin = tol.slack_atol()
    margins = (
        Margin("smallest squared distance minus 1 of a non-positive pair at X0 (accepted above "
               "atol)", slack, smin, bool(slack <= NEAR * smin)),
        Margin("residual of the rigidity system 2<x_i - x_j, y_i - y_j> = delta_ij - mean "
               "(accepted below atol)", resid, atol, bool(resid > atol / NEAR)),
    )
    return ComponentDecision(np.asarray(base["members"]), "approached", "scaled", info, X0=X0,
                             Y=Y, margins=margins)


def simplex_start(E: np.ndarray, n: int, dim: int) -> np.ndarray:
    """A configuration of ``n <= dim + 1`` points: unit positive pairs, the others at squared
    distance ``1 + mu`` (a perturbed regular simplex, affinely independent)."""
    F = np.ones((n, n)) - np.eye(n)
    F[E[:, 0], E[:, 1]] = F[E[:, 1], E[:, 0]] = 0.0
    J = np.eye(n) - 1.0 / n
    JFJ = J @ F @ J
    mu = 0.5 / max(1.0, float(np.abs(np.linalg.eigvalsh(JFJ)).max()))
    D = 1.0 + mu * F
    np.fill_diagonal(D, 0.0)
    lam, U = np.linalg.eigh(-0.5 * J @ D @ J)
    lam, U = lam[::-1], U[:, ::-1]
    X = U[:, : n - 1] * np.sqrt(np.clip(lam[: n - 1], 0.0, None))
    out = np.zeros((n, dim))
    out[:, : X.shape[1]] = X
    return out
