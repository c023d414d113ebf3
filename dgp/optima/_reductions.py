r"""Reductions of a weighting, each owning its inverse, and the one place that chooses them.

A *reduction* turns a problem into a smaller or better-scaled one whose solution determines
the original's (the model is cvxpy's ``reductions/``: ``apply`` returns the reduced problem
and the data its inverse needs, ``invert`` maps a solution back). Here a problem is a
:class:`~dgp.optima._structure.Quotient`: ``K`` points with multiplicities ``sizes``, their
class-level ``weights`` and the point of every original sample (``labels``); the untouched
problem of an ``N x N`` weighting is :func:`~dgp.optima._structure.trivial_quotient`. A
solution is a :class:`PointSolution`: a Gram matrix of the problem's points, the loss, and the
point of every original sample, so lifting is a change of ``labels`` and ``gram`` and never
builds the ``N x N`` matrix (``gram[labels][:, labels]`` is the lifted Gram).

* :class:`LogWeightShift` — the log-weights minus their maximum, rounded to an even power of
  two so that the shift is exact in floating point (every row's target, and so every number
  of the solve, is bit-for-bit unchanged; only overflow and underflow of the weights go). The
  loss sums row-normalised targets, so its inverse adds the constant ``0`` and keeps the
  solution.
* :class:`TwinQuotient` — samples with identical rows and columns merged into classes with
  multiplicities (:func:`~dgp.optima._structure.quotient`); the inverse repeats each class's
  point for its samples. Whether the classes really collapse at the ``N x N`` optimum is the
  lifted certificate of :mod:`dgp.solver._lift`, decided by the caller on the solution.
* :class:`Chain` applies several in order and inverts them in reverse.

:func:`choose_reductions` is the one place that picks the chain from the problem's structure;
:func:`dgp.optimum` runs its analysis on the reduced problem and lifts the result back once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from dgp.engine.target import Shift
from dgp.optima._structure import Quotient, quotient, split_classes
from dgp.records import Chain, Reduction

__all__ = [
    "Chain",
    "LogWeightShift",
    "PointSolution",
    "Reduction",
    "TwinQuotient",
    "choose_reductions",
    "samples_problem",
    "without_twins",
]


@dataclass(frozen=True, eq=False)
class PointSolution:
    """A solution of a problem of points with multiplicities.

    Attributes
    ----------
    gram : ndarray, shape (K, K)
        Gram matrix of the problem's points.
    loss : float
        The loss at ``gram`` in the problem's own convention.
    labels : ndarray of int
        The row of ``gram`` of every point of the problem it solves: ``arange(K)`` for the
        reduced problem's own solution, and after :meth:`Chain.invert` of a chain applied to
        :func:`samples_problem`, of every sample.
    """

    gram: np.ndarray
    loss: float
    labels: np.ndarray

    @classmethod
    def of_points(cls, gram: np.ndarray, loss: float) -> PointSolution:
        """The solution of a problem solved at its own points."""
        return cls(gram=gram, loss=float(loss), labels=np.arange(gram.shape[0]))

    def lifted_gram(self) -> np.ndarray:
        """The Gram matrix of the problem's points (each at its row of ``gram``)."""
        return self.gram[np.ix_(self.labels, self.labels)]


def samples_problem(A: np.ndarray) -> Quotient:
    """The untouched problem of a validated ``N x N`` weighting ``A``: every sample its own
    point (``A`` is not copied)."""
    N = A.shape[0]
    return Quotient(np.arange(N), np.ones(N, dtype=np.int64), A, np.arange(N), True)


@dataclass(frozen=True)
class ShiftData(Shift):
    """Inverse data of :class:`LogWeightShift`: the engine's canonical shift
    (:class:`dgp.engine.target.Shift`, whose methods convert constants and log-weights back to
    the user's convention) with what the loss needs.

    Attributes
    ----------
    shift : float
        Subtracted from every log-weight: ``log(4) * power`` (the weights were divided by
        ``4 ** power``).
    power : int
    loss_offset : float
        Added to the reduced problem's loss to give the original's (``0``: the loss sums
        row-normalised targets, which a common factor of the weights does not change).
    """

    shift: float
    power: int
    loss_offset: float


@dataclass(frozen=True)
class LogWeightShift:
    """Log-weights minus their maximum (to an even power of two, so the shift is exact)."""

    name: str = "canonical shift"

    @staticmethod
    def _power(weights: np.ndarray) -> int:
        top = float(weights.max()) if weights.size else 0.0
        if not (top > 0 and math.isfinite(top)):
            return 0
        return (math.frexp(top)[1] - 1) // 2  # weights / 4**power: the largest in [1, 4)

    def applies(self, problem: Quotient) -> bool:
        """A positive, finite largest weight outside ``[1, 4)`` whose division by
        ``4 ** power`` keeps every positive weight a normal number (exact)."""
        W = problem.weights
        power = self._power(W)
        if power == 0:
            return False
        scaled = np.ldexp(W, -2 * power)
        positive = W > 0
        return bool(np.all(scaled[positive] >= np.finfo(float).tiny)
                    and np.all(np.isfinite(scaled)))

    def apply(self, problem: Quotient) -> tuple[Quotient, ShiftData]:
        power = self._power(problem.weights)
        data = ShiftData(shift=2 * power * math.log(2.0), power=power, loss_offset=0.0)
        return replace(problem, weights=np.ldexp(problem.weights, -2 * power)), data

    def invert(self, solution: PointSolution, inverse_data: ShiftData) -> PointSolution:
        return replace(solution, loss=solution.loss + inverse_data.loss_offset)


@dataclass(frozen=True, eq=False)
class TwinData:
    """Inverse data of :class:`TwinQuotient`.

    Attributes
    ----------
    point : ndarray of int, shape (K,)
        The reduced point of each point of the original problem.
    complete : bool
        ``False`` when some group of rows was too large to compare and was left unmerged.
    """

    point: np.ndarray
    complete: bool


@dataclass(frozen=True)
class TwinQuotient:
    """Samples with identical rows and columns merged into classes with multiplicities.

    Attributes
    ----------
    split_single : bool
        When every sample is a twin of every other (one class), keep two points (one sample
        and the rest): a coarser-than-orbit partition the solver needs (a single point has no
        loss to minimise). Its lifted certificate decides collapse, as for any quotient.
    split : tuple of int
        Twin classes (indices of the quotient this reduction makes without it) whose samples
        stay their own points: those that do not collapse at the optimum (the solve proves
        the others' collapse again).
    name : str
    """

    split_single: bool = True
    split: tuple[int, ...] = ()
    name: str = "twin quotient"

    def applies(self, problem: Quotient) -> bool:
        """On samples (every multiplicity 1), at least two of them."""
        return bool(problem.K >= 2 and np.all(problem.sizes == 1))

    def apply(self, problem: Quotient) -> tuple[Quotient, TwinData]:
        q = quotient(problem.weights)
        point = q.labels
        if q.K == 1 and self.split_single:
            N = problem.K
            point = np.ones(N, dtype=np.int64)
            point[0] = 0
            w = float(q.weights[0, 0])
            q = Quotient(point, np.array([1, N - 1]), np.array([[0.0, w], [w, w]]),
                         np.array([0, 1]), q.complete)
        if self.split:
            q = split_classes(q, self.split)
            point = q.labels
        reduced = Quotient(point[problem.labels], q.sizes, q.weights,
                           problem.representatives[q.representatives], q.complete)
        return reduced, TwinData(point=point, complete=q.complete)

    def invert(self, solution: PointSolution, inverse_data: TwinData) -> PointSolution:
        # every point of the original problem sits at its class's point
        return replace(solution, labels=solution.labels[inverse_data.point])


def choose_reductions(problem: Quotient, *, batched: bool = False,
                      split_single: bool | None = None) -> Chain:
    """The one place that picks the reductions of a problem from its structure.

    The twin quotient always (it merges nothing where there are no twins); the canonical
    shift for the full-batch loss, whose row-normalised targets make it exact (the batch
    paths read the weights themselves); the split of a single twin class where a solve of the
    quotient follows (``split_single``; default: full batch; the batch paths over
    compositions keep the one class)."""
    reductions: list = [] if batched else [LogWeightShift()]
    split = not batched if split_single is None else split_single
    reductions.append(TwinQuotient(split_single=split))
    return Chain(tuple(r for r in reductions if r.applies(problem)))


def without_twins(A: np.ndarray, chain: Chain | None,
                  split: tuple[int, ...] = ()) -> tuple[Chain, Quotient, list]:
    """The reductions ``chain`` of weighting ``A`` without the twin quotient, the problem they
    make and their inverse data: every sample its own point (where a twin class does not
    collapse, or the samples fit an exact path that the classes do not); with ``split``, only
    the samples of those twin classes (the rest stay merged)."""
    chain = chain or Chain()
    twins = [r for r in chain.reductions if isinstance(r, TwinQuotient)]
    chain = chain.without(TwinQuotient)
    if split and twins:
        chain = Chain((*chain.reductions, replace(twins[0], split=tuple(split))))
    q, inverse = chain.apply(samples_problem(A))
    return chain, q, inverse
