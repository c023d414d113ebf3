"""Detect torch without importing it eagerly, and fail with a message naming the extra."""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from dgp.errors import install_hint

__all__ = ["INSTALL_HINT", "TorchUnavailableError", "is_available", "require_torch"]

INSTALL_HINT = install_hint("torch")


class TorchUnavailableError(ImportError):
    """Raised when the PyTorch backend is used but torch is not installed."""


def is_available() -> bool:
    """Whether torch can be imported (the ``torch`` extra is installed).

    Returns
    -------
    bool
    """
    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        return False


def require_torch() -> ModuleType:
    """Import and return torch.

    Raises
    ------
    TorchUnavailableError
        If torch is not installed; the message says how to install the ``torch`` extra.
    """
    try:
        return importlib.import_module("torch")
    except ImportError as exc:
        raise TorchUnavailableError(
            f"the dgp PyTorch backend needs torch, which is not installed ({exc}); install the "
            f"torch extra: {INSTALL_HINT}"
        ) from None
