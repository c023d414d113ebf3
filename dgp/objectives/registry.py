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

from dgp.errors import (
    InvalidParameterError,
    ParameterError,
    check_choice,
    check_class_sizes,
    check_labels_continuous,
    check_positive,
    check_some_pair,
    check_unit_interval,
    class_codes,
    least_class_size,
    least_class_size_hint,
)
from dgp.objectives._weightings import (
    ClassWeighting,
    ColumnNormalisedWeighting,
    GaussianWeighting,
    Kernel,
    Labels,
    SoftmaxWeighting,
    Weighting,
    column_normalise,
    kernel_points,
)
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
    "validated",
]

#: every parameter an objective may take, with its meaning (for help texts and errors)
PARAMETERS = {
    "eps": "cross-class weight in (0, 1) (soft-supcon)",
    "sigma": "label kernel width > 0 (y-aware, euclid-euclid, y-aware-colnorm)",
    "label_tau": "label temperature > 0 (x-clr)",
}


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
        Class objectives: the smallest class a full-batch analysis accepts (2 where only a
        class's own samples are positives); a batch problem takes singletons
        (:func:`dgp.errors.least_class_size`).
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

    @property
    def positives_across(self) -> bool:
        """Whether anchors have positives across classes (``min_class_size`` 1: Soft SupCon),
        so that a class of one sample has positives at full batch too."""
        return self.min_class_size < 2

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

    def check_sizes(self, sizes: object, name: str = "sizes", *, batch: bool = False
                    ) -> np.ndarray:
        """Validate class sizes for this objective; ``batch``: of a batch problem, which takes
        singleton classes (:func:`dgp.errors.least_class_size`).

        Raises
        ------
        ParameterError, ParameterTypeError
            As :func:`dgp.errors.check_class_sizes`.
        """
        return check_class_sizes(sizes, name, positives_across=self.positives_across,
                                 batch=batch)

    def check_labels(self, labels: object, name: str = "labels", *, batch: bool = False
                     ) -> Labels:
        """Validate labels for this objective (class codes, or ``N x p`` floats); ``batch``:
        of a batch problem, which takes singleton classes (:func:`dgp.errors.least_class_size`).

        Raises
        ------
        ParameterError, ParameterTypeError
            As :func:`dgp.errors.class_codes` / :func:`dgp.errors.check_labels_continuous`;
            a zero X-CLR label embedding; class labels without a class large enough to give an
            anchor a positive.
        """
        if self.labels == "class":
            try:
                least = least_class_size(positives_across=self.positives_across, batch=batch)
                codes, classes = class_codes(labels, name, min_count=least,
                                             hint=least_class_size_hint(least))
            except InvalidParameterError as exc:
                hint = self.sizes_hint(labels)
                if hint is None:
                    raise
                raise type(exc)(exc.param, f"{exc.detail}{hint}") from None
            if classes.size < 2:
                hint = self.sizes_hint(labels) or ""
                raise InvalidParameterError(
                    name, f"holds one class ({classes[0].item()!r}); {self.name} needs labels of "
                    f"at least 2 classes (with one, every pair is positive and nothing is "
                    f"contrasted){hint}")
            counts = np.bincount(codes, minlength=classes.size)
            check_some_pair(counts, name, positives_across=self.positives_across)
            return Labels("class", codes, classes, counts)
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
        >>> (tau_star,) = rec.critical_temperatures(lab, {"eps": math.exp(-1)})
        >>> round(tau_star, 12)
        1.5
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

    def log_rows(self, rows: np.ndarray) -> np.ndarray:
        """``log w`` between the samples ``rows`` and every sample (``rows.size x n``, the own
        entry ``-inf``), for a weighting whose pairs do not depend on their batch (the rows
        of the full-batch loss, :func:`dgp.solver.weight_rows`).

        Raises
        ------
        ValueError
            For a weighting normalised over each batch (no rows exist outside a batch).
        """
        w = self.record.weighting
        if not w.pairwise:
            raise ValueError(f"objective {self.record.name!r} normalises its weights over each "
                             "batch: they have no rows outside a batch")
        L = np.array(w.cross_log(self.values[rows], self.values, self.params), dtype=float)
        L[np.arange(rows.size), rows] = -np.inf
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


def validated(name: object, labels: object, **params: Any) -> tuple[Objective, Labels,
                                                                     dict[str, float]]:
    """The record of a named objective with its labels and parameters, validated in one call:
    the name, then the parameters (:meth:`Objective.check_params`), then the labels
    (:meth:`Objective.check_labels`).

    Raises
    ------
    ParameterError
        Naming the first of them that is invalid.

    >>> rec, lab, params = validated("soft-supcon", ["cat", "dog", "cat", "dog"], eps=0.1)
    >>> rec.name, lab.sizes.tolist(), params
    ('soft-supcon', [2, 2], {'eps': 0.1})
    """
    rec = get(name)
    checked = rec.check_params(**params)
    return rec, rec.check_labels(labels), checked
