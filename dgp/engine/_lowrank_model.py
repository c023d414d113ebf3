"""The model of a low-rank target: :class:`LowRankTarget` (re-exported by
:mod:`dgp.engine.lowrank`, where the API reference documents it), on its own so that the
reductions (:mod:`dgp.engine._reductions`) read it without importing the engine that
classifies it."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["VECTORS_MAX_N", "LowRankTarget"]

#: largest N for which certificate vectors (Farkas) are listed sample by sample
VECTORS_MAX_N = 2000


@dataclass(frozen=True, eq=False)
class LowRankTarget:
    r"""A target :math:`\ell_{ij} = (UCU^\top)_{ij}` (:math:`i \ne j`) with constant diagonal
    :math:`(UCU^\top)_{ii} = h`.

    Attributes
    ----------
    U : ndarray, shape (N, k)
        First column all ones.
    C : ndarray, shape (k, k)
        Symmetric.
    h : float
        The diagonal of :math:`UCU^\top`.
    ell_bounds : tuple of float
        Bounds ``(lo, hi)`` with ``lo <= ell_ij <= hi`` off the diagonal.
    info : dict
        What built it (reported in the certificate's structure).
    """

    U: np.ndarray
    C: np.ndarray
    h: float
    ell_bounds: tuple[float, float]
    info: dict = field(default_factory=dict)

    def dense_ell(self) -> np.ndarray:
        """The ``N x N`` target (tests and small cases only)."""
        L = self.U @ self.C @ self.U.T
        np.fill_diagonal(L, 0.0)
        return L
