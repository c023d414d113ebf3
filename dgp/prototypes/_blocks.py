"""What the prototype modules share: the class-block weights, the size limits of the certified
solver and the loss gap of one Gram over another."""

from __future__ import annotations

import math

import numpy as np

from dgp.resources import memory_budget
from dgp.solver import RowProblem

__all__ = ["NUMERIC_MAX_K", "PROJECT_MAX_K", "block_weights", "excess_gap", "fits"]

#: largest K the certified solver takes on (its time grows as K^3 per iteration)
NUMERIC_MAX_K = 3000
#: largest K whose first-order Gram is projected on the elliptope (eigendecompositions)
PROJECT_MAX_K = 1500


def block_weights(K: int, eps: float | None) -> np.ndarray:
    """Class-block weights of SupCon (``eps=None``: the identity) or Soft SupCon (1 within a
    class, ``eps`` across).

    >>> block_weights(2, 0.5).tolist()
    [[1.0, 0.5], [0.5, 1.0]]
    """
    return np.eye(K) if eps is None else np.where(np.eye(K, dtype=bool), 1.0, eps)


def fits(bytes_per_k2: float, cap: int | None = None) -> int | None:
    """The largest K whose K x K arrays fit the memory budget (``None``: no limit)."""
    budget = memory_budget()
    k = None if budget is None else int(math.sqrt(budget / bytes_per_k2))
    if cap is not None:
        k = cap if k is None else min(k, cap)
    return k


def excess_gap(prob: RowProblem, G_alt: np.ndarray, G: np.ndarray) -> tuple[float, float]:
    """``F(G_alt) - F(G)`` per anchor of ``prob`` and its natural log, from the excesses over
    the entropic bound and their logs (no cancellation of the two losses, finite logs where the
    gap underflows); ``prob`` is left scaled at ``G``."""
    prob.set_scale(G_alt)
    _, alt, log_alt = prob.loss(G_alt)
    prob.set_scale(G)
    _, ex, log_ex = prob.loss(G)
    per = math.log(prob.alpha_total)
    if not log_alt > log_ex:  # the alternative is no worse (rounding at a tie)
        return 0.0, -math.inf
    log_gap = log_alt + math.log1p(-math.exp(log_ex - log_alt)) - per
    return max(0.0, (alt - ex) / prob.alpha_total), log_gap


