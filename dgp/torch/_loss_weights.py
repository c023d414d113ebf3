"""Batch weightings from labels for PyTorch (the torch versions of :mod:`dgp.weights`; the
diagonal is left to the loss)."""

from __future__ import annotations

from dgp.errors import (
    InputError,
    InputTypeError,
    check_positive,
    check_unit_interval,
)
from dgp.objectives import registry
from dgp.torch._compat import require_torch
from dgp.torch._loss_core import Tensor

torch = require_torch()


def class_labels(labels: Tensor) -> Tensor:
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
        return class_labels(labels)
    y = _continuous_labels(labels)
    return _nonzero_rows(y) if rec.weighting.directions else y


def supcon_weights(labels: Tensor) -> Tensor:
    r"""SupCon: :math:`w_{ij} = 1[y_i = y_j]` (float64 tensor, diagonal not zeroed; the loss casts
    weights to the embeddings' dtype)."""
    return registry.get("supcon").batch_weights(class_labels(labels), {})


def soft_supcon_weights(labels: Tensor, *, eps: float) -> Tensor:
    r"""Soft SupCon: 1 within a class, :math:`\varepsilon` across classes."""
    eps = check_unit_interval(eps, "eps")
    return registry.get("soft-supcon").batch_weights(class_labels(labels), {"eps": eps})


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
