r"""The registry of named objectives: one record per objective, read by the weight builders,
the structured engine, the torch losses, the audit and the command line.

Each :class:`Objective` says which latent similarity the objective uses, what labels it takes,
which parameters (validated here, once), and how to build its weighting: dense log-weights
(never exponentiated, so small kernels do not underflow) and, where the objective has
structure, the class blocks or the low-rank label kernel the structured engine decides without
an :math:`N \times N` matrix.

Whatever the rest of dgp needs to know about an objective is a field or a method of its record
(its weighting object: :class:`ClassWeighting`, :class:`GaussianWeighting` and its
:class:`SoftmaxWeighting` and :class:`ColumnNormalisedWeighting` variants; its closed-form
``boundary``; the objective a slip is ``intended`` as), never a comparison of its name, so
adding an objective is adding one record. The weights of a batch
(:meth:`Objective.batch_weights`, the torch losses' weighting) are one implementation for NumPy
arrays and torch tensors (:mod:`dgp.objectives.backend`); torch is imported only when a tensor
is given.

Objectives (labels :math:`y`):

- ``supcon`` (Khosla et al. 2020, :math:`L_{out}`): :math:`w_{ij} = 1[y_i = y_j]`;
- ``soft-supcon``: 1 within a class, :math:`\varepsilon` across (singleton classes allowed);
- ``y-aware`` (Dufumier et al. 2021): :math:`w_{ij} = e^{-|y_i - y_j|^2/2\sigma^2}`, cosine;
- ``euclid-euclid``: the same kernel, Euclidean latent;
- ``x-clr`` (Sobal et al. 2024): :math:`w_{ij} = \mathrm{softmax}_{k \ne i}(\langle\hat y_i,
  \hat y_k\rangle/\tau_y)_j`, :math:`\hat y` the L2-normalised label embeddings;
- ``y-aware-colnorm``: the column-normalised y-Aware matrix of public code (``W /= W.sum(1)``
  broadcasts as :math:`w_{ij} = k_{ij}/s_j`), dense engine only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dgp._linalg import centre_points, squared_distances
from dgp.constants import SCALE_FLOOR
from dgp.errors import (
    InvalidParameterError,
    ParameterError,
    check_choice,
    check_labels_continuous,
    check_positive,
    check_unit_interval,
    class_codes,
)
from dgp.objectives.backend import namespace
from dgp.objectives.spheres import label_sphere, on_label_sphere
from dgp.tolerance import DEFAULT_RTOL

__all__ = [
    "OBJECTIVES",
    "OBJECTIVE_NAMES",
    "PARAMETERS",
    "ClassWeighting",
    "ColumnNormalisedWeighting",
    "GaussianWeighting",
    "Kernel",
    "LabelBatchWeights",
    "Labels",
    "Objective",
    "SoftmaxWeighting",
    "Weighting",
    "column_normalise",
    "get",
    "kernel_points",
]

#: every parameter an objective may take, with its meaning (for help texts and errors)
PARAMETERS = {
    "eps": "cross-class weight in (0, 1) (soft-supcon)",
    "sigma": "label kernel width > 0 (y-aware, euclid-euclid, y-aware-colnorm)",
    "label_tau": "label temperature > 0 (x-clr)",
}


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


def _directions(y: np.ndarray, name: str = "labels") -> np.ndarray:
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

    def batch_log(self, y: np.ndarray, params: Mapping[str, float]) -> np.ndarray:
        """The log-weights of a batch of class codes (NumPy), the diagonal not set."""
        cross = -np.inf if self.cross is None else math.log(params[self.cross])
        return np.where(y[:, None] == y[None, :], 0.0, cross)


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
            _directions(y, name)

    def points(self, lab: Labels) -> np.ndarray:
        """The points the kernel is of: the labels, or their L2-normalised directions."""
        return _directions(lab.values) if self.directions else lab.values

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

    def batch_log(self, y: np.ndarray, params: Mapping[str, float]) -> np.ndarray:
        """The log-weights of a batch of labels (NumPy, ``N x p``), in log space (a narrow
        kernel does not underflow), the diagonal not set: :math:`-|y_i - y_j|^2 / 2w`."""
        sq = np.sum(y * y, axis=1)
        D = np.maximum(sq[:, None] + sq[None, :] - 2.0 * (y @ y.T), 0.0)
        return -D / (2.0 * self.width2(params))


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

    def batch_log(self, y: np.ndarray, params: Mapping[str, float]) -> np.ndarray:
        r""":math:`\langle\hat y_i, \hat y_j\rangle / \tau_y`: the row softmax's normaliser is
        a constant per row, which cancels in a batch's row-normalised target."""
        yh = y / np.linalg.norm(y, axis=1, keepdims=True)
        return (yh @ yh.T) / self.width2(params)


@dataclass(frozen=True)
class ColumnNormalisedWeighting(GaussianWeighting):
    r"""The Gaussian kernel divided as public y-Aware code does, ``W /= W.sum(1)``: the row sums
    broadcast along the last axis, :math:`w_{ij} = k_{ij}/s_j`, :math:`s_j = \sum_k k_{jk}`
    (:math:`k_{jj} = 1` included)."""

    column_normalised: bool = True

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


Weighting = ClassWeighting | GaussianWeighting


@dataclass(frozen=True)
class Objective:
    r"""One named objective: everything the rest of dgp asks about it (no caller compares its
    name).

    Attributes
    ----------
    name : str
    similarity : {"cosine", "euclidean"}
        Its own latent similarity.
    labels : {"class", "continuous"}
    params : tuple of str
        The parameters it takes (``eps``, ``sigma``, ``label_tau``).
    summary : str
        One line for help texts.
    structured : {"blocks", "lowrank", None}
        Its structured path.
    weighting : ClassWeighting or GaussianWeighting
        How its weights are built: dense log-weights for the engine, and the weights of a
        batch (NumPy or torch, one implementation) for the losses.
    min_class_size : int
        Class objectives: the smallest class it accepts.
    boundary : {"simplex", "sphere", None}
        Its closed-form boundary in the cosine latent: ``"simplex"``, Soft SupCon's
        :math:`\tau^*` (the target is the centred regular simplex there); ``"sphere"``,
        :math:`\tau R^2 = w` for labels on a sphere (:math:`w` the kernel width); ``None``.
    intended : str or None
        The objective this one is a slip of (its weighting is the intended one's, column
        normalised), ``None`` for an objective in its own right.
    """

    name: str
    similarity: str
    labels: str
    params: tuple[str, ...]
    summary: str
    structured: str | None
    weighting: Weighting
    min_class_size: int = 2
    boundary: str | None = None
    intended: str | None = None

    # -- validation (once, at the public boundary) ------------------------------------------
    def check_params(self, **given: Any) -> dict[str, float]:
        """Validate the objective's parameters; refuse the ones it does not take.

        Raises
        ------
        ParameterError
            If a parameter it needs is missing, is out of range, or one it does not take is
            given.
        """
        for key, value in given.items():
            if value is not None and key not in self.params:
                takes = ", ".join(self.params) or "no parameters"
                raise ParameterError(key, f"does not apply to objective {self.name!r} (it takes "
                                     f"{takes})")
        out = {}
        for p in self.params:
            v = given.get(p)
            if v is None:
                raise ParameterError(p, f"is missing: objective {self.name!r} needs it "
                                     f"({PARAMETERS[p]})")
            out[p] = check_unit_interval(v, p) if p == "eps" else check_positive(v, p)
        return out

    def own_params(self, given: Mapping[str, Any]) -> dict[str, float]:
        """:meth:`check_params` of the parameters it takes, picked from ``given`` (which may
        hold others: a grid cell, another objective's values).

        Raises
        ------
        ParameterError
            If a parameter it needs is missing or out of range.
        """
        return self.check_params(**{p: given.get(p) for p in self.params})

    def check_labels(self, labels: object, name: str = "labels") -> Labels:
        """Validate labels for this objective (class codes, or ``N x p`` floats).

        Raises
        ------
        ParameterError, ParameterTypeError
            As :func:`dgp.errors.class_codes` / :func:`dgp.errors.check_labels_continuous`;
            a zero X-CLR label embedding.
        """
        if self.labels == "class":
            try:
                codes, classes = class_codes(labels, name, min_count=self.min_class_size)
            except InvalidParameterError as exc:
                hint = self.sizes_hint(labels)
                if hint is None:
                    raise
                raise type(exc)(exc.param, f"{exc.detail}{hint}") from None
            return Labels("class", codes, classes, np.bincount(codes, minlength=classes.size))
        y = check_labels_continuous(labels, name)
        self.weighting.check_labels(y, name)
        return Labels("continuous", y)

    def sizes_hint(self, labels: object) -> str | None:
        """For refused class labels that read as class sizes (a bare list of integers
        ``>= min_class_size``), the hint to give them as ``sizes``; ``None`` otherwise."""
        if not isinstance(labels, list | tuple) or len(labels) < 2 or not all(
                isinstance(v, int) and not isinstance(v, bool) and v >= self.min_class_size
                for v in labels):
            return None
        return (f" (if {list(labels)} are class sizes, give them as sizes: "
                f"dgp.Problem(objective={self.name!r}, sizes={list(labels)}))")

    # -- what callers ask -------------------------------------------------------------------
    def cross_weight(self, params: Mapping[str, float]) -> float:
        """Class objectives: the weight across classes (0 for SupCon, ``eps`` for Soft SupCon)."""
        return self.weighting.cross_weight(params)

    def prototype_eps(self, params: Mapping[str, Any]) -> float | None:
        """Class objectives: the ``eps`` :func:`dgp.supcon_prototypes` takes, ``None`` when the
        weight across classes is zero (SupCon)."""
        cross = self.weighting.cross
        return None if cross is None else params.get(cross)

    # -- builders (validated input) -----------------------------------------------------------
    def kernel(self, lab: Labels, params: dict[str, float]) -> Kernel:
        """The scaled Gaussian kernel of a label-kernel objective."""
        return self.weighting.kernel(lab, params)

    def log_weights(self, lab: Labels, params: dict[str, float]) -> np.ndarray:
        """Dense ``N x N`` log-weights (the diagonal is ignored by the engine)."""
        return self.weighting.log_weights(lab, params)

    def weights(self, lab: Labels, params: dict[str, float]) -> np.ndarray:
        """Dense ``N x N`` weights, zero diagonal (exact 1 and ``eps`` for class objectives)."""
        if self.labels == "class":
            W = self.weighting.batch(lab.values, params)
        else:
            W = np.exp(self.log_weights(lab, params))
        np.fill_diagonal(W, 0.0)
        return W

    def block_log_weights(self, params: dict[str, float], K: int) -> tuple[np.ndarray, float]:
        """Class objectives: log-weights within each class (``K``) and the one across."""
        return self.weighting.block_log_weights(params, K)

    def critical_temperatures(self, lab: Labels, params: Mapping[str, float], *,
                              rtol: float = DEFAULT_RTOL) -> tuple[float, ...]:
        r"""The closed-form temperatures at which the cosine verdict of these labels changes
        (its ``boundary``): Soft SupCon's :math:`\tau^* = K/((K-1)(-\log\varepsilon))`
        (:func:`dgp.prototypes.soft_supcon_tau_star`: the centred regular simplex, rank
        :math:`K - 1`); :math:`\tau = w/R^2` when the kernel's points lie on a sphere of radius
        :math:`R` in their affine hull (y-Aware :math:`w = \sigma^2`, X-CLR :math:`w = \tau_y`
        on the normalised embeddings: the target has rank :math:`m` there, :math:`m + 1`
        below). At such a temperature the weighting may be realizable in a dimension where no
        other temperature is, so a search over temperatures must try them (``dgp recommend``).
        Empty without a closed form (or when the labels are off every sphere); the engine
        decides what happens at each.

        ``lab`` and ``params`` are validated (:meth:`check_labels`, :meth:`check_params`);
        whether the points lie on a sphere is decided at ``rtol`` by the rule of the closed-form
        explanation (:func:`dgp.objectives.spheres.on_label_sphere`).

        >>> rec = get("soft-supcon")
        >>> lab = rec.check_labels([0, 0, 1, 1, 2, 2])
        >>> [round(t, 12) for t in rec.critical_temperatures(lab, {"eps": math.exp(-1)})]
        [1.5]
        """
        if self.boundary == "simplex":
            from dgp.prototypes import soft_supcon_tau_star

            K = int(lab.sizes.size)
            return (soft_supcon_tau_star(K=K, eps=params[self.weighting.cross]),) if K >= 2 else ()
        if self.boundary != "sphere":
            return ()
        fit = label_sphere(self.weighting.points(lab), rtol=rtol)
        if fit.radius == 0.0 or not on_label_sphere(fit, rtol):  # one point: no finite w/R^2
            return ()
        t = self.weighting.width2(params) / fit.radius / fit.radius
        return (t,) if math.isfinite(t) and t > 0.0 else ()

    def batch_weights(self, y: Any, params: Mapping[str, float]) -> Any:
        """The weights of a batch (NumPy array or torch tensor of validated labels: class
        codes ``N,``, or ``N x p`` floats without zero rows where the kernel is of
        directions), diagonal not zeroed; the same code for both kinds of array."""
        return self.weighting.batch(y, params)


@dataclass(frozen=True, eq=False)
class LabelBatchWeights:
    """The log-weights of an objective's batches read from its labels
    (:class:`dgp.solver.BatchWeights`): never an ``N x N`` array."""

    record: Objective
    values: np.ndarray
    params: Mapping[str, float]

    @property
    def n(self) -> int:
        return int(self.values.shape[0])

    def log_block(self, idx: np.ndarray) -> np.ndarray:
        L = np.array(self.record.weighting.batch_log(self.values[idx], self.params), dtype=float)
        np.fill_diagonal(L, -np.inf)
        return L


_Y_AWARE = GaussianWeighting()

OBJECTIVES: dict[str, Objective] = {
    o.name: o
    for o in (
        Objective("supcon", "cosine", "class", (), "SupCon (L_out): weight 1 within a class",
                  "blocks", ClassWeighting()),
        Objective("soft-supcon", "cosine", "class", ("eps",),
                  "Soft SupCon: 1 within a class, eps across", "blocks",
                  ClassWeighting(cross="eps"), min_class_size=1, boundary="simplex"),
        Objective("y-aware", "cosine", "continuous", ("sigma",),
                  "y-Aware: Gaussian label kernel, cosine latent", "lowrank", _Y_AWARE,
                  boundary="sphere"),
        Objective("euclid-euclid", "euclidean", "continuous", ("sigma",),
                  "Euclidean-Euclidean: Gaussian label kernel, Euclidean latent", "lowrank",
                  _Y_AWARE),
        Objective("x-clr", "cosine", "continuous", ("label_tau",),
                  "X-CLR: softmax of label-embedding cosines", "lowrank", SoftmaxWeighting(),
                  boundary="sphere"),
        Objective("y-aware-colnorm", "cosine", "continuous", ("sigma",),
                  "y-Aware as public code computes it (column-normalised kernel)", None,
                  ColumnNormalisedWeighting(), intended="y-aware"),
    )
}
#: the names, in registry order
OBJECTIVE_NAMES = tuple(OBJECTIVES)


def get(name: object) -> Objective:
    """The record of a named objective.

    Raises
    ------
    ParameterError
        If ``name`` is not a registered objective.
    """
    return OBJECTIVES[check_choice(name, OBJECTIVE_NAMES, "objective")]
