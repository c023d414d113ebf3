r"""Tridiagonal machinery of the spectral engine.

One Householder reflection sends the direction of :math:`1` to :math:`e_1`; one LAPACK ``dsytrd``
then reduces the matrix to tridiagonal form :math:`T` while keeping :math:`e_1` fixed. Every
member of the target families is a diagonal shift of :math:`T` (plus a change of its first
entry), so each eigenvalue question along the family costs :math:`O(N)` after one
:math:`O(N^3)` reduction, cheaper than one full ``eigvalsh``.

The reduction runs on the caller's BLAS threads (every core by default: blocked ``dsytrd`` is
multi-threaded ``dsyr2k`` and ``dsymv``), so ``T`` may differ in the last bits with the thread
count; the engine's decisions go through the tolerance policy and do not
(:func:`dgp.resources.deterministic` pins one thread for bit-identical output).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
from scipy.linalg.blas import dsymv, dsyr2
from scipy.linalg.lapack import dormqr, dstebz, dstein, dsytrd_lwork

from dgp._linalg import dsytrd
from dgp.errors import SolverError

#: reflectors applied per LAPACK call in :meth:`Tridiagonal.apply_q`
CHUNK = 64

__all__ = [
    "CHUNK",
    "Tridiagonal",
    "complement_basis",
    "ones_reflector_apply",
    "ones_reflector_vectors",
    "tridiagonal_count_below",
    "tridiagonal_eigh",
    "tridiagonal_eigvals",
]


def _ones_reflector(n: int) -> tuple[np.ndarray, float]:
    """``v`` and ``beta`` of :math:`H = I - \\beta vv^\\top`, :math:`He_1 = 1/\\sqrt N`."""
    v = np.full(n, -1.0 / np.sqrt(n))
    v[0] += 1.0
    return v, 2.0 / float(v @ v)


def complement_basis(u: np.ndarray) -> np.ndarray:
    """An orthonormal basis of the complement of a unit vector ``u`` (``K x (K - 1)``): the
    last ``K - 1`` columns of the Householder reflection that sends ``u`` to :math:`e_1`."""
    K = u.size
    v = -u
    v[0] += 1.0
    H = np.eye(K) - 2.0 * np.outer(v, v) / float(v @ v) if float(v @ v) > 0 else np.eye(K)
    return H[:, 1:]


def ones_reflector_apply(M: np.ndarray) -> np.ndarray:
    r"""Overwrite the upper triangle of a C-ordered symmetric ``M`` with that of :math:`HMH`,
    :math:`H` the Householder reflection with :math:`He_1 = 1/\sqrt N`, so that the first
    coordinate is the direction of :math:`1`.

    Only the upper triangle is read (one BLAS ``dsymv``) and updated (one ``dsyr2``, no
    ``N x N`` temporary): it is the triangle :class:`Tridiagonal` reads. Cost :math:`O(N^2)`.
    """
    v, beta = _ones_reflector(M.shape[0])
    # M.T is the same matrix in Fortran order, and its lower triangle is the upper triangle of
    # M: BLAS dsymv reads that half only, on scipy's BLAS threads, those dsytrd runs on next
    # (numpy's matmul would wake numpy's own OpenBLAS pool, whose threads spin on the cores
    # while the reduction starts)
    p = dsymv(beta, M.T, v, lower=1)
    q = p - (0.5 * beta * float(v @ p)) * v
    # symmetric rank-two update M - v q^T - q v^T of that triangle
    dsyr2(-1.0, v, q, lower=1, a=M.T, overwrite_a=1)
    return M


def ones_reflector_vectors(Y: np.ndarray) -> np.ndarray:
    """Apply the reflection :math:`H` of :func:`ones_reflector_apply` to the columns of ``Y``."""
    v, beta = _ones_reflector(Y.shape[0])
    return Y - beta * np.outer(v, v @ Y)


class Tridiagonal:
    r"""Orthogonal tridiagonalisation :math:`M = Q T Q^\top` with :math:`Qe_1 = e_1` (LAPACK
    ``dsytrd``, reading the upper triangle of the C-ordered ``M``, which it overwrites);
    eigenvectors of :math:`T` map back through the stored reflectors."""

    def __init__(self, M: np.ndarray) -> None:
        n = M.shape[0]
        self.n = n
        if n == 1:
            self.d, self.e = M.diagonal().copy(), np.zeros(0)
            self._c, self._tau = np.zeros((1, 1)), np.zeros(0)
            return
        lwork, info = dsytrd_lwork(n, lower=1)
        # M is symmetric, so its transpose is the same matrix in Fortran order (no copy)
        c, d, e, tau, info = dsytrd(M.T, lower=1, lwork=int(lwork), overwrite_a=1)
        if info != 0:  # pragma: no cover - LAPACK argument error
            raise SolverError(f"LAPACK dsytrd failed with info={info}")
        self.d, self.e, self._c, self._tau = d, e, c, tau

    def apply_q(self, Y: np.ndarray) -> np.ndarray:
        r"""``Q @ Y`` for an ``n x k`` block, in :math:`O(n^2 k)`.

        ``dsytrd`` (lower) stores reflector ``i`` as :math:`H_i = I - \tau_i v_iv_i^\top` with
        :math:`v_i = (0, \dots, 0, 1, c_{i+2:, i})` starting at row ``i + 1``, and
        :math:`Q = H_0 H_1 \cdots H_{n-2}`. They are applied in reverse order by chunks of
        ``CHUNK`` reflectors with LAPACK ``dormqr``: ``dormqr`` on the whole trailing block
        would need a contiguous copy of it, another ``N x N`` array. Each chunk is handed over
        without a copy, as the Fortran array that starts at its first reflector with leading
        dimension ``N`` (the rows past the reflectors' length are never read).
        """
        Y = np.array(Y, dtype=float, copy=True)
        n = self.n
        if n > 1 and Y.shape[1] > 0:
            c, tau = self._c, self._tau
            flat = c.reshape(-1, order="F") if c.flags.f_contiguous else None
            # blocked dormqr needs k * nb + (nb + 1) * nb of workspace (nb = 64); less and
            # LAPACK falls back to its unblocked, level-2 code
            lwork = 64 * Y.shape[1] + 65 * 64
            starts = list(range(0, n - 1, CHUNK))
            for i0 in reversed(starts):
                i1 = min(n - 1, i0 + CHUNK)
                # reflectors i0..i1-1 act on rows i0+1.. : a QR factor of c[i0+1:, i0:i1]
                if flat is not None:  # (i0 + 1, i0) onwards, column stride n: no copy
                    start = (i0 + 1) + i0 * n
                    a = flat[start : start + n * (i1 - i0)].reshape((n, i1 - i0), order="F")
                else:
                    a = np.asfortranarray(c[i0 + 1 :, i0:i1])
                out, _, info = dormqr("L", "N", a, tau[i0:i1], Y[i0 + 1 :], lwork=lwork,
                                      overwrite_c=0)
                if info != 0:  # pragma: no cover - LAPACK argument error
                    raise SolverError(f"LAPACK dormqr failed with info={info}")
                Y[i0 + 1 :] = out
        return Y


def _bisect(d: np.ndarray, e: np.ndarray, lo: int, hi: int, order: str):
    r"""LAPACK ``dstebz`` by index (eigenvalues ``lo..hi``), called as
    :func:`scipy.linalg.eigh_tridiagonal` calls it (``select="i"``, ``tol=0``, order ``"E"``
    for values alone, ``"B"`` before ``dstein``), so the numbers are the same bit for bit,
    without the wrapper's checks of its arguments (a quarter of a millisecond a call at
    :math:`N = 3000`, a few dozen calls a classification): ``(m, w, iblock, isplit)``."""
    if not (np.isfinite(d).all() and np.isfinite(e).all()):  # as scipy's check_finite
        raise ValueError("array must not contain infs or NaNs")
    m, w, iblock, isplit, info = dstebz(d, e, 2, 0.0, 1.0, lo + 1, hi + 1, 0.0, order)
    _check_info(info, "stebz")
    return m, w, iblock, isplit


def _check_info(info: int, driver: str) -> None:
    """scipy's reading of a LAPACK ``info``: an argument error, or no convergence
    (:class:`numpy.linalg.LinAlgError`, which the callers answer with the full solver)."""
    if info < 0:  # pragma: no cover - LAPACK argument error
        raise SolverError(f"LAPACK d{driver} failed with info={info}")
    if info > 0:
        raise np.linalg.LinAlgError(f"{driver} (eigh_tridiagonal) did not converge (LAPACK "
                                    f"info={info})")


def tridiagonal_eigvals(d: np.ndarray, e: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Eigenvalues ``lo..hi`` (ascending, inclusive) of the symmetric tridiagonal ``(d, e)``."""
    if d.size == 1:
        return d.copy()
    try:
        m, w, _, _ = _bisect(d, e, lo, hi, "E")
        return w[:m]
    except np.linalg.LinAlgError:
        # LAPACK stebz can give up on exactly clustered eigenvalues; the full solver does not
        return sla.eigvalsh_tridiagonal(d, e)[lo : hi + 1]


def tridiagonal_count_below(d: np.ndarray, e: np.ndarray, x: float) -> int:
    """Sturm count: the number of eigenvalues of the tridiagonal ``(d, e)`` below ``x``.

    The pivots of the :math:`LDL^\\top` factorisation of :math:`T - xI` have the inertia of it.
    """
    if d.size == 0:
        return 0
    x = float(x)
    tiny = float(np.finfo(float).tiny)
    # plain Python floats (IEEE doubles, the same arithmetic as numpy's scalars, several times
    # faster in this loop)
    dk = (d - x).tolist()
    e2 = (e * e).tolist()
    piv = dk[0]
    if piv == 0.0:
        piv = -tiny
    count = 1 if piv < 0 else 0
    for k in range(1, len(dk)):
        piv = dk[k] - e2[k - 1] / piv
        if piv == 0.0:
            piv = -tiny
        if piv < 0:
            count += 1
    return count


def tridiagonal_eigh(
    d: np.ndarray, e: np.ndarray, lo: int, hi: int
) -> tuple[np.ndarray, np.ndarray]:
    """Eigenpairs ``lo..hi`` (ascending) of the symmetric tridiagonal ``(d, e)``."""
    if d.size == 1:
        return d.copy(), np.ones((1, 1))
    try:
        m, w, iblock, isplit = _bisect(d, e, lo, hi, "B")
        w = w[:m]
        V, info = dstein(d, e, w, iblock, isplit)
        _check_info(info, "stein")
        order = np.argsort(w)
        return w[order], V[:, order]
    except np.linalg.LinAlgError:  # stebz on exact clusters, as in tridiagonal_eigvals
        lam, V = sla.eigh_tridiagonal(d, e)
        return lam[lo : hi + 1], V[:, lo : hi + 1]
