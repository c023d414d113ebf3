r"""What the family decisions of :mod:`dgp.engine.family` read of a weighting's spectrum: the
protocols each engine implements (:class:`CosineSpectrum`, :class:`EuclideanSpectrum`) and
the dual data of an empty family they return (:class:`FarkasData`), the ones
an engine knows as eigenvalues with multiplicities (:class:`MultiplicitySpectrum`,
:class:`MultiplicityEuclideanSpectrum`, read through :func:`repeat_smallest`) and the box where
the cosine family can be PSD (:func:`psd_box`). :mod:`dgp.engine.family` re-exports them where
the API reference documents them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dgp.constants import FARKAS_OFFSET_RTOL, SLOPE_GAP

__all__ = ["CosineSpectrum", "EuclideanSpectrum", "FarkasData", "MultiplicityEuclideanSpectrum",
           "MultiplicitySpectrum", "combine_farkas", "farkas_offset", "psd_box",
           "repeat_smallest"]

#: one side of a Farkas certificate: a bottom eigenvector of :math:`G(\mu)` (``None`` where it is
#: not listed), its slope :math:`(1^\top x)^2 - 1` and :math:`x^\top A x`
FarkasSide = tuple[np.ndarray | None, float, float]


@dataclass(frozen=True)
class FarkasData:
    """The dual certificate of an empty cosine family (see
    :class:`dgp.engine.certificates.FarkasCertificate`)."""

    weights: tuple[float, ...]
    vectors: tuple[tuple[float, ...], ...] | None
    inner_ones_minus_identity: float
    inner_A: float
    vectors_note: str | None = None


class CosineSpectrum:
    """What the cosine decisions need to know about :math:`G(\\mu)`; engines subclass it."""

    n: int

    def lam_min_slope(self, mu: float) -> tuple[float, float]:
        """The smallest eigenvalue and a supergradient of it, :math:`(1^\\top x)^2 - 1`."""
        raise NotImplementedError

    def lam_min(self, mu: float) -> float:
        """The smallest eigenvalue."""
        return self.smallest(mu, 1)[0]

    def lam_max(self, mu: float) -> float:
        """The largest eigenvalue."""
        raise NotImplementedError

    def norm_floor(self, mu: float) -> float:
        r"""A lower bound of the spectral norm of :math:`G(\mu)`, cheaper than an eigenvalue:
        1 here (the unit diagonal); engines may know a better one."""
        return 1.0

    def smallest(self, mu: float, k: int) -> np.ndarray:
        """The ``k`` smallest eigenvalues, ascending."""
        raise NotImplementedError

    def kth(self, mu: float, k: int) -> float:
        """The eigenvalue of index ``k`` (0-based, ascending)."""
        return float(self.smallest(mu, k + 1)[k])

    def smallest_slopes(self, mu: float, k: int) -> tuple[np.ndarray, np.ndarray]:
        r"""The ``k`` smallest eigenvalues and their derivatives in :math:`\mu`,
        :math:`(1^\top x)^2 - 1` for each (orthonormal) eigenvector :math:`x`."""
        raise NotImplementedError

    def slopes_between(self, mu: float, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """The eigenvalues of index ``lo`` to ``hi - 1`` (ascending) and their derivatives in
        :math:`\\mu`, as :meth:`smallest_slopes` gives them."""
        lam, slopes = self.smallest_slopes(mu, hi)
        return lam[lo:], slopes[lo:]

    def count_at_most(self, mu: float, x: float) -> int:
        """The number of eigenvalues ``<= x``."""
        raise NotImplementedError

    def box(self) -> tuple[float, float]:
        """An interval of :math:`\\mu` outside which no member is PSD."""
        raise NotImplementedError

    def farkas(self, mu_star: float, phi_star: float) -> FarkasData | None:
        """The dual certificate at the maximiser of an empty family: the sides of
        :meth:`farkas_side` at :func:`farkas_offset` below and above it, combined by
        :func:`combine_farkas` (``None`` for an engine that gives no sides)."""
        delta = farkas_offset(mu_star, phi_star, self.n)
        below = self.farkas_side(mu_star - delta)
        if below is None:
            return None
        return combine_farkas((below, self.farkas_side(mu_star + delta)),
                              note=self.farkas_note(delta))

    def farkas_side(self, mu: float) -> FarkasSide | None:
        """A bottom eigenvector of :math:`G(\\mu)` (``None`` where it is not listed), its slope
        :math:`(1^\\top x)^2 - 1` and :math:`x^\\top A x = \\lambda - \\mu\\,\\mathrm{slope}`;
        ``None`` here: no certificate."""
        return None

    def farkas_note(self, delta: float) -> str:
        """What the certificate says of the vectors it does not list (taken at ``mu* -/+
        delta``)."""
        return "vectors not listed"

    def structure(self, mu: float) -> dict[str, Any] | None:
        """What the reduced spectrum looks like at ``mu`` (structured engines)."""
        return None

    def prototypes(self, mu: float, atol: float) -> list[list[float]] | None:
        """Class prototypes at ``mu`` when every class collapses there (class-block engines)."""
        return None

    def embedding(self, mu: float, r: int) -> np.ndarray:
        """The ``N x r`` embedding from the top ``r`` eigenpairs (clipped, fixed signs)."""
        raise NotImplementedError


def combine_farkas(
    sides: tuple[FarkasSide, FarkasSide],
    *,
    note: str,
) -> FarkasData:
    r"""The Farkas certificate from the bottom eigenvectors on both sides of the maximiser of
    :math:`\varphi` (each side: the vector or ``None``, its slope :math:`(1^\top x)^2 - 1` and
    :math:`x^\top A x`): zero lies between the two slopes, and the convex combination of
    :math:`x_\pm x_\pm^\top` with zero slope is :math:`Y` (``note`` explains unlisted vectors).
    """
    (x1, s1, a1), (x2, s2, a2) = sides
    if s1 - s2 > SLOPE_GAP and s1 >= 0 >= s2:
        alpha = -s2 / (s1 - s2)
    else:  # one smooth eigenvector already has (near) zero slope
        alpha = 1.0 if abs(s1) <= abs(s2) else 0.0
    listed = x1 is not None and x2 is not None
    return FarkasData(
        weights=(alpha, 1.0 - alpha),
        vectors=(tuple(float(v) for v in x1), tuple(float(v) for v in x2)) if listed else None,
        inner_ones_minus_identity=alpha * s1 + (1.0 - alpha) * s2,
        inner_A=alpha * a1 + (1.0 - alpha) * a2,
        vectors_note=None if listed else note,
    )


def farkas_offset(mu_star: float, phi_star: float, n: int) -> float:
    """How far on each side of the maximiser the two bottom eigenvectors are taken."""
    return min(FARKAS_OFFSET_RTOL, abs(phi_star) / (8.0 * n)) * max(1.0, abs(mu_star))


def psd_box(tau: float, lo: float, hi: float) -> tuple[float, float]:
    """An interval of :math:`\\mu` outside which no :math:`G(\\mu)` is PSD, for off-diagonal
    target values in ``[lo, hi]`` (every engine's :meth:`CosineSpectrum.box`).

    A PSD matrix with a unit diagonal has entries in ``[-1, 1]``, so every
    :math:`\\tau\\ell_{ij} + \\mu` must lie there; one unit beyond, some ``2 x 2`` minor has an
    eigenvalue ``<= -1``, so :math:`\\varphi < 0` at both ends of the box.
    """
    box_lo, box_hi = -1.0 - tau * lo, 1.0 - tau * hi
    return min(box_lo, box_hi) - 1.0, max(box_lo, box_hi) + 1.0


def repeat_smallest(
    k: int, values: np.ndarray, mults: np.ndarray, *columns: np.ndarray
) -> tuple[np.ndarray, ...]:
    """The ``k`` smallest of ``values``, ascending, each repeated ``mults`` times (a value of
    multiplicity 0 is left out; ties keep their order), and each of ``columns`` (one entry per
    value, e.g. its slope) repeated alike: the tuple ``(values, *columns)``.

    The one reading of a spectrum given as distinct eigenvalues with multiplicities (the block,
    grouped and low-rank engines), never materialised beyond ``k`` entries.
    """
    k = max(int(k), 0)
    keep = mults > 0
    order = np.argsort(values[keep], kind="stable")
    reps = np.minimum(mults[keep][order], k).astype(np.int64)
    return tuple(np.repeat(a[keep][order], reps)[:k] for a in (values, *columns))


class MultiplicitySpectrum(CosineSpectrum):
    """A cosine spectrum an engine knows as distinct eigenvalues with multiplicities
    (:meth:`eigenvalues`): the largest, the ``k`` smallest and the count below ``x`` are read
    from them here, once; the engine's reduced decomposition at a point (:meth:`decompose`)
    is computed once per point (:meth:`parts`)."""

    _last: tuple[float, Any] | None = None

    def decompose(self, mu: float) -> Any:
        """The engine's reduced decomposition at ``mu`` (uncached)."""
        raise NotImplementedError

    def parts(self, mu: float) -> Any:
        """:meth:`decompose` at ``mu``, remembered for the last ``mu`` asked (the decisions ask
        several questions at one point)."""
        if self._last is not None and self._last[0] == mu:
            return self._last[1]
        out = self.decompose(mu)
        self._last = (mu, out)
        return out

    def eigenvalues(self, mu: float) -> tuple[np.ndarray, np.ndarray]:
        """The distinct eigenvalues of :math:`G(\\mu)` and their multiplicities (any order)."""
        raise NotImplementedError

    def lam_max(self, mu: float) -> float:
        vals, mults = self.eigenvalues(mu)
        return float(vals[mults > 0].max())

    def smallest(self, mu: float, k: int) -> np.ndarray:
        vals, mults = self.eigenvalues(mu)
        return repeat_smallest(k, vals, mults)[0]

    def count_at_most(self, mu: float, x: float) -> int:
        vals, mults = self.eigenvalues(mu)
        return int(mults[vals <= x].sum())


class EuclideanSpectrum:
    """What the Euclidean decisions need to know about :math:`B = V^\\top\\ell V` on
    :math:`1^\\perp` (``n - 1`` eigenvalues)."""

    n: int
    spread: float  # max - min of ell off the diagonal

    def extremes(self) -> tuple[float, float]:
        """Smallest and largest eigenvalue of ``B``."""
        raise NotImplementedError

    def smallest(self, k: int) -> np.ndarray:
        """The ``k`` smallest eigenvalues of ``B``, ascending."""
        raise NotImplementedError

    def kth(self, k: int) -> float:
        """The eigenvalue of ``B`` of index ``k`` (0-based, ascending)."""
        return float(self.smallest(k + 1)[k])

    def count_at_most(self, x: float) -> int:
        """The number of eigenvalues of ``B`` that are ``<= x``."""
        raise NotImplementedError

    def structure(self) -> dict[str, Any] | None:
        """What the reduced spectrum looks like (structured engines)."""
        return None

    def embedding(self, c: float, r: int, tau: float) -> np.ndarray:
        """The centred ``N x r`` embedding of :math:`\\tau(B - cI)` (clipped, fixed signs)."""
        raise NotImplementedError


# ----------------------------------------------------------------------------------------------
# the concave search
# ----------------------------------------------------------------------------------------------


class MultiplicityEuclideanSpectrum(EuclideanSpectrum):
    """A Euclidean spectrum an engine knows as distinct eigenvalues ``vals`` with
    multiplicities ``mults`` (set by its constructor): the extremes, the ``k`` smallest and the
    count below ``x`` are read from them here, once."""

    vals: np.ndarray
    mults: np.ndarray

    def extremes(self) -> tuple[float, float]:
        present = self.vals[self.mults > 0]
        return float(present.min()), float(present.max())

    def smallest(self, k: int) -> np.ndarray:
        return repeat_smallest(k, self.vals, self.mults)[0]

    def count_at_most(self, x: float) -> int:
        return int(self.mults[self.vals <= x].sum())
