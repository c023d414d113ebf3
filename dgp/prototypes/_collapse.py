r"""Minority collapse: do the tail classes' prototypes merge, beyond the noise of the prediction?

Under imbalance the loss is dominated by the head (the largest classes); the field's worry
(Fang et al. 2021, "minority collapse") is that the tail classes are pushed together. Here the
classes are split by size: the **head** is the largest third (at least two classes), the
**tail** the smallest third. The head's cosine is the mean prototype cosine over the head's
pairs; a tail pair *leans together beyond noise* when its cosine minus the head's is above
:data:`MINORITY_COSINE_FLOOR` at the lower end of its 95% interval. That is the verdict
``collapsed = True``: the tail is squeezed relative to the head. How far it is from merging
outright is the pair's cosine against 1, stated beside it.

The intervals are those of the prediction: paired over the independent runs of a prediction
from sampled batches (each run's tail-pair cosine minus its own head mean, ``t`` quantile), or,
from the Gram entries' intervals alone, their conservative sum; exact predictions (closed forms,
certified solves, every batch composition) carry none. Where the loss does not pin the pairwise
cosines (a fixed dimension with ``K > dim + 1``; :class:`~dgp.prototypes.Identifiability`),
the verdict is ``None``: the cosines of one solution say nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dgp.records import Record

__all__ = ["MINORITY_COSINE_FLOOR", "MINORITY_GROUP_SHARE", "MinorityCollapse",
           "equiangular_verdict", "minority_collapse"]

#: share of the classes, by size, in the head (the largest) and in the tail (the smallest)
MINORITY_GROUP_SHARE = 1.0 / 3.0
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
        Its 95% interval (paired over runs where they are known).
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
    head_classes: int
    tail_classes: int
    noise: str
    statement: str

    def summary_pairs(self) -> list[tuple[str, str]]:
        """The lead lines of the text and HTML summaries."""
        if self.pair is None:
            return [("minority", "collapse: undecided. " + self.statement)]
        lo, hi = self.cosine_interval
        hlo, hhi = self.head_interval
        word = {True: "yes", False: "no", None: "undecided"}[self.collapsed]
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
                            h, h, "none", statement)


def minority_collapse(gram: np.ndarray, sizes: object, *, runs: np.ndarray | None = None,
                      interval: tuple[np.ndarray, np.ndarray] | None = None,
                      pinned: bool | None = None, exact: str = "exact") -> MinorityCollapse:
    """The minority-collapse verdict of a prototype Gram (module docstring).

    ``runs``: the Grams of independent runs (``R x K x K``, ``R >= 2``), whose spread gives
    paired 95% intervals around ``gram``; else ``interval`` (each entry's ``(lo, hi)``), summed
    conservatively; else none (``exact`` says why). ``pinned=False``: the loss does not pin the
    pairwise cosines, the verdict is ``None``.

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
    head, tail = _groups(n)
    hi_, hj = np.triu_indices(head.size, 1)
    ti, tj = np.triu_indices(tail.size, 1)
    a, b = tail[ti], tail[tj]
    head_mean = float(G[head[hi_], head[hj]].mean())
    excess = G[a, b] - head_mean
    if runs is not None and len(runs) >= 2:
        R = np.asarray(runs, dtype=float)
        q = float(student_t.ppf(0.975, R.shape[0] - 1))
        run_head = R[:, head[hi_], head[hj]].mean(axis=1)
        half_pair = q * R[:, a, b].std(axis=0, ddof=1)
        half_excess = q * (R[:, a, b] - run_head[:, None]).std(axis=0, ddof=1)
        half_head = q * float(run_head.std(ddof=1))
        noise = f"95% intervals, paired over {R.shape[0]} independent runs"
    elif interval is not None:
        lo, hi = (np.asarray(v, dtype=float) for v in interval)
        half_pair = (hi[a, b] - lo[a, b]) / 2
        half_head = float(np.mean((hi - lo)[head[hi_], head[hj]]) / 2)
        half_excess = half_pair + half_head
        noise = "95% intervals of the entries, summed (conservative)"
    else:
        half_pair = half_excess = np.zeros(a.size)
        half_head = 0.0
        noise = exact
    low = excess - half_excess
    k = int(np.argmax(low))
    i, j = int(a[k]), int(b[k])
    c = float(G[i, j])
    found = bool(low[k] > MINORITY_COSINE_FLOOR)
    if pinned is False:
        collapsed, text = None, ("the loss does not pin the pairwise cosines here (see "
                                 "identifiability): one solution's cosines say nothing")
    elif found:
        collapsed = True
        text = (f"the tail leans together beyond noise: a pair {excess[k]:+.3f} above the head "
                f"(at least {low[k]:+.3f}); not merged, which is cosine 1"
                if c < 1.0 - MINORITY_COSINE_FLOOR else
                "the tail merges: a pair at cosine 1, above the head beyond noise")
    else:
        collapsed = False
        text = ("no tail pair lies above the head beyond noise (the closest: "
                f"{_signed(excess[k])} above the head, interval down to {_signed(low[k])})")
    return MinorityCollapse(
        collapsed=collapsed, pair=(i, j), pair_sizes=(int(n[i]), int(n[j])), cosine=c,
        cosine_interval=(max(-1.0, c - float(half_pair[k])), min(1.0, c + float(half_pair[k]))),
        head_cosine=head_mean,
        head_interval=(head_mean - half_head, head_mean + half_head),
        excess=float(excess[k]),
        excess_interval=(float(excess[k] - half_excess[k]), float(excess[k] + half_excess[k])),
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
        excess_interval=(0.0, 0.0), head_classes=int(head.size), tail_classes=int(tail.size),
        noise="exact: every pair at the same cosine",
        statement="no tail pair lies above the head: the prototypes are equiangular",
    )
