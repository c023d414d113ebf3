r"""The reductions' common ground: what a verdict says about a problem (:class:`Located`), the
:class:`Reduction` protocol, the canonical shift (:class:`LogShift`), the :class:`Chain` and
the way back from classes to samples for vectors (:class:`ClassMembers`, which the class-block
spectra and the twin classes of a dense target lift their eigenvectors with).

The reductions themselves and the one place that chooses them are
:mod:`dgp.engine._reductions`; this module stands below every engine module that applies or
inverts one (the zero patterns' components, the class blocks), so none of them imports the
chooser.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from dgp.engine._canonical import LogWeights, Shift, canonical
from dgp.records import Chain, Reduction

__all__ = ["Chain", "ClassMembers", "Located", "LogShift", "Reduction", "inverse_data"]


@dataclass(frozen=True)
class Located:
    """What a verdict says about a problem, in that problem's numbering and convention.

    Attributes
    ----------
    c : float or None
        A constant of the target (canonical in the reduced problem).
    samples : tuple of int
        Samples of the problem (a cycle, an entry, members, the vertices of an obstruction).
    kind : str
        What ``samples`` are: ``"samples"`` (each one on its own), ``"entry"`` (a pair of
        distinct samples) or ``"cycle"`` (a class-level cycle through the class of sample 0,
        given by the two classes that close it).
    part : int or None
        Which part of a split problem (:class:`~dgp.engine.zeros._split.ZeroComponents`)
        ``samples`` are numbered in.
    vectors : ndarray or None
        Vectors on the problem's coordinates (a certificate's vector, an embedding's columns):
        one entry (row) per coordinate; ``None`` when none are given, or when a reduction
        cannot lift them (it did not keep what their lift needs).
    """

    c: float | None = None
    samples: tuple[int, ...] = ()
    kind: str = "samples"
    part: int | None = None
    vectors: np.ndarray | None = None


@dataclass(frozen=True)
class LogShift:
    """Log-weights minus their largest (the canonical convention of the engine)."""

    name: str = "canonical shift"

    def applies(self, problem: object) -> bool:
        """On log-weights: validated (dense or kept as pairs) or a sub-problem's raw matrix."""
        return isinstance(problem, (LogWeights, np.ndarray))

    def apply(self, problem: LogWeights | np.ndarray) -> tuple[LogWeights, Shift]:
        """Validated log-weights are canonical already (the validator shifts them in its one
        pass: only the inverse data is recorded); a raw matrix is shifted (taken over)."""
        weights = problem if isinstance(problem, LogWeights) else canonical(problem)
        return weights, Shift(weights.shift)

    def invert(self, located: Located, inverse_data: Shift) -> Located:
        return replace(located, c=inverse_data.to_user_c(located.c))


@dataclass(frozen=True, eq=False)
class ClassMembers:
    """The samples of each class: the inverse of a class quotient on vectors (one
    implementation for the class blocks, their twin classes in a dense target and the
    :class:`~dgp.engine._reductions.ClassBlocks` reduction).

    Attributes
    ----------
    members : list of ndarray of int
        The samples of each class.
    n : int
        Number of samples.
    """

    members: list
    n: int

    @classmethod
    def of(cls, members: list | None, sizes: np.ndarray) -> ClassMembers:
        """The classes ``members``; ``None``: contiguous classes of ``sizes`` in order."""
        if members is None:
            starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
            members = [np.arange(s, s + m) for s, m in zip(starts, sizes, strict=True)]
        return cls(members, int(np.sum(sizes)))

    def constant(self, v: np.ndarray) -> np.ndarray:
        """The sample vector equal to ``v[k]`` on class ``k`` (a class-level vector lifted)."""
        x = np.empty(self.n)
        for k, idx in enumerate(self.members):
            x[idx] = v[k]
        return x

    def within(self, k: int, h: np.ndarray) -> np.ndarray:
        """The sample vector equal to ``h`` on class ``k`` (its samples in order), zero
        elsewhere (a zero-sum vector within one class lifted)."""
        x = np.zeros(self.n)
        x[self.members[k]] = h
        return x


def inverse_data(inverse: list[tuple[object, object]], kind: type) -> object | None:
    """The inverse data of the reduction of type ``kind`` in an applied chain (``None`` when it
    was not applied)."""
    return next((data for r, data in inverse if isinstance(r, kind)), None)
