r"""The dense engine: the whole target family from one tridiagonalisation.

Cosine: :math:`G(\mu) = A + \mu(11^\top - I)` with :math:`A = I + \tau\ell` and
:math:`\mu = \tau c`. In the orthonormal basis :math:`(1/\sqrt N, V)` given by one Householder
reflection, :math:`11^\top - I = \mathrm{diag}(N-1, -1, \dots, -1)`; tridiagonalising
:math:`HAH` with :math:`e_1` fixed gives :math:`G(\mu) \cong T + \mu(Ne_1e_1^\top - I)`, still
tridiagonal, so each eigenvalue question along the family costs :math:`O(N)` after one
:math:`O(N^3)` reduction (cheaper than one full ``eigvalsh``).

Euclidean: the same reflection gives :math:`B = V^\top\ell V` as the trailing block of
:math:`H\ell H`; with the first row and column cleared, ``dsytrd`` tridiagonalises it in place.

Everything happens in the memory of the canonical log-weights: no other ``N x N`` array.

A target made of twin classes (a class weighting written out as a dense matrix) is found in
:math:`O(N^2)` (:func:`dgp.engine.blocks.dense_blocks`, the reduction
:class:`~dgp.engine._reductions.TwinClasses` chosen for every dense target) and handed to the
block spectra, whose
eigenvalues are the same: no :math:`O(N^3)` step. Their embedding is put in the canonical form
of this module's (:func:`dgp._linalg.fix_embedding`), so the answer does not depend on the path.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dgp._linalg import fix_embedding, fix_signs
from dgp.engine._block_spectra import BlockEuclideanSpectrum, BlockSpectrum
from dgp.engine._spectra import FarkasSide
from dgp.engine.family import (
    CosineSpectrum,
    EuclideanSpectrum,
    cosine_family,
    euclidean_family,
    psd_box,
)
from dgp.engine.target import LogTarget
from dgp.engine.tridiag import (
    Tridiagonal,
    ones_reflector_apply,
    ones_reflector_vectors,
    tridiagonal_count_below,
    tridiagonal_eigh,
    tridiagonal_eigvals,
)
from dgp.tolerance import Tolerance

__all__ = ["DenseCosineSpectrum", "DenseEuclideanSpectrum", "dense_family"]

#: largest N for which Farkas vectors are listed in the certificate
FARKAS_VECTORS_MAX_N = 2000
#: eigenvalue questions of the cosine family remembered per point: at most this many
#: eigenvalues each, at most this many at once
MEMO_MAX_K = 16
MEMO_MAX_ENTRIES = 64


class DenseCosineSpectrum(CosineSpectrum):
    """:math:`G(\\mu)` from the tridiagonal form of :math:`HAH` (module docstring)."""

    def __init__(self, target: LogTarget, tau: float) -> None:
        ell = target.ell
        n = ell.shape[0]
        self.n = n
        lo, hi = target.lowest, target.highest
        self._box = psd_box(tau, lo, hi)
        # A = I + tau ell and ell (zero diagonal) have the same reflectors: H A H = I + tau H ell H
        # and Q^T A Q = I + tau T_ell, so ell is reduced as it is (no pass to form A)
        self.tri = Tridiagonal(ones_reflector_apply(ell))
        self.d0, self.e = 1.0 + tau * self.tri.d, tau * self.tri.e
        self._memo: dict[tuple[float, int, int], tuple[np.ndarray, np.ndarray | None]] = {}
        self._counts: dict[tuple[float, float], int] = {}

    def _diag(self, mu: float) -> np.ndarray:
        d = self.d0 - mu
        d[0] = self.d0[0] + mu * (self.n - 1)
        return d

    def _eig(self, mu: float, lo: int, hi: int, vectors: bool):
        r"""Eigenvalues (and eigenvectors) ``lo..hi`` of :math:`G(\mu)`, remembered: the
        decisions ask the same few questions at the same points (the maximiser, an end point)
        several times. Eigenvalues found with their vectors answer later questions for the
        values alone (the same bisection; inverse iteration only adds the vectors)."""
        key = (mu, lo, hi)
        hit = self._memo.get(key)
        if hit is not None and (hit[1] is not None or not vectors):
            return hit if vectors else hit[0]
        d = self._diag(mu)
        if vectors:
            out = tridiagonal_eigh(d, self.e, lo, hi)
        else:
            out = (tridiagonal_eigvals(d, self.e, lo, hi), None)
        if hi - lo < MEMO_MAX_K:
            if len(self._memo) >= MEMO_MAX_ENTRIES:
                self._memo.clear()
            self._memo[key] = out
        return out if vectors else out[0]

    def box(self) -> tuple[float, float]:
        return self._box

    def lam_min_slope(self, mu: float) -> tuple[float, float]:
        # d/dmu x^T (T + mu (N e1 e1^T - I)) x = N x_1^2 - 1 for the bottom eigenvector x
        lam, x = self._eig(mu, 0, 0, True)
        return float(lam[0]), float(self.n * x[0, 0] ** 2 - 1.0)

    def lam_max(self, mu: float) -> float:
        return float(self._eig(mu, self.n - 1, self.n - 1, False)[0])

    def norm_floor(self, mu: float) -> float:
        # the largest column norm of the tridiagonal form (and the unit diagonal's 1): O(N)
        # scaled by the largest entry, so that tau near the float range does not overflow
        d, e = self._diag(mu), self.e
        top = max(1.0, float(np.abs(d).max()), float(np.abs(e).max(initial=0.0)))
        d, e2 = d / top, (e / top) ** 2
        sq = d * d
        sq[:-1] += e2
        sq[1:] += e2
        return max(1.0, top * math.sqrt(float(sq.max())))

    def smallest(self, mu: float, k: int) -> np.ndarray:
        if k <= 0:
            return np.zeros(0)
        return self._eig(mu, 0, k - 1, False).copy()

    def kth(self, mu: float, k: int) -> float:
        return float(self._eig(mu, k, k, False)[0])

    def smallest_slopes(self, mu: float, k: int) -> tuple[np.ndarray, np.ndarray]:
        lam, x = self._eig(mu, 0, k - 1, True)
        return lam.copy(), self.n * x[0] ** 2 - 1.0

    def slopes_between(self, mu: float, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        lam, x = self._eig(mu, lo, hi - 1, True)
        return lam.copy(), self.n * x[0] ** 2 - 1.0

    def count_at_most(self, mu: float, x: float) -> int:
        key = (mu, x)
        if key not in self._counts:
            if len(self._counts) >= MEMO_MAX_ENTRIES:
                self._counts.clear()
            self._counts[key] = tridiagonal_count_below(self._diag(mu), self.e,
                                                        np.nextafter(x, np.inf))
        return self._counts[key]

    def embedding(self, mu: float, r: int) -> np.ndarray:
        n = self.n
        if r == 0:
            return np.zeros((n, 0))
        lam, Y = tridiagonal_eigh(self._diag(mu), self.e, n - r, n - 1)
        X = ones_reflector_vectors(self.tri.apply_q(Y))[:, ::-1]
        return fix_embedding(X * np.sqrt(np.clip(lam[::-1], 0.0, None)), lam[::-1])

    def farkas_side(self, mu: float) -> FarkasSide:
        r"""The bottom eigenvector of :math:`G(\mu)` of a dual certificate
        :math:`Y \succeq 0` with :math:`\langle Y, 11^\top - I\rangle = 0` and
        :math:`\langle Y, A\rangle < 0` (:func:`dgp.engine.family.combine_farkas`)."""
        lam, y = tridiagonal_eigh(self._diag(mu), self.e, 0, 0)
        x = fix_signs(ones_reflector_vectors(self.tri.apply_q(y)))[:, 0]
        slope = float(x.sum() ** 2 - 1.0)
        # x^T A x = x^T G(mu) x - mu x^T (11^T - I) x = lambda - mu * slope
        return x if self.n <= FARKAS_VECTORS_MAX_N else None, slope, float(lam[0]) - mu * slope

    def farkas_note(self, delta: float) -> str:
        return (f"vectors not listed above N = {FARKAS_VECTORS_MAX_N}: they are the bottom "
                f"eigenvectors of G(c) at c = (c_at_max -/+ {delta:.3g}/tau)")


class DenseEuclideanSpectrum(EuclideanSpectrum):
    """:math:`B = V^\\top\\ell V` tridiagonalised in the memory of ``ell``."""

    def __init__(self, target: LogTarget) -> None:
        ell = target.ell
        n = ell.shape[0]
        self.n = n
        self.spread = target.spread
        ones_reflector_apply(ell)
        ell[0, :] = 0.0  # clear the coupling to the direction of 1: B is the trailing block
        ell[:, 0] = 0.0
        self.tri = Tridiagonal(ell)
        # the first reflector of dsytrd is the identity (its column is zero): T = 0 (+) T_B
        self.d, self.e = self.tri.d[1:].copy(), self.tri.e[1:].copy()

    def extremes(self) -> tuple[float, float]:
        m = self.n - 1
        lo = float(tridiagonal_eigvals(self.d, self.e, 0, 0)[0])
        hi = float(tridiagonal_eigvals(self.d, self.e, m - 1, m - 1)[0])
        return lo, hi

    def smallest(self, k: int) -> np.ndarray:
        if k <= 0:
            return np.zeros(0)
        return tridiagonal_eigvals(self.d, self.e, 0, k - 1)

    def kth(self, k: int) -> float:
        return float(tridiagonal_eigvals(self.d, self.e, k, k)[0])

    def count_at_most(self, x: float) -> int:
        return tridiagonal_count_below(self.d, self.e, np.nextafter(x, np.inf))

    def embedding(self, c: float, r: int, tau: float) -> np.ndarray:
        n, m = self.n, self.n - 1
        if r == 0:
            return np.zeros((n, 0))
        lam, Y = tridiagonal_eigh(self.d - c, self.e, m - r, m - 1)
        full = np.vstack([np.zeros((1, r)), Y])
        X = ones_reflector_vectors(self.tri.apply_q(full))[:, ::-1]
        return fix_embedding(X * np.sqrt(tau * np.clip(lam[::-1], 0.0, None)), lam[::-1])


class TwinCosineSpectrum(BlockSpectrum):
    """The block spectrum of twin classes found in a dense target, its embedding in the dense
    engine's canonical form."""

    def embedding(self, mu: float, r: int) -> np.ndarray:
        Z = super().embedding(mu, r)
        return fix_embedding(Z, (Z * Z).sum(axis=0))


class TwinEuclideanSpectrum(BlockEuclideanSpectrum):
    """:class:`TwinCosineSpectrum`'s Euclidean counterpart."""

    def embedding(self, c: float, r: int, tau: float) -> np.ndarray:
        Z = super().embedding(c, r, tau)
        return fix_embedding(Z, (Z * Z).sum(axis=0))


def dense_family(target: LogTarget, *, similarity: str, tau: float, tol: Tolerance) -> Any:
    """The family of a dense log-target (overwrites ``target.ell`` unless it is made of twin
    classes, which the block spectra decide without it)."""
    from dgp.engine._reductions import choose_reductions

    # the twin classes, chosen once for the dense target (the identity without enough twins)
    blocks, ((_, twins),) = choose_reductions(target, similarity=similarity).apply(target)
    if twins is not None:
        members = twins.members
        if similarity == "cosine":
            return cosine_family(TwinCosineSpectrum(blocks, tau, members), tau=tau, tol=tol)
        return euclidean_family(TwinEuclideanSpectrum(blocks, members), tau=tau, tol=tol)
    if similarity == "cosine":
        return cosine_family(DenseCosineSpectrum(target, tau), tau=tau, tol=tol)
    return euclidean_family(DenseEuclideanSpectrum(target), tau=tau, tol=tol)

