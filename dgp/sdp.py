r"""The same questions as :mod:`dgp.spectral`, asked as semidefinite programs (cvxpy).

Cosine: the admissible constants are the feasible set of

.. math::

    \min / \max_{\mu} \; \mu \quad \text{s.t.} \quad A + \mu(11^\top - I) \succeq 0,
    \qquad \mu = \tau c,

and Euclidean: :math:`\max_c c` s.t. :math:`-\tfrac12 V^\top D(c) V \succeq 0`. Ranks are read
from the eigenvalues of the targets at the optimal constants. This is the approach a user would
write by hand; it is slower and only as accurate as the solver (about ``1e-8``), so ranks use the
looser tolerance ``max(rtol, SDP_RTOL)``. For an empty family the certificate reports the
nearest realizable target (a unit-diagonal PSD matrix) and its distance to the family,

.. math::

    \min_{G \succeq 0,\ \operatorname{diag} G = 1,\ \mu} \|G - A - \mu(11^\top - I)\|_F .
"""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np

from dgp.geometry import embedding_from_edm, embedding_from_gram
from dgp.spectral import Family

__all__ = ["SDP_RTOL", "cosine_family", "euclidean_family", "nearest_target"]

SDP_RTOL = 1e-6
_SOLVER_OPTS = {"tol_gap_abs": 1e-11, "tol_gap_rel": 1e-11, "tol_feas": 1e-11}


def _solve(problem: cp.Problem) -> str:
    with warnings.catch_warnings():
        # "solution may be inaccurate" is judged by our own eigenvalue checks, not the status
        warnings.simplefilter("ignore", UserWarning)
        try:
            problem.solve(solver=cp.CLARABEL, **_SOLVER_OPTS)
        except cp.error.SolverError:
            problem.solve(solver=cp.SCS, eps=1e-10, max_iters=200000)
    return problem.status


def _rank(M: np.ndarray, rtol: float) -> tuple[int, float]:
    lam = np.linalg.eigvalsh(M)
    atol = max(rtol, SDP_RTOL) * max(1e-300, float(np.abs(lam).max()))
    return int(np.count_nonzero(lam > atol)), atol


def cosine_family(ell: np.ndarray, tau: float, rtol: float) -> Family:
    """Admissible interval of :math:`G(c)` from two SDPs (min and max of :math:`\\mu`)."""
    n = ell.shape[0]
    A = tau * ell
    np.fill_diagonal(A, 1.0)
    E = np.ones((n, n)) - np.eye(n)
    mu = cp.Variable()
    G = cp.Constant(A) + mu * cp.Constant(E)
    cons = [0.5 * (G + G.T) >> 0]
    ends = []
    for sense in (cp.Minimize, cp.Maximize):
        status = _solve(cp.Problem(sense(mu), cons))
        if status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
            G_near, c_near, dist = nearest_target(ell, tau)
            cert = {
                "kind": "sdp",
                "status": status,
                "statement": "no c makes G(c) PSD; nearest_target is the closest realizable "
                "Gram (unit diagonal, PSD) to the family, at Frobenius distance "
                "nearest_target_distance from G(nearest_c)",
                "nearest_target_distance": dist,
                "nearest_c": c_near,
                "nearest_target": G_near.tolist(),
            }
            return Family(None, None, True, False, None, None, None, 0.0, cert, None)
        ends.append(float(mu.value))
    lo, hi = ends

    def gram(m: float) -> np.ndarray:
        return A + m * E

    def embed(c: float, r: int) -> np.ndarray:
        return embedding_from_gram(gram(tau * c), rank=r, rtol=max(rtol, SDP_RTOL))

    (r_lo, atol), (r_hi, _) = _rank(gram(lo), rtol), _rank(gram(hi), rtol)
    cert = {"kind": "sdp", "mu_lo": lo, "mu_hi": hi, "atol": atol}
    if hi - lo <= SDP_RTOL * max(1.0, abs(hi)):
        mid = 0.5 * (lo + hi)
        r = _rank(gram(mid), rtol)[0]
        return Family(mid / tau, mid / tau, False, True, r, r, r, atol, cert, embed)
    r_mid = _rank(gram(0.5 * (lo + hi)), rtol)[0]
    return Family(lo / tau, hi / tau, False, False, r_lo, r_hi, r_mid, atol, cert, embed)


def euclidean_family(ell: np.ndarray, tau: float, rtol: float) -> Family:
    """Largest admissible :math:`c` of :math:`D(c)` from one SDP."""
    n = ell.shape[0]
    # orthonormal basis of the complement of 1
    V = np.linalg.qr(np.eye(n) - np.full((n, n), 1.0 / n))[0][:, : n - 1]
    E = np.ones((n, n)) - np.eye(n)
    D0 = -2.0 * tau * ell
    np.fill_diagonal(D0, 0.0)
    c = cp.Variable()
    B = -0.5 * (V.T @ D0 @ V) + tau * c * (V.T @ E @ V)
    status = _solve(cp.Problem(cp.Maximize(c), [0.5 * (B + B.T) >> 0]))
    if status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):  # pragma: no cover - always feasible
        raise RuntimeError(f"the Euclidean SDP failed with status {status}")
    c_max = float(c.value)

    def edm(cc: float) -> np.ndarray:
        return D0 - 2.0 * tau * cc * E

    lam = np.linalg.eigvalsh(-0.5 * V.T @ edm(c_max) @ V)
    atol = max(rtol, SDP_RTOL) * max(1e-300, float(np.abs(lam).max()))
    r_hi = int(np.count_nonzero(lam > atol))

    def embed(cc: float, r: int) -> np.ndarray:
        return embedding_from_edm(edm(cc), rank=r, rtol=max(rtol, SDP_RTOL))

    cert = {"kind": "sdp", "c_max": c_max, "atol": atol}
    return Family(None, c_max, False, False, None, r_hi, n - 1, atol, cert, embed)


def nearest_target(ell: np.ndarray, tau: float) -> tuple[np.ndarray, float, float]:
    """The unit-diagonal PSD matrix nearest (Frobenius) to the family :math:`G(c)`: returns it,
    the constant ``c`` of the nearest member and the distance (0 iff some member is PSD)."""
    n = ell.shape[0]
    A = tau * ell
    np.fill_diagonal(A, 1.0)
    E = np.ones((n, n)) - np.eye(n)
    G = cp.Variable((n, n), PSD=True)
    mu = cp.Variable()
    prob = cp.Problem(cp.Minimize(cp.norm(G - A - mu * E, "fro")), [cp.diag(G) == 1])
    _solve(prob)
    return np.asarray(G.value, dtype=float), float(mu.value) / tau, float(prob.value)
