r"""The KKT certificate of an equiangular prototype Gram from its structure: no ``K x K`` array.

The closed forms of :mod:`dgp.prototypes._closed_forms` are equiangular,
:math:`G = (1-\rho)I + \rho\,\mathbb 1\mathbb 1^\top`, with spectrum :math:`1 - \rho`
(``K - 1`` times) and :math:`1 + (K-1)\rho`. At such a Gram every row of the class-block
problem (:func:`dgp.solver.block_problem`, SupCon or Soft SupCon) sees all other classes at the
same cosine, so the unsymmetrised scaled gradient is :math:`n_c n_d h_c` with one number
:math:`h_c = A_c - B_c` per class (:math:`A_c`: its softmax, :math:`B_c`: its targets), and

.. math::

    g = R - \operatorname{Diag}(R_{cc}), \quad
    R = \tfrac12(u n^\top + n u^\top),\ u = n \circ h, \qquad
    y_c = \rho \sum_{d \ne c} g_{cd}, \qquad
    S = g - \operatorname{Diag}(y) = R - \operatorname{Diag}(\delta),\ \delta_c = R_{cc} + y_c .

Everything in :math:`R` and :math:`\delta` depends on a class only through its size. With
the classes grouped by size (``m`` distinct sizes, group ``j`` of ``m_j`` classes), the
spectrum of :math:`S` is :math:`-\delta_j` with multiplicity :math:`m_j - 1` (vectors summing
to zero within group ``j``, which :math:`R` annihilates) together with the ``m`` eigenvalues
of :math:`-\operatorname{Diag}(\delta_j) + \tfrac12(\tilde u\tilde n^\top + \tilde n\tilde
u^\top)`, :math:`\tilde u_j = \sqrt{m_j}\,u_j`, :math:`\tilde n_j = \sqrt{m_j}\,n_j` (its
restriction to vectors constant on each group). :math:`GS = (1-\rho)S + \rho\,\mathbb 1 s^\top`
with :math:`s = S\mathbb 1` has one value per pair of groups (and per group on the diagonal),
so :math:`\|GS\|_F`, :math:`\langle S, G\rangle` and the gradient scale are sums over ``m^2``
group pairs, each entry formed as the dense product forms it (no cancellation of large norms).
The cost is :math:`O(K + m^3)`: ``O(K)`` for the balanced closed forms (``m = 1``), against the
:math:`O(K^3)` eigendecompositions of :func:`dgp.solver.row_certificate`, with which it agrees
to rounding (tests/test_prototypes_equiangular_kkt.py).
"""

from __future__ import annotations

import math

import numpy as np

from dgp.constants import EQUIANGULAR_KKT_MAX_GROUPS, SCALE_FLOOR, SOLVER_TOL
from dgp.solver import KKTCertificate
from dgp.solver._kkt import kkt_from_spectra

__all__ = ["equiangular_certificate"]


def _softmax_coefficients(sz: np.ndarray, counts: np.ndarray, N: float, tau: float,
                          eps: float | None, rho: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Per distinct class size ``sz`` (ascending, ``counts`` classes each) the coefficients
    ``A_c``, ``B_c`` of the scaled gradient's exponential and linear parts (``n_c n_d A_c`` and
    ``n_c n_d B_c`` off the diagonal, before the symmetrisation) and :math:`\\log t`, the scale
    :meth:`dgp.solver.RowProblem.set_scale` fixes at the Gram."""
    others = N - sz  # every other class sits at cosine rho: the row's candidates
    shift = (rho - 1.0) / tau
    Y = np.log(others) - np.log(sz - 1.0) + shift  # log-sum-exp of the row against its own
    top = float(Y.max())
    if eps is not None:  # the largest cross target eps n_d / Z_c over the classes d != c
        largest = np.full(sz.shape, sz[-1])
        if counts[-1] == 1 and sz.size > 1:  # the one largest class sees the second largest
            largest[-1] = sz[-2]
        Z = (sz - 1.0) + eps * others
        top = max(top, math.log(eps) + float(np.log(largest / Z).max()))
    log_t = min(0.0, top)
    sp = np.logaddexp(0.0, Y)
    A = np.exp(shift - np.log(sz - 1.0) - sp - log_t) / (N * tau)
    B = np.zeros_like(A) if eps is None else np.exp(
        math.log(eps) - np.log((sz - 1.0) + eps * others) - log_t) / (N * tau)
    return A, B, log_t


def equiangular_certificate(sizes: np.ndarray, tau: float, eps: float | None, rho: float, *,
                            target: float = SOLVER_TOL) -> KKTCertificate | None:
    r"""The KKT certificate of the equiangular Gram with off-diagonal cosine ``rho`` for the
    class-block problem of ``sizes`` (SupCon, ``eps=None``, or Soft SupCon) at ``tau``, the
    same numbers as :func:`dgp.solver.row_certificate` on the dense Gram (module docstring)
    without any ``K x K`` array; ``None`` above
    :data:`~dgp.constants.EQUIANGULAR_KKT_MAX_GROUPS` distinct class sizes.

    >>> c = equiangular_certificate(np.array([4, 4, 4]), 0.2, None, -0.5)
    >>> c.kkt_residual < 1e-12, c.rank, c.dual_rank, c.certified
    (True, 2, 1, True)
    """
    n_all = np.asarray(sizes, dtype=float)
    K, N = n_all.size, float(n_all.sum())
    sz, inverse, counts = np.unique(n_all, return_inverse=True, return_counts=True)
    if sz.size > EQUIANGULAR_KKT_MAX_GROUPS:
        return None
    m = counts.astype(float)
    A, B, log_t = _softmax_coefficients(sz, counts, N, tau, eps, rho)
    # in units of the largest coefficient (1/tau makes them huge at an extreme tau: no squares
    # overflow); S, y, the norms and <S, G> are linear in them and scaled back at the end
    unit = max(float(A.max()), float(B.max()), SCALE_FLOOR)
    A, B = A / unit, B / unit
    # the gradient's parts and their size (terms of one sign: the norms do not cancel)
    nu = max(unit * max(_offdiag_norm(sz, m, sz * A), _offdiag_norm(sz, m, sz * B)),
             SCALE_FLOOR)
    u = sz * (A - B)
    U = float(m @ u)
    R = 0.5 * (np.outer(u, sz) + np.outer(sz, u))  # R between groups (diagonal: same group)
    rowsum = 0.5 * (u * N + sz * U)  # sum over all classes d of R_cd
    y = rho * (rowsum - np.diag(R))  # rho times the gradient's row sum
    delta = np.diag(R) + y
    # spectrum of S: -delta_j (m_j - 1 times) and the m eigenvalues on group-constant vectors
    root = np.sqrt(m)
    reduced = 0.5 * (np.outer(root * u, root * sz) + np.outer(root * sz, root * u))
    reduced -= np.diag(delta)
    lam_S = np.sort(np.concatenate([np.repeat(-delta, counts - 1),
                                    np.linalg.eigvalsh(reduced)]))
    lam_G = np.full(K, 1.0 - rho)
    lam_G[0] = 1.0 + (K - 1) * rho  # the eigenvalue on the ones vector
    lam_G.sort()
    # G S = (1 - rho) S + rho 1 s^T, s = S 1 (column sums): one value per pair of groups
    s = rowsum - delta
    off = (1.0 - rho) * R + rho * s[None, :]  # c != d
    on = (1.0 - rho) * (np.diag(R) - delta) + rho * s  # c = d
    pairs = np.outer(m, m) - np.diag(m)  # ordered pairs c != d between (or within) groups
    product = math.sqrt(float(np.sum(pairs * off**2) + m @ on**2))
    # <S, G> = sum_c S_cc + rho sum_{c != d} S_cd, with S_cc = -y_c and S_cd = R_cd
    inner = float(-(m @ y) + rho * np.sum(pairs * R))
    return kkt_from_spectra(lam_G, unit * lam_S, diag_error=0.0, product_norm=unit * product,
                            inner=unit * inner, gradient_scale=nu,
                            multipliers=unit * y[inverse], log_scale=log_t, weight_total=N,
                            target=target)


def _offdiag_norm(sz: np.ndarray, m: np.ndarray, x: np.ndarray) -> float:
    r"""Frobenius norm of :math:`\tfrac12(x n^\top + n x^\top)` without its diagonal, over all
    classes (``x``, ``n`` per group, ``m`` classes each): every term has one sign, so
    :math:`\|\cdot\|^2 = \tfrac12(\|x\|^2\|n\|^2 + (x\cdot n)^2) - \sum_c x_c^2 n_c^2` loses
    nothing to cancellation."""
    xx, nn, xn = float(m @ x**2), float(m @ sz**2), float(m @ (x * sz))
    return math.sqrt(max(0.0, 0.5 * (xx * nn + xn**2) - float(m @ (x * sz) ** 2)))
