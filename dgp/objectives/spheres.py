r"""Best-fit sphere of a point cloud within its affine hull (centre, radius, residual).

The realizability of the Gaussian label kernels (y-Aware, X-CLR, see :mod:`dgp.objectives`)
depends on whether the labels lie on a sphere, and on its radius. A point set whose affine hull
has dimension :math:`m < p` lies on infinitely many spheres of :math:`\mathbb R^p`; the one that
matters is the sphere *within the affine hull* (the smallest), so we first find the hull by an
SVD of the centred points and fit there.

Fit (algebraic least squares, Kåsa): with coordinates :math:`x_i \in \mathbb R^m` in the hull,
solve :math:`\min_{c, b} \sum_i (|x_i|^2 - 2c\cdot x_i - b)^2`, then
:math:`R^2 = b + |c|^2`. The points lie exactly on a sphere iff the residual vanishes. We report the
geometric relative residual :math:`\mathrm{rms}_i(|x_i - c| - R)/R` (zero iff on the sphere).
Cost :math:`O(Np^2)`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dgp._linalg import tall_r
from dgp.constants import SPHERE_FIT_RTOL, SPHERE_FIT_RTOL_FLOOR, SPHERE_RESIDUAL_RTOL_FLOOR
from dgp.errors import check_labels_continuous
from dgp.records import Record
from dgp.tolerance import check_rtol

__all__ = [
    "SphereFit",
    "fit_sphere",
    "label_sphere",
    "on_label_sphere",
    "sphere_of",
    "sphere_tolerance",
]


@dataclass(frozen=True)
class SphereFit(Record):
    """The best-fit sphere of points within their affine hull.

    Attributes
    ----------
    centre : ndarray, shape (p,)
        Centre, in the original coordinates (it lies in the affine hull).
    radius : float
        Radius :math:`R` (0 for a single repeated point).
    residual : float
        Relative geometric residual :math:`\\mathrm{rms}_i(|y_i - c| - R) / R` (0 when
        ``radius == 0``).
    max_residual : float
        :math:`\\max_i ||y_i - c| - R| / R`.
    affine_dim : int
        Dimension :math:`m` of the affine hull (singular values above ``rtol`` times the largest).
    rtol : float
        Relative tolerance used for ``affine_dim``.
    """

    centre: np.ndarray
    radius: float
    residual: float
    max_residual: float
    affine_dim: int
    rtol: float

    def json_items(self, options):
        yield from (("centre", self.centre), ("radius", self.radius),
                    ("relative_residual", self.residual),
                    ("max_relative_residual", self.max_residual),
                    ("affine_dim", self.affine_dim), ("rtol", self.rtol))
        yield "method", "algebraic least squares (Kasa) within the affine hull"


def fit_sphere(points: object, *, rtol: float = SPHERE_FIT_RTOL) -> SphereFit:
    r"""Fit a sphere to points within their affine hull.

    Parameters
    ----------
    points : array_like, shape (N, p)
        Finite points (a 1-D array is ``N x 1``).
    rtol : float
        Relative singular-value tolerance that decides the affine dimension.

    Returns
    -------
    SphereFit

    Raises
    ------
    ValueError
        If the points are not a finite ``N x p`` array with ``N >= 2``, or ``rtol`` is not in
        (0, 1).
    TypeError
        If the points are not numbers.

    Examples
    --------
    >>> import numpy as np
    >>> t = np.linspace(0, 2 * np.pi, 7)[:-1]
    >>> fit = fit_sphere(np.c_[3 + 2 * np.cos(t), -1 + 2 * np.sin(t), np.full(6, 5.0)])
    >>> fit.affine_dim, round(fit.radius, 12), fit.centre.round(12).tolist()
    (2, 2.0, [3.0, -1.0, 5.0])
    """
    return sphere_of(check_labels_continuous(points, "points"), rtol=check_rtol(rtol))


def sphere_of(y: np.ndarray, *, rtol: float) -> SphereFit:
    """:func:`fit_sphere` of validated ``N x p`` float points."""
    d0 = y - y[0]  # exact zeros for repeated labels (see dgp._linalg.centre_points)
    shift = d0.mean(axis=0)
    yc = d0 - shift
    mean = y[0] + shift
    scale = float(np.abs(yc).max())
    if scale == 0.0:
        return SphereFit(mean, 0.0, 0.0, 0.0, 0, rtol)
    yc /= scale
    _, sv, Vt = np.linalg.svd(tall_r(yc))  # singular values of the centred points, O(Np^2)
    m = int((sv > rtol * sv[0]).sum())
    basis = Vt[:m].T  # p x m, orthonormal
    x = yc @ basis  # coordinates in the hull, O(1) scale
    aug = np.empty((x.shape[0], m + 2))
    aug[:, :m] = 2.0 * x
    aug[:, m] = 1.0
    aug[:, m + 1] = np.einsum("ij,ij->i", x, x)
    Ra = tall_r(aug)  # least squares on the (m+2) x (m+2) factor: same solution
    sol, *_ = np.linalg.lstsq(Ra[:, : m + 1], Ra[:, m + 1], rcond=None)
    c = sol[:m]
    R2 = float(sol[m] + c @ c)
    dist = np.linalg.norm(x - c, axis=1)
    R = float(np.sqrt(max(R2, 0.0)))
    if R == 0.0:  # pragma: no cover - a fit through one point only
        R = float(dist.mean())
    dev = (dist - R) / R
    centre = mean + scale * (basis @ c)
    return SphereFit(
        centre,
        R * scale,
        float(np.sqrt(np.mean(dev**2))),
        float(np.abs(dev).max()),
        m,
        rtol,
    )


def sphere_tolerance(rtol: float) -> float:
    r"""The largest relative residual of a fit whose points count as on its sphere, for the
    tolerance ``rtol`` of a verdict: :math:`\sqrt{\max(rtol, \epsilon_0)}` (the residual of
    exactly spherical float64 labels is noise of order 1e-8). The one rule: the closed-form
    explanation of a label kernel, its critical temperatures and the phase maps' boundary."""
    return float(np.sqrt(max(rtol, SPHERE_RESIDUAL_RTOL_FLOOR)))


def label_sphere(points: np.ndarray, *, rtol: float) -> SphereFit:
    """The sphere fit behind a label condition at tolerance ``rtol`` (:func:`sphere_of` with
    ``rtol`` floored at what float64 least squares resolves); its points are on the sphere
    when ``fit.residual <= sphere_tolerance(rtol)`` (:func:`on_label_sphere`)."""
    return sphere_of(points, rtol=max(rtol, SPHERE_FIT_RTOL_FLOOR))


def on_label_sphere(fit: SphereFit, rtol: float) -> bool:
    """Whether the points of ``fit`` (from :func:`label_sphere`) lie on their sphere (of
    radius 0 when they are one point)."""
    return bool(fit.residual <= sphere_tolerance(rtol))
