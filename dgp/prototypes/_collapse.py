r"""Minority collapse: do the tail classes' prototypes merge, beyond the noise of the prediction?

Under imbalance the loss is dominated by the head (the largest classes); the field's worry
(Fang et al. 2021, "minority collapse") is that the tail classes are pushed together. Here the
classes are split by size: the **head** is the largest third (at least two classes), the
**tail** the smallest third. The head's cosine is the mean prototype cosine over the head's
pairs; the tail *leans together beyond noise* when a tail pair's cosine minus the head's, or
the tail's mean pairwise cosine minus the head's, is above :data:`MINORITY_COSINE_FLOOR` at the
lower end of its interval. That is the verdict ``collapsed = True``: the tail is squeezed
relative to the head. How far it is from merging outright is the pair's cosine against 1,
stated beside it.

The intervals are those of the prediction: paired over the independent runs of a prediction
from sampled batches (each run's tail-pair cosine minus its own head mean, ``t`` quantile),
simultaneous at 95% over the family of every tail pair and the tail's mean (Bonferroni: the
pair most above the head is chosen among many, and its own 95% interval would headline noise),
or, from the Gram entries' intervals alone, their conservative sum; exact predictions (closed forms,
certified solves, every batch composition) carry none. Where the loss does not pin the pairwise
cosines (a fixed dimension with ``K > dim + 1``, or independent runs of a sampled prediction
that differ within the loss resolution; :class:`~dgp.prototypes.Identifiability`), the verdict
is ``None`` and no pair's cosine is shown: the cosines of one solution say nothing. Only a
collapse that every independent run shows beyond their spread is still reported.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dgp.display import format_summary, html_summary
from dgp.records import Record

__all__ = ["MINORITY_COSINE_FLOOR", "MINORITY_GROUP_SHARE", "MINORITY_MERGED_COSINE",
           "MinorityCollapse",
           "equiangular_verdict", "minority_collapse"]

#: share of the classes, by size, in the head (the largest) and in the tail (the smallest)
MINORITY_GROUP_SHARE = 1.0 / 3.0
#: a tail pair whose cosine is at least this (at the lower end of its interval) has merged:
#: "minority collapse" in the field's sense (Fang et al. 2021); below it the tail only leans
#: together
MINORITY_MERGED_COSINE = 0.99
#: smallest excess of a tail pair's cosine over the head's that counts, also where the
#: prediction carries no sampling error (a certified Gram is accurate far below it)
MINORITY_COSINE_FLOOR = 1e-3


@dataclass(frozen=True, eq=False)
class MinorityCollapse(Record):
    """Whether the tail classes' prototypes lean together beyond the noise of the prediction
    (module docstring).

    Attributes
    ----------
    collapsed : bool or None
        A tail pair's cosine is above the head's beyond its 95% interval (and by more than
        :data:`MINORITY_COSINE_FLOOR`); ``None``: undecided (fewer than four classes, or
        cosines the loss does not pin).
    pair : tuple of int or None
        The tail pair whose excess over the head is largest at the lower end of its interval
        (class indices from 0).
    pair_sizes : tuple of int or None
    cosine : float
        Its prototype cosine (``nan`` without a pair).
    cosine_interval : tuple of float
        Its 95% interval (a point for an exact prediction).
    head_cosine : float
        Mean cosine over the pairs of head classes.
    head_interval : tuple of float
    excess : float
        ``cosine - head_cosine``.
    excess_interval : tuple of float
        Its interval, simultaneous over the tail pairs (paired over runs where they are known).
    tail_excess : float
        The tail's mean pairwise cosine minus the head's.
    tail_excess_interval : tuple of float
        Its interval (the second member of the family; ``collapsed`` is also true when it lies
        above :data:`MINORITY_COSINE_FLOOR`).
    head_classes : int
        Classes in the head (the largest).
    tail_classes : int
        Classes in the tail (the smallest).
    noise : str
        Where the intervals come from.
    statement : str
        The verdict in words.
    """

    collapsed: bool | None
    pair: tuple[int, int] | None
    pair_sizes: tuple[int, int] | None
    cosine: float
    cosine_interval: tuple[float, float]
    head_cosine: float
    head_interval: tuple[float, float]
    excess: float
    excess_interval: tuple[float, float]
    tail_excess: float
    tail_excess_interval: tuple[float, float]
    head_classes: int
    tail_classes: int
    noise: str
    statement: str

    @property
    def verdict(self) -> str:
        """The verdict in one word, as ``to_dict`` writes it beside ``collapsed`` (true for
        both ``"merged"`` and ``"partial"``): ``"merged"`` (a tail pair at cosine
        :data:`MINORITY_MERGED_COSINE` or more, beyond noise), ``"partial"`` (beyond noise
        above the head, short of merging), ``"no"`` or ``"undecided"``."""
        if self.collapsed is None:
            return "undecided"
        if not self.collapsed:
            return "no"
        return "merged" if self.cosine_interval[0] >= MINORITY_MERGED_COSINE else "partial"

    @property
    def word(self) -> str:
        """The verdict in one phrase: ``"yes: merged"``, ``"partial: the tail leans
        together, not merged"``, ``"no"`` or ``"undecided"`` (:attr:`verdict`)."""
        return {"merged": "yes: merged",
                "partial": "partial: the tail leans together, not merged"}.get(self.verdict,
                                                                             self.verdict)

    def json_items(self, options: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
        """The fields, with :attr:`verdict` after ``collapsed`` (so that a reader of the JSON
        does not take ``collapsed: true`` for merged prototypes)."""
        for key, value in super().json_items(options):
            yield key, value
            if key == "collapsed":
                yield "verdict", self.verdict

    def __str__(self) -> str:
        return format_summary("Minority collapse", self.summary_pairs())

    def _repr_html_(self) -> str:
        return html_summary("Minority collapse", self.summary_pairs())

    def summary_pairs(self) -> list[tuple[str, str]]:
        """The lead lines of the text and HTML summaries."""
        if self.pair is None:
            return [("minority", "collapse: undecided. " + self.statement)]
        if self.collapsed is None:  # no pair's cosine is a finding here
            return [("minority", f"collapse: {self.statement}")]
        lo, hi = self.cosine_interval
        hlo, hhi = self.head_interval
        word = self.word
        i, j = self.pair
        return [
            ("minority", f"collapse: {word}. {self.statement}"),
            ("", f"tail classes {i},{j} (n = {self.pair_sizes[0]}, {self.pair_sizes[1]}) at "
                 f"cosine {self.cosine:+.3f} in [{lo:+.3f}, {hi:+.3f}], the head's mean "
                 f"{self.head_cosine:+.3f} in [{hlo:+.3f}, {hhi:+.3f}] ({self.noise})"),
        ]


def _signed(x: float) -> str:
    return f"{round(float(x), 3) + 0.0:+.3f}"  # no "-0.000"


def _groups(sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    K = sizes.size
    h = max(2, math.ceil(MINORITY_GROUP_SHARE * K))
    order = np.argsort(-sizes, kind="stable")
    return np.sort(order[:h]), np.sort(order[-h:])


def _undecided(statement: str, K: int, h: int) -> MinorityCollapse:
    nan2 = (math.nan, math.nan)
    return MinorityCollapse(None, None, None, math.nan, nan2, math.nan, nan2, math.nan, nan2,
                            math.nan, nan2, h, h, "none", statement)


def minority_collapse(gram: np.ndarray, sizes: object, *, runs: np.ndarray | None = None,
                      interval: tuple[np.ndarray, np.ndarray] | None = None,
                      pinned: bool | None = None, exact: str = "exact",
                      df: int | None = None, unmeasured: str | None = None) -> MinorityCollapse:
    """The minority-collapse verdict of a prototype Gram (module docstring).

    ``runs``: the Grams of runs (``R x K x K``, ``R >= 2``; only independent ones where
    ``pinned=False``: restarts in one arrangement say nothing there), whose spread gives
    paired intervals around ``gram``, simultaneous at 95% over the tail pairs and the tail's
    mean (Bonferroni: a pair chosen among many is not judged by its own 95% interval); else
    ``interval`` (each entry's 95% ``(lo, hi)`` over ``df + 1`` runs), summed conservatively;
    else none (``exact`` says why). ``pinned=False``: the loss does not pin the pairwise cosines,
    the verdict is ``None`` unless independent ``runs`` all put the tail above the head beyond
    their spread (a finding they agree on). ``unmeasured``: why the entries' noise was not
    measured (sampled, but too few runs): undecided, whatever the Gram shows.

    >>> G = np.full((4, 4), -1 / 3); np.fill_diagonal(G, 1.0)
    >>> minority_collapse(G, [10, 8, 3, 2]).collapsed
    False
    >>> G[2, 3] = G[3, 2] = 0.5
    >>> minority_collapse(G, [10, 8, 3, 2]).pair
    (2, 3)
    """
    from scipy.stats import t as student_t  # imported on use: scipy.stats is slow to import

    n = np.asarray(sizes, dtype=np.int64)
    G = np.asarray(gram, dtype=float)
    K = n.size
    if K < 4:
        return _undecided("needs at least four classes (a head and a tail of two each)", K,
                          min(K, 2))
    if unmeasured is not None:
        return _undecided(f"undecided: {unmeasured}", K, min(K, 2))
    head, tail = _groups(n)
    hi_, hj = np.triu_indices(head.size, 1)
    ti, tj = np.triu_indices(tail.size, 1)
    a, b = tail[ti], tail[tj]
    head_mean = float(G[head[hi_], head[hj]].mean())
    excess = G[a, b] - head_mean
    tail_excess = float(excess.mean())
    # the family: the m tail pairs and the tail's mean, each side of alpha = 0.05 split in two
    # (Bonferroni): a pair chosen among m is judged by a simultaneous interval
    pairs = a.size
    q_pair = q_mean = 0.0
    if runs is not None and len(runs) >= 2:
        R = np.asarray(runs, dtype=float)
        q_pair = float(student_t.ppf(1 - 0.0125 / pairs, R.shape[0] - 1))
        q_mean = float(student_t.ppf(1 - 0.0125, R.shape[0] - 1))
        run_head = R[:, head[hi_], head[hj]].mean(axis=1)
        run_pairs = R[:, a, b] - run_head[:, None]
        half_pair = q_pair * R[:, a, b].std(axis=0, ddof=1)
        half_excess = q_pair * run_pairs.std(axis=0, ddof=1)
        half_head = q_mean * float(run_head.std(ddof=1))
        half_tail = q_mean * float(run_pairs.mean(axis=1).std(ddof=1))
        noise = (f"simultaneous 95% intervals over the {pairs} tail pairs and the tail's mean, "
                 f"paired over {R.shape[0]} runs")
    elif interval is not None:
        lo, hi = (np.asarray(v, dtype=float) for v in interval)
        scale_pair = scale_mean = 1.0
        if df is not None and df >= 1:  # the entries' 95% intervals made simultaneous
            q95 = float(student_t.ppf(0.975, df))
            scale_pair = float(student_t.ppf(1 - 0.0125 / pairs, df)) / q95
            scale_mean = float(student_t.ppf(1 - 0.0125, df)) / q95
        half_pair = scale_pair * (hi[a, b] - lo[a, b]) / 2
        half_head = scale_mean * float(np.mean((hi - lo)[head[hi_], head[hj]]) / 2)
        half_excess = half_pair + half_head * scale_pair / scale_mean
        half_tail = scale_mean * float(np.mean(hi[a, b] - lo[a, b]) / 2) + half_head
        noise = "the entries' 95% intervals, summed (conservative)"
    else:
        half_pair = half_excess = np.zeros(a.size)
        half_head = half_tail = 0.0
        noise = exact
    low = excess - half_excess
    k = int(np.argmax(low))
    i, j = int(a[k]), int(b[k])
    c = float(G[i, j])
    found = bool(low[k] > MINORITY_COSINE_FLOOR)
    tail_low = tail_excess - half_tail
    leans = bool(tail_low > MINORITY_COSINE_FLOOR)
    paired = runs is not None and len(runs) >= 2
    if pinned is False and not (paired and (found or leans)):
        # a finding every independent run agrees on stands; anything else is undecided
        collapsed = None
        text = ("undecided: the loss does not pin the pairwise cosines here (see "
                "identifiability)" + (
                    f"; no tail pair, nor the tail's mean, lies above the head beyond the "
                    f"spread of {len(runs)} independent runs" if paired else
                    ": one solution's cosines say nothing"))
    elif found:
        collapsed = True
        text = (f"the tail leans together beyond noise: a pair {excess[k]:+.3f} above the head "
                f"(at least {low[k]:+.3f}); not merged, which is cosine 1"
                if c < 1.0 - MINORITY_COSINE_FLOOR else
                "the tail merges: a pair at cosine 1, above the head beyond noise")
    elif leans:
        collapsed = True
        text = (f"the tail leans together beyond noise on average: its pairs {tail_excess:+.3f} "
                f"above the head's (at least {tail_low:+.3f}); no single pair beyond its "
                "simultaneous interval")
    else:
        collapsed = False
        # a lower end that rounds to a positive number is below the floor: say which
        down = (_signed(low[k]) if round(float(low[k]), 3) <= 0 else
                f"{low[k]:+.2g}, within the {MINORITY_COSINE_FLOOR:g} that counts")
        text = (f"no tail pair, nor the tail's mean, lies above the head by more than "
                f"{MINORITY_COSINE_FLOOR:g} beyond noise (the closest pair: "
                f"{_signed(excess[k])} above the head, interval down to {down})")
    return MinorityCollapse(
        collapsed=collapsed, pair=(i, j), pair_sizes=(int(n[i]), int(n[j])), cosine=c,
        cosine_interval=(max(-1.0, c - float(half_pair[k])), min(1.0, c + float(half_pair[k]))),
        head_cosine=head_mean,
        head_interval=(head_mean - half_head, head_mean + half_head),
        excess=float(excess[k]),
        excess_interval=(float(excess[k] - half_excess[k]), float(excess[k] + half_excess[k])),
        tail_excess=tail_excess, tail_excess_interval=(tail_low, tail_excess + half_tail),
        head_classes=int(head.size), tail_classes=int(tail.size), noise=noise, statement=text,
    )


def equiangular_verdict(sizes: object, cosine: float) -> MinorityCollapse:
    """The verdict of an equiangular Gram (every pair at ``cosine``: no tail pair above the
    head), without building the ``K x K`` Gram."""
    n = np.asarray(sizes, dtype=np.int64)
    if n.size < 4:
        return _undecided("needs at least four classes (a head and a tail of two each)",
                          n.size, min(n.size, 2))
    head, tail = _groups(n)
    i, j = int(tail[0]), int(tail[1])
    c = float(cosine)
    return MinorityCollapse(
        collapsed=False, pair=(i, j), pair_sizes=(int(n[i]), int(n[j])), cosine=c,
        cosine_interval=(c, c), head_cosine=c, head_interval=(c, c), excess=0.0,
        excess_interval=(0.0, 0.0), tail_excess=0.0, tail_excess_interval=(0.0, 0.0),
        head_classes=int(head.size), tail_classes=int(tail.size),
        noise="exact: every pair at the same cosine",
        statement="no tail pair lies above the head: the prototypes are equiangular",
    )
