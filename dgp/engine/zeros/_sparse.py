"""Sparse input: a weighting with zero weights decided on its graph, never densified."""

from __future__ import annotations

from typing import Any

import numpy as np

from dgp.engine.rules import Context
from dgp.engine.target import LogWeights, sparse_log_weights
from dgp.engine.zeros._classify import classify_pattern
from dgp.engine.zeros._pattern import ZeroPattern
from dgp.engine.zeros._split import pattern_of
from dgp.result import Classification
from dgp.tolerance import Tolerance


def sparse_pattern(W: object, name: str = "W") -> tuple[ZeroPattern, float, float,
                                                         tuple[str, ...]] | None:
    r"""A sparse weighting (``scipy.sparse``, a networkx graph, or :class:`LogWeights` kept as
    its pairs) with zero weights, without an ``N x N`` array: ``(pattern, entropic bound,
    shift, warnings)``; ``None`` when ``W`` is not sparse or has no zero weight off the diagonal
    (the dense path then decides it).

    The validation is :func:`dgp.engine.target.sparse_log_weights` (the sparse branch of the one
    validator, :func:`dgp.engine.target.log_weights`).

    Raises
    ------
    ParameterError
        If the matrix is not square with at least 2 rows, an entry off the diagonal is not
        finite or is negative, or a row has no positive weight off the diagonal.
    """
    weights = W if isinstance(W, LogWeights) else sparse_log_weights(W, name)
    if weights is None or weights.pairs is None:
        return None
    pattern = pattern_of(weights)
    return pattern, pattern_bound(pattern), weights.shift, weights.warnings


def pattern_bound(pattern: ZeroPattern) -> float:
    r""":math:`\sum_i H(p_i)` of a pattern, in log space (segment reductions over rows)."""
    starts = np.searchsorted(pattern.rows, np.arange(pattern.n + 1))
    seg = np.maximum.reduceat(pattern.logw, starts[:-1])
    x = pattern.logw - seg[pattern.rows]
    e = np.exp(x)
    tot = np.add.reduceat(e, starts[:-1])
    H = np.log(tot) - np.add.reduceat(e * x, starts[:-1]) / tot
    return float(H.sum())


def classify_sparse(W: object, *, similarity: str, tau: float, dim: int, tol_rtol: float,
                    method: str, dense_up_to: int = 1,
                    floor: Any = None) -> Classification | None:
    """Classify a sparse weighting with zero weights on its graph (no ``N x N`` array);
    ``None`` when it is not one (see :func:`sparse_pattern`) or has at most ``dense_up_to``
    samples (the dense path then decides it, with what it adds for small N). ``floor``: what
    an inconsistent cosine verdict says of the loss floor (:class:`dgp.engine.rules.Context`)."""
    shape = getattr(W, "shape", None)
    if shape is not None and len(shape) == 2 and shape[0] <= dense_up_to:
        return None
    if hasattr(W, "number_of_nodes") and W.number_of_nodes() <= dense_up_to:
        return None
    # its validation warns about what looks suspicious
    weights = W if isinstance(W, LogWeights) else sparse_log_weights(W, "W")
    if weights is None or weights.pairs is None:
        return None
    from dgp.engine._reductions import LogShift, choose_reductions, inverse_data

    # the reductions chosen once: the canonical shift, the pairs' pattern split into components
    split, inverse = choose_reductions(weights, similarity=similarity).apply(weights)
    pattern = split.pattern
    tol = Tolerance.make(tol_rtol, n=pattern.n, unit_roundoff=pattern.unit_roundoff)
    ctx = Context(similarity=similarity, tau=tau, dim=dim, n=pattern.n, tol=tol,
                  method=method, entropic_bound=pattern_bound(pattern),
                  shift=inverse_data(inverse, LogShift).shift, warnings=weights.warnings,
                  floor=floor)
    return classify_pattern(split, ctx)
