r"""The batch loss of collapsed classes under class-block weights (SupCon: 1 within a class, 0
across; Soft SupCon: ``eps`` across), without the ``u x u`` target matrix.

:func:`dgp.solver.batch_loss` takes any log-weights of a batch's ``u`` points and builds the
row-normalised target :math:`P` and its softmax in ``u x u`` arrays. Under class-block weights
the target has a closed form: for an anchor of class ``c`` with counts :math:`m` in the batch,
:math:`P_{cd} \propto \mu_{cd} w_{cd}` with :math:`\mu_{cc} = m_c - 1`, :math:`\mu_{cd} = m_d`,
so :math:`P = e_c` under SupCon (its linear term is :math:`1/\tau`) and, under Soft SupCon,
:math:`P_{cd} = \varepsilon m_d / Z_c` off the diagonal with
:math:`Z_c = (m_c - 1) + \varepsilon (M - m_c)`, :math:`M = \sum_d m_d` (its linear term is a
matrix-vector product). The softmax part is the same. Loss and the derivative ``Gam`` with
respect to the batch's Gram are those of :func:`dgp.solver.batch_loss` to rounding (tested).

:class:`ClassBlockWeights` is the weight source of the class-level path: its
``batch_function`` builds this loss (:func:`class_block_batch`, a
:class:`dgp.solver.RowBatch` without the ``u x u`` target), so the stochastic driver, the
held-out evaluation, the relaxation bound and the time estimate all use it. Under SupCon only
the classes with two samples or more in the batch have positives, and only their rows of the
batch's Gram are formed: at K = 1000, B = 256 (long-tailed, uniform batches) about 30 of the
195 classes present.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dgp.solver._batch import BatchSpec
from dgp.solver._batch_sources import RowBatch, reduction_factor

__all__ = ["ClassBlockWeights", "class_batch_loss", "class_batch_terms", "class_block_batch"]


def class_block_batch(counts: np.ndarray, *, tau: float, spec: BatchSpec,
                      eps: float | None = None) -> RowBatch:
    """The loss of a class-level batch with ``counts`` (one point per class present) under
    class-block weights (module docstring), prepared once for any rows."""
    m = np.asarray(counts, dtype=float)
    M = float(m.sum())
    if eps is None:
        has = m >= 2  # an anchor has positives only with another sample of its class
    else:
        has = (m >= 2) | (M - m > 0)
    rho = reduction_factor(m, has, spec)
    if rho == 0.0:
        has[:] = False
    rows = np.flatnonzero(has)
    mc = m[rows]
    k = np.arange(rows.size)
    with np.errstate(divide="ignore"):
        offset = np.broadcast_to(np.log(m), (rows.size, m.size)).copy()
        offset[k, rows] = np.log(mc - 1.0)
    target = None  # SupCon: the target is the anchor's own class
    if eps is not None:
        Z = (mc - 1.0) + eps * (M - mc)
        target = (eps / Z)[:, None] * m[None, :]
        target[k, rows] = (mc - 1.0) / Z
    return RowBatch(rows, rho * mc, offset, target, float(tau))


def class_batch_terms(Zb: np.ndarray, counts: np.ndarray, *, tau: float, spec: BatchSpec,
                      eps: float | None = None,
                      gradient: bool = True) -> tuple[float, np.ndarray | None]:
    """The batch loss of unit rows ``Zb`` (``u x d``, one per class in the batch) with
    ``counts`` under class-block weights, and (with ``gradient``) its derivative ``Gam`` with
    respect to the batch's Gram entries, row-wise, zero diagonal (the Euclidean gradient in
    ``Zb`` is ``(Gam + Gam^T) Zb``)."""
    return class_block_batch(counts, tau=tau, spec=spec, eps=eps).terms(Zb, gradient)


def class_batch_loss(Zb: np.ndarray, counts: np.ndarray, *, tau: float, spec: BatchSpec,
                     eps: float | None = None,
                     gradient: bool = True) -> tuple[float, np.ndarray | None]:
    """:func:`class_batch_terms` with the Euclidean gradient in ``Zb`` (``None`` when
    ``gradient`` is false), as :func:`dgp.solver.batch_loss` returns it."""
    return class_block_batch(counts, tau=tau, spec=spec, eps=eps).value_grad(Zb, gradient)


@dataclass(frozen=True, eq=False)
class ClassBlockWeights:
    """The class-block log-weights of SupCon (``eps=None``: 1 within a class, 0 across) or
    Soft SupCon (``eps`` across) of ``n`` classes, read one batch at a time
    (:class:`dgp.solver.BatchWeights`) without a ``K x K`` array; a batch's loss is
    :func:`class_block_batch` (no ``u x u`` target, only the rows of the anchors with
    positives).

    Attributes
    ----------
    n : int
        Classes.
    eps : float or None
        Soft SupCon's cross-class weight; ``None``: SupCon.
    """

    n: int
    eps: float | None = None

    def log_block(self, idx: np.ndarray) -> np.ndarray:
        """``log w`` among the classes ``idx`` (0 within a class, ``log eps`` or ``-inf``
        across)."""
        u = idx.size
        out = np.full((u, u), -np.inf if self.eps is None else math.log(self.eps))
        np.fill_diagonal(out, 0.0)
        return out

    def batch_function(self, idx: np.ndarray, counts: np.ndarray, *, tau: float,
                       spec: BatchSpec) -> RowBatch:
        """The loss of the batch of classes ``idx`` with ``counts``
        (:func:`class_block_batch`)."""
        return class_block_batch(counts, tau=tau, spec=spec, eps=self.eps)
