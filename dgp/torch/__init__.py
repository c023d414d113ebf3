"""Optional PyTorch backend: w-InfoNCE losses, small encoders, training, experiments, audit,
and a geometry monitor for training loops (:class:`GeometryMonitor`).

Install it with ``pip install "dgp-contrastive[torch]"``. ``import dgp.torch`` never imports
torch; the names below are loaded on first use, and without torch that first use raises
:class:`TorchUnavailableError` (an :class:`ImportError`) naming the ``torch`` extra.

>>> import dgp.torch
>>> isinstance(dgp.torch.is_available(), bool)
True
"""

from __future__ import annotations

import importlib
from typing import Any

from dgp.torch._audit_limits import check_arguments as check_audit_arguments
from dgp.torch._compat import TorchUnavailableError as TorchUnavailableError
from dgp.torch._compat import is_available as is_available
from dgp.torch._compat import require_torch

# public name -> submodule that defines it (imported lazily; each submodule imports torch)
_EXPORTS = {
    "WInfoNCELoss": "losses",
    "SupConLoss": "losses",
    "TargetedSupConLoss": "losses",
    "hungarian_assignment": "losses",
    "SoftSupConLoss": "losses",
    "YAwareLoss": "losses",
    "EuclidEuclidLoss": "losses",
    "XCLRLoss": "losses",
    "YAwareColnormLoss": "losses",
    "ObjectiveLoss": "losses",
    "make_loss": "losses",
    "winfonce": "losses",
    "MLPEncoder": "encoders",
    "ConvEncoder": "encoders",
    "TrainResult": "training",
    "resolve_device": "training",
    "train": "training",
    "audit_loss": "audit",
    "AuditReport": "audit",
    "Intended": "audit",
    "LossCallError": "audit",
    "GeometryMonitor": "monitor",
}

__all__ = ["TorchUnavailableError", "check_audit_arguments", "is_available", "require_torch",
           *sorted(_EXPORTS)]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        require_torch()
        return getattr(importlib.import_module(f"dgp.torch.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'dgp.torch' has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
