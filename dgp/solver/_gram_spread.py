r"""The sampling error of Gram entries that come from sampled batches, measured on independent
runs (DESIGN §13): what every reported cosine of a stochastic prediction carries.

A stochastic prediction (:func:`dgp.solver.batch_optimum`: ``1 + replicates`` runs from
independent starts and batch streams) reports **one** of its candidates, not their mean: the
embedding kept on the selection batches, whose loss the held-out interval is about. The error
of one run's entry :math:`G_{ij}` about the entry every run estimates is therefore the spread
of a single run,

.. math::

    \mathrm{se}_{ij} = s_{ij} = \sqrt{\tfrac{1}{R-1}\textstyle\sum_r (G^{(r)}_{ij} -
    \bar G_{ij})^2},

and its 95% interval :math:`G_{ij} \pm t_{R-1,\,0.975}\, s_{ij}` over the ``R`` runs' Grams
:math:`G^{(r)}` (clipped to ``[-1, 1]``: cosines; the diagonal is 1 exactly). The standard
error of the runs' *mean*, :math:`s_{ij}/\sqrt R`, would be :math:`\sqrt R` times too narrow
for the one run reported, and the runs share the optimiser's bias besides (on an enumerable
case, sizes ``[6, 9, 30, 4]``, ``tau = 0.2``, ``B = 12``, forced onto fresh batches, four runs,
eight seeds: the mean's interval held the exact optimum's entry in 43 of 48 entries, the one
run's interval in 47 of 48). With the one run among those that estimate the spread, the
interval is conservative: for Gaussian noise it holds the mean 96.5%, 98.0%, 98.8% and 99.1%
of the time with 2, 3, 4 and 6 runs (simulated), and its expected width falls with the runs
(``t`` quantile times ``E[s]``: 10.1, 3.8, 2.9 and 2.4 standard deviations).
That holds for independent runs. Where restarts of the kept run fill the spread
(:func:`dgp.solver.batch_optimum`), the runs are one lineage: their spread is its batches' noise
in its own arrangement, and the 95% is nominal (measured against exact optima: a referee's
[6, 9, 30, 4] case covered 48 of 48 entries with restarts, at 1.3-2 times the independent runs'
width; on a case whose restarts spread 0.7 times as much as independent runs, Gaussian noise
would give 89-91% with three runs).
Where the full-batch optimum is kept (no run was lower beyond the paired noise on the
selection batches) the reported entry is none of the runs': a deterministic point, biased by
what batching moves, while the runs scatter about the expected-batch optimum. Its interval is
then the runs' own, about their mean, widened to hold the reported entry (an interval about
the full-batch entry with the runs' spread held the exact optimum's entry in 74 of 84 entries
on an enumerable N = 8 kernel forced onto fresh batches, in the three of eight seeds that kept
it; the widened one in 80 of 84, about 1.01 times as wide).
Rotations do not move a Gram, so the runs' Grams are compared entry by entry as they are.

For ``K x K`` class Grams the whole matrix is kept (:func:`gram_spread`: two ``K x K``
accumulators and one run's Gram at a time, memory checked); for sample-level optima, whose
``N x N`` Gram is never built where the weighting has structure, only the entries asked for
(:func:`entry_spread`: ``O(R m d)`` for ``m`` pairs).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from dgp.errors import ParameterError
from dgp.resources import check_memory

__all__ = ["GRAM_CONFIDENCE", "entry_spread", "gram_spread", "spread_half_width",
           "spread_statement", "unmeasured_se"]

#: the confidence of every Gram entry's interval
GRAM_CONFIDENCE = 0.95


def spread_half_width(se: np.ndarray, runs: int) -> np.ndarray:
    """The half-width of a 95% interval of ``runs`` runs' spread ``se`` (``t`` quantile with
    ``runs - 1`` degrees of freedom; ``nan`` below two runs)."""
    from scipy.stats import t as student_t  # imported on use: scipy.stats is slow to import

    se = np.asarray(se, dtype=float)
    if runs < 2:
        return np.full_like(se, np.nan)
    return float(student_t.ppf(0.5 + GRAM_CONFIDENCE / 2, runs - 1)) * se


def unmeasured_se(shape: tuple[int, ...], *, sampled: bool) -> np.ndarray:
    """The standard errors of entries that fewer than two runs leave without a spread: ``nan``
    where the one run was sampled (its error is not measured), 0 where the one Gram is exact (a
    closed form, which no sample moves: intervals of width 0). The one rule for too few runs
    (:func:`gram_spread`, :func:`entry_spread`)."""
    return np.full(shape, np.nan if sampled else 0.0)


def _intervals(value: np.ndarray, se: np.ndarray, runs: int, mean: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """The 95% intervals ``value`` +- the half-width of ``runs`` runs' spread ``se`` (``se``
    itself, 0 or ``nan``, below two runs), clipped to the cosines' ``[-1, 1]``. ``mean``: the
    runs' mean where the reported ``value`` is none of them (the full-batch optimum kept): the
    interval is then the runs' own, about their mean, widened to hold ``value``."""
    half = spread_half_width(se, runs) if runs > 1 else se
    if mean is None or runs < 2:
        lo, hi = value - half, value + half
    else:
        lo, hi = np.minimum(value, mean - half), np.maximum(value, mean + half)
    return np.clip(lo, -1.0, 1.0), np.clip(hi, -1.0, 1.0)


def gram_spread(G: np.ndarray, grams: Iterable[np.ndarray], *, runs: int | None = None,
                sampled: bool = False, kept_full_batch: bool = False
                ) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Each entry's standard error (the runs' standard deviation, ``ddof=1``) and 95% interval
    around the reported Gram ``G`` (module docstring), from the ``grams`` of independent runs
    (``K x K`` each, read one at a time; ``runs``: how many, to check the memory first).
    ``kept_full_batch``: ``G`` is the full-batch optimum, kept because no run was lower beyond
    the noise, and none of the runs: each interval is the runs' own about their mean, widened
    to hold ``G`` (module docstring).
    Fewer than two Grams (:func:`unmeasured_se`): one Gram alone is a closed form, which no
    sample moves (zeros: an interval of width 0), unless ``sampled`` (one sampled run: ``nan``,
    not measured). The diagonal is exact (unit rows) where the spread is measured."""
    G = np.asarray(G, dtype=float)
    K = G.shape[0]
    check_memory(4 * 8.0 * K * K, what=f"the per-entry intervals of a {K} x {K} Gram",
                 hint="use fewer classes")
    count, mean, m2 = 0, np.zeros_like(G), np.zeros_like(G)
    for g in grams:  # Welford: one run's Gram at a time
        count += 1
        delta = np.asarray(g, dtype=float) - mean
        mean += delta / count
        m2 += delta * (np.asarray(g, dtype=float) - mean)
    if runs is not None and count != runs:
        raise ValueError(f"gram_spread: {count} Grams, {runs} expected")
    if count > 1:
        se = np.sqrt(np.maximum(m2, 0.0) / (count - 1))
        np.fill_diagonal(se, 0.0)
    else:
        se = unmeasured_se(G.shape, sampled=sampled)
    return se, _intervals(G, se, count, mean if kept_full_batch else None)


def entry_spread(embedding: np.ndarray, runs: Sequence[np.ndarray], i: object, j: object, *,
                 kept_full_batch: bool = False
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The entries ``(i, j)`` (index arrays, broadcast) of the Gram of ``embedding`` (unit
    rows), their standard errors over the ``runs``' embeddings (``ddof=1``; ``nan`` below two
    runs) and their 95% intervals ``(lower, upper)``: ``O(R m d)`` for ``m`` entries, no
    ``N x N`` array. ``kept_full_batch``: as :func:`gram_spread`."""
    n = embedding.shape[0]
    idx = {}
    for name, value in (("i", i), ("j", j)):
        a = np.asarray(value)
        if a.dtype.kind not in "iu":  # 1.5, True or "a" would read as another entry
            raise ParameterError(name, f"must be integer row indices, got {value!r}")
        if a.size and (a.min() < -n or a.max() >= n):
            raise ParameterError(name, f"holds an index outside the {n} rows of the embedding")
        idx[name] = a.astype(np.int64)
    i, j = np.broadcast_arrays(idx["i"], idx["j"])
    value = np.einsum("...k,...k->...", embedding[i], embedding[j])
    vals = np.array([np.einsum("...k,...k->...", Z[i], Z[j]) for Z in runs])
    mean = None
    if len(runs) > 1:
        se = vals.std(axis=0, ddof=1)
        se = np.where(i == j, 0.0, se)  # unit rows: the diagonal is exact
        mean = vals.mean(axis=0) if kept_full_batch else None
    else:
        se = unmeasured_se(value.shape, sampled=True)
    return (value, se, *_intervals(value, se, len(runs), mean))


def spread_statement(runs: int, *, exact: str | None = None, left_out: int = 0,
                     restarts: int = 0, restarts_left_out: int = 0,
                     kept_full_batch: bool = False) -> str:
    """How the reported Gram's entries carry their error, in words: ``exact`` (why there is
    no sampling error), else the ``t`` intervals of ``runs`` runs, the last ``restarts`` of
    them the kept solution's lineage (its run and restarts on other batch streams), and the
    ``left_out`` runs that ended beyond the loss resolution above the best (not in the
    spread), and the ``restarts_left_out`` restarts made but not used (ended beyond it, never
    left their start, or beyond the number short); ``kept_full_batch``: the reported solution
    is the full-batch optimum, none of the runs (:func:`gram_spread`)."""
    if exact is not None:
        return exact
    out = (f"{left_out} further run{'s' if left_out > 1 else ''} ended beyond the loss "
           "resolution above the kept solution (a miss, not sampling noise: another "
           "arrangement, or a run stopped before it converged) and "
           + ("are" if left_out > 1 else "is") + " left out; ") if left_out else ""
    if restarts_left_out:
        out += (f"{restarts_left_out} restart{'s' if restarts_left_out > 1 else ''} of the kept "
                "solution (beyond the resolution above it, never moved from it, or beyond the "
                "number short) " + ("are" if restarts_left_out > 1 else "is") + " not used; ")
    if runs < 2:
        return out + (f"no interval: {'one run' if runs == 1 else 'no run'} near the kept "
                      "solution, so the spread of the Gram entries over runs is not measured")
    free = runs - restarts
    over = f"{runs} independent runs (starts and batch streams)"
    if restarts:
        over = (f"{runs} runs: " + (f"{free} independent (starts and batch streams) and "
                                    if free else "")
                + f"{restarts} of the kept solution's lineage (its run and restarts of it on "
                "other batch streams, made because " + ("fewer independent runs" if free else
                                                         "no independent run")
                + " came near it: they measure its batches' noise in its own arrangement, "
                "not other arrangements; see identifiability)")
    quantile = (f"the t quantile ({runs - 1} degree{'s' if runs > 2 else ''} of freedom) "
                "times it")
    if kept_full_batch:
        return out + (f"each entry is the full-batch optimum's, kept as no run was lower beyond "
                      "the noise (the run started from it is that solution, not another, and "
                      f"is not counted); its standard error is the standard deviation over {over}, "
                      f"and its 95% interval is theirs, about their mean ({quantile}), widened "
                      "to hold the full-batch entry: batching may move the entry to where the "
                      "runs are")
    return out + (f"each entry is the reported solution's (one candidate, not the runs' "
                  f"mean); its standard error is the standard deviation over {over} and its "
                  f"95% interval {quantile}")
