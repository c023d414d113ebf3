"""The few array operations the batch weightings of :mod:`dgp.objectives.registry` need, for
NumPy arrays and torch tensors alike (in the style of POT's backends: one implementation of a
weighting, run on either kind of array).

:func:`namespace` picks the backend from the array it is given; torch is imported only when a
tensor is seen (so ``import dgp`` never needs it, and a tensor cannot exist without it).
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

__all__ = ["Backend", "NumpyBackend", "TorchBackend", "namespace"]


class Backend:
    """The operations of one array library (rows are axis 0, as everywhere in dgp)."""

    def float64(self, x: Any) -> Any:
        """``x`` as float64."""
        raise NotImplementedError

    def where(self, mask: Any, a: float, b: float) -> Any:
        """float64 ``a`` where ``mask``, ``b`` elsewhere."""
        raise NotImplementedError

    def exp(self, x: Any) -> Any:
        raise NotImplementedError

    def clamp_min(self, x: Any, low: float) -> Any:
        raise NotImplementedError

    def row_norms(self, x: Any) -> Any:
        """The Euclidean norm of each row."""
        raise NotImplementedError

    def off_diagonal_softmax(self, x: Any) -> Any:
        """The softmax of each row over its entries off the diagonal (diagonal weight 0)."""
        raise NotImplementedError


class NumpyBackend(Backend):
    def float64(self, x: Any) -> Any:
        return np.asarray(x, dtype=np.float64)

    def where(self, mask: Any, a: float, b: float) -> Any:
        return np.where(mask, float(a), float(b))

    def exp(self, x: Any) -> Any:
        return np.exp(x)

    def clamp_min(self, x: Any, low: float) -> Any:
        return np.maximum(x, low)

    def row_norms(self, x: Any) -> Any:
        return np.linalg.norm(x, axis=1)

    def off_diagonal_softmax(self, x: Any) -> Any:
        S = np.array(x, dtype=float)
        np.fill_diagonal(S, -np.inf)
        S -= S.max(axis=1, keepdims=True)
        E = np.exp(S)
        return E / E.sum(axis=1, keepdims=True)


class TorchBackend(Backend):
    def __init__(self) -> None:
        self.torch = importlib.import_module("torch")

    def float64(self, x: Any) -> Any:
        return x.to(self.torch.float64)

    def where(self, mask: Any, a: float, b: float) -> Any:
        t = self.torch
        return t.where(
            mask,
            t.tensor(float(a), dtype=t.float64, device=mask.device),
            t.tensor(float(b), dtype=t.float64, device=mask.device),
        )

    def exp(self, x: Any) -> Any:
        return self.torch.exp(x)

    def clamp_min(self, x: Any, low: float) -> Any:
        return x.clamp_min(low)

    def row_norms(self, x: Any) -> Any:
        return x.norm(dim=1)

    def off_diagonal_softmax(self, x: Any) -> Any:
        t = self.torch
        eye = t.eye(x.shape[0], dtype=t.bool, device=x.device)
        return t.softmax(x.masked_fill(eye, float("-inf")), dim=1)


_NUMPY = NumpyBackend()
_TORCH: list[TorchBackend] = []


def namespace(x: Any) -> Backend:
    """The backend of an array: torch for a ``torch.Tensor``, NumPy for anything else."""
    if type(x).__module__.partition(".")[0] == "torch":
        if not _TORCH:
            _TORCH.append(TorchBackend())
        return _TORCH[0]
    return _NUMPY
