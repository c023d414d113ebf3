"""The inputs of :class:`dgp.torch.GeometryMonitor`: a batch of embeddings and labels, the
classifier of NC3/NC4 and the ``pinned`` report, checked (errors name the argument)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from dgp.errors import InputError, InputTypeError, ParameterTypeError, describe
from dgp.torch._compat import require_torch

torch = require_torch()

__all__ = ["check_batch", "check_classifier", "check_pinned"]


def check_batch(embeddings: Any, labels: Any, K: int, d: int | None) -> tuple[Any, Any] | None:
    """The detached ``(B, d)`` embeddings and flat labels of a batch (``None`` when empty),
    with ``d`` the dimension of earlier batches (``None`` before the first)."""
    if not isinstance(embeddings, torch.Tensor) or not embeddings.is_floating_point():
        raise InputTypeError("embeddings must be a floating-point torch.Tensor, got "
                             f"{describe(embeddings)}")
    if embeddings.ndim != 2:
        raise InputError("embeddings must be a B x d tensor, got shape "
                         f"{tuple(embeddings.shape)}")
    Z = embeddings.detach()
    if d is not None and Z.shape[1] != d:
        raise InputError(f"embeddings have dimension {Z.shape[1]}, earlier batches had "
                         f"{d} (call reset() to start over)")
    y = labels.detach() if isinstance(labels, torch.Tensor) else torch.as_tensor(labels)
    if y.is_floating_point() or y.is_complex() or y.dtype == torch.bool:
        raise InputTypeError(f"labels must be integer class indices, got dtype {y.dtype}")
    y = y.reshape(-1)
    if y.shape[0] != Z.shape[0]:
        raise InputError(f"labels has {y.shape[0]} entries for {Z.shape[0]} embeddings")
    if y.numel() == 0:
        return None
    lo, hi = int(y.min().item()), int(y.max().item())
    if lo < 0 or hi >= K:
        bad = lo if lo < 0 else hi
        raise InputError(f"labels must be classes 0..{K - 1} (the prototypes' order), "
                         f"got {bad}")
    if not bool(torch.isfinite(Z).all().item()):
        raise InputError("embeddings hold NaN or infinite values")
    return Z, y


def check_classifier(classifier: object | None, K: int) -> Any:
    """A classifier: a ``K x d`` weight tensor or a callable module with one."""
    if classifier is None:
        return None
    weight = classifier if isinstance(classifier, torch.Tensor) else getattr(
        classifier, "weight", None)
    if not isinstance(weight, torch.Tensor) or weight.ndim != 2 or weight.shape[0] != K:
        raise ParameterTypeError("classifier", f"must be a K x d weight tensor or a module "
                                 f"with one (e.g. torch.nn.Linear(d, {K})), got "
                                 f"{describe(classifier)}")
    if not isinstance(classifier, torch.Tensor) and not callable(classifier):
        raise ParameterTypeError("classifier", "must be callable (a module) or a tensor")
    return classifier


def check_pinned(prototypes: object, pinned: Mapping[str, bool] | None) -> dict[str, bool]:
    """Which invariants the loss pins: ``pinned`` or the prediction's identifiability report."""
    if pinned is None:  # an identifiability report on the prediction, where it has one
        ident = getattr(prototypes, "identifiability", None)
        pinned = getattr(ident, "pinned", None)
        if not isinstance(pinned, Mapping):
            return {}
    if not isinstance(pinned, Mapping) or not all(
            isinstance(k, str) and isinstance(v, (bool, np.bool_)) for k, v in pinned.items()):
        raise ParameterTypeError("pinned", "must map invariant names to True/False (e.g. "
                                 f"{{'pairwise cosines': False}}), got {describe(pinned)}")
    return {k: bool(v) for k, v in pinned.items()}
