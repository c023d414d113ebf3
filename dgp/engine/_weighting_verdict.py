"""The verdict on validated log-weights of any storage and size: the one step below
:func:`dgp.classify` and :meth:`dgp.Problem.classification`, which both validate first and hand
over here through :func:`dgp.classification.weights_verdict` (with the loss floor as a value)."""

from __future__ import annotations

from typing import Any

from dgp._linalg import INTERRUPTIBLE_MIN_N, interruptible
from dgp.engine.pipeline import classify_weights
from dgp.engine.target import LogWeights
from dgp.result import Classification
from dgp.tolerance import Tolerance

__all__ = ["classify_log_weights"]


def classify_log_weights(
    weights: LogWeights,
    *,
    similarity: str,
    tau: float,
    dim: int,
    rtol: float,
    method: str,
    floor: Any = None,
) -> Classification:
    """Classify validated log-weights (``weights`` is consumed: pass a copy).

    A sparse weighting (its positive pairs) is decided on its graph, without an ``N x N``
    array; a dense one goes through :func:`dgp.engine.pipeline.classify_weights`, in a worker
    thread from :data:`dgp._linalg.INTERRUPTIBLE_MIN_N` samples on (``O(N^3)`` LAPACK calls:
    Ctrl-C and SIGTERM stop the caller at once). ``floor``: what an inconsistent cosine verdict
    says of the loss floor in ``R^dim`` (computed by the caller, or why not; see
    :class:`~dgp.engine.rules.Context`).
    """
    if weights.pairs is not None:
        from dgp.engine.zeros import classify_sparse

        return classify_sparse(weights, similarity=similarity, tau=tau, dim=dim, tol_rtol=rtol,
                               method=method, floor=floor)
    tol = Tolerance.make(rtol, n=weights.n, unit_roundoff=weights.unit_roundoff)
    if weights.n < INTERRUPTIBLE_MIN_N:
        return classify_weights(weights, similarity=similarity, tau=tau, dim=dim, tol=tol,
                                method=method, floor=floor)
    return interruptible(classify_weights, weights, similarity=similarity, tau=tau, dim=dim,
                         tol=tol, method=method, floor=floor)
