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

from collections.abc import Callable, Mapping
from typing import Any

from dgp.engine import target
from dgp.engine._weighting_verdict import classify_log_weights
from dgp.errors import (
    InvalidParameterError,
    SolverError,
    check_choice,
    check_dim,
    check_flag,
    check_int,
    check_positive,
)
from dgp.infonce import SIMILARITIES
from dgp.result import Classification
from dgp.spec import ProblemSpec, merged, not_given, tol_keyword
from dgp.tolerance import DEFAULT_RTOL, Tolerance, check_rtol

__all__ = ["FLOOR_MAX_N", "METHODS", "Classification", "classify", "classify_keywords",
           "dense_floor", "floor_of", "floor_search", "refuse_batch", "required", "weighting",
           "weights_verdict", "with_loss_floor"]

METHODS = ("spectral", "sdp")
#: largest N for which an inconsistent cosine verdict comes with its loss floor in R^d
FLOOR_MAX_N = 300


def classify(
    W: object = None,
    *,
    log_weights: object = None,
    similarity: str | None = None,
    tau: float | None = None,
    dim: int,
    tol: float | None = None,
    method: str = "spectral",
    floor: bool = False,
    starts: int | None = None,
    seed: int | None = None,
    rtol: object = not_given,
) -> Classification:
    r"""Classify the target geometry of a weighting.

    The bound :math:`L(Z) \ge \sum_i H(p_i)` is attained iff
    :math:`s_{ij} = \log w_{ij} + c_i`; the admissible targets form the one-parameter family
    :math:`G(c)_{ij} = \tau(\log w_{ij} + c)` (cosine, unit diagonal) or
    :math:`D(c)_{ij} = -2\tau(\log w_{ij} + c)` (Euclidean distance matrix).

    Parameters
    ----------
    W : dgp.Problem, array_like, scipy.sparse matrix, networkx graph or LogWeights, optional
        A :class:`dgp.Problem` (a weighting or an objective with labels or sizes: its ``tau``
        and ``similarity`` are used, a keyword may repeat them but not contradict them; it
        must not carry a mini-batch spec), or the weights, shape (N, N), non-negative off the
        diagonal (the diagonal is ignored), every row with positive mass. Give ``W`` or
        ``log_weights``. A sparse matrix or a graph (edge attribute ``weight``, default 1;
        missing edges are zero weights; a ``DiGraph`` is an asymmetric weighting) with zero
        weights is decided on its graph, without an N x N array. A
        :class:`dgp.engine.target.LogWeights` (what :func:`dgp.engine.target.log_weights` made
        of any of these) is used as it is, not validated again, and left unchanged.
    log_weights : array_like, shape (N, N), optional
        :math:`\log w_{ij}` instead (``-inf`` for a zero weight): kernels whose weights would
        underflow to zero keep their information.
    similarity : {"cosine", "euclidean"}, optional
        Latent similarity (cosine by default; a problem's own).
    tau : float
        Temperature, ``> 0`` (a keyword, or the problem's).
    dim : int
        Embedding dimension ``d >= 1``.
    tol : float
        Relative tolerance per sample of every decision (eigenvalue signs and ranks, the cycle
        condition): ``atol = max(tol, 4 u) * N * scale`` (see :mod:`dgp.tolerance`);
        reported in the result. The default sits at float64 rounding noise.
    method : {"spectral", "sdp"}
        One tridiagonalisation (fast, exact; default) or semidefinite programs with cvxpy
        (slower, solver accuracy, ``N <= 120``).
    floor : bool
        For an inconsistent cosine verdict, also compute the loss floor in ``R^dim`` (an
        optimisation: milliseconds to seconds; ``dgp classify`` does it by default).
    starts, seed : int, optional
        Random starts and their seed of the loss floor's rank-``dim`` search (with
        ``floor=True``; the search's defaults otherwise).
    rtol : float, optional
        Deprecated name of ``tol`` (a :class:`DeprecationWarning`).

    Returns
    -------
    Classification
        With ``floor=True``, for an inconsistent cosine verdict with ``N <= FLOOR_MAX_N``,
        ``loss_floor`` is the
        certified excess of the optimum in ``R^dim`` over the entropic bound (the interval found
        is in ``certificate.notes["loss_floor"]`` when it is not certified).

    Raises
    ------
    dgp.InvalidParameterError
        If ``W`` (or ``log_weights``) is not a valid weighting, ``similarity`` or ``method`` is
        unknown, ``tau <= 0`` or missing, ``dim < 1``, ``tol`` is not in (0, 1), a keyword
        contradicts the problem's field, or a parameter has the wrong type (also a
        ``TypeError`` then).

    Examples
    --------
    >>> import dgp
    >>> W = dgp.weights.soft_supcon_weights([0, 0, 1, 1, 2, 2], eps=0.1)
    >>> res = dgp.classify(W, similarity="cosine", tau=0.5, dim=3)
    >>> res.verdict, res.rank
    ('realizable', 3)
    >>> dgp.classify(1e-300 * W, tau=0.5, dim=3).rank   # the same problem
    3
    >>> p = dgp.Problem(objective="soft-supcon", sizes=[2, 2, 2], eps=0.1, tau=0.5)
    >>> dgp.classify(p, dim=3).rank                     # the same weighting, from its sizes
    3
    """
    problem = W if isinstance(W, ProblemSpec) else None
    if problem is not None:
        if log_weights is not None:
            raise InvalidParameterError("log_weights", "cannot be combined with a Problem (it "
                                        "holds its weighting)")
        refuse_batch(problem, "classify")
    similarity = merged(problem, "similarity", similarity, "cosine")
    check_choice(similarity, SIMILARITIES, "similarity")
    tau, dim, rtol, floor, search = classify_keywords(
        tau=required(merged(problem, "tau", tau), "tau"), dim=dim, method=method, tol=tol,
        rtol=rtol, floor=floor, starts=starts, seed=seed)
    Tolerance.make(rtol)
    if problem is not None:
        return problem.classification(tau=tau, dim=dim, rtol=rtol, method=method, floor=floor,
                                      search=search)
    weights = weighting(W, log_weights=log_weights, similarity=similarity, floor=floor)
    return weights_verdict(weights, similarity=similarity, tau=tau, dim=dim, rtol=rtol,
                           method=method, floor=floor, search=search)


def weights_verdict(weights: target.LogWeights, *, similarity: str, tau: float, dim: int,
                    rtol: float, method: str, floor: bool,
                    search: Mapping[str, int]) -> Classification:
    """The verdict on validated weights (consumed: pass a copy), with the loss floor when
    ``floor`` asks for it (:func:`dense_floor`, :func:`with_loss_floor`): what
    :func:`classify` and :meth:`dgp.Problem.classification` both hand over to."""
    compute = dense_floor(weights, similarity, tau=tau, dim=dim, search=search) if floor \
        else None
    return with_loss_floor(lambda lf, w: classify_log_weights(
        w, similarity=similarity, tau=tau, dim=dim, rtol=rtol, method=method, floor=lf),
        weights, compute)


def classify_keywords(
    *, tau: object, dim: object, method: object, tol: object, rtol: object, floor: object,
    starts: object, seed: object,
) -> tuple[float, int, float, bool, dict[str, int]]:
    """The keywords :func:`classify` and :func:`dgp.objectives.classify_objective` share,
    checked once: ``tau``, ``dim``, ``method``, the relative tolerance (``tol``, or ``rtol``,
    its deprecated alias, whose warning points at the user's call to either), ``floor`` and the
    floor's search settings (:func:`floor_search`). Returns ``(tau, dim, rtol, floor,
    search)``.

    Raises
    ------
    InvalidParameterError
        Naming the first keyword that is invalid.
    """
    value, name = tol_keyword(tol, rtol, DEFAULT_RTOL, stacklevel=4)
    checked_rtol = check_rtol(value, name)
    tau = check_positive(tau, "tau")
    dim = check_dim(dim)
    check_choice(method, METHODS, "method")
    flag = check_flag(floor, "floor")
    return tau, dim, checked_rtol, flag, floor_search(flag, starts=starts, seed=seed)


def floor_search(floor: bool, *, starts: object, seed: object) -> dict[str, int]:
    """The settings of the loss floor's rank-``dim`` search given by the caller (``starts``,
    ``seed``; none: the search's defaults).

    Raises
    ------
    InvalidParameterError
        If one is not an integer ``>= 0``, or is given without ``floor=True``.
    """
    out = {}
    for name, value in (("starts", starts), ("seed", seed)):
        if value is not None:
            if not floor:
                raise InvalidParameterError(name, "applies to the loss floor's search in R^dim; "
                                            "give floor=True as well")
            out[name] = check_int(value, name, minimum=0)
    return out


def refuse_batch(problem: ProblemSpec, entry: str) -> None:
    """Refuse a problem with a mini-batch spec where ``entry`` decides the full-batch loss.

    Raises
    ------
    InvalidParameterError
        Naming ``batch_size``.
    """
    if problem.batch_size is not None:
        raise InvalidParameterError(
            "batch_size", f"= {problem.batch_size}: {entry} decides the full-batch loss; "
            "mini-batch predictions are dgp.optimum and dgp.supcon_prototypes")


def required(value: object, name: str) -> object:
    """``value``, which must be given (as a keyword or a field of the problem).

    Raises
    ------
    InvalidParameterError
        If it is ``None``.
    """
    if value is None:
        raise InvalidParameterError(name, "is missing: give it as a keyword or a field of the "
                                    "Problem")
    return value


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


def floor_of(n: int, weights: Callable[[], Any], *, tau: float, dim: int,
             search: Mapping[str, int]) -> Callable[[], Any] | str:
    """What computes the loss floor in ``R^dim`` of ``n`` samples from their dense weights
    (``weights()``, read only when the floor is computed), or why it is not computed: above
    :data:`FLOOR_MAX_N` samples (the one place that decides it). For :func:`with_loss_floor`."""
    if n > FLOOR_MAX_N:
        return (f"not computed: N = {n} > {FLOOR_MAX_N} samples (dgp.optima.loss_floor or "
                "dgp optimum computes it)")

    def compute() -> Any:
        from dgp.optima import loss_floor

        return loss_floor(weights(), tau=tau, dim=dim, **search)

    return compute


def dense_floor(weights: target.LogWeights, similarity: str, *, tau: float, dim: int,
                search: Mapping[str, int]) -> Callable[[], Any] | str | None:
    """:func:`floor_of` validated weights (their canonical weights, read by
    :func:`with_loss_floor` before its last decision consumes the matrix); ``None`` for the
    Euclidean latent (the floor is a cosine notion)."""
    if similarity != "cosine":
        return None
    return floor_of(weights.n, weights.weights, tau=tau, dim=dim, search=search)


def with_loss_floor(decide: Callable[[Any, Any], Classification], data: Any,
                    compute: Callable[[], Any] | str | None) -> Classification:
    """The verdict ``decide(floor, data)`` of the engine, told as a value what to say of the
    loss floor in ``R^dim`` (the engine never calls up for it): ``compute`` computes the floor
    (optima is imported then), a sentence says why it cannot be, ``None``: not asked for.

    The floor is computed only where the verdict shows it (inconsistent, cosine): the engine
    decides once without it, and once more with it (the same decision: the engine is
    deterministic, and at most :data:`FLOOR_MAX_N` samples or ``FLOOR_MAX_K`` classes it is
    cheap beside the floor's rank-``dim`` search). ``data`` is what ``decide`` consumes, copied
    for the first decision when there is a second (``data.copy()``, or ``None``), and consumed
    only after ``compute`` ran (which may read it)."""
    if not callable(compute):
        return decide(compute, data)
    first = decide("not computed", None if data is None else data.copy())
    if first.verdict != "inconsistent" or first.similarity != "cosine":
        return first
    try:
        lf = compute()
    except (InvalidParameterError, SolverError) as exc:
        lf = f"not computed: {exc}"
    return decide(lf, data)
