r"""The certified loss floor in dimension ``d`` (:func:`loss_floor` of a weighting,
:func:`block_loss_floor` of a class-block weighting given by class sizes): the excess of the
best embedding in :math:`\mathbb R^d` over the entropic bound, as an interval, read off the
optimum of :mod:`dgp.optima._api`.
"""

from __future__ import annotations

import numpy as np

from dgp.errors import ParameterError, check_dim, check_positive, check_sizes
from dgp.optima._api import NoCollapse, collapsed_optimum, optimum
from dgp.optima._result import LossFloor, Optimum
from dgp.optima._structure import Quotient

__all__ = ["block_loss_floor", "loss_floor"]


def _floor(opt: Optimum) -> LossFloor:
    lower = max(0.0, opt.lower_bound - opt.entropic_bound)
    upper = max(opt.excess_loss, lower)
    return LossFloor(
        lower=lower, upper=upper, gap=upper - lower, certified=opt.certified_global,
        dim=int(opt.dim), rank=opt.rank, free_rank=opt.free_rank,
        entropic_bound=opt.entropic_bound, log_upper=opt.log_excess_loss,
    )


def loss_floor(W: object, *, tau: float, dim: int, starts: int | None = None,
               seed: int = 0) -> LossFloor:
    r"""The loss floor of a cosine weighting in dimension ``dim``: the excess of the best
    embedding in :math:`\mathbb R^{dim}` over the entropic bound, as a certified interval
    ``[lower, upper]`` (nats, summed over anchors).

    ``upper`` is attained by an embedding found by Burer–Monteiro (so the floor is at most
    ``upper``); ``lower`` is a convex lower bound (the floor is at least ``lower``); they agree,
    ``certified=True``, when the embedding's dual matrix is PSD.

    Parameters
    ----------
    W : array_like, shape (N, N)
    tau : float
    dim : int
    starts : int, optional
        Random candidates of the rank-``dim`` search, as :func:`optimum` (``None``: its
        default budget).
    seed : int

    Returns
    -------
    LossFloor

    Raises
    ------
    ValueError, TypeError
        As :func:`optimum`.

    Examples
    --------
    >>> from dgp.weights import supcon_weights
    >>> f = loss_floor(supcon_weights([0, 0, 1, 1, 2, 2]), tau=0.5, dim=2)
    >>> f.certified, f.rank, bool(f.lower <= f.upper)
    (True, 2, True)
    """
    # a floor is part of its caller's answer (classify, the design tools): they say how it goes
    return _floor(optimum(W, tau=tau, dim=check_dim(dim, "dim"), starts=starts, seed=seed,
                          progress=False))


def block_loss_floor(
    sizes: object,
    *,
    within: object,
    cross: object,
    tau: float,
    dim: int,
    starts: int | None = None,
    seed: int = 0,
) -> LossFloor:
    r"""The loss floor in dimension ``dim`` of a class-block weighting, without any ``N x N``
    matrix: :math:`w_{ij}` = ``within[c]`` for two samples of class ``c``, ``cross[c, d]`` for a
    sample of class ``c`` and one of class ``d``.

    SupCon is ``within=1, cross=0``; Soft SupCon ``within=1, cross=eps``. Labels give the sizes
    as ``np.unique(labels, return_counts=True)[1]``. Solved on the ``K x K`` quotient with the
    classes collapsed; the interval is certified as in :func:`loss_floor` (``upper``: the best
    collapsed embedding in :math:`\mathbb R^{dim}`, an upper bound on the floor whether or not
    collapse is optimal in that dimension; ``lower``: the convex lower bound, valid for every
    embedding).

    Parameters
    ----------
    sizes : sequence of int
        Class sizes (each ``>= 2``, at least two classes).
    within : float or array_like, shape (K,)
        Within-class weights ``> 0``.
    cross : float or array_like, shape (K, K)
        Cross-class weights ``>= 0`` (the diagonal is ignored).
    tau, dim, starts, seed
        As :func:`loss_floor`.

    Returns
    -------
    LossFloor

    Raises
    ------
    ValueError, TypeError
        On invalid sizes or weights, or a problem too large for memory or time.

    Examples
    --------
    >>> f = block_loss_floor([5, 3, 2], within=1.0, cross=0.0, tau=0.1, dim=1)
    >>> f.certified, f.free_rank, bool(f.lower > 0)
    (False, 2, True)
    >>> block_loss_floor([5, 3, 2], within=1.0, cross=0.0, tau=0.1, dim=2).certified
    True
    """
    n = check_sizes(sizes)
    K = n.size
    tau = check_positive(tau, "tau")
    dim = check_dim(dim, "dim")
    w_in = np.broadcast_to(np.asarray(within, dtype=float), (K,)).copy()
    w_x = np.broadcast_to(np.asarray(cross, dtype=float), (K, K)).copy()
    if not (np.isfinite(w_in).all() and (w_in > 0).all()):
        raise ParameterError("within", "must be finite weights > 0, one or one per class")
    np.fill_diagonal(w_x, 0.0)
    if not (np.isfinite(w_x).all() and (w_x >= 0).all()):
        raise ParameterError("cross", "must be finite weights >= 0, one or K x K")
    Wq = w_x + np.diag(w_in)
    labels = np.repeat(np.arange(K), n)
    q = Quotient(labels, n, Wq, np.concatenate([[0], np.cumsum(n)[:-1]]), True)
    try:
        opt = collapsed_optimum(q, tau=tau, dim=dim, starts=starts, seed=seed)
    except NoCollapse:
        raise ParameterError(
            "within",
            "and cross give a weighting whose classes do not all collapse at the optimum (its "
            "lifted certificate fails); its floor needs the N x N problem: call loss_floor with "
            "the N x N weights",
        ) from None
    return _floor(opt)
