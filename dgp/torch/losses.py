r"""Vectorised w-InfoNCE losses for PyTorch, called like pytorch-metric-learning losses.

.. code-block:: python

    from dgp.torch import SupConLoss
    loss_fn = SupConLoss(tau=0.1)        # or SupConLoss(temperature=0.1), as in PML
    loss = loss_fn(embeddings, labels)   # embeddings: (N, d) tensor, labels: (N,) tensor

.. important::

    **The default reduction is a sum over anchors** (``reduction="sum"``): the loss equals
    :func:`dgp.infonce.winfonce_loss` on the same batch, in nats, and it **grows with the batch
    size** (so does its gradient: scale the learning rate, or use ``"mean"``).
    ``reduction="mean"`` divides by the number of anchors kept; with it
    :class:`SupConLoss` equals pytorch-metric-learning's ``SupConLoss`` (whose default
    reducer averages over the anchors that have a positive: :class:`SupConLoss` drops anchors
    without positives by default, ``empty_rows="skip"``). ``"none"`` returns one value per
    anchor. :class:`TargetedSupConLoss` adds fixed class targets (Targeted SupCon, TSC).

.. math::

    L(Z) = \sum_i \sum_{j \ne i} p_{ij}\Big(-s_{ij} + \log \sum_{k \ne i} e^{s_{ik}}\Big),
    \qquad p_{ij} = w_{ij} / \sum_{k \ne i} w_{ik}.

The named losses (:class:`SupConLoss`, :class:`SoftSupConLoss`, :class:`YAwareLoss`,
:class:`EuclidEuclidLoss`, :class:`XCLRLoss`, :class:`YAwareColnormLoss`) read the objective
registry (:mod:`dgp.objectives.registry`): its record gives the latent similarity, the
parameters (validated there, once) and the weighting, whose batch weights are one
implementation for NumPy arrays and torch tensors; :func:`make_loss` builds the loss of any
registered objective by name. One ``N x N`` similarity matrix and one log-softmax
per call: no Python loop over anchors.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from dgp.errors import (
    InputError,
    InputTypeError,
    ParameterError,
    ParameterTypeError,
    check_choice,
    check_int,
    check_positive,
    check_unit_interval,
    describe,
)
from dgp.infonce import SIMILARITIES
from dgp.objectives import registry
from dgp.prototypes import Prototypes
from dgp.torch._compat import require_torch

torch = require_torch()

__all__ = [
    "ASSIGNMENTS",
    "EMPTY_ROWS",
    "REDUCTIONS",
    "EuclidEuclidLoss",
    "ObjectiveLoss",
    "SoftSupConLoss",
    "SupConLoss",
    "TargetedSupConLoss",
    "WInfoNCELoss",
    "XCLRLoss",
    "YAwareColnormLoss",
    "YAwareLoss",
    "batch_labels",
    "column_normalise",
    "gaussian_weights",
    "hungarian_assignment",
    "make_loss",
    "resolve_tau",
    "similarity_logits",
    "soft_supcon_weights",
    "supcon_weights",
    "winfonce",
    "xclr_weights",
]

REDUCTIONS = ("sum", "mean", "none")
EMPTY_ROWS = ("error", "skip")

Tensor = Any  # torch.Tensor; kept loose so the module imports cleanly for documentation tools


def _as_embeddings(embeddings: Tensor) -> Tensor:
    if not isinstance(embeddings, torch.Tensor):
        raise InputTypeError(f"embeddings must be a torch.Tensor, got {type(embeddings).__name__}")
    if embeddings.ndim != 2 or embeddings.shape[0] < 2:
        raise InputError(
            f"embeddings must be an N x d tensor with N >= 2, got shape {tuple(embeddings.shape)}"
        )
    if not embeddings.is_floating_point():
        raise InputTypeError(f"embeddings must be floating point, got dtype {embeddings.dtype}")
    return embeddings


def similarity_logits(embeddings: Tensor, *, tau: float, similarity: str = "cosine") -> Tensor:
    r"""The ``N x N`` matrix :math:`s_{ij}` (diagonal included, not masked).

    Cosine: rows are L2-normalised and :math:`s_{ij} = \langle z_i, z_j\rangle / \tau`;
    Euclidean: :math:`s_{ij} = -\|z_i - z_j\|^2 / (2\tau)`.

    Raises
    ------
    TypeError, ValueError
        If ``embeddings`` is not a floating ``N x d`` tensor, ``tau <= 0`` or ``similarity`` is
        unknown.
    """
    tau = check_positive(tau, "tau")
    check_choice(similarity, SIMILARITIES, "similarity")
    Z = _as_embeddings(embeddings)
    if similarity == "cosine":
        Zn = torch.nn.functional.normalize(Z, dim=1)
        return (Zn @ Zn.T) / tau
    sq = (Z * Z).sum(dim=1)
    D = (sq[:, None] + sq[None, :] - 2.0 * (Z @ Z.T)).clamp_min(0.0)
    return -D / (2.0 * tau)


def winfonce(
    embeddings: Tensor,
    weights: Tensor,
    *,
    tau: float,
    similarity: str = "cosine",
    reduction: str = "sum",
    empty_rows: str = "error",
) -> Tensor:
    """Functional w-InfoNCE of a batch under an explicit weight matrix.

    Parameters
    ----------
    embeddings : Tensor, shape (N, d)
    weights : Tensor or array_like, shape (N, N)
        Non-negative weights; the diagonal is ignored. Treated as a constant (no gradient).
    tau : float
        Temperature ``> 0``.
    similarity : {"cosine", "euclidean"}
    reduction : {"sum", "mean", "none"}
        Sum over anchors (the dgp convention), mean over the anchors kept, or per anchor.
    empty_rows : {"error", "skip"}
        What to do with an anchor whose weights off the diagonal are all zero (e.g. a class
        with one sample in a mini-batch): raise, or drop it (its term is 0 under ``"none"`` and
        ``"sum"``, and ``"mean"`` averages over the others). A batch where no anchor has a
        positive gives 0 under ``"skip"`` (attached to the graph, with a zero gradient), as
        pytorch-metric-learning does.

    Returns
    -------
    Tensor
        A scalar, or shape ``(N,)`` for ``reduction="none"``.

    Raises
    ------
    TypeError, ValueError
        If an argument is invalid: shapes, negative or non-finite weights, unknown options, or an
        anchor without positive weight under ``empty_rows="error"``.
    """
    check_choice(reduction, REDUCTIONS, "reduction")
    check_choice(empty_rows, EMPTY_ROWS, "empty_rows")
    S = similarity_logits(embeddings, tau=tau, similarity=similarity)
    n = S.shape[0]
    W = torch.as_tensor(weights, dtype=S.dtype, device=S.device).detach()
    if W.shape != (n, n):
        raise InputError(f"weights must be {n} x {n} to match embeddings, got {tuple(W.shape)}")
    eye = torch.eye(n, dtype=torch.bool, device=S.device)
    W = W.masked_fill(eye, 0.0)
    if not bool(torch.isfinite(W).all()) or bool((W < 0).any()):
        raise InputError("weights must be finite and >= 0 off the diagonal")
    mass = W.sum(dim=1)
    keep = mass > 0
    if not bool(keep.all()):
        if empty_rows == "error":
            i = int(torch.nonzero(~keep)[0, 0])
            raise InputError(
                f"row {i} of weights has no positive weight off the diagonal (an anchor without "
                "positives); pass empty_rows='skip' to drop such anchors"
            )
    P = W / mass.clamp_min(torch.finfo(S.dtype).tiny)[:, None]
    S = S.masked_fill(eye, float("-inf"))
    log_q = (S - torch.logsumexp(S, dim=1, keepdim=True)).masked_fill(eye, 0.0)
    per_anchor = -(P * log_q).sum(dim=1)
    if reduction == "none":
        return per_anchor
    if reduction == "sum":
        return per_anchor.sum()
    if not bool(keep.any()):  # nothing to average: 0, still attached to the graph (as PML)
        return per_anchor.sum()
    return per_anchor[keep].mean()


# --------------------------------------------------------------------------------------------
# weightings from labels (torch versions of dgp.weights; the diagonal is left to the loss)


def _class_labels(labels: Tensor) -> Tensor:
    y = torch.as_tensor(labels)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise InputError(f"labels must be one column of class labels, got shape {tuple(y.shape)}")
    if y.is_floating_point() or y.is_complex():
        if not bool(torch.equal(torch.round(y), y)):
            raise InputTypeError("labels must be integer class labels; got non-integer values")
    return y


def _continuous_labels(labels: Tensor) -> Tensor:
    y = torch.as_tensor(labels)
    if not y.is_floating_point():
        y = y.to(torch.get_default_dtype())
    if y.ndim == 1:
        y = y[:, None]
    if y.ndim != 2:
        raise InputError(f"labels must be an N x p tensor, got shape {tuple(y.shape)}")
    if not bool(torch.isfinite(y).all()):
        raise InputError("labels hold a NaN or infinite value")
    return y


def _nonzero_rows(y: Tensor) -> Tensor:
    norms = y.norm(dim=1)
    if bool((norms == 0).any()):
        i = int(torch.nonzero(norms == 0)[0, 0])
        raise InputError(f"label embedding {i} is zero and cannot be L2-normalised for X-CLR")
    return y


def batch_labels(rec: registry.Objective, labels: Tensor) -> Tensor:
    """A batch's labels validated for an objective's weighting: one column of class labels, or
    an ``N x p`` float tensor (without zero rows where the kernel is of directions).

    Raises
    ------
    InputError, InputTypeError
        If the labels do not fit the objective.
    """
    if rec.labels == "class":
        return _class_labels(labels)
    y = _continuous_labels(labels)
    return _nonzero_rows(y) if rec.weighting.directions else y


def supcon_weights(labels: Tensor) -> Tensor:
    r"""SupCon: :math:`w_{ij} = 1[y_i = y_j]` (float64 tensor, diagonal not zeroed; the loss casts
    weights to the embeddings' dtype)."""
    return registry.get("supcon").batch_weights(_class_labels(labels), {})


def soft_supcon_weights(labels: Tensor, *, eps: float) -> Tensor:
    r"""Soft SupCon: 1 within a class, :math:`\varepsilon` across classes."""
    eps = check_unit_interval(eps, "eps")
    return registry.get("soft-supcon").batch_weights(_class_labels(labels), {"eps": eps})


def gaussian_weights(labels: Tensor, *, sigma: float) -> Tensor:
    r"""Gaussian label kernel :math:`\exp(-\|y_i - y_j\|^2 / (2\sigma^2))`.

    Used by y-Aware (cosine latent) and Euclidean–Euclidean (Euclidean latent).
    """
    sigma = check_positive(sigma, "sigma")
    return registry.get("y-aware").batch_weights(_continuous_labels(labels), {"sigma": sigma})


def xclr_weights(labels: Tensor, *, label_tau: float) -> Tensor:
    r"""X-CLR weights :math:`\mathrm{softmax}_{k \ne i}(\langle\hat y_i, \hat y_k\rangle/\tau_y)_j`.

    Raises
    ------
    ValueError
        If a label embedding is zero.
    """
    label_tau = check_positive(label_tau, "label_tau")
    y = _nonzero_rows(_continuous_labels(labels))
    return registry.get("x-clr").batch_weights(y, {"label_tau": label_tau})


def column_normalise(weights: Tensor) -> Tensor:
    r"""``W / W.sum(1)`` exactly as public code writes it: the row sums broadcast along the last
    axis, so entry ``(i, j)`` is divided by the sum of row ``j``,
    :math:`w_{ij} / \sum_k w_{jk}` (a column normalisation for symmetric ``W``).

    This is a slip, not a normalisation of the rows; :class:`YAwareColnormLoss` reproduces it on
    purpose, so that its consequences can be trained and audited.
    """
    return registry.column_normalise(torch.as_tensor(weights))


def resolve_tau(tau: float | None, temperature: float | None) -> float:
    """The temperature from ``tau`` or its alias ``temperature`` (pytorch-metric-learning's name).

    Raises
    ------
    ValueError
        If neither is given, both are given with different values, or the value is not > 0.
    """
    if tau is None and temperature is None:
        raise ParameterError("tau", "is missing: give tau= (or its alias temperature=)")
    if tau is not None and temperature is not None and tau != temperature:
        raise ParameterError(
            "temperature", f"is an alias of tau: got tau={tau!r} and temperature={temperature!r}"
        )
    return check_positive(tau if tau is not None else temperature, "tau")


# --------------------------------------------------------------------------------------------
# nn.Module losses


class WInfoNCELoss(torch.nn.Module):
    """Generic w-InfoNCE loss: ``loss(embeddings, labels)``.

    The weighting comes from, in order of precedence: the ``weights=`` argument of
    :meth:`forward`; a fixed dataset matrix ``weights`` given here, in which case ``labels`` are
    the **indices** of the batch samples in that matrix (``W[labels][:, labels]`` is used); or
    ``weight_fn(labels)``, a callable returning the batch's ``N x N`` weights.

    Parameters
    ----------
    tau : float
        Temperature ``> 0``.
    temperature : float, optional
        Alias of ``tau`` (pytorch-metric-learning's name); give one of them.
    similarity : {"cosine", "euclidean"}
    weight_fn : callable, optional
        ``labels -> (N, N)`` weights.
    weights : Tensor or array_like, optional
        A fixed ``M x M`` weighting of the whole dataset, indexed by ``labels``.
    reduction : {"sum", "mean", "none"}
        ``"sum"`` (default) sums over anchors, the dgp convention, equal to
        :func:`dgp.infonce.winfonce_loss`: it grows with the batch size. ``"mean"`` averages
        over the anchors kept (pytorch-metric-learning's convention); ``"none"``: per anchor.
    empty_rows : {"error", "skip"}
        See :func:`winfonce`.

    Raises
    ------
    TypeError, ValueError
        If an option is invalid, or both ``weight_fn`` and ``weights`` are given.

    Examples
    --------
    >>> import torch
    >>> from dgp.torch.losses import WInfoNCELoss
    >>> WInfoNCELoss(temperature=0.5, weights=torch.ones(3, 3))
    WInfoNCELoss(tau=0.5, similarity='cosine', reduction='sum', empty_rows='error', weights=3 x 3)
    """

    objective: ClassVar[str] = "generic"

    def __init__(
        self,
        *,
        tau: float | None = None,
        temperature: float | None = None,
        similarity: str = "cosine",
        weight_fn: Callable[[Tensor], Tensor] | None = None,
        weights: Tensor | None = None,
        reduction: str = "sum",
        empty_rows: str = "error",
    ) -> None:
        super().__init__()
        self.tau = resolve_tau(tau, temperature)
        self.similarity = check_choice(similarity, SIMILARITIES, "similarity")
        self.reduction = check_choice(reduction, REDUCTIONS, "reduction")
        self.empty_rows = check_choice(empty_rows, EMPTY_ROWS, "empty_rows")
        if weight_fn is not None and weights is not None:
            raise InputError("give either weight_fn or weights, not both")
        if weight_fn is not None and not callable(weight_fn):
            raise InputTypeError(f"weight_fn must be callable, got {type(weight_fn).__name__}")
        self.weight_fn = weight_fn
        if weights is not None:
            W = torch.as_tensor(weights, dtype=torch.get_default_dtype())
            if W.ndim != 2 or W.shape[0] != W.shape[1]:
                raise InputError(f"weights must be a square matrix, got shape {tuple(W.shape)}")
            self.register_buffer("dataset_weights", W.clone())
        else:
            self.dataset_weights = None

    @property
    def temperature(self) -> float:
        """Alias of :attr:`tau` (pytorch-metric-learning's name)."""
        return self.tau

    def weights_from_labels(self, labels: Tensor) -> Tensor:
        """The batch's ``N x N`` weights from its labels (see the class docstring).

        Raises
        ------
        ValueError
            If no weighting is configured, or indices fall outside the dataset matrix.
        """
        if self.dataset_weights is not None:
            idx = torch.as_tensor(labels, device=self.dataset_weights.device).long().reshape(-1)
            m = self.dataset_weights.shape[0]
            if bool(((idx < 0) | (idx >= m)).any()):
                raise InputError(f"labels must be sample indices in [0, {m}) of the weights")
            return self.dataset_weights[idx][:, idx]
        if self.weight_fn is None:
            raise InputError("no weighting: pass weights= to forward, or weight_fn/weights here")
        return self.weight_fn(labels)

    def forward(
        self, embeddings: Tensor, labels: Tensor | None = None, *, weights: Tensor | None = None
    ) -> Tensor:
        """The loss of a batch; see :func:`winfonce`.

        Raises
        ------
        TypeError, ValueError
            As :func:`winfonce`, or if ``labels`` do not have one entry per embedding.
        """
        Z = _as_embeddings(embeddings)
        if weights is None:
            if labels is None:
                raise InputError("labels are required unless weights= is given")
            lab = torch.as_tensor(labels)
            if lab.shape[0] != Z.shape[0]:
                raise InputError(
                    f"labels must have one entry per embedding ({Z.shape[0]}), got {lab.shape[0]}"
                )
            if lab.device != Z.device and self.dataset_weights is None:
                lab = lab.to(Z.device)
            weights = self.weights_from_labels(lab)
        return winfonce(
            Z,
            torch.as_tensor(weights).to(device=Z.device, dtype=Z.dtype),
            tau=self.tau,
            similarity=self.similarity,
            reduction=self.reduction,
            empty_rows=self.empty_rows,
        )

    def _parameter_repr(self) -> list[str]:
        return []

    def extra_repr(self) -> str:
        parts = [f"tau={self.tau:g}", *self._parameter_repr(), f"similarity={self.similarity!r}",
                 f"reduction={self.reduction!r}", f"empty_rows={self.empty_rows!r}"]
        if self.dataset_weights is not None:
            m = self.dataset_weights.shape[0]
            parts.append(f"weights={m} x {m}")
        elif self.weight_fn is not None and type(self) is WInfoNCELoss:
            parts.append(f"weight_fn={getattr(self.weight_fn, '__name__', repr(self.weight_fn))}")
        return ", ".join(parts)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.extra_repr()})"


class ObjectiveLoss(WInfoNCELoss):
    """The w-InfoNCE loss of a registered objective (:mod:`dgp.objectives.registry`).

    The record gives the latent similarity, the parameters (validated by the record: one it
    does not take is refused, one it needs must be given) and the weighting
    (:meth:`~dgp.objectives.registry.Objective.batch_weights`, the same code as for NumPy
    arrays). The named subclasses fix ``objective``; :func:`make_loss` builds any.

    Parameters
    ----------
    objective : str, optional
        A registered objective; required unless a subclass fixes it.
    tau, temperature, reduction, empty_rows
        As :class:`WInfoNCELoss`.
    **params : float
        The objective's parameters (``eps``, ``sigma``, ``label_tau``).

    Raises
    ------
    ValueError
        If the objective is unknown, a parameter is missing, invalid or does not apply.

    Examples
    --------
    >>> from dgp.torch.losses import ObjectiveLoss
    >>> loss = ObjectiveLoss("soft-supcon", tau=0.1, eps=0.2)
    >>> loss.objective, loss.eps, loss.similarity
    ('soft-supcon', 0.2, 'cosine')
    """

    def __init__(
        self,
        objective: str | None = None,
        *,
        tau: float | None = None,
        temperature: float | None = None,
        reduction: str = "sum",
        empty_rows: str = "error",
        **params: float | None,
    ) -> None:
        name = type(self).__dict__.get("objective") if objective is None else objective
        if name is None:
            raise ParameterError("objective", "is missing: name a registered objective")
        if objective is not None and "objective" in type(self).__dict__ and objective != name:
            raise ParameterError("objective", f"is fixed to {type(self).objective!r} here")
        rec = registry.get(name)
        checked = rec.check_params(**params)
        super().__init__(tau=tau, temperature=temperature, similarity=rec.similarity,
                         reduction=reduction, empty_rows=empty_rows)
        self.record = rec
        self.objective = rec.name  # type: ignore[misc]  # the instance names its objective
        self.params = checked
        for key, value in checked.items():
            setattr(self, key, value)
        self.weight_fn = self._weights

    def _weights(self, labels: Tensor) -> Tensor:
        return self.record.batch_weights(batch_labels(self.record, labels), self.params)

    def _parameter_repr(self) -> list[str]:
        return [f"{k}={v:g}" for k, v in self.params.items()]

    def extra_repr(self) -> str:
        text = super().extra_repr()
        if "objective" not in type(self).__dict__:
            text += f", objective={self.record.name!r}"
        return text


class SupConLoss(ObjectiveLoss):
    """SupCon (Khosla et al. 2020, L_out) as w-InfoNCE: cosine latent, ``w_ij = 1[y_i = y_j]``.

    **Anchors without positives** (a class with one sample in the batch) are dropped by default
    (``empty_rows="skip"``), as pytorch-metric-learning and dgp's batch prediction
    (``anchors_without_positives``) drop them: their term is 0 under ``"sum"`` and ``"none"``,
    and ``"mean"`` averages over the anchors that have a positive. The sample stays a negative
    of the other anchors. ``empty_rows="error"`` keeps the old strict behaviour (raise on such a
    batch). ``SupConLoss(temperature=0.1, reduction="mean")`` equals pytorch-metric-learning's
    ``SupConLoss(temperature=0.1)``; the default reduction stays dgp's ``"sum"``.

    >>> SupConLoss(tau=0.1)
    SupConLoss(tau=0.1, similarity='cosine', reduction='sum', empty_rows='skip')
    """

    objective = "supcon"

    def __init__(self, *, tau: float | None = None, temperature: float | None = None,
                 reduction: str = "sum", empty_rows: str = "skip") -> None:
        super().__init__(tau=tau, temperature=temperature, reduction=reduction,
                         empty_rows=empty_rows)


class SoftSupConLoss(ObjectiveLoss):
    """Soft SupCon: cosine latent, ``w_ij = 1`` within a class and ``eps`` across classes.

    >>> SoftSupConLoss(tau=0.1, eps=0.05)
    SoftSupConLoss(tau=0.1, eps=0.05, similarity='cosine', reduction='sum', empty_rows='error')
    """

    objective = "soft-supcon"

    def __init__(self, *, eps: float, tau: float | None = None, temperature: float | None = None,
                 reduction: str = "sum", empty_rows: str = "error") -> None:
        super().__init__(tau=tau, temperature=temperature, reduction=reduction,
                         empty_rows=empty_rows, eps=eps)


class YAwareLoss(ObjectiveLoss):
    """y-Aware (Dufumier et al. 2021): cosine latent, Gaussian kernel of the labels (row
    normalised, as the w-InfoNCE definition says; not the column-normalised public slip, which
    is :class:`YAwareColnormLoss`).

    >>> YAwareLoss(tau=0.1, sigma=1.0)
    YAwareLoss(tau=0.1, sigma=1, similarity='cosine', reduction='sum', empty_rows='error')
    """

    objective = "y-aware"

    def __init__(self, *, sigma: float, tau: float | None = None,
                 temperature: float | None = None, reduction: str = "sum",
                 empty_rows: str = "error") -> None:
        super().__init__(tau=tau, temperature=temperature, reduction=reduction,
                         empty_rows=empty_rows, sigma=sigma)


class EuclidEuclidLoss(ObjectiveLoss):
    """Euclidean–Euclidean: Gaussian label kernel with a Euclidean latent; its optimum is
    ``z = (sqrt(tau) / sigma) y`` up to a rigid motion.

    >>> EuclidEuclidLoss(tau=0.5, sigma=2.0)
    EuclidEuclidLoss(tau=0.5, sigma=2, similarity='euclidean', reduction='sum', empty_rows='error')
    """

    objective = "euclid-euclid"

    def __init__(self, *, sigma: float, tau: float | None = None,
                 temperature: float | None = None, reduction: str = "sum",
                 empty_rows: str = "error") -> None:
        super().__init__(tau=tau, temperature=temperature, reduction=reduction,
                         empty_rows=empty_rows, sigma=sigma)


class XCLRLoss(ObjectiveLoss):
    """X-CLR (Sobal et al. 2024): cosine latent, weights the label-similarity softmax at
    temperature ``label_tau`` (label embeddings are L2-normalised).

    >>> XCLRLoss(tau=0.1, label_tau=0.2)
    XCLRLoss(tau=0.1, label_tau=0.2, similarity='cosine', reduction='sum', empty_rows='error')
    """

    objective = "x-clr"

    def __init__(self, *, label_tau: float, tau: float | None = None,
                 temperature: float | None = None, reduction: str = "sum",
                 empty_rows: str = "error") -> None:
        super().__init__(tau=tau, temperature=temperature, reduction=reduction,
                         empty_rows=empty_rows, label_tau=label_tau)


class YAwareColnormLoss(ObjectiveLoss):
    """y-Aware as public code computes it: the full Gaussian kernel (diagonal included), then
    ``W /= W.sum(1)`` (:func:`column_normalise`, a column normalisation), then the w-InfoNCE.

    For training with the slip on purpose (to see what it does); audit it with ``dgp audit``.

    >>> YAwareColnormLoss(tau=0.1, sigma=0.5)
    YAwareColnormLoss(tau=0.1, sigma=0.5, similarity='cosine', reduction='sum', empty_rows='error')
    """

    objective = "y-aware-colnorm"

    def __init__(self, *, sigma: float, tau: float | None = None,
                 temperature: float | None = None, reduction: str = "sum",
                 empty_rows: str = "error") -> None:
        super().__init__(tau=tau, temperature=temperature, reduction=reduction,
                         empty_rows=empty_rows, sigma=sigma)


def _named_losses() -> dict[str, type[ObjectiveLoss]]:
    """The loss class of each objective that has one (by its ``objective`` attribute)."""
    out: dict[str, type[ObjectiveLoss]] = {}
    stack = list(ObjectiveLoss.__subclasses__())
    while stack:
        cls = stack.pop()
        name = cls.__dict__.get("objective")
        if name is not None:
            out.setdefault(name, cls)
        stack.extend(cls.__subclasses__())
    return out


def make_loss(
    objective: str,
    *,
    tau: float | None = None,
    temperature: float | None = None,
    sigma: float | None = None,
    eps: float | None = None,
    label_tau: float | None = None,
    reduction: str = "sum",
    empty_rows: str | None = None,
) -> ObjectiveLoss:
    """The loss module of a registered objective (:data:`dgp.objectives.OBJECTIVE_NAMES`).

    Parameters
    ----------
    objective : str
        A registered objective name.
    tau : float
        Temperature ``> 0``; ``temperature`` is an alias.
    sigma, eps, label_tau : float, optional
        The objective's parameters; one it does not take is refused.
    reduction : {"sum", "mean", "none"}
        ``"sum"`` by default (grows with the batch size); ``"mean"`` as pytorch-metric-learning.
    empty_rows : {"error", "skip"}, optional
        What to do with an anchor without positives (see :func:`winfonce`); by default the
        loss class's own default (``"skip"`` for :class:`SupConLoss`, ``"error"`` otherwise).

    Returns
    -------
    ObjectiveLoss
        The named class of the objective where there is one (e.g. :class:`SupConLoss`).

    Raises
    ------
    ValueError
        If ``objective`` is unknown, a parameter it needs is missing or invalid, or one it does
        not take is given.

    Examples
    --------
    >>> make_loss("y-aware", temperature=0.1, sigma=1.0, reduction="mean")
    YAwareLoss(tau=0.1, sigma=1, similarity='cosine', reduction='mean', empty_rows='error')
    """
    rec = registry.get(objective)
    given = {"sigma": sigma, "eps": eps, "label_tau": label_tau}
    rec.check_params(**given)  # refuse what does not apply before building anything
    params = {k: v for k, v in given.items() if v is not None}
    common: dict[str, Any] = {"tau": tau, "temperature": temperature, "reduction": reduction}
    if empty_rows is not None:
        common["empty_rows"] = empty_rows
    cls = _named_losses().get(rec.name)
    if cls is None:
        return ObjectiveLoss(rec.name, **common, **params)
    return cls(**common, **params)


# --------------------------------------------------------------------------------------------
# Targeted SupCon (TSC): fixed class targets as extra positives and negatives


ASSIGNMENTS = ("identity", "hungarian")


def _target_rows(targets: object) -> np.ndarray:
    """``M x d`` unit rows from a :class:`dgp.Prototypes` result, an array or a tensor."""
    if isinstance(targets, Prototypes):
        rows = targets.prototypes  # K x dim (K x rank without dim), the saved fixed targets
    elif isinstance(targets, torch.Tensor):
        rows = targets.detach().cpu().double().numpy()
    else:
        rows = targets
    try:
        A = np.asarray(rows, dtype=float)
    except (TypeError, ValueError):
        raise ParameterTypeError("targets", "must be an M x d array of target vectors or a "
                                 f"dgp.Prototypes result, got {describe(targets)}") from None
    if A.ndim != 2 or A.shape[0] < 1 or A.shape[1] < 1:
        raise ParameterError("targets", f"must be an M x d array with M >= 1, got shape {A.shape}")
    if not np.isfinite(A).all():
        raise ParameterError("targets", "must be finite (it holds NaN or infinite values)")
    norms = np.linalg.norm(A, axis=1)
    if (norms == 0).any():
        raise ParameterError("targets", f"row {int(np.argmin(norms))} is zero: a target needs a "
                             "direction")
    return A / norms[:, None]


def hungarian_assignment(class_means: object, targets: object) -> np.ndarray:
    r"""The one-to-one assignment of ``K`` classes to ``M >= K`` targets that maximises the
    total cosine between each class mean and its target (TSC's matching, by
    :func:`scipy.optimize.linear_sum_assignment`): entry ``c`` is the target row of class ``c``.

    >>> hungarian_assignment([[0.0, 1.0], [1.0, 0.1]], [[1.0, 0.0], [0.0, 1.0]]).tolist()
    [1, 0]

    Raises
    ------
    ParameterError
        If the shapes disagree, ``K > M``, or a class mean is zero or not finite.
    """
    from scipy.optimize import linear_sum_assignment

    T = _target_rows(targets)
    try:
        C = np.asarray(class_means, dtype=float)
    except (TypeError, ValueError):
        raise ParameterTypeError("class_means", f"must be a K x d array, got "
                                 f"{describe(class_means)}") from None
    if C.ndim != 2 or C.shape[1] != T.shape[1] or C.shape[0] > T.shape[0] or C.shape[0] < 1:
        raise ParameterError("class_means", f"must be K x {T.shape[1]} with 1 <= K <= "
                             f"{T.shape[0]} (the targets), got shape {C.shape}")
    norms = np.linalg.norm(C, axis=1)
    if not np.isfinite(C).all() or (norms == 0).any():
        raise ParameterError("class_means", "must be finite and non-zero (a class mean needs a "
                             "direction)")
    cos = (C / norms[:, None]) @ T.T
    rows, cols = linear_sum_assignment(-cos)
    out = np.empty(C.shape[0], dtype=np.int64)
    out[rows] = cols
    return out


class TargetedSupConLoss(torch.nn.Module):
    r"""SupCon with fixed class targets, as Targeted Supervised Contrastive learning (TSC, Li et
    al., CVPR 2022) trains: ``loss(embeddings, labels)``.

    The ``M`` targets (unit vectors, e.g. ``dgp.supcon_prototypes(sizes, tau=..., dim=d)``, its
    ``.factor``, a ``--save-prototypes`` file, or TSC's uniform targets) are appended to the
    batch's contrast set, as TSC appends them to its keys: every target is a **negative** of every
    anchor, and the target assigned to an anchor's class is one more **positive** of that
    anchor, with weight ``target_weight`` beside the weight 1 of each same-class sample. The
    anchors are the batch's samples (TSC masks the targets out as anchors; ``target_anchors=True``
    makes them anchors too, with their class's batch samples as positives). Targets are fixed:
    no gradient reaches them. As a w-InfoNCE over the ``B + M`` points (rows :math:`x`, anchors
    :math:`i` in the batch, :math:`s_{ij} = \langle x_i, x_j\rangle/\tau`):

    .. math::

        \ell_i = -\sum_{j \ne i} p_{ij}\Big(s_{ij} - \log\sum_{k \ne i} e^{s_{ik}}\Big),\quad
        p_{ij} \propto \begin{cases} 1 & j \text{ a sample of class } y_i \\
        \lambda & j = t_{a(y_i)},\ \text{the target assigned to } y_i \\ 0 & \text{otherwise.}
        \end{cases}

    With :math:`\lambda = 1` (the default) this is TSC's loss with one copy of each target
    (its ``loss_class + loss_target`` at ``tw = 1``, ``tr = 1``); TSC's ``tw != 1`` divides by
    the count of positives rather than their weight, so it differs slightly from
    :math:`\lambda = tw`. Without targets (``targets=None``) it is :class:`SupConLoss`. Every
    anchor has its target as a positive, so a class with one sample in the batch (the tail of a
    long-tailed set) still gets a pull; with ``targets=None`` or ``target_weight=0`` anchors
    without positives follow ``empty_rows`` (dropped by default, as pytorch-metric-learning).

    Parameters
    ----------
    targets : array_like (M, d), Tensor, dgp.Prototypes or None
        Target vectors (rows normalised here); ``M >= K`` classes; their width must be the
        embeddings' ``d``. A :class:`dgp.Prototypes` result gives its ``prototypes`` (what
        ``dgp supcon --save-prototypes`` saves: ``K x dim``, or ``K x rank`` without ``dim``,
        then zero-padded to the embeddings' width, which keeps the Gram).
    tau, temperature : float
        Temperature ``> 0`` (``temperature`` is pytorch-metric-learning's name).
    assignment : None, "identity", "hungarian" or sequence of int
        Which target row each class ``0..K-1`` gets, stated once and kept in the attribute
        :attr:`assignment` (a ``(K,)`` long tensor): ``None``/``"identity"``: class ``c`` gets
        row ``c`` (the order of :func:`dgp.supcon_prototypes`, whose rows are the classes
        of ``sizes``); a sequence: class ``c`` gets row ``assignment[c]`` (distinct rows);
        ``"hungarian"``: TSC's matching of class means to targets
        (:func:`hungarian_assignment`), computed once by :meth:`assign` — call it on the
        initial encoder's embeddings of the training set, or let the first batch that holds
        every class do it. TSC re-matches running class centroids during training; here the
        assignment is fixed once computed (call :meth:`assign` again to re-match).
    num_classes : int, optional
        ``K`` for ``"hungarian"`` when fewer classes than targets (default ``M``).
    target_weight : float
        :math:`\lambda \ge 0`, the weight of the target positive (``0``: targets only as
        negatives).
    target_anchors : bool
        Also use the targets of the classes in the batch as anchors (default ``False``, as TSC).
    reduction : {"sum", "mean", "none"}
        As :class:`SupConLoss` (``"sum"``, dgp's convention, grows with the batch size;
        ``"mean"`` over the anchors kept; ``"none"``: one value per anchor, the batch's ``B``
        then, with ``target_anchors``, the ``M`` targets; dropped anchors are 0).
    empty_rows : {"skip", "error"}
        Anchors without any positive: dropped (default) or an error.

    Raises
    ------
    ValueError, TypeError
        If an argument is invalid (the message names it).

    Examples
    --------
    >>> import torch
    >>> loss = TargetedSupConLoss([[1.0, 0.0], [0.0, 1.0]], temperature=0.1, reduction="mean")
    >>> loss.assignment.tolist()
    [0, 1]
    >>> z = torch.tensor([[1.0, 0.0], [0.0, 1.0]])             # each sample on its target
    >>> bool(loss(z, torch.tensor([0, 1])) < loss(z, torch.tensor([1, 0])))
    True
    """

    def __init__(
        self,
        targets: object | None = None,
        *,
        tau: float | None = None,
        temperature: float | None = None,
        assignment: object | None = None,
        num_classes: int | None = None,
        target_weight: float = 1.0,
        target_anchors: bool = False,
        reduction: str = "sum",
        empty_rows: str = "skip",
    ) -> None:
        super().__init__()
        self.tau = resolve_tau(tau, temperature)
        self.reduction = check_choice(reduction, REDUCTIONS, "reduction")
        self.empty_rows = check_choice(empty_rows, EMPTY_ROWS, "empty_rows")
        lam = float(target_weight) if isinstance(target_weight, (int, float)) else math.nan
        if not (math.isfinite(lam) and lam >= 0) or isinstance(target_weight, bool):
            raise ParameterError("target_weight", f"must be a finite number >= 0, got "
                                 f"{describe(target_weight)}")
        self.target_weight = lam
        if not isinstance(target_anchors, bool):
            raise ParameterTypeError("target_anchors", f"must be True or False, got "
                                     f"{describe(target_anchors)}")
        self.target_anchors = target_anchors
        if targets is None:
            if assignment is not None or num_classes is not None:
                raise ParameterError("assignment", "needs targets (targets=None is plain SupCon)")
            self.register_buffer("targets", None)
            self.register_buffer("assignment", None)
            self.pad_targets = False
            self.assignment_method = "none"
            return
        T = _target_rows(targets)
        M = T.shape[0]
        self.register_buffer("targets", torch.as_tensor(T, dtype=torch.float64))  # cast per batch
        # a prediction in free dimension has rank-wide rows: zero-padded to the embeddings' width
        # (the same Gram), as R^rank sits in R^d
        self.pad_targets = isinstance(targets, Prototypes)
        if num_classes is not None:
            num_classes = check_int(num_classes, "num_classes", minimum=1, maximum=M)
        if isinstance(assignment, str):
            method = check_choice(assignment, ASSIGNMENTS, "assignment")
        else:
            method = "identity" if assignment is None else "given"
        if method != "hungarian" and num_classes is not None:
            raise ParameterError("num_classes", "applies to assignment='hungarian' only (the "
                                 "assignment's length gives K otherwise)")
        self.assignment_method = method
        self.num_classes = num_classes if num_classes is not None else M
        if method == "identity":
            self.register_buffer("assignment", torch.arange(M))
        elif method == "hungarian":
            self.register_buffer("assignment", None)  # set by assign()
        else:
            self.register_buffer("assignment", self._check_assignment(assignment, M))
            self.num_classes = int(self.assignment.numel())

    @staticmethod
    def _check_assignment(assignment: object, M: int) -> Tensor:
        try:
            a = np.asarray(assignment)
        except (TypeError, ValueError):
            a = np.asarray([])
        if a.ndim != 1 or a.size == 0 or not np.issubdtype(a.dtype, np.integer):
            raise ParameterTypeError("assignment", "must be None, 'identity', 'hungarian' or a "
                                     f"sequence of target rows (int), got {describe(assignment)}")
        if a.size > M or a.min() < 0 or a.max() >= M or np.unique(a).size != a.size:
            raise ParameterError("assignment", f"must give each of its {a.size} classes a "
                                 f"distinct target row in 0..{M - 1}, got {describe(a.tolist())}")
        return torch.as_tensor(a, dtype=torch.long)

    @property
    def temperature(self) -> float:
        """Alias of :attr:`tau` (pytorch-metric-learning's name)."""
        return self.tau

    @torch.no_grad()
    def assign(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        """Match classes to targets (TSC's Hungarian matching of the normalised class means of
        the L2-normalised ``embeddings``) and keep it in :attr:`assignment`, which is returned.

        Raises
        ------
        InputError
            If a class ``0..K-1`` has no sample in ``labels``, or there are no targets.
        """
        if self.targets is None:
            raise InputError("there are no targets to assign (targets=None)")
        Z = _as_embeddings(embeddings).detach()
        y = self._labels(labels, Z)
        self._fit_width(Z)
        K = self.num_classes
        H = torch.nn.functional.normalize(Z.double(), dim=1).cpu()
        sums = torch.zeros(K, H.shape[1], dtype=H.dtype).index_add_(0, y.cpu(), H)
        counts = torch.bincount(y.cpu(), minlength=K)
        if bool((counts == 0).any()):
            missing = int(torch.nonzero(counts == 0)[0, 0])
            raise InputError(f"class {missing} has no sample: the Hungarian assignment needs "
                             f"every class 0..{K - 1} (pass the whole training set to assign())")
        a = hungarian_assignment(sums.numpy(), self.targets.detach().cpu().double().numpy())
        self.assignment = torch.as_tensor(a, dtype=torch.long, device=self.targets.device)
        return self.assignment

    def _fit_width(self, Z: Tensor) -> None:
        """Zero-pad a prediction's narrower targets to the embeddings' width, or refuse."""
        w, d = self.targets.shape[1], Z.shape[1]
        if w < d and self.pad_targets:
            self.targets = torch.nn.functional.pad(self.targets, (0, d - w))
        elif w != d:
            raise InputError(f"embeddings have width {d}, the targets {w} (give targets of the "
                             "embeddings' dimension, e.g. supcon_prototypes(..., dim=d))")

    def _labels(self, labels: Tensor, Z: Tensor) -> Tensor:
        y = _class_labels(labels).reshape(-1)
        if y.shape[0] != Z.shape[0]:
            raise InputError(f"labels must have one entry per embedding ({Z.shape[0]}), got "
                             f"{y.shape[0]}")
        y = y.to(device=Z.device, dtype=torch.long)
        K = self.num_classes if self.targets is not None else None
        if K is not None and y.numel() and (int(y.min()) < 0 or int(y.max()) >= K):
            bad = int(y.min()) if int(y.min()) < 0 else int(y.max())
            raise InputError(f"labels must be classes 0..{K - 1} (one per assigned target), got "
                             f"{bad}")
        return y

    def forward(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        """The loss of a batch (see the class docstring).

        Raises
        ------
        TypeError, ValueError
            If the embeddings or labels are invalid, their width differs from the targets', or
            an anchor has no positive under ``empty_rows="error"``.
        """
        if self.targets is None:
            Z = _as_embeddings(embeddings)
        else:  # one sample is a batch here: its target is its positive
            if not isinstance(embeddings, torch.Tensor) or not embeddings.is_floating_point():
                raise InputTypeError("embeddings must be a floating torch.Tensor, got "
                                     f"{describe(embeddings)}")
            if embeddings.ndim != 2 or embeddings.shape[0] < 1:
                raise InputError("embeddings must be a B x d tensor with B >= 1, got shape "
                                 f"{tuple(embeddings.shape)}")
            Z = embeddings
        y = self._labels(labels, Z)
        B = Z.shape[0]
        if self.targets is None:
            W = (y[:, None] == y[None, :]).to(Z.dtype)
            return winfonce(Z, W, tau=self.tau, reduction=self.reduction,
                            empty_rows=self.empty_rows)
        self._fit_width(Z)
        if self.assignment is None:  # "hungarian", not assigned yet: the first full batch does
            if int(torch.unique(y).numel()) < self.num_classes:
                raise InputError("assignment='hungarian' is not computed yet and this batch "
                                 "misses a class: call loss.assign(embeddings, labels) on data "
                                 "holding every class first")
            self.assign(Z, y)
        T = self.targets.to(device=Z.device, dtype=Z.dtype)
        M = T.shape[0]
        a = self.assignment.to(Z.device)
        tclass = torch.full((M,), -1, dtype=torch.long, device=Z.device)
        tclass[a] = torch.arange(a.numel(), device=Z.device)
        X = torch.cat([Z, T], dim=0)
        n = B + M
        W = torch.zeros(n, n, dtype=Z.dtype, device=Z.device)
        W[:B, :B] = (y[:, None] == y[None, :]).to(Z.dtype)
        W[torch.arange(B, device=Z.device), B + a[y]] = self.target_weight
        if self.target_anchors:
            W[B:, :B] = (tclass[:, None] == y[None, :]).to(Z.dtype)
        W.fill_diagonal_(0.0)
        anchors = n if self.target_anchors else B
        mass = W[:anchors].sum(dim=1)
        keep = mass > 0
        if self.empty_rows == "error" and not bool(keep[:B].all()):
            i = int(torch.nonzero(~keep[:B])[0, 0])
            raise InputError(f"anchor {i} (class {int(y[i])}) has no positive; pass "
                             "empty_rows='skip' to drop such anchors")
        per = winfonce(X, W, tau=self.tau, reduction="none", empty_rows="skip")[:anchors]
        if self.reduction == "none":
            return per
        if self.reduction == "sum" or not bool(keep.any()):
            return per.sum()
        return per[keep].mean()

    def extra_repr(self) -> str:
        parts = [f"tau={self.tau:g}"]
        if self.targets is not None:
            parts += [f"targets={self.targets.shape[0]} x {self.targets.shape[1]}",
                      f"assignment={self.assignment_method!r}",
                      f"target_weight={self.target_weight:g}"]
            if self.target_anchors:
                parts.append("target_anchors=True")
        parts += [f"reduction={self.reduction!r}", f"empty_rows={self.empty_rows!r}"]
        return ", ".join(parts)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.extra_repr()})"
