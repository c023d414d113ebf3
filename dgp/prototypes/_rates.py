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
samples; for uniform batches from the same products as the anchor rate, exact to rounding at
N = 10^8; else :func:`dgp.solver.positive_pair_probability`) and the expected anchors of class
``k`` in a batch.

The rates are closed forms (no sampling), evaluated in floating point. Their certificate
(:class:`RatesCertificate`) checks the two computations against each other: with :math:`X_k`
the samples of class ``k`` in a batch, :math:`E[X_k 1\{X_k \ge 2\}]` is the expected number of
its anchors that have a positive, ``anchors_per_batch * anchor_rate``, and lies between
:math:`2 P(X_k \ge 2)` and :math:`B\,P(X_k \ge 2)`, ``batch_rate`` being :math:`P(X_k \ge 2)`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dgp.display import format_summary, html_summary
from dgp.errors import InvalidParameterError, check_class_sizes
from dgp.records import CertificateProtocol, Record
from dgp.solver import BatchSpec, check_batch, positive_pair_probability
from dgp.solver._pair_rates import DIRECT_SUM_MAX_TERMS, uniform_pair_rates

__all__ = ["DIRECT_SUM_MAX_TERMS", "PositivePairRates", "RatesCertificate", "positive_pair_rates",
           "rates_certificate", "rates_for_spec"]

#: the formula of each sampler's anchor rate
_FORMULAS = {"uniform": "hypergeometric", "class-balanced": "multinomial",
             "m-per-class": "m samples of each class drawn"}


@dataclass(frozen=True)
class RatesCertificate(CertificateProtocol):
    r"""What the positive-pair rates certify: they are the sampler's exact probabilities (closed
    forms, no sampling, evaluated in floating point), and the two computed independently agree
    (module docstring: for every class, ``2 batch_rate <= anchors_per_batch * anchor_rate <=
    B batch_rate``; the expected anchors sum to the batch's; every rate lies in ``[0, 1]``).

    Attributes
    ----------
    formula : str
        The closed form of the anchor rate (``hypergeometric``, ``multinomial``, ...).
    lower_slack : float
        :math:`\min_k (E[X_k 1\{X_k \ge 2\}] - 2 P(X_k \ge 2))` (``>= -atol``).
    upper_slack : float
        :math:`\min_k (B\,P(X_k \ge 2) - E[X_k 1\{X_k \ge 2\}])` (``>= -atol``).
    anchors_error : float
        ``|sum(anchors_per_batch) - anchors|``, ``anchors`` the samples of a batch (``B``, or
        ``m`` times the classes of an ``m-per-class`` batch).
    range_error : float
        How far the farthest rate lies outside ``[0, 1]`` (0 when none does).
    atol : float
        The error every check allows: the rounding of the rates' computations, 64 units of
        float64 at the batch's scale (:func:`rates_certificate`).
    summed : bool
        The uniform rates' products were summed term by term (accurate to rounding); false
        beyond :data:`DIRECT_SUM_MAX_TERMS`, where the rates are scipy's hypergeometric tails
        (close, but not these products, whose rounding the checks bound): then not certified.
    """

    formula: str
    lower_slack: float
    upper_slack: float
    anchors_error: float
    range_error: float
    atol: float
    summed: bool = True

    kind: ClassVar[str] = "exact"

    @property
    def statement(self) -> str:
        """How it is checked, in words."""
        return (f"closed-form probabilities of the sampler ({self.formula}), no sampling; "
                "for every class k, 2 P(X_k >= 2) <= anchors_per_batch[k] * anchor_rate[k] "
                "<= B P(X_k >= 2) (batch_rate is P(X_k >= 2)), the expected anchors sum to "
                "the batch's and every rate lies in [0, 1], within atol (the uniform products "
                "summed term by term)")

    def claims(self):
        yield "2 batch_rate <= anchors_per_batch * anchor_rate", self.lower_slack >= -self.atol
        yield "anchors_per_batch * anchor_rate <= B batch_rate", self.upper_slack >= -self.atol
        yield "the expected anchors sum to the batch's", self.anchors_error <= self.atol
        yield "every rate in [0, 1]", self.range_error <= self.atol
        yield "the products summed term by term (not scipy's hypergeometric tails)", self.summed


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
    certificate : RatesCertificate or None
        The rates checked against each other (``kind`` ``"exact"``), built with them by
        :func:`positive_pair_rates`.
    """

    sampler: str
    batch_size: int
    samples_per_class: int | None
    anchor_rate: np.ndarray
    batch_rate: np.ndarray
    anchors_per_batch: np.ndarray
    uniform: PositivePairRates | None = None
    certificate: RatesCertificate | None = None

    def summary(self, order: np.ndarray | None = None, *, positive: str = "positive") -> str:
        """One line (80 columns): the anchor rates of the largest and smallest classes (``order``:
        class indices by decreasing size), and uniform's beside them for another sampler;
        ``positive``: what the rates count, in words (another sample of the anchor's class)."""
        order = np.argsort(-self.anchors_per_batch, kind="stable") if order is None else order
        big, small = int(order[0]), int(order[-1])
        text = (f"anchors with a {positive}: {_pct(self.anchor_rate[big])} (class {big}) to "
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
    p = 100.0 * float(p) + 0.0  # + 0.0: a singleton's rate -expm1(0) is -0.0, said as 0%
    return f"{p:.3g}%" if p < 99.95 else "100%"


def rates_for_spec(sizes: np.ndarray, spec: BatchSpec, *,
                   compare: bool = True) -> PositivePairRates:
    """:func:`positive_pair_rates` of a validated :class:`~dgp.solver.BatchSpec` (``compare``:
    add the uniform sampler's rates for another sampler)."""
    n = np.asarray(sizes, dtype=np.int64)
    K, B = n.size, spec.batch_size
    batch, summed = None, True
    if spec.sampler == "uniform":
        anchor, batch, summed = uniform_pair_rates(n, B)
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
    if batch is None:
        batch = np.asarray(positive_pair_probability(n, spec))
    return PositivePairRates(
        sampler=spec.sampler, batch_size=B, samples_per_class=spec.samples_per_class,
        anchor_rate=anchor, batch_rate=batch, anchors_per_batch=per, uniform=uniform,
        certificate=rates_certificate(spec, anchor, batch, per, summed=summed),
    )


def pair_probability(sizes: np.ndarray, spec: BatchSpec) -> tuple[float, ...]:
    """The probability that a batch of ``spec`` holds two samples of each class (validated
    ``sizes``): the rates' :attr:`PositivePairRates.batch_rate`, as the batch records report
    it (:attr:`dgp.solver.BatchPrediction.positive_pair_probability`)."""
    return tuple(float(p) for p in rates_for_spec(sizes, spec, compare=False).batch_rate)


def rates_certificate(spec: BatchSpec, anchor_rate: np.ndarray, batch_rate: np.ndarray,
                      anchors_per_batch: np.ndarray, *, summed: bool = True) -> RatesCertificate:
    """The :class:`RatesCertificate` of rates of ``spec``, with ``atol`` 64 units of float64
    at the batch's scale ``B`` (every compared quantity lies in ``[0, B]``): rounding, nothing
    more; ``summed``: whether the uniform products were summed term by term."""
    B, m = spec.batch_size, spec.samples_per_class
    eps = float(np.finfo(float).eps)
    pairs = anchors_per_batch * anchor_rate  # E[X 1{X >= 2}]
    rates = np.concatenate([anchor_rate, batch_rate])
    atol = 64 * eps * B
    return RatesCertificate(
        formula=_FORMULAS[spec.sampler],
        lower_slack=float(np.min(pairs - 2.0 * batch_rate)),
        upper_slack=float(np.min(B * batch_rate - pairs)),
        anchors_error=abs(float(np.sum(anchors_per_batch)) - (B if m is None else m * (B // m))),
        range_error=float(max(0.0, -rates.min(), rates.max() - 1.0)), atol=atol, summed=summed)


def positive_pair_rates(sizes: object, *, batch_size: int | None = None,
                        sampler: str | None = None,
                        samples_per_class: int | None = None) -> PositivePairRates:
    """Per-class positive-pair rates of a sampler at a batch size, exact (module docstring).

    ``sizes``: class sizes, or a class :class:`dgp.Problem` (sizes or labels), whose batch
    size and sampler are used where not given here. A class of one sample has rate 0 in uniform
    batches (drawn without replacement); some class needs two samples.

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
    from dgp.spec import ProblemSpec, problem_fields  # a dgp.Problem, read by its protocol

    problem = sizes if isinstance(sizes, ProblemSpec) else None
    if problem is not None:
        sizes = problem.class_sizes("dgp.prototypes.positive_pair_rates")
    batch_size, sampler, samples_per_class = problem_fields(
        problem, "dgp.prototypes.positive_pair_rates", batch_size=batch_size, sampler=sampler,
        samples_per_class=samples_per_class)
    if batch_size is None:
        raise InvalidParameterError("batch_size", "is missing: give it as a keyword or a field "
                                    "of the Problem")
    n = check_class_sizes(sizes, positives_across=False, batch=True)  # singletons: rate 0
    spec = check_batch(n, batch_size=batch_size, sampler=sampler,
                       samples_per_class=samples_per_class, reduction="mean",
                       anchors_without_positives="drop")
    return rates_for_spec(n, spec)
