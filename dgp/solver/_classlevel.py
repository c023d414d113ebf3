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
respect to the batch's Gram are those of :func:`dgp.solver.batch_loss` to rounding (tested), in
about half the ``u x u`` work: a drop-in for the class-level path of the stochastic driver.
"""

from __future__ import annotations

import numpy as np

from dgp.solver._batch import BatchSpec

__all__ = ["class_batch_loss", "class_batch_terms"]


def class_batch_terms(Zb: np.ndarray, counts: np.ndarray, *, tau: float, spec: BatchSpec,
                      eps: float | None = None,
                      gradient: bool = True) -> tuple[float, np.ndarray | None]:
    """The batch loss of unit rows ``Zb`` (``u x d``, one per class in the batch) with
    ``counts`` under class-block weights, and (with ``gradient``) its derivative ``Gam`` with
    respect to the batch's Gram entries, row-wise, zero diagonal (the Euclidean gradient in
    ``Zb`` is ``(Gam + Gam^T) Zb``)."""
    m = np.asarray(counts, dtype=float)
    u = m.size
    G = Zb @ Zb.T
    np.fill_diagonal(G, 1.0)
    if eps is None:
        has = m >= 2  # an anchor has positives only with another sample of its class
    else:
        has = (m >= 2) | (m.sum() - m > 0)
    if spec.reduction == "sum":
        rho = 1.0
    elif spec.anchors_without_positives == "zero":
        rho = 1.0 / spec.batch_size
    else:
        anchors = float(m[has].sum())
        rho = 1.0 / anchors if anchors > 0 else 0.0
    if not has.any() or rho == 0.0:
        return 0.0, (np.zeros((u, u)) if gradient else None)
    with np.errstate(divide="ignore"):
        log_m = np.log(m)
        log_self = np.log(m - 1.0)
    rows = np.flatnonzero(has)
    S = G[rows] / tau + log_m  # row c: log mu_cd + G_cd / tau, diagonal fixed below
    S[np.arange(rows.size), rows] = 1.0 / tau + log_self[rows]
    top = S.max(axis=1)
    E = np.exp(S - top[:, None])
    tot = E.sum(axis=1)
    lse = top + np.log(tot)
    mc = m[rows]
    if eps is None:
        lin = np.full(rows.size, 1.0 / tau)
    else:
        Z = (mc - 1.0) + eps * (m.sum() - mc)
        cross = G[rows] @ m - mc  # sum over d != c of m_d G_cd (G_cc = 1)
        lin = ((mc - 1.0) + eps * cross) / (tau * Z)
    w = rho * mc
    loss = float(w @ (lse - lin))
    if not gradient:
        return loss, None
    Gam = np.zeros((u, u))
    R = E / tot[:, None]
    if eps is not None:
        R -= (eps / Z)[:, None] * m[None, :]  # minus the target, off the diagonal
    Gam[rows] = (w / tau)[:, None] * R
    np.fill_diagonal(Gam, 0.0)  # the within-class cosine is fixed at 1
    return loss, Gam


def class_batch_loss(Zb: np.ndarray, counts: np.ndarray, *, tau: float, spec: BatchSpec,
                     eps: float | None = None,
                     gradient: bool = True) -> tuple[float, np.ndarray | None]:
    """:func:`class_batch_terms` with the Euclidean gradient in ``Zb`` (``None`` when
    ``gradient`` is false), as :func:`dgp.solver.batch_loss` returns it."""
    loss, Gam = class_batch_terms(Zb, counts, tau=tau, spec=spec, eps=eps, gradient=gradient)
    return loss, None if Gam is None else (Gam + Gam.T) @ Zb
