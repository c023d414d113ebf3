"""The verdict on validated log-weights of any storage and size: the one step below
:func:`dgp.classify` and :meth:`dgp.Problem.classification`, which both validate first and hand
over here (so neither calls the other)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

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
    loss_floor: Callable[[np.ndarray], Any] | None = None,
) -> Classification:
    """Classify validated log-weights (``weights`` is consumed: pass a copy).

    A sparse weighting (its positive pairs) is decided on its graph, without an ``N x N``
    array; a dense one goes through :func:`dgp.engine.pipeline.classify_weights`, in a worker
    thread from :data:`dgp._linalg.INTERRUPTIBLE_MIN_N` samples on (``O(N^3)`` LAPACK calls:
    Ctrl-C and SIGTERM stop the caller at once). ``loss_floor`` (dense only) maps the
    canonical weights to the loss floor in ``R^dim``; it is called only for an inconsistent
    cosine verdict.
    """
    if weights.pairs is not None:
        from dgp.engine.zeros import classify_sparse

        return classify_sparse(weights, similarity=similarity, tau=tau, dim=dim, tol_rtol=rtol,
                               method=method)
    tol = Tolerance.make(rtol, n=weights.n, unit_roundoff=weights.unit_roundoff)
    # a copy of the canonical weights: the engine consumes weights.L
    floor = None if loss_floor is None else partial(loss_floor, np.exp(weights.L))
    if weights.n < INTERRUPTIBLE_MIN_N:
        return classify_weights(weights, similarity=similarity, tau=tau, dim=dim, tol=tol,
                                method=method, floor=floor)
    return interruptible(classify_weights, weights, similarity=similarity, tau=tau, dim=dim,
                         tol=tol, method=method, floor=floor)
