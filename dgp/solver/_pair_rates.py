"""The positive-pair rates of uniform batches (without replacement), exact to rounding: the
products of falling factorials that :func:`dgp.solver.positive_pair_probability` and
:func:`dgp.prototypes.positive_pair_rates` share (one computation)."""

from __future__ import annotations

import numpy as np

__all__ = ["DIRECT_SUM_MAX_TERMS", "log_falling_ratio", "uniform_pair_rates"]

#: terms of each of the uniform rates' products (distinct class sizes times about ``B``) up to
#: which they are summed term by term, accurate to rounding (both sums: 0.4 s of CPU at 4e7
#: terms, 10^4 distinct sizes and B = 4096; so about 4 s here); beyond, scipy's hypergeometric
#: tails (``sf``: 4e-8 relative for a class of 2 at N = 5e7, B = 65536, where a difference of
#: ``gammaln``, whose error grows as eps N log N, was 2.4% off), which the rates' certificate
#: reports as not certified (``summed`` false)
DIRECT_SUM_MAX_TERMS = 400_000_000


def log_falling_ratio(top: int, a: np.ndarray, count: int) -> np.ndarray:
    """``log[(top - a)_count / (top)_count]`` of falling factorials, for each ``a`` (with
    ``top - a >= count``): the sum of ``log1p(-a / (top - j))`` over ``j < count`` (no
    cancellation, no overflow at ``top = 10^8``)."""
    values, inverse = np.unique(np.asarray(a, dtype=float), return_inverse=True)
    out = np.zeros(values.size)
    step = max(1, 1_000_000 // max(1, values.size))  # at most a million terms at once
    for start in range(0, count, step):
        j = np.arange(start, min(count, start + step), dtype=float)
        out += np.log1p(-values[:, None] / (top - j)).sum(axis=1)
    return out[inverse]


def uniform_pair_rates(n: np.ndarray, B: int) -> tuple[np.ndarray, np.ndarray, bool]:
    """The anchor rate ``1 - C(N - n_k, B - 1) / C(N - 1, B - 1)`` and the batch rate
    ``P(X_k >= 2) = 1 - P(X_k = 0) - P(X_k = 1)`` of uniform batches, from
    ``P(X_k = 0) = C(N - n_k, B) / C(N, B)`` and ``P(X_k = 1) = (n_k B / N)(1 - anchor rate)``
    (:func:`log_falling_ratio`; 1 - P(X_k = 0) as ``-expm1``, so a class of 2 in 10^8 samples keeps
    its ``B^2 / N^2``, where ``1 - pmf(0) - pmf(1)`` of scipy's hypergeometric was 6x off);
    and whether the products were summed (up to :data:`DIRECT_SUM_MAX_TERMS` terms; beyond,
    scipy's hypergeometric tails ``sf``, whose digits at N = 5e7 beat the differences of
    log-gammas: 4e-8 relative for a class of 2, where the log-gammas were 2.4% off)."""
    N = int(n.sum())
    summed = np.unique(n).size * B <= DIRECT_SUM_MAX_TERMS
    if summed:
        anchor = np.ones(n.size)
        ok = N - n >= B - 1  # else every batch with the anchor holds another of its class
        anchor[ok] = -np.expm1(log_falling_ratio(N - 1, n[ok] - 1, B - 1))
        empty = N - n >= B  # else every batch holds one of the class
        log_p0 = np.full(n.size, -np.inf)
        log_p0[empty] = log_falling_ratio(N, n[empty], B)
        batch = -np.expm1(log_p0) - B * n / float(N) * (1.0 - anchor)
    else:
        from scipy.stats import hypergeom  # imported on use: scipy.stats is slow to import

        anchor = hypergeom(N - 1, np.maximum(n - 1, 0), B - 1).sf(0)
        batch = hypergeom(N, n, B).sf(1)
    # a class of one sample never has two in a batch drawn without replacement: exactly 0
    # (the difference above leaves rounding, 7e-18 for a singleton among 7743 samples)
    anchor[n < 2] = batch[n < 2] = 0.0
    return np.clip(anchor, 0.0, 1.0), np.clip(batch, 0.0, 1.0), summed
