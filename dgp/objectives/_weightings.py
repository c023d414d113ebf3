r"""The weightings of the named objectives (:mod:`dgp.objectives.registry`): validated labels,
the label kernel and its points, and the weighting objects an objective's record holds (class
blocks, the Gaussian kernel of y-Aware and Euclidean-Euclidean, X-CLR's softmax, the
column-normalised matrix of public code)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dgp._linalg import centre_points, squared_distances
from dgp.constants import SCALE_FLOOR
from dgp.errors import (
    ParameterError,
)
from dgp.objectives.backend import namespace
from dgp.solver import gaussian_log_kernel, inner_product_log_kernel

__all__ = [
    "ClassWeighting",
    "ColumnNormalisedWeighting",
    "GaussianWeighting",
    "Kernel",
    "Labels",
    "SoftmaxWeighting",
    "Weighting",
    "column_normalise",
    "kernel_points",
    "label_directions",
]


@dataclass(frozen=True, eq=False)
class Labels:
    """Labels validated for one objective.

    Attributes
    ----------
    kind : {"class", "continuous"}
    values : ndarray
        Class codes ``0..K-1`` (``N,``) or continuous labels (``N x p`` floats).
    classes : ndarray or None
        The sorted class labels (the code of ``classes[k]`` is ``k``).
    sizes : ndarray or None
        Class sizes in code order.
    """

    kind: str
    values: np.ndarray
    classes: np.ndarray | None = None
    sizes: np.ndarray | None = None

    @property
    def n(self) -> int:
        """Number of samples."""
        return int(self.values.shape[0])


@dataclass(frozen=True, eq=False)
class Kernel:
    r"""A Gaussian label kernel in scaled form: :math:`\ell_{ij} = -\kappa|x_i - x_j|^2` with
    centred, scaled points ``x`` (largest norm 1) and :math:`\kappa` computed in log space, so
    that neither tiny nor huge widths overflow.

    Attributes
    ----------
    x : ndarray, shape (N, p)
        Centred points divided by a power of two :math:`2^k` near their largest norm.
    kappa : float
        :math:`\kappa = 4^k / 2\sigma^2`.
    scale : float
        The largest distance of a centred label from the centre.
    points : ndarray, shape (N, p)
        The points the kernel is of, in the user's units (labels, or X-CLR's directions).
    roundoff_factor : float
        How far the points sit from the origin relative to their spread, ``>= 1``:
        :math:`\max(1, \max_i|p_i| / \mathrm{scale})`. Each point is known to one unit roundoff
        of its size, so centring leaves an error of ``roundoff_factor`` unit roundoffs relative
        to the spread: labels translated by ``t`` are the same labels to that accuracy, and
        the decisions widen their tolerance by it (so a translation does not flip them).
    """

    x: np.ndarray
    kappa: float
    scale: float
    points: np.ndarray
    roundoff_factor: float = 1.0

    @property
    def unit_roundoff(self) -> float:
        """The unit roundoff of the centred points relative to their spread (float64's times
        :attr:`roundoff_factor`): what the tolerance policy of their classification uses."""
        return float(np.finfo(float).eps) * self.roundoff_factor


def kernel_points(points: np.ndarray, width2: float, name: str) -> Kernel:
    r"""Scale the points of a Gaussian kernel :math:`e^{-|p_i - p_j|^2/2w}` (``width2 = w``).

    Raises
    ------
    ParameterError
        If :math:`s^2/2w` is beyond floating point (``> 1e150``: the log-weights overflow) or
        so small that the kernel is constant to double precision (every weight the same).
    """
    x = centre_points(points)
    s = float(np.sqrt(np.einsum("ij,ij->i", x, x).max()))
    if s == 0.0:
        return Kernel(x, 0.0, 0.0, points)
    e = int(np.frexp(float(np.abs(points).max()))[1])  # |p_i| scaled by a power of two: exact
    q = np.ldexp(points, -e)
    size = math.ldexp(float(np.sqrt(np.einsum("ij,ij->i", q, q).max())), e)
    factor = max(1.0, size / s)
    k = int(np.frexp(s)[1])  # scale by a power of two: exact
    x = np.ldexp(x, -k)
    log_w = math.log(width2) if width2 > 0 else -math.inf  # a width below float64: too small
    log_kappa = 2.0 * k * math.log(2.0) - math.log(2.0) - log_w
    if log_kappa > math.log(1e150):
        raise ParameterError(
            name, f"is too small for labels of scale {s:.3g}: the log-weights "
            f"-|y_i - y_j|^2 / (2 {name}^2) reach about -{math.exp(min(log_kappa, 700)):.3g}, "
            f"beyond floating point; use {name} >= {s * 1e-75:.3g} or rescale the labels"
        )
    half = 0.5 / width2 if width2 > SCALE_FLOOR else math.inf
    kappa = float(np.ldexp(half, 2 * k)) if math.isfinite(half) and half > 0 else math.exp(
        log_kappa)
    if not (math.isfinite(kappa) and kappa > 0):
        kappa = math.exp(log_kappa)
    if 4.0 * kappa * float(np.einsum("ij,ij->i", x, x).max()) < 1e3 * np.finfo(float).eps:
        raise ParameterError(
            name, f"is so large for labels of scale {s:.3g} that the kernel is constant to "
            "double precision (every weight the same, the verdict that of uniform weights); "
            f"use {name} <= {s * 1e6:.3g} or rescale the labels"
        )
    return Kernel(x, kappa, s, points, factor)


def label_directions(y: np.ndarray, name: str = "labels") -> np.ndarray:
    """The L2-normalised rows of ``y``, each first divided by a power of two near its largest
    entry (exact), so that rows near the largest or the smallest float neither overflow nor
    underflow in their norm."""
    top = np.abs(y).max(axis=1)
    if (top == 0).any():
        i = int(np.flatnonzero(top == 0)[0])
        raise ParameterError(name, f"row {i} is a zero label embedding, which X-CLR cannot "
                             "L2-normalise")
    x = np.ldexp(y, -np.frexp(top)[1][:, None])
    return x / np.linalg.norm(x, axis=1)[:, None]


# -- weightings: how an objective builds its weights, for the engine (dense log-weights, the
# diagonal excluded: the engine ignores it) and for a batch (NumPy or torch, the same code) -----


@dataclass(frozen=True)
class ClassWeighting:
    r"""Class labels: :math:`w_{ij} = 1` within a class and a constant across, zero
    (``cross=None``) or the parameter named ``cross``.

    Attributes
    ----------
    cross : str or None
        The parameter that is the cross-class weight (``"eps"``); ``None``: the weight across
        classes is 0.
    """

    cross: str | None = None

    def cross_weight(self, params: Mapping[str, float]) -> float:
        """The weight across classes (0 without a ``cross`` parameter)."""
        return 0.0 if self.cross is None else float(params[self.cross])

    def log_weights(self, lab: Labels, params: Mapping[str, float]) -> np.ndarray:
        cross = -np.inf if self.cross is None else math.log(params[self.cross])
        same = lab.values[:, None] == lab.values[None, :]
        return np.where(same, 0.0, cross)

    def block_log_weights(self, params: Mapping[str, float], K: int) -> tuple[np.ndarray, float]:
        cross = -np.inf if self.cross is None else math.log(params[self.cross])
        return np.zeros(K), cross

    def batch(self, y: Any, params: Mapping[str, float]) -> Any:
        """The weights of a batch of class labels ``y`` (``N,``; NumPy or torch), float64, the
        diagonal not zeroed: exactly 1 within a class and the cross weight across."""
        xp = namespace(y)
        return xp.where(y[:, None] == y[None, :], 1.0, self.cross_weight(params))

    #: the weight of a pair depends on the pair alone, not on the rest of its batch
    pairwise: ClassVar[bool] = True

    def cross_log(self, a: np.ndarray, b: np.ndarray,
                  params: Mapping[str, float]) -> np.ndarray:
        """The log-weights between class codes ``a`` (rows) and ``b`` (columns), NumPy."""
        cross = -np.inf if self.cross is None else math.log(params[self.cross])
        return np.where(a[:, None] == b[None, :], 0.0, cross)

    def batch_log(self, y: np.ndarray, params: Mapping[str, float]) -> np.ndarray:
        """The log-weights of a batch of class codes (NumPy), the diagonal not set."""
        return self.cross_log(y, y, params)


@dataclass(frozen=True)
class GaussianWeighting:
    r"""Continuous labels: the Gaussian kernel :math:`e^{-|p_i - p_j|^2 / 2w}` of the labels
    (or, ``directions=True``, of their L2-normalised directions), with :math:`w` the parameter
    ``width`` squared (``squared=True``, :math:`\sigma^2`) or the parameter itself.

    Attributes
    ----------
    width : str
        The parameter that sets the kernel width (``"sigma"``, ``"label_tau"``).
    squared : bool
        Whether the width :math:`w` is that parameter squared.
    symbol : str
        How texts write :math:`w` (``"sigma^2"``, ``"tau_y"``).
    directions : bool
        Whether the kernel is of the L2-normalised labels (X-CLR).
    row_normalised : bool
        Whether the weights are normalised along each row (a softmax: the engine's offsets
        convention matters).
    column_normalised : bool
        Whether the weights are divided along columns (the public y-Aware slip).
    """

    width: str = "sigma"
    squared: bool = True
    symbol: str = "sigma^2"
    directions: bool = False
    row_normalised: bool = False
    column_normalised: bool = False

    def width2(self, params: Mapping[str, float]) -> float:
        """The kernel width :math:`w` (``sigma^2`` or ``tau_y``)."""
        v = params[self.width]
        return v * v if self.squared else v  # inf beyond float64 (v**2 raises), refused later

    def check_labels(self, y: np.ndarray, name: str) -> None:
        """Refuse labels the kernel cannot be built of (zero directions)."""
        if self.directions:
            label_directions(y, name)

    def points(self, lab: Labels) -> np.ndarray:
        """The points the kernel is of: the labels, or their L2-normalised directions."""
        return label_directions(lab.values) if self.directions else lab.values

    def kernel(self, lab: Labels, params: Mapping[str, float]) -> Kernel:
        """The scaled Gaussian kernel of the labels (:func:`kernel_points`)."""
        return kernel_points(self.points(lab), self.width2(params), self.width)

    def normalise_log(self, L: np.ndarray) -> np.ndarray:
        """The objective's log-weights from the kernel's (in place where it can)."""
        return L

    def log_weights(self, lab: Labels, params: Mapping[str, float]) -> np.ndarray:
        kernel = self.kernel(lab, params)
        L = squared_distances(kernel.x)
        L *= -kernel.kappa
        return self.normalise_log(L)

    def batch_kernel(self, y: Any, width2: float) -> Any:
        """The kernel of a batch ``y`` (``N x p``, NumPy or torch), diagonal included."""
        xp = namespace(y)
        sq = (y * y).sum(1)
        D = xp.clamp_min(sq[:, None] + sq[None, :] - 2.0 * (y @ y.T), 0.0)
        return xp.exp(-D / (2.0 * width2))

    def batch(self, y: Any, params: Mapping[str, float]) -> Any:
        """The weights of a batch of labels ``y`` (``N x p``; NumPy or torch, whose zero
        directions the caller has refused), the diagonal not zeroed."""
        return self.batch_kernel(y, self.width2(params))

    #: the weight of a pair depends on the pair alone, not on the rest of its batch
    pairwise: ClassVar[bool] = True

    def cross_log(self, a: np.ndarray, b: np.ndarray,
                  params: Mapping[str, float]) -> np.ndarray:
        """The log-weights between labels ``a`` (rows) and ``b`` (columns), NumPy, in log
        space (a narrow kernel does not underflow): :math:`-|a_i - b_j|^2 / 2w`
        (:func:`dgp.solver.gaussian_log_kernel`)."""
        return gaussian_log_kernel(a, b, self.width2(params))

    def batch_log(self, y: np.ndarray, params: Mapping[str, float]) -> np.ndarray:
        """The log-weights of a batch of labels (NumPy, ``N x p``), the diagonal not set
        (:meth:`cross_log` of the batch with itself)."""
        return self.cross_log(y, y, params)


@dataclass(frozen=True)
class SoftmaxWeighting(GaussianWeighting):
    r"""X-CLR: :math:`w_{ij} = \mathrm{softmax}_{k \ne i}(\langle\hat y_i, \hat y_k\rangle /
    \tau_y)_j`, the row softmax of the Gaussian kernel of the directions :math:`\hat y`
    (:math:`\langle\hat y_i, \hat y_k\rangle = 1 - |\hat y_i - \hat y_k|^2/2`, the constant
    cancels)."""

    width: str = "label_tau"
    squared: bool = False
    symbol: str = "tau_y"
    directions: bool = True
    row_normalised: bool = True

    def normalise_log(self, L: np.ndarray) -> np.ndarray:
        np.fill_diagonal(L, -np.inf)
        top = L.max(axis=1, keepdims=True)
        L -= top + np.log(np.exp(L - top).sum(axis=1, keepdims=True))
        return L

    def batch(self, y: Any, params: Mapping[str, float]) -> Any:
        xp = namespace(y)
        yh = y / xp.row_norms(y)[:, None]
        return xp.off_diagonal_softmax((yh @ yh.T) / self.width2(params))

    def cross_log(self, a: np.ndarray, b: np.ndarray,
                  params: Mapping[str, float]) -> np.ndarray:
        r""":math:`\langle\hat a_i, \hat b_j\rangle / \tau_y`: the row softmax's normaliser is
        a constant per row, which cancels in a batch's row-normalised target
        (:func:`dgp.solver.inner_product_log_kernel`)."""
        ah = a / np.linalg.norm(a, axis=1, keepdims=True)
        bh = b / np.linalg.norm(b, axis=1, keepdims=True)
        return inner_product_log_kernel(ah, bh, self.width2(params))


@dataclass(frozen=True)
class ColumnNormalisedWeighting(GaussianWeighting):
    r"""The Gaussian kernel divided as public y-Aware code does, ``W /= W.sum(1)``: the row sums
    broadcast along the last axis, :math:`w_{ij} = k_{ij}/s_j`, :math:`s_j = \sum_k k_{jk}`
    (:math:`k_{jj} = 1` included)."""

    column_normalised: bool = True
    #: a pair's weight depends on its batch (each batch's kernel is normalised over it)
    pairwise: ClassVar[bool] = False

    def normalise_log(self, L: np.ndarray) -> np.ndarray:
        top = L.max(axis=1)  # the diagonal 0 is the largest
        log_s = top + np.log(np.exp(L - top[:, None]).sum(axis=1))
        L -= log_s[None, :]
        return L

    def batch(self, y: Any, params: Mapping[str, float]) -> Any:
        return column_normalise(super().batch(y, params))

    def batch_log(self, y: np.ndarray, params: Mapping[str, float]) -> np.ndarray:
        """``log(K / K.sum(1))`` of the batch's kernel ``K`` (diagonal 1 included in the sums),
        as public code normalises each batch, in log space."""
        L = super().batch_log(y, params)
        top = L.max(axis=1)
        log_s = top + np.log(np.exp(L - top[:, None]).sum(axis=1))
        return L - log_s[None, :]


def column_normalise(W: Any) -> Any:
    """``W / W.sum(1)`` exactly as public code writes it (entry ``(i, j)`` divided by the sum
    of row ``j``), for a NumPy array or a torch tensor."""
    return W / W.sum(1)


#: the weighting object an objective's record holds
Weighting = ClassWeighting | GaussianWeighting
