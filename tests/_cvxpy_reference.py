"""Generic conic programs (cvxpy + Clarabel): independent references for the certified solver.

They are the route dgp no longer takes (the exponential cone loses accuracy at tau <= 0.1), kept
here only to check the certified solver at moderate temperatures, where they are accurate to
about 1e-5 in the Gram.
"""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np

TIGHT = {"tol_gap_abs": 1e-11, "tol_gap_rel": 1e-11, "tol_feas": 1e-11, "max_iter": 500}


def prototype_program(sizes, *, tau, eps=None, solver_opts=None) -> np.ndarray:
    """The K x K prototype problem of SupCon / Soft SupCon as an exponential-cone program."""
    n = np.asarray(sizes, float)
    K = n.size
    N = n.sum()
    G = cp.Variable((K, K), symmetric=True)
    rows = np.repeat(np.arange(K), K - 1)
    cols = np.array([d for c in range(K) for d in range(K) if d != c])
    off = cp.reshape(G[rows, cols], (K, K - 1), order="C")
    logn = np.log(n[cols]).reshape(K, K - 1)
    X = cp.hstack([logn + (off - 1.0) / tau, np.log(n - 1.0)[:, None]])
    obj = n @ cp.log_sum_exp(X, axis=1)
    if eps is not None:
        Z = (n - 1.0) + eps * (N - n)
        coef = (n * eps / (tau * Z))[:, None] * n[cols].reshape(K, K - 1)
        obj = obj + cp.sum(cp.multiply(coef, 1.0 - off))
    prob = cp.Problem(cp.Minimize(obj), [G >> 0, cp.diag(G) == 1])
    _solve(prob, solver_opts)
    return 0.5 * (np.asarray(G.value) + np.asarray(G.value).T)


def _solve(prob, solver_opts=None) -> None:
    with warnings.catch_warnings():  # "solution may be inaccurate": the tolerance is stated
        warnings.simplefilter("ignore", UserWarning)
        prob.solve(solver="CLARABEL", **(solver_opts or TIGHT))


def dense_program(W, *, tau, solver_opts=None) -> np.ndarray:
    """min L(G) over the N x N elliptope for a dense weighting (exponential and PSD cones)."""
    A = np.array(W, float)
    np.fill_diagonal(A, 0.0)
    N = A.shape[0]
    P = A / A.sum(axis=1, keepdims=True)
    rows = np.repeat(np.arange(N), N - 1)
    cols = np.array([k for i in range(N) for k in range(N) if k != i])
    G = cp.Variable((N, N), symmetric=True)
    off = cp.reshape(G[rows, cols], (N, N - 1), order="C")
    Poff = P[rows, cols].reshape(N, N - 1)
    obj = cp.sum(
        -cp.sum(cp.multiply(Poff, off - 1.0), axis=1) / tau + cp.log_sum_exp((off - 1.0) / tau, 1)
    )
    prob = cp.Problem(cp.Minimize(obj), [G >> 0, cp.diag(G) == 1])
    _solve(prob, solver_opts)
    return 0.5 * (np.asarray(G.value) + np.asarray(G.value).T)


def nearest_correlation(A) -> np.ndarray:
    """argmin ||G - A||_F over the elliptope (a second-order-cone and PSD program)."""
    A = np.asarray(A, float)
    K = A.shape[0]
    G = cp.Variable((K, K), symmetric=True)
    prob = cp.Problem(cp.Minimize(cp.sum_squares(G - A)), [G >> 0, cp.diag(G) == 1])
    _solve(prob)
    return 0.5 * (np.asarray(G.value) + np.asarray(G.value).T)
