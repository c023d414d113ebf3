r"""The same questions as the spectral engine, asked as semidefinite programs (cvxpy).

Cosine: the admissible constants are the feasible set of

.. math::

    \min / \max_{\mu} \; \mu \quad \text{s.t.} \quad A + \mu(11^\top - I) \succeq 0,
    \qquad \mu = \tau c,

and Euclidean: :math:`\max_c c` s.t. :math:`V^\top\ell V - cI \succeq 0`. This is the approach
a user would write by hand: slower, and only as accurate as the solver, so the rank decisions at
the solver's end points use the tolerance policy with the solver's accuracy
(``SDP_ACCURACY``) as a floor. For an empty family the certificate reports the nearest
realizable target (a unit-diagonal PSD matrix) and its distance to the family,

.. math::

    \min_{G \succeq 0,\ \operatorname{diag} G = 1,\ \mu} \|G - A - \mu(11^\top - I)\|_F .
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np

from dgp._linalg import embedding_from_eigh
from dgp.engine.family import End, Family, listed
from dgp.engine.target import LogTarget
from dgp.errors import ParameterError, SolverError
from dgp.solver import solve_conic
from dgp.tolerance import Tolerance

__all__ = ["SDP_ACCURACY", "SDP_MAX_N", "nearest_target", "sdp_family"]

#: relative accuracy of the solver's end points (floor of the rank tolerance)
SDP_ACCURACY = 1e-7
#: largest N for which the semidefinite programs are built (their KKT systems grow as N^4)
SDP_MAX_N = 120
#: Clarabel's gap and feasibility tolerance for these programs
SDP_SOLVER_TOL = 1e-11


def _solve(problem: cp.Problem) -> str:
    return solve_conic(problem, tol=SDP_SOLVER_TOL, what="the program")


def _end(lam: np.ndarray, c: float, atol: float, tol: Tolerance, which: str) -> End:
    n = lam.size
    zeros = min(n, max(1, int(np.count_nonzero(lam <= atol))))
    margin = None
    if zeros < n:
        margin = tol.margin(f"smallest non-zero eigenvalue at {which}", float(lam[zeros]), atol,
                            zero_is_near=False)
    return End(c, n - zeros, listed(lam, zeros), atol, margin, zeros)


def _atol(tol: Tolerance, scale: float) -> float:
    return max(tol.atol(scale), SDP_ACCURACY * scale)


def sdp_family(target: LogTarget, *, similarity: str, tau: float, tol: Tolerance) -> Family:
    """The family of a dense log-target, from semidefinite programs.

    Raises
    ------
    ParameterError
        If ``N > SDP_MAX_N`` (the programs would not fit in memory).
    SolverError
        If no solver can solve a program.
    """
    ell = np.array(target.ell)
    n = ell.shape[0]
    if n > SDP_MAX_N:
        size = (n * (n + 1) // 2) ** 2 * 8 / 2**30
        raise ParameterError(
            "method", f"'sdp' builds semidefinite programs whose KKT systems need about "
            f"{size:.0f} GiB at N = {n}; use method 'spectral' (exact, the same decisions) or "
            f"N <= {SDP_MAX_N}"
        )
    if similarity == "cosine":
        return _cosine(ell, tau, tol)
    return _euclidean(ell, target.spread, tau, tol)


def _family(ell: np.ndarray, tau: float) -> tuple[np.ndarray, np.ndarray]:
    """``A`` and ``E`` of the cosine family :math:`G(\\mu) = A + \\mu E`: ``A = I + tau ell``
    (unit diagonal), ``E = 11^T - I``."""
    n = ell.shape[0]
    A = tau * ell
    np.fill_diagonal(A, 1.0)
    return A, np.ones((n, n)) - np.eye(n)


def _cosine(ell: np.ndarray, tau: float, tol: Tolerance) -> Family:
    n = ell.shape[0]
    A, E = _family(ell, tau)
    mu = cp.Variable()
    G = cp.Constant(A) + mu * cp.Constant(E)
    cons = [0.5 * (G + G.T) >> 0]
    ends = []
    for sense in (cp.Minimize, cp.Maximize):
        status = _solve(cp.Problem(sense(mu), cons))
        if status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
            G_near, mu_near, dist = nearest_target(ell, tau)
            lam = np.linalg.eigvalsh(A + mu_near * E)
            scale = max(float(np.abs(lam).max()), 1.0 + abs(mu_near) + tau)
            atol = _atol(tol, scale)
            return Family(
                similarity="cosine", n=n, status="empty", lo=None, hi=None, interior_rank=None,
                best_value=float(lam[0]), best_c=mu_near / tau, best_atol=atol,
                margins=(tol.margin("smallest eigenvalue of the nearest member", float(lam[0]),
                                    atol, zero_is_near=True),),
                nearest={"solver_status": status, "distance": dist, "c_nearest": mu_near / tau,
                         "nearest_target": [list(r) for r in G_near]},
            )
        ends.append(float(mu.value))
    lo, hi = ends

    def member(m: float) -> tuple[np.ndarray, np.ndarray, float]:
        lam, U = np.linalg.eigh(A + m * E)
        return lam, U, _atol(tol, max(float(np.abs(lam).max()), 1.0 + abs(m) + tau))

    def embed(c: float, r: int) -> np.ndarray:
        lam, U, _ = member(tau * c)
        return embedding_from_eigh(lam, U, r)

    (lam_lo, _, a_lo), (lam_hi, _, a_hi) = member(lo), member(hi)
    e_lo = _end(lam_lo, lo / tau, a_lo, tol, "c_lo")
    e_hi = _end(lam_hi, hi / tau, a_hi, tol, "c_hi")
    mid = 0.5 * (lo + hi)
    lam_mid, _, a_mid = member(mid)
    common = {"similarity": "cosine", "n": n, "best_value": float(lam_mid[0]),
              "best_c": mid / tau, "best_atol": a_mid, "embed": embed}
    m_phi = tol.margin("smallest eigenvalue at the middle of the solver's interval",
                       float(lam_mid[0]), a_mid, zero_is_near=True)
    if (n - 1) * (hi - lo) <= max(a_lo, a_hi):
        end = _end(lam_mid, mid / tau, a_mid, tol, "the only admissible c")
        margins = tuple(m for m in (m_phi, end.margin) if m is not None)
        return Family(status="point", lo=end, hi=end, interior_rank=end.rank, margins=margins,
                      **common)
    margins = tuple(m for m in (e_lo.margin, e_hi.margin) if m is not None)
    return Family(status="interval", lo=e_lo, hi=e_hi, interior_rank=n, margins=margins,
                  **common)


def _euclidean(ell: np.ndarray, spread: float, tau: float, tol: Tolerance) -> Family:
    n = ell.shape[0]
    # orthonormal basis of the complement of 1
    V = np.linalg.qr(np.eye(n) - np.full((n, n), 1.0 / n))[0][:, : n - 1]
    B = V.T @ ell @ V
    B = 0.5 * (B + B.T)
    c = cp.Variable()
    status = _solve(cp.Problem(cp.Maximize(c), [B - c * np.eye(n - 1) >> 0]))
    if status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):  # pragma: no cover - always feasible
        raise SolverError(f"the Euclidean semidefinite program failed with status {status}")
    c_max = float(c.value)
    lam = np.linalg.eigvalsh(B - c_max * np.eye(n - 1))
    atol = _atol(tol, max(float(lam[-1] - lam[0]), 1.0 + spread))
    end = _end(lam, c_max, atol, tol, "c_max")

    def embed(cc: float, r: int) -> np.ndarray:
        lam_c, U_c = np.linalg.eigh(B - cc * np.eye(n - 1))
        return np.sqrt(tau) * embedding_from_eigh(lam_c, V @ U_c, r)

    return Family(
        similarity="euclidean", n=n, status="interval", lo=None, hi=end, interior_rank=n - 1,
        best_value=float(lam[-1]), best_c=c_max, best_atol=atol,
        margins=() if end.margin is None else (end.margin,), embed=embed,
    )


def nearest_target(ell: np.ndarray, tau: float) -> tuple[np.ndarray, float, float]:
    """The unit-diagonal PSD matrix nearest (Frobenius) to the family :math:`G(\\mu)`: returns
    it, the :math:`\\mu` of the nearest member and the distance (0 iff some member is PSD)."""
    n = ell.shape[0]
    A, E = _family(ell, tau)
    G = cp.Variable((n, n), PSD=True)
    mu = cp.Variable()
    prob = cp.Problem(cp.Minimize(cp.norm(G - A - mu * E, "fro")), [cp.diag(G) == 1])
    _solve(prob)
    if G.value is None:
        raise SolverError(f"the nearest-target program returned no solution ({prob.status})")
    return np.asarray(G.value, dtype=float), float(mu.value), float(prob.value)
