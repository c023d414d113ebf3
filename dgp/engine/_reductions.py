r"""Reductions of the verdict engine's problem, each owning its inverse, and the one place that
chooses them.

A *reduction* turns a problem into a smaller or better-scaled one whose verdict determines the
original's (the model is cvxpy's ``reductions/``, as :mod:`dgp.optima._reductions` for the
optimum): ``apply`` returns the reduced problem and the data its inverse needs, ``invert``
maps what a verdict says about the reduced problem back to the original. What a verdict says
about a problem in that problem's numbering and convention is a :class:`Located`: a constant
``c`` of the target (a ``c_max``, an end of the interval), and samples (a broken cycle, the
first zero weight, the members of a block, the vertices of an obstruction).

* :class:`LogShift` — log-weights minus their largest, ``L = log w - shift``. The
  validator (:func:`dgp.engine.target.log_weights`) applies it in its one pass over the
  weights, so on validated :class:`~dgp.engine.target.LogWeights` ``apply`` only records its
  inverse data (the engine's :class:`~dgp.engine.target.Shift`); on a sub-problem's raw
  log-weights it shifts them (:func:`~dgp.engine.target.canonical`). ``invert`` turns a
  canonical constant into the user's (``c - shift``, through
  :meth:`~dgp.engine.target.CanonicalShift.to_user_c`, defined there only).
* :class:`ZeroComponents` — the support of a weighting with zero weights split into its
  connected components (independent: translated apart, they do not see each other), each
  numbered ``0..n_c - 1`` (a :class:`Component`); ``invert`` maps a component's local sample
  numbers back to the original's.
* :class:`ClassBlocks` — a class-block weighting read at the class level (``K x K`` log-weights,
  the pairs that occur); ``invert`` maps classes back to samples (each class's first member,
  the first pair of distinct samples of an entry, a class cycle through sample 0).
* :class:`Chain` applies several in order and inverts them in reverse.

:func:`choose_reductions` is the one place that picks the chain from the problem's structure:
:func:`dgp.engine.pipeline.classify_weights`, :func:`dgp.engine.blocks.classify_blocks` and
the sparse path (:func:`dgp.engine.zeros.classify_sparse`) call it once where they are
entered, decide the reduced problem and lift once. ``docs/architecture.md`` says how to add one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from dgp.engine._block_model import BlockWeights
from dgp.engine._reduction_base import Chain, Located, LogShift, Reduction, inverse_data
from dgp.engine.groups import GROUPED_MIN_K
from dgp.engine.target import LogWeights
from dgp.engine.zeros._pattern import ZeroPattern
from dgp.engine.zeros._split import Component, SplitPattern, ZeroComponents

__all__ = [
    "Chain",
    "ClassBlocks",
    "ClassData",
    "ClassProblem",
    "Component",
    "Located",
    "LogShift",
    "Reduction",
    "SplitPattern",
    "ZeroComponents",
    "choose_reductions",
    "inverse_data",
]


@dataclass(frozen=True, eq=False)
class ClassProblem:
    """A class-block weighting at the class level (the reduced problem of
    :class:`ClassBlocks`).

    Attributes
    ----------
    weights : BlockWeights
        With ``log_cross`` as a ``K x K`` array.
    log_weights : ndarray, shape (K, K)
        ``log_cross`` with ``log_within`` on the diagonal (``-inf`` for a zero weight).
    used : ndarray of bool, shape (K, K)
        The pairs of classes that occur off the diagonal (a singleton has no pair within).
    """

    weights: BlockWeights
    log_weights: np.ndarray
    used: np.ndarray


@dataclass(frozen=True, eq=False)
class ClassData:
    """Inverse data of :class:`ClassBlocks`.

    Attributes
    ----------
    inverse : ndarray of int, shape (N,)
        The class of every sample.
    K : int
        Number of classes.
    """

    inverse: np.ndarray
    K: int

    @cached_property
    def first(self) -> np.ndarray:
        """The smallest sample of each class (found when first asked)."""
        n = self.inverse.size
        first = np.full(self.K, n)
        np.minimum.at(first, self.inverse, np.arange(n))
        return first

    def first_other(self) -> int:
        """The first sample outside the class of sample 0."""
        return int(np.flatnonzero(self.inverse != self.inverse[0])[0])

    def second(self, k: int) -> int:
        """The smallest sample of class ``k`` after its first."""
        idx = np.flatnonzero(self.inverse == k)
        return int(idx[idx != self.first[k]][0])


@dataclass(frozen=True)
class ClassBlocks:
    """A class-block weighting read at the class level.

    Attributes
    ----------
    grouped : bool
        One cross-class weight and many classes: the problem stays as given (sizes, the
        within-class log-weights and the one cross value, never ``K x K``:
        :mod:`dgp.engine.groups` reads it), only the inverse data is recorded.
    name : str
    """

    grouped: bool = False
    name: str = "class blocks"

    def applies(self, problem: object) -> bool:
        """On a class-block weighting."""
        return isinstance(problem, BlockWeights)

    def apply(self, problem: BlockWeights) -> tuple[ClassProblem | BlockWeights, ClassData]:
        data = ClassData(problem.inverse, problem.K)
        if self.grouped:
            return problem, data
        bw = problem.expanded()
        return ClassProblem(bw, bw.pair_log_weights(), bw.counts() > 0), data

    def invert(self, located: Located, inverse_data: ClassData) -> Located:
        """Classes to samples: each class's first member; an entry ``(k, l)`` to its first pair
        of distinct samples (the first two members of ``k`` when ``l == k``); a cycle closed by
        ``(k, l)`` to ``(0, first[k], first[l], 0)`` (the cycle condition is read from the
        class of sample 0)."""
        first = inverse_data.first
        if located.kind == "cycle":
            k, l = located.samples
            samples = (0, int(first[k]), int(first[l]), 0)
        elif located.kind == "entry":
            k, l = located.samples
            samples = (int(first[k]),
                       inverse_data.second(k) if l == k else int(first[l]))
        else:
            samples = tuple(int(first[k]) for k in located.samples)
        return replace(located, samples=samples, kind="samples")


def choose_reductions(problem: object, *, similarity: str) -> Chain:
    """The one place that picks the reductions of a verdict problem from its structure.

    Validated log-weights: the canonical shift (recorded: the validator applied it), then, for
    a zero weight under the Euclidean similarity or a weighting kept as its pairs, the split
    into support components (under the cosine similarity a zero weight of a dense weighting
    decides the verdict at once). A zero pattern: the split.
    A class-block weighting: the class level, grouped (never ``K x K``) for one cross-class
    weight and at least :data:`~dgp.engine.groups.GROUPED_MIN_K` classes (its zero weights,
    when its class pattern needs the sample level, are expanded to a zero pattern whose own
    chain is chosen here again).
    """
    chain: list = []
    if isinstance(problem, LogWeights):
        chain.append(LogShift())
        # kept as pairs, the weighting is its pattern (its bound and first zero are read there)
        if problem.has_zeros and (similarity != "cosine" or problem.pairs is not None):
            chain.append(ZeroComponents())
    elif isinstance(problem, ZeroPattern):
        if similarity != "cosine":
            chain.append(ZeroComponents())
    elif isinstance(problem, BlockWeights):
        chain.append(ClassBlocks(grouped=problem.log_cross is None
                                 and problem.K >= GROUPED_MIN_K))
    return Chain(tuple(chain))
