r"""The dual Newton polish of full-batch class-block problems: the reduced dual variables of
the class-block program (:class:`DualBlocks`), the primal Gram they give, Newton's method on
their stationarity residual, and the ranks at which :func:`dgp.solver._solve.solve_rows` tries
it (dual and primal candidates). Split by job from :mod:`dgp.solver._solve`."""

from __future__ import annotations

import math

import numpy as np

from dgp.constants import (
    ARMIJO,
    DUAL_GAP_CUT,
    DUAL_RANK_CUTS,
    INTERIOR_DUAL,
    NEWTON_LSTSQ_RCOND,
    NEWTON_MIN_STEP,
    NEWTON_QUADRATIC_DROP,
    NEWTON_RTOL,
    PRIMAL_GAP_CUT,
    PRIMAL_RANK_CUTS,
    SCALE_FLOOR,
)
from dgp.solver._program import RowProblem

__all__ = ["DualBlocks", "dual_jacobian", "dual_ranks", "dual_residual", "from_dual",
           "newton_polish", "primal_ranks"]


class DualBlocks:
    """Scaled class-block data: :math:`(\\tau/t)(F - \\sum n_c\\log(n_c - 1))`."""

    def __init__(self, prob: RowProblem) -> None:
        assert prob.block is not None
        n = prob.block.sizes.astype(float)
        self.n, self.m, self.K = n, n - 1.0, n.size
        self.tau, self.log_t = prob.tau, prob.log_t
        self.t = math.exp(prob.log_t)
        self.nn = np.outer(n, n)
        lin = n[:, None] * prob.block.cross
        pos = lin > 0  # cross / t <= 1 by the choice of t: no overflow
        lin[pos] = np.exp(np.log(lin[pos]) - prob.log_t)
        self.b = lin + lin.T
        np.fill_diagonal(self.b, 0.0)

    def exps(self, G: np.ndarray) -> np.ndarray:
        X = (G - 1.0) / self.tau - self.log_t
        np.fill_diagonal(X, -np.inf)
        return np.exp(X)

    def grad(self, G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        E = self.exps(G)
        D = self.m + self.t * (E @ self.n)
        AE = self.nn * E * (1.0 / D[:, None] + 1.0 / D[None, :])
        g = 0.5 * (AE - self.b)
        np.fill_diagonal(g, 0.0)
        return g, AE


def from_dual(prob: DualBlocks, delta: np.ndarray, U: np.ndarray):
    """Primal Gram from the reduced dual variables ``(delta, U)``; ``None`` off the domain."""
    D = prob.m + prob.t * delta
    if (D <= 0).any():
        return None
    H = 1.0 / (1.0 / D[:, None] + 1.0 / D[None, :])
    A = prob.nn / H
    M = 2.0 * (U @ U.T) + prob.b
    np.fill_diagonal(M, 1.0)
    if (M <= 0).any():
        return None
    Eh = M / A
    np.fill_diagonal(Eh, 0.0)
    G = 1.0 + prob.tau * (prob.log_t + np.log(M) - np.log(A))
    np.fill_diagonal(G, 1.0)
    return G, D, H, A, M, Eh


def dual_residual(prob: DualBlocks, delta: np.ndarray, U: np.ndarray):
    out = from_dual(prob, delta, U)
    if out is None:
        return None
    G, _, _, _, _, Eh = out
    return np.concatenate([delta - Eh @ prob.n, (G @ U).ravel()])


def dual_jacobian(prob: DualBlocks, delta: np.ndarray, U: np.ndarray) -> np.ndarray:
    G, D, H, A, M, Eh = from_dual(prob, delta, U)  # type: ignore[misc]
    K, q = U.shape
    tau, t, n = prob.tau, prob.t, prob.n
    Q = tau / M
    np.fill_diagonal(Q, 0.0)
    Hz = H.copy()
    np.fill_diagonal(Hz, 0.0)
    invA = 1.0 / A
    np.fill_diagonal(invA, 0.0)
    J = np.zeros((K + K * q, K + K * q))
    # R1_c = delta_c - sum_c' n_c' Eh_cc'
    w = (n[None, :] * Eh * Hz).sum(axis=1)
    J[:K, :K] = np.diag(1.0 - t * w / D**2) - t * (n[None, :] * Eh * Hz) / D[None, :] ** 2
    # d R1_c / d U_al = -2 delta_ca sum_c' n_c' U_c'l / A_cc' - 2 n_a U_cl / A_ca
    nU = invA @ (n[:, None] * U)
    JU = np.zeros((K, K, q))
    JU[np.arange(K), np.arange(K), :] -= 2.0 * nU
    JU -= 2.0 * (invA * n[None, :])[:, :, None] * U[:, None, :]
    J[:K, K:] = JU.reshape(K, K * q)
    # R2_ck = sum_c' G_cc' U_c'k; d/d U_al: G_ca d_kl + 2 d_ca T_c,lk + 2 Q_ca U_cl U_ak
    T = np.einsum("cd,dl,dk->clk", Q, U, U)
    J2 = np.einsum("ca,kl->ckal", G, np.eye(q))
    J2[np.arange(K), :, np.arange(K), :] += 2.0 * T.transpose(0, 2, 1)
    J2 += 2.0 * np.einsum("ca,cl,ak->ckal", Q, U, U)
    J[K:, K:] = J2.reshape(K * q, K * q)
    # d/d delta_a: tau t [d_ca / D_c^2 sum_c' H_cc' U_c'k + H_ca U_ak / D_a^2]
    Jd = np.zeros((K, q, K))
    Jd[np.arange(K), :, np.arange(K)] = (Hz @ U) / D[:, None] ** 2
    Jd += np.einsum("ca,ak->cka", Hz, U) / D[None, None, :] ** 2
    J[K:, :K] = tau * t * Jd.reshape(K * q, K)
    return J


def newton_polish(prob: DualBlocks, G: np.ndarray, *, q: int, maxiter: int = 30) -> np.ndarray:
    """Newton on the reduced KKT system: ``S = U U^T`` (rank ``q``), ``G U = 0``, ``delta``."""
    g, _ = prob.grad(G)
    y = np.einsum("ij,ji->i", G, g)
    lam, V = np.linalg.eigh(g - np.diag(y))
    U = V[:, -q:] * np.sqrt(np.clip(lam[-q:], 0.0, None)) if q > 0 else np.zeros((prob.K, 0))
    delta = prob.exps(G) @ prob.n
    R = dual_residual(prob, delta, U)
    if R is None:
        return G
    norm_R = norm_0 = float(np.linalg.norm(R))
    for it in range(maxiter):
        if it == 8 and norm_R > NEWTON_QUADRATIC_DROP * norm_0:
            break  # not in Newton's quadratic regime: wrong rank guess or a poor start
        if norm_R < NEWTON_RTOL * (1.0 + float(np.linalg.norm(delta))):
            break
        J = dual_jacobian(prob, delta, U)
        try:
            step = np.linalg.solve(J, -R) if q <= 1 else None
        except np.linalg.LinAlgError:
            step = None
        if step is None or not np.isfinite(step).all():
            step = np.linalg.lstsq(J, -R, rcond=NEWTON_LSTSQ_RCOND)[0]
        a = 1.0
        while a > NEWTON_MIN_STEP:
            d_new = delta + a * step[: prob.K]
            U_new = U + a * step[prob.K :].reshape(U.shape)
            R_new = dual_residual(prob, d_new, U_new)
            if R_new is not None and np.linalg.norm(R_new) < (1 - ARMIJO * a) * norm_R:
                break
            a *= 0.5
        else:
            break
        delta, U, R = d_new, U_new, R_new
        norm_R = float(np.linalg.norm(R))
    out = from_dual(prob, delta, U)
    return G if out is None else out[0]


def dual_ranks(prob: DualBlocks, G: np.ndarray) -> list[int]:
    """Candidate ranks ``q`` of ``S`` at an approximate optimum, cheapest first (systems above
    4000 unknowns are skipped: the next Burer–Monteiro round sharpens the spectrum instead)."""
    g, AE = prob.grad(G)
    y = np.einsum("ij,ji->i", G, g)
    lam = np.linalg.eigvalsh(g - np.diag(y))[::-1]
    scale = max(0.5 * float(np.linalg.norm(AE)), SCALE_FLOOR)
    pos = np.clip(lam / scale, SCALE_FLOOR, None)
    top = float(pos[0])
    cands = [int(np.sum(pos > f * top)) for f in DUAL_RANK_CUTS]
    big = int(np.sum(pos > DUAL_GAP_CUT * top))
    if 1 <= big < prob.K:
        cands.append(int(np.argmax(pos[:big] / pos[1 : big + 1])) + 1)
    if top <= INTERIOR_DUAL:  # interior optimum: S = 0
        cands = [0]
    return sorted(q for q in set(cands) if 0 <= q < prob.K and prob.K * (q + 1) <= 4000)


def primal_ranks(G: np.ndarray, cap: int) -> list[int]:
    """Candidate ranks of the optimum from the spectrum of an approximate one, smallest first."""
    lam = np.clip(np.linalg.eigvalsh(G)[::-1], 0.0, None)
    top = float(lam[0])
    cands = {int(np.sum(lam > f * top)) for f in PRIMAL_RANK_CUTS}
    big = int(np.sum(lam > PRIMAL_GAP_CUT * top))
    if 1 <= big < lam.size:
        ratios = lam[:big] / np.maximum(lam[1 : big + 1], SCALE_FLOOR)
        cands.add(int(np.argmax(ratios)) + 1)
    return sorted(r for r in cands if 1 <= r <= cap)
