r"""How often an anchor of each class meets a positive in a mini-batch: the per-class
positive-pair rates of a sampler and batch size, exact.

A SupCon anchor without a positive in its batch contributes nothing (pytorch-metric-learning
drops it) or a constant: the classes whose anchors rarely meet a positive are the ones the batch
loss barely shapes. For a batch of ``B`` drawn from classes of sizes :math:`n_1..n_K`
(:math:`N = \sum_k n_k`):

* ``uniform`` (without replacement): given an anchor of class ``k`` in the batch, the other
  ``B - 1`` places are a uniform subset of the other ``N - 1`` samples, so it has a positive
  with probability :math:`1 - \binom{N - n_k}{B - 1} / \binom{N - 1}{B - 1}` (hypergeometric);
* ``class-balanced`` (each draw a class uniformly, then one of its samples, with replacement:
  PyTorch's ``WeightedRandomSampler`` with class-inverse weights, the balanced view of BCL):
  the other ``B - 1`` draws are independent, :math:`1 - (1 - 1/K)^{B - 1}` (multinomial; a
  positive may be a repeat draw of the same sample, which the class-level model counts too);
* ``m-per-class`` (``B / m`` distinct classes, ``m`` samples each): an anchor always has
  ``m - 1 >= 1`` positives.

Beside it, the probability that a batch holds a positive pair of class ``k`` at all (two of its
samples; :func:`dgp.solver.positive_pair_probability`) and the expected anchors of class ``k``
in a batch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln

from dgp.display import format_summary, html_summary
from dgp.errors import check_sizes
from dgp.records import Record
from dgp.solver import BatchSpec, check_batch, positive_pair_probability

__all__ = ["PositivePairRates", "positive_pair_rates", "rates_for_spec"]


@dataclass(frozen=True, eq=False)
class PositivePairRates(Record):
    """Per-class positive-pair rates of a sampler at a batch size (classes in the order of
    ``sizes``).

    Attributes
    ----------
    sampler : str
        ``"uniform"``, ``"class-balanced"`` or ``"m-per-class"``.
    batch_size : int
    samples_per_class : int or None
        ``m`` of ``m-per-class``.
    anchor_rate : ndarray
        Probability that an anchor of class ``k``, given that it is in a batch, has at least one
        positive (another sample of its class) in that batch.
    batch_rate : ndarray
        Probability that a batch holds at least two samples of class ``k`` (a positive pair).
    anchors_per_batch : ndarray
        Expected number of samples of class ``k`` in a batch.
    uniform : PositivePairRates or None
        For a sampler other than ``uniform``: the same rates for uniform batches of the same
        size, what the sampler changes (``None`` for ``uniform``).
    """

    sampler: str
    batch_size: int
    samples_per_class: int | None
    anchor_rate: np.ndarray
    batch_rate: np.ndarray
    anchors_per_batch: np.ndarray
    uniform: PositivePairRates | None = None

    def summary(self, order: np.ndarray | None = None) -> str:
        """One line (80 columns): the anchor rates of the largest and smallest classes (``order``:
        class indices by decreasing size), and uniform's beside them for another sampler."""
        order = np.argsort(-self.anchors_per_batch, kind="stable") if order is None else order
        big, small = int(order[0]), int(order[-1])
        text = (f"anchors with a positive: {_pct(self.anchor_rate[big])} (class {big}) to "
                f"{_pct(self.anchor_rate[small])} (class {small})")
        if self.uniform is not None:
            u = self.uniform.anchor_rate
            text += f"; uniform {_pct(u[big])} to {_pct(u[small])}"
        return text

    def _pairs(self) -> list[tuple[str, str]]:
        order = np.argsort(-self.anchors_per_batch, kind="stable")
        small = int(order[-1])
        sampler = self.sampler + (f" (m = {self.samples_per_class})"
                                  if self.samples_per_class is not None else "")
        return [("batches", f"B = {self.batch_size}, {sampler}, {self.anchor_rate.size} classes"),
                ("positives", self.summary(order)),
                ("", f"batches with a positive pair of class {small}: "
                     f"{_pct(self.batch_rate[small])}")]

    def __str__(self) -> str:
        """A few lines (the arrays, one entry per class, are in :meth:`to_dict`)."""
        return format_summary("Positive-pair rates", self._pairs())

    def _repr_html_(self) -> str:
        return html_summary("Positive-pair rates", self._pairs())


def _pct(p: float) -> str:
    p = 100.0 * float(p)
    return f"{p:.3g}%" if p < 99.95 else "100%"


def _uniform_anchor_rate(n: np.ndarray, B: int) -> np.ndarray:
    """``1 - C(N - n_k, B - 1) / C(N - 1, B - 1)`` in logs (no overflow at N = 10^6)."""
    N = int(n.sum())
    out = np.ones(n.size)
    ok = N - n >= B - 1  # else every batch with the anchor holds another of its class
    m = n[ok].astype(float)
    log_none = (gammaln(N - m + 1) - gammaln(N - m - B + 2)
                - gammaln(N) + gammaln(N - B + 1))
    out[ok] = -np.expm1(log_none)
    return np.clip(out, 0.0, 1.0)


def rates_for_spec(sizes: np.ndarray, spec: BatchSpec, *,
                   compare: bool = True) -> PositivePairRates:
    """:func:`positive_pair_rates` of a validated :class:`~dgp.solver.BatchSpec` (``compare``:
    add the uniform sampler's rates for another sampler)."""
    n = np.asarray(sizes, dtype=np.int64)
    K, B = n.size, spec.batch_size
    if spec.sampler == "uniform":
        anchor = _uniform_anchor_rate(n, B)
        per = B * n / float(n.sum())
    elif spec.sampler == "class-balanced":
        anchor = np.full(K, -math.expm1((B - 1) * math.log1p(-1.0 / K)))
        per = np.full(K, B / K)
    else:
        m = int(spec.samples_per_class)
        anchor = np.ones(K)
        per = np.full(K, m * (B // m) / K)
    uniform = None
    if compare and spec.sampler != "uniform":
        uniform = rates_for_spec(n, BatchSpec(B, "uniform", None, spec.reduction,
                                              spec.anchors_without_positives), compare=False)
    return PositivePairRates(
        sampler=spec.sampler, batch_size=B, samples_per_class=spec.samples_per_class,
        anchor_rate=anchor, batch_rate=np.asarray(positive_pair_probability(n, spec)),
        anchors_per_batch=per, uniform=uniform,
    )


def positive_pair_rates(sizes: object, *, batch_size: int, sampler: str = "uniform",
                        samples_per_class: int | None = None) -> PositivePairRates:
    """Per-class positive-pair rates of a sampler at a batch size, exact (module docstring).

    Raises
    ------
    ValueError, TypeError
        On invalid sizes or batch arguments (:func:`dgp.solver.check_batch`).

    >>> r = positive_pair_rates([500, 50, 5], batch_size=64)
    >>> [round(float(p), 4) for p in r.anchor_rate]   # 1 - (491 490 489 488)/(554 553 552 551)
    [1.0, 0.998, 0.3839]
    >>> b = positive_pair_rates([500, 50, 5], batch_size=64, sampler="class-balanced")
    >>> round(float(b.anchor_rate[2]), 4), round(float(b.uniform.anchor_rate[2]), 4)
    (1.0, 0.3839)
    """
    n = check_sizes(sizes)
    spec = check_batch(n, batch_size=batch_size, sampler=sampler,
                       samples_per_class=samples_per_class, reduction="mean",
                       anchors_without_positives="drop")
    return rates_for_spec(n, spec)
