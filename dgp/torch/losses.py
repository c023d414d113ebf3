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

from collections.abc import Callable
from typing import Any, ClassVar

from dgp.errors import InputError, InputTypeError, ParameterError, check_choice
from dgp.infonce import SIMILARITIES
from dgp.objectives import registry
from dgp.torch._compat import require_torch
from dgp.torch._loss_core import (
    EMPTY_ROWS,
    REDUCTIONS,
    BatchLoss,
    Tensor,
    as_embeddings,
    resolve_tau,
    similarity_logits,
    winfonce,
)
from dgp.torch._loss_targeted import ASSIGNMENTS, TargetedSupConLoss, hungarian_assignment
from dgp.torch._loss_weights import (
    batch_labels,
    column_normalise,
    gaussian_weights,
    soft_supcon_weights,
    supcon_weights,
    xclr_weights,
)

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


class WInfoNCELoss(BatchLoss):
    """Generic w-InfoNCE loss: ``loss(embeddings, labels)``.

    The weighting comes from, in order of precedence: the ``weights=`` argument of
    :meth:`forward`; a fixed dataset matrix ``weights`` given here, in which case ``labels`` are
    the **indices** of the batch samples in that matrix (``W[labels][:, labels]`` is used); or
    ``weight_fn(labels)``, a callable returning the batch's ``N x N`` weights.
    The temperature (and its alias ``temperature``), the reduction and ``empty_rows`` are
    checked as in every loss module here (:class:`TargetedSupConLoss` too).

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
        See :func:`winfonce`; ``"skip"`` by default in every loss module (an anchor without
        positives in its batch is dropped, as the mini-batch predictions' default
        ``anchors_without_positives="drop"`` and pytorch-metric-learning do; a fixed sparse
        weighting such as a k-NN graph leaves some anchors of a batch without positives).

    Raises
    ------
    TypeError, ValueError
        If an option is invalid, or both ``weight_fn`` and ``weights`` are given.

    Examples
    --------
    >>> import torch
    >>> from dgp.torch.losses import WInfoNCELoss
    >>> WInfoNCELoss(temperature=0.5, weights=torch.ones(3, 3))
    WInfoNCELoss(tau=0.5, similarity='cosine', reduction='sum', empty_rows='skip', weights=3 x 3)
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
        empty_rows: str = "skip",
    ) -> None:
        super().__init__(tau=tau, temperature=temperature, reduction=reduction,
                         empty_rows=empty_rows)
        self.similarity = check_choice(similarity, SIMILARITIES, "similarity")
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
        Z = as_embeddings(embeddings)
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
        empty_rows: str = "skip",
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
    SoftSupConLoss(tau=0.1, eps=0.05, similarity='cosine', reduction='sum', empty_rows='skip')
    """

    objective = "soft-supcon"

    def __init__(self, *, eps: float, tau: float | None = None, temperature: float | None = None,
                 reduction: str = "sum", empty_rows: str = "skip") -> None:
        super().__init__(tau=tau, temperature=temperature, reduction=reduction,
                         empty_rows=empty_rows, eps=eps)


class _BandwidthLoss(ObjectiveLoss):
    """The objectives whose one parameter is the label kernel's bandwidth ``sigma`` (y-Aware,
    Euclidean–Euclidean, y-Aware column-normalised): one constructor for the three."""

    def __init__(self, *, sigma: float, tau: float | None = None,
                 temperature: float | None = None, reduction: str = "sum",
                 empty_rows: str = "skip") -> None:
        super().__init__(tau=tau, temperature=temperature, reduction=reduction,
                         empty_rows=empty_rows, sigma=sigma)


class YAwareLoss(_BandwidthLoss):
    """y-Aware (Dufumier et al. 2021): cosine latent, Gaussian kernel of the labels (row
    normalised, as the w-InfoNCE definition says; not the column-normalised public slip, which
    is :class:`YAwareColnormLoss`).

    >>> YAwareLoss(tau=0.1, sigma=1.0)
    YAwareLoss(tau=0.1, sigma=1, similarity='cosine', reduction='sum', empty_rows='skip')
    """

    objective = "y-aware"


class EuclidEuclidLoss(_BandwidthLoss):
    """Euclidean–Euclidean: Gaussian label kernel with a Euclidean latent; its optimum is
    ``z = (sqrt(tau) / sigma) y`` up to a rigid motion.

    >>> EuclidEuclidLoss(tau=0.5, sigma=2.0)
    EuclidEuclidLoss(tau=0.5, sigma=2, similarity='euclidean', reduction='sum', empty_rows='skip')
    """

    objective = "euclid-euclid"


class XCLRLoss(ObjectiveLoss):
    """X-CLR (Sobal et al. 2024): cosine latent, weights the label-similarity softmax at
    temperature ``label_tau`` (label embeddings are L2-normalised).

    >>> XCLRLoss(tau=0.1, label_tau=0.2)
    XCLRLoss(tau=0.1, label_tau=0.2, similarity='cosine', reduction='sum', empty_rows='skip')
    """

    objective = "x-clr"

    def __init__(self, *, label_tau: float, tau: float | None = None,
                 temperature: float | None = None, reduction: str = "sum",
                 empty_rows: str = "skip") -> None:
        super().__init__(tau=tau, temperature=temperature, reduction=reduction,
                         empty_rows=empty_rows, label_tau=label_tau)


class YAwareColnormLoss(_BandwidthLoss):
    """y-Aware as public code computes it: the full Gaussian kernel (diagonal included), then
    ``W /= W.sum(1)`` (:func:`column_normalise`, a column normalisation), then the w-InfoNCE.

    For training with the slip on purpose (to see what it does); audit it with ``dgp audit``.

    >>> YAwareColnormLoss(tau=0.1, sigma=0.5)
    YAwareColnormLoss(tau=0.1, sigma=0.5, similarity='cosine', reduction='sum', empty_rows='skip')
    """

    objective = "y-aware-colnorm"


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
        loss class's own, ``"skip"``.

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
    YAwareLoss(tau=0.1, sigma=1, similarity='cosine', reduction='mean', empty_rows='skip')
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


