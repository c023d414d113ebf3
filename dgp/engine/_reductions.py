r"""Reductions of the verdict engine's problem, each owning its inverse, and the one place that
chooses them.

A *reduction* turns a problem into a smaller or better-scaled one whose verdict determines the
original's (the model is cvxpy's ``reductions/``, as :mod:`dgp.optima._reductions` for the
optimum): ``apply`` returns the reduced problem and the data its inverse needs, ``invert``
maps what a verdict says about the reduced problem back to the original. What a verdict says
about a problem in that problem's numbering and convention is a :class:`Located`: a constant
``c`` of the target (a ``c_max``, an end of the interval), samples (a broken cycle, the first
zero weight, the members of a block, the vertices of an obstruction) and vectors (a Farkas
vector, an embedding's columns).

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
* :class:`TwinClasses` — the twin classes of a dense log-target (identical rows) merged, read
  by the block spectra; ``invert`` lifts class-level vectors and classes to the samples
  (:class:`~dgp.engine._reduction_base.ClassMembers`).
* :class:`LabelSpan` — a low-rank target :math:`\\ell = UCU^\\top` read on the span of its
  label matrix, ``U = QR`` (on the span of its columns ``2..k`` within :math:`1^\\perp` for
  the Euclidean similarity): the reduced problem is the triangular factor ``R`` (the
  capacitance matrix's) and the complement's multiplicity; ``invert`` maps a vector on the
  span's coordinates to the samples (``Q y``, reflected back from :math:`1^\\perp`).
* :class:`Chain` applies several in order and inverts them in reverse.

:func:`choose_reductions` is the one place that picks the chain from the problem's structure:
each engine calls it once where it is entered (:func:`dgp.engine.pipeline.classify_weights`,
:func:`dgp.engine.dense.dense_family`, :func:`dgp.engine.blocks.classify_blocks`,
:func:`dgp.engine.lowrank.classify_lowrank`, :func:`dgp.engine.zeros.classify_sparse`),
decides the reduced problem and lifts through the chosen reductions' inverses. The reductions
that the engines below import (the shift, the components, :class:`ClassMembers`) live in
:mod:`dgp.engine._reduction_base` and :mod:`dgp.engine.zeros._split`, re-exported here, so no
engine that this module reads imports it back. ``docs/architecture.md`` says how to add one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from dgp._linalg import tall_r
from dgp.engine._block_model import BlockTarget, BlockWeights
from dgp.engine._block_spectra import dense_blocks
from dgp.engine._lowrank_model import VECTORS_MAX_N, LowRankTarget
from dgp.engine._reduction_base import (
    Chain,
    ClassMembers,
    Located,
    LogShift,
    Reduction,
    inverse_data,
)
from dgp.engine.groups import GROUPED_MIN_K
from dgp.engine.target import LogTarget, LogWeights
from dgp.engine.tridiag import ones_reflector_vectors
from dgp.engine.zeros._pattern import ZeroPattern
from dgp.engine.zeros._split import Component, SplitPattern, ZeroComponents

__all__ = [
    "Chain",
    "ClassBlocks",
    "ClassData",
    "ClassMembers",
    "ClassProblem",
    "Component",
    "LabelSpan",
    "Located",
    "LogShift",
    "Reduction",
    "SpanData",
    "SpanProblem",
    "SplitPattern",
    "TwinClasses",
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
    weights : BlockWeights
        The weighting reduced (its classes' members are read from it when asked).
    """

    inverse: np.ndarray
    K: int
    weights: BlockWeights

    @cached_property
    def first(self) -> np.ndarray:
        """The smallest sample of each class (found when first asked)."""
        n = self.inverse.size
        first = np.full(self.K, n)
        np.minimum.at(first, self.inverse, np.arange(n))
        return first

    @cached_property
    def members(self) -> ClassMembers:
        """The samples of each class (found when first asked)."""
        return ClassMembers(self.weights.members(), int(self.inverse.size))

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
        data = ClassData(problem.inverse, problem.K, problem)
        if self.grouped:
            return problem, data
        bw = problem.expanded()
        return ClassProblem(bw, bw.pair_log_weights(), bw.counts() > 0), data

    def sample_pattern(self, problem: ClassProblem,
                       positive: np.ndarray) -> tuple[ZeroPattern, float]:
        """The inverse on the problem itself, where the class level cannot decide: the
        sample-level zero pattern of the class pairs ``positive`` (sparse, memory checked; no
        ``N x N`` array) and its canonical shift (the largest positive log-weight, which
        :meth:`ZeroPattern.from_pairs` subtracts)."""
        from dgp.resources import check_memory

        bw, M = problem.weights, problem.log_weights
        counts = bw.counts()
        live = positive & (counts > 0)
        top = float(M[positive & problem.used].max())
        nnz = float((bw.sizes[:, None] * counts * live).sum())
        check_memory(24.0 * nnz, what=f"the {int(nnz)} positive pairs of the class pattern",
                     hint="use fewer samples per class")
        members = bw.members()
        rows, cols, vals = [], [], []
        for k, l in zip(*np.nonzero(live), strict=True):
            a, b = members[k], members[l]
            r = np.repeat(a, b.size)
            c = np.tile(b, a.size)
            keep = r != c
            rows.append(r[keep])
            cols.append(c[keep])
            vals.append(np.full(int(keep.sum()), M[k, l]))
        pattern = ZeroPattern.from_pairs(bw.n, np.concatenate(rows), np.concatenate(cols),
                                         np.concatenate(vals))
        return pattern, top

    def invert(self, located: Located, inverse_data: ClassData) -> Located:
        """Classes to samples: a class-constant vector to the samples' (each sample its class's
        entry); each class's first member; an entry ``(k, l)`` to its first pair
        of distinct samples (the first two members of ``k`` when ``l == k``); a cycle closed by
        ``(k, l)`` to ``(0, first[k], first[l], 0)`` (the cycle condition is read from the
        class of sample 0)."""
        if located.vectors is not None:  # class-constant vectors: one entry (row) per class
            v, lift = np.asarray(located.vectors), inverse_data.members.constant
            x = lift(v) if v.ndim == 1 else np.column_stack(
                [lift(v[:, j]) for j in range(v.shape[1])])
            located = replace(located, vectors=x)
        if not located.samples:
            return replace(located, kind="samples")
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


@dataclass(frozen=True)
class TwinClasses:
    """The samples of a dense log-target with identical rows merged into classes (twins: a
    class weighting written out as a dense matrix), so the block spectra decide it in
    :math:`O(K^3)` per evaluation (:func:`~dgp.engine._block_spectra.dense_blocks` finds them,
    exactly, within its work budget)."""

    name: str = "twin classes"

    def applies(self, problem: object) -> bool:
        """On a dense log-target (whether it has enough twins is what :meth:`apply` finds)."""
        return isinstance(problem, LogTarget)

    def apply(self, problem: LogTarget) -> tuple[BlockTarget | LogTarget, ClassMembers | None]:
        """The block target of the twin classes and their members; the target unchanged and
        ``None`` when the classes are too few to be worth it (the reduction is the identity)."""
        found = dense_blocks(problem.ell, problem.spread)
        if found is None:
            return problem, None
        blocks, members = found
        return blocks, ClassMembers(members, int(blocks.sizes.sum()))

    def invert(self, located: Located, inverse_data: ClassMembers | None) -> Located:
        """Class-constant vectors to the samples' (one entry, or row, per class), classes to
        their first member."""
        if inverse_data is None:
            return located
        if located.vectors is not None:
            v, lift = np.asarray(located.vectors), inverse_data.constant
            x = lift(v) if v.ndim == 1 else np.column_stack(
                [lift(v[:, j]) for j in range(v.shape[1])])
            located = replace(located, vectors=x)
        samples = tuple(int(inverse_data.members[k][0]) for k in located.samples)
        return replace(located, samples=samples)


@dataclass(frozen=True, eq=False)
class SpanProblem:
    """A low-rank target on the span of its label matrix (the reduced problem of
    :class:`LabelSpan`).

    Attributes
    ----------
    target : LowRankTarget
    R : ndarray, shape (m, k)
        The triangular factor of ``U = QR`` (Euclidean: of the centred columns ``2..k`` in an
        orthonormal basis of :math:`1^\\perp`).
    n_comp : int
        The multiplicity of the complement of the span (``N - m``; Euclidean ``N - 1 - m``).
    """

    target: LowRankTarget
    R: np.ndarray
    n_comp: int


@dataclass(frozen=True, eq=False)
class SpanData:
    """Inverse data of :class:`LabelSpan`.

    Attributes
    ----------
    basis : ndarray, shape (N, k) or (N - 1, k - 1)
        The matrix whose span the problem was reduced to (``U``; Euclidean: its columns
        ``2..k`` in the basis of :math:`1^\\perp`).
    Q : ndarray or None
        Its orthonormal factor, kept up to ``VECTORS_MAX_N`` samples (a vector is then lifted
        without a second factorisation); ``None`` above.
    centred : bool
        Whether the span lies in :math:`1^\\perp` (lifted vectors are reflected back to the
        samples).
    """

    basis: np.ndarray
    Q: np.ndarray | None
    centred: bool

    def factors(self) -> tuple[np.ndarray, np.ndarray]:
        """``(Q, R)`` of a Householder QR of :attr:`basis`, formed here when not kept."""
        return np.linalg.qr(self.basis)


@dataclass(frozen=True)
class LabelSpan:
    """A low-rank target read on the span of its label matrix.

    Attributes
    ----------
    centred : bool
        The span of the columns ``2..k`` within :math:`1^\\perp` (the Euclidean similarity,
        which reads :math:`V^\\top\\ell V`), else of ``U`` itself (the cosine similarity's
        :math:`G(\\mu)`).
    name : str
    """

    centred: bool = False
    name: str = "label span"

    def applies(self, problem: object) -> bool:
        """On a low-rank target."""
        return isinstance(problem, LowRankTarget)

    def apply(self, problem: LowRankTarget) -> tuple[SpanProblem, SpanData]:
        n = int(problem.U.shape[0])
        if self.centred:
            # columns 2..k in the orthonormal basis (1/sqrt N, V): reflect, drop the first
            V = ones_reflector_vectors(problem.U[:, 1:])[1:]
            R = tall_r(V)
            return SpanProblem(problem, R, (n - 1) - R.shape[0]), SpanData(V, None, True)
        if n <= VECTORS_MAX_N:
            Q, R = np.linalg.qr(problem.U)
        else:
            Q, R = None, tall_r(problem.U)
        return SpanProblem(problem, R, n - R.shape[0]), SpanData(problem.U, Q, False)

    def invert(self, located: Located, inverse_data: SpanData, *,
               Q: np.ndarray | None = None, on_span: bool = True) -> Located:
        """Vectors on the span's coordinates to vectors on the samples: ``Q y`` (``Q`` the kept
        factor, or the one given with the ``R`` the vectors were computed against; ``None``
        when neither), then, when centred, reflected back from :math:`1^\\perp` (a zero first
        coordinate added). ``on_span=False``: the vectors are on the coordinates of
        :math:`1^\\perp` already (directions outside the span joined them there), only the
        reflection is left."""
        x = located.vectors
        if x is None:
            return located
        if on_span:
            Q = inverse_data.Q if Q is None else Q
            if Q is None:
                return replace(located, vectors=None)
            x = Q @ x
        if inverse_data.centred:
            x2 = x.reshape(x.shape[0], -1)
            x = ones_reflector_vectors(np.vstack([np.zeros((1, x2.shape[1])), x2]))
        return replace(located, vectors=x)


def choose_reductions(problem: object, *, similarity: str) -> Chain:
    """The one place that picks the reductions of a verdict problem from its structure.

    Validated log-weights: the canonical shift (recorded: the validator applied it), then, for
    a zero weight under the Euclidean similarity or a weighting kept as its pairs, the split
    into support components (under the cosine similarity a zero weight of a dense weighting
    decides the verdict at once). A zero pattern: the split.
    A class-block weighting: the class level, grouped (never ``K x K``) for one cross-class
    weight and at least :data:`~dgp.engine.groups.GROUPED_MIN_K` classes (its zero weights,
    when its class pattern needs the sample level, are expanded to a zero pattern,
    :meth:`ClassBlocks.sample_pattern`, which is split as any pattern is). A low-rank
    target: its label span (within :math:`1^\\perp` for the Euclidean similarity). A dense
    log-target (the spectral engine's): its twin classes (the identity when they are too
    few).
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
    elif isinstance(problem, LogTarget):
        chain.append(TwinClasses())
    elif isinstance(problem, LowRankTarget):
        chain.append(LabelSpan(centred=similarity != "cosine"))
    elif isinstance(problem, BlockWeights):
        chain.append(ClassBlocks(grouped=problem.log_cross is None
                                 and problem.K >= GROUPED_MIN_K))
    return Chain(tuple(chain))
