r"""Verdicts: is the entropic bound of a weighting attained, and by a unique geometry?

Given :math:`W`, a similarity, :math:`\tau` and a dimension :math:`d`:

- **realizable**: the bound is attained in :math:`\mathbb R^d` by a minimiser unique up to
  isometry (one admissible :math:`c` whose target has rank :math:`\le d`);
- **degenerate**: the bound is attained or approached without a unique geometry (an interval of
  admissible :math:`c`, two admissible end points, or only divergent minimising sequences);
- **inconsistent**: the bound can be neither attained nor approached in :math:`\mathbb R^d`
  (broken cycle condition, no PSD/EDM member, rank above :math:`d`, zero weights under the
  bounded cosine similarity).

The data path is a straight line: :func:`classify` validates its arguments once
(:func:`dgp.engine.target.log_weights`, the one validator of every kind of weighting), and
:func:`dgp.engine.pipeline.classify_weights` builds the target, its family and the verdict
(:mod:`dgp.engine.rules`) with its certificate.
"""

from __future__ import annotations

import numpy as np

from dgp.engine import target
from dgp.engine.pipeline import classify_weights
from dgp.errors import ParameterTypeError, check_choice, check_dim, check_positive
from dgp.infonce import SIMILARITIES
from dgp.result import Classification
from dgp.tolerance import DEFAULT_RTOL, Tolerance

__all__ = ["FLOOR_MAX_N", "METHODS", "Classification", "classify", "weighting"]

METHODS = ("spectral", "sdp")
#: largest N for which an inconsistent cosine verdict comes with its loss floor in R^d
FLOOR_MAX_N = 300


def classify(
    W: object = None,
    *,
    log_weights: object = None,
    similarity: str = "cosine",
    tau: float,
    dim: int,
    rtol: float = DEFAULT_RTOL,
    method: str = "spectral",
    floor: bool = False,
) -> Classification:
    r"""Classify the target geometry of a weighting.

    The bound :math:`L(Z) \ge \sum_i H(p_i)` is attained iff
    :math:`s_{ij} = \log w_{ij} + c_i`; the admissible targets form the one-parameter family
    :math:`G(c)_{ij} = \tau(\log w_{ij} + c)` (cosine, unit diagonal) or
    :math:`D(c)_{ij} = -2\tau(\log w_{ij} + c)` (Euclidean distance matrix).

    Parameters
    ----------
    W : array_like, scipy.sparse matrix, networkx graph or LogWeights, shape (N, N), optional
        Weights, non-negative off the diagonal (the diagonal is ignored), every row with
        positive mass. Give ``W`` or ``log_weights``. A sparse matrix or a graph (edge
        attribute ``weight``, default 1; missing edges are zero weights; a ``DiGraph`` is an
        asymmetric weighting) with zero weights is decided on its graph, without an N x N
        array. A :class:`dgp.engine.target.LogWeights` (what
        :func:`dgp.engine.target.log_weights` made of any of these) is used as it is, not
        validated again, and left unchanged.
    log_weights : array_like, shape (N, N), optional
        :math:`\log w_{ij}` instead (``-inf`` for a zero weight): kernels whose weights would
        underflow to zero keep their information.
    similarity : {"cosine", "euclidean"}
        Latent similarity.
    tau : float
        Temperature, ``> 0``.
    dim : int
        Embedding dimension ``d >= 1``.
    rtol : float
        Relative tolerance per sample of every decision (eigenvalue signs and ranks, the cycle
        condition): ``atol = max(rtol, 4 u) * N * scale`` (see :mod:`dgp.tolerance`);
        reported in the result. The default sits at float64 rounding noise.
    method : {"spectral", "sdp"}
        One tridiagonalisation (fast, exact; default) or semidefinite programs with cvxpy
        (slower, solver accuracy, ``N <= 120``).
    floor : bool
        For an inconsistent cosine verdict, also compute the loss floor in ``R^dim`` (an
        optimisation: milliseconds to seconds; ``dgp classify`` does it by default).

    Returns
    -------
    Classification
        With ``floor=True``, for an inconsistent cosine verdict with ``N <= FLOOR_MAX_N``,
        ``loss_floor`` is the
        certified excess of the optimum in ``R^dim`` over the entropic bound (the interval found
        is in ``certificate.notes["loss_floor"]`` when it is not certified).

    Raises
    ------
    ValueError
        If ``W`` (or ``log_weights``) is not a valid weighting, ``similarity`` or ``method`` is
        unknown, ``tau <= 0``, ``dim < 1`` or ``rtol`` is not in (0, 1).
    TypeError
        If ``tau`` or ``dim`` has the wrong type.

    Examples
    --------
    >>> import dgp
    >>> W = dgp.weights.soft_supcon_weights([0, 0, 1, 1, 2, 2], eps=0.1)
    >>> res = dgp.classify(W, similarity="cosine", tau=0.5, dim=3)
    >>> res.verdict, res.rank
    ('realizable', 3)
    >>> dgp.classify(1e-300 * W, tau=0.5, dim=3).rank   # the same problem
    3
    """
    check_choice(similarity, SIMILARITIES, "similarity")
    tau = check_positive(tau, "tau")
    dim = check_dim(dim)
    check_choice(method, METHODS, "method")
    Tolerance.make(rtol)
    if not isinstance(floor, bool):
        raise ParameterTypeError("floor", f"must be True or False, got {floor!r}")
    weights = weighting(W, log_weights=log_weights, similarity=similarity, floor=floor)
    if weights.pairs is not None:
        from dgp.engine.zeros import classify_sparse

        return classify_sparse(weights, similarity=similarity, tau=tau, dim=dim, tol_rtol=rtol,
                               method=method)
    tol = Tolerance.make(rtol, n=weights.n, unit_roundoff=weights.unit_roundoff)
    compute_floor = floor
    floor = None
    if compute_floor and weights.n <= FLOOR_MAX_N:
        floor = _floor(np.exp(weights.L), tau, dim)  # a copy: the engine consumes weights.L
    return classify_weights(weights, similarity=similarity, tau=tau, dim=dim, tol=tol,
                            method=method, floor=floor)


def weighting(W: object = None, *, log_weights: object = None, similarity: str = "cosine",
              floor: bool = False) -> target.LogWeights:
    """The validated weighting :func:`classify` works on, made once
    (:func:`dgp.engine.target.log_weights`): pass it to :func:`classify` (not validated again)
    and to the figures of :mod:`dgp.plots`. A sparse matrix or a graph with zero weights is kept
    as its positive pairs (decided on its graph), unless ``floor`` asks for the cosine loss
    floor and it has at most :data:`FLOOR_MAX_N` samples.

    Raises
    ------
    ParameterError
        As :func:`dgp.engine.target.log_weights`.
    """
    return target.log_weights(W, log_weights=log_weights,
                              sparse_above=FLOOR_MAX_N if floor and similarity == "cosine" else 1)


def _floor(W: np.ndarray, tau: float, dim: int):
    """The loss floor in ``R^dim`` of the (canonical) weights ``W``, computed when asked."""

    def compute():
        from dgp.optima import loss_floor

        return loss_floor(W, tau=tau, dim=dim)

    return compute
