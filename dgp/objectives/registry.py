r"""The registry of named objectives: one record per objective, read by the weight builders,
the structured engine, the torch losses, the audit and the command line.

Each :class:`Objective` says which latent similarity the objective uses, what labels it takes,
which parameters (validated here, once), and how to build its weighting: dense log-weights
(never exponentiated, so small kernels do not underflow) and, where the objective has
structure, the class blocks or the low-rank label kernel the structured engine decides without
an :math:`N \times N` matrix.

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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dgp._linalg import centre_points, squared_distances
from dgp.constants import SCALE_FLOOR
from dgp.errors import (
    ParameterError,
    check_choice,
    check_labels_continuous,
    check_positive,
    check_unit_interval,
    class_codes,
)

__all__ = [
    "OBJECTIVES",
    "OBJECTIVE_NAMES",
    "PARAMETERS",
    "Kernel",
    "Labels",
    "Objective",
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
    """

    x: np.ndarray
    kappa: float
    scale: float
    points: np.ndarray


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
    k = int(np.frexp(s)[1])  # scale by a power of two: exact
    x = np.ldexp(x, -k)
    log_kappa = 2.0 * k * math.log(2.0) - math.log(2.0) - math.log(width2)
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
    return Kernel(x, kappa, s, points)


def _directions(y: np.ndarray, name: str = "labels") -> np.ndarray:
    norms = np.linalg.norm(y, axis=1)
    if (norms == 0).any():
        i = int(np.flatnonzero(norms == 0)[0])
        raise ParameterError(name, f"row {i} is a zero label embedding, which X-CLR cannot "
                             "L2-normalise")
    return y / norms[:, None]


# -- dense log-weights (zero diagonal excluded: the engine ignores it) -------------------------


def _class_log_weights(lab: Labels, cross: float) -> np.ndarray:
    same = lab.values[:, None] == lab.values[None, :]
    return np.where(same, 0.0, cross)


def _gaussian_log_weights(kernel: Kernel) -> np.ndarray:
    L = squared_distances(kernel.x)
    L *= -kernel.kappa
    return L


def _xclr_log_weights(kernel: Kernel) -> np.ndarray:
    # <yh_i, yh_k> / tau_y = (1 - |yh_i - yh_k|^2 / 2) / tau_y, then a row log-softmax
    # (the constant 1 / tau_y cancels in the log-softmax)
    S = _gaussian_log_weights(kernel)  # -kappa |x_i - x_k|^2 = -|yh_i - yh_k|^2 / (2 tau_y)
    np.fill_diagonal(S, -np.inf)
    top = S.max(axis=1, keepdims=True)
    S -= top + np.log(np.exp(S - top).sum(axis=1, keepdims=True))
    return S


def _colnorm_log_weights(kernel: Kernel) -> np.ndarray:
    # log w_ij = log k_ij - log s_j, s_j = sum_k k_jk including k_jj = 1 (the broadcast slip)
    L = _gaussian_log_weights(kernel)
    top = L.max(axis=1)  # the diagonal 0 is the largest
    log_s = top + np.log(np.exp(L - top[:, None]).sum(axis=1))
    L -= log_s[None, :]
    return L


@dataclass(frozen=True)
class Objective:
    """One named objective.

    Attributes
    ----------
    name : str
    similarity : {"cosine", "euclidean"}
        Its own latent similarity.
    labels : {"class", "continuous"}
    params : tuple of str
        The parameters it takes (``eps``, ``sigma``, ``label_tau``).
    min_class_size : int
        Class objectives: the smallest class it accepts.
    structured : {"blocks", "lowrank", None}
        Its structured path.
    summary : str
        One line for help texts.
    torch_weights : str
        ``module:function`` of its torch weight builder (imported only when asked for).
    """

    name: str
    similarity: str
    labels: str
    params: tuple[str, ...]
    summary: str
    structured: str | None
    torch_weights: str
    min_class_size: int = 2

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

    def check_labels(self, labels: object, name: str = "labels") -> Labels:
        """Validate labels for this objective (class codes, or ``N x p`` floats).

        Raises
        ------
        ParameterError, ParameterTypeError
            As :func:`dgp.errors.class_codes` / :func:`dgp.errors.check_labels_continuous`;
            a zero X-CLR label embedding.
        """
        if self.labels == "class":
            codes, classes = class_codes(labels, name, min_count=self.min_class_size)
            return Labels("class", codes, classes, np.bincount(codes, minlength=classes.size))
        y = check_labels_continuous(labels, name)
        if self.name == "x-clr":
            _directions(y, name)
        return Labels("continuous", y)

    # -- builders (validated input) -----------------------------------------------------------
    def kernel(self, lab: Labels, params: dict[str, float]) -> Kernel:
        """The scaled Gaussian kernel of a label-kernel objective."""
        if self.name == "x-clr":
            return kernel_points(_directions(lab.values), params["label_tau"], "label_tau")
        return kernel_points(lab.values, params["sigma"] ** 2, "sigma")

    def log_weights(self, lab: Labels, params: dict[str, float]) -> np.ndarray:
        """Dense ``N x N`` log-weights (the diagonal is ignored by the engine)."""
        if self.name == "supcon":
            return _class_log_weights(lab, -np.inf)
        if self.name == "soft-supcon":
            return _class_log_weights(lab, math.log(params["eps"]))
        kernel = self.kernel(lab, params)
        if self.name == "x-clr":
            return _xclr_log_weights(kernel)
        if self.name == "y-aware-colnorm":
            return _colnorm_log_weights(kernel)
        return _gaussian_log_weights(kernel)

    def weights(self, lab: Labels, params: dict[str, float]) -> np.ndarray:
        """Dense ``N x N`` weights, zero diagonal (exact 1 and ``eps`` for class objectives)."""
        if self.labels == "class":
            cross = 0.0 if self.name == "supcon" else params["eps"]
            W = np.where(lab.values[:, None] == lab.values[None, :], 1.0, cross)
        else:
            W = np.exp(self.log_weights(lab, params))
        np.fill_diagonal(W, 0.0)
        return W

    def block_log_weights(self, params: dict[str, float], K: int) -> tuple[np.ndarray, float]:
        """Class objectives: log-weights within each class (``K``) and the one across."""
        cross = -np.inf if self.name == "supcon" else math.log(params["eps"])
        return np.zeros(K), cross

    def torch_weight_function(self) -> Callable[..., Any]:
        """The torch weight builder (needs the torch extra)."""
        import importlib

        module, _, attr = self.torch_weights.partition(":")
        return getattr(importlib.import_module(module), attr)


OBJECTIVES: dict[str, Objective] = {
    o.name: o
    for o in (
        Objective("supcon", "cosine", "class", (), "SupCon (L_out): weight 1 within a class",
                  "blocks", "dgp.torch.losses:supcon_weights"),
        Objective("soft-supcon", "cosine", "class", ("eps",),
                  "Soft SupCon: 1 within a class, eps across", "blocks",
                  "dgp.torch.losses:soft_supcon_weights", min_class_size=1),
        Objective("y-aware", "cosine", "continuous", ("sigma",),
                  "y-Aware: Gaussian label kernel, cosine latent", "lowrank",
                  "dgp.torch.losses:gaussian_weights"),
        Objective("euclid-euclid", "euclidean", "continuous", ("sigma",),
                  "Euclidean-Euclidean: Gaussian label kernel, Euclidean latent", "lowrank",
                  "dgp.torch.losses:gaussian_weights"),
        Objective("x-clr", "cosine", "continuous", ("label_tau",),
                  "X-CLR: softmax of label-embedding cosines", "lowrank",
                  "dgp.torch.losses:xclr_weights"),
        Objective("y-aware-colnorm", "cosine", "continuous", ("sigma",),
                  "y-Aware as public code computes it (column-normalised kernel)", None,
                  "dgp.torch.losses:gaussian_weights"),
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
