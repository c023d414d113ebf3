"""The support of a zero pattern split into its connected components, each a problem of its
own numbered ``0..n_c - 1`` (:class:`ZeroComponents`, a reduction of
:mod:`dgp.engine._reductions`); the inverse maps a component's samples back."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from dgp.engine._canonical import LogWeights
from dgp.engine.zeros._pattern import ZeroPattern

__all__ = ["Component", "SplitPattern", "ZeroComponents", "as_split", "pattern_of"]


@dataclass(frozen=True, eq=False)
class Component:
    """One connected component of a zero pattern's support, as a problem of its own.

    Attributes
    ----------
    members : ndarray of int
        Its samples in the original numbering (ascending); local sample ``v`` is
        ``members[v]``.
    sel : ndarray of int
        Its positive pairs (indices into the pattern's ``rows``), ascending.
    pattern : ZeroPattern
        The pattern it is a component of.
    """

    members: np.ndarray
    sel: np.ndarray
    pattern: ZeroPattern = field(repr=False)

    @cached_property
    def local(self) -> tuple[np.ndarray, np.ndarray]:
        """The rows and columns of its positive pairs, numbered within :attr:`members`."""
        loc = np.full(self.pattern.n, -1, dtype=np.int64)
        loc[self.members] = np.arange(self.members.size)
        p = self.pattern
        return loc[p.rows[self.sel]], loc[p.cols[self.sel]]

    def part(self, keep: np.ndarray, sel: np.ndarray) -> Component:
        """The sub-problem of the local samples ``keep`` (a mask) and the positive pairs
        ``sel`` among them (a component of a component: its core, a piece of it)."""
        return Component(self.members[keep], sel, self.pattern)

    def lift(self, local) -> tuple[int, ...]:
        """The original samples of local samples ``local``."""
        return tuple(int(v) for v in self.members[np.asarray(local, dtype=np.int64)])


@dataclass(frozen=True, eq=False)
class SplitPattern:
    """A zero pattern with its support components (the reduced problem of
    :class:`ZeroComponents`): the whole pattern for what spans them (the cycle condition and
    scale order, reported in the original numbering) and each component as a problem of its
    own (:attr:`parts`, found when first asked: a broken cycle decides without them).

    Attributes
    ----------
    pattern : ZeroPattern
    """

    pattern: ZeroPattern

    @cached_property
    def parts(self) -> tuple[Component, ...]:
        """The components in the order of their first sample (one sort for all of them,
        :meth:`ZeroPattern.components`)."""
        return tuple(Component(m, s, self.pattern) for m, s in self.pattern.components())


@dataclass(frozen=True)
class ZeroComponents:
    """The support of a weighting with zero weights split into its connected components."""

    name: str = "zero-pattern components"

    def applies(self, problem: object) -> bool:
        """On a zero pattern, or canonical log-weights with a zero weight off the diagonal."""
        return isinstance(problem, ZeroPattern) or (
            isinstance(problem, LogWeights) and problem.has_zeros)

    def apply(self, problem: ZeroPattern | LogWeights) -> tuple[SplitPattern, SplitPattern]:
        """The pattern (of dense log-weights, their pairs, or as given) with its components;
        the inverse data is the split itself (each part's members)."""
        pattern = problem if isinstance(problem, ZeroPattern) else pattern_of(problem)
        split = SplitPattern(pattern)
        return split, split

    def invert(self, located, inverse_data: SplitPattern):
        """A :class:`~dgp.engine._reduction_base.Located` about part ``located.part``, about
        the whole pattern (its samples in the original numbering)."""
        if located.part is None:
            return located
        lifted = inverse_data.parts[located.part].lift(located.samples)
        return replace(located, samples=lifted, part=None)


def pattern_of(weights: LogWeights) -> ZeroPattern:
    """The zero pattern of canonical log-weights, dense or kept as their positive pairs."""
    if weights.pairs is None:
        return ZeroPattern.from_log_weights(weights)
    p = weights.pairs
    return ZeroPattern.from_pairs(p.n, p.rows, p.cols, p.logw,
                                  unit_roundoff=weights.unit_roundoff)




def as_split(problem: ZeroPattern | SplitPattern) -> SplitPattern:
    """A split pattern as given, or the split of a pattern (the chain
    :func:`dgp.engine._reductions.choose_reductions` picks for one)."""
    return problem if isinstance(problem, SplitPattern) else ZeroComponents().apply(problem)[0]
