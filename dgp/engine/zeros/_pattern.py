"""The pattern of a weighting with zero weights: its positive weights as a sparse graph,
and the decisions built on it (the data types every other module of the package shares)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from dgp.engine._canonical import CanonicalShift
from dgp.engine._sparse_input import first_zero_pair
from dgp.engine.target import LogWeights, canonical, row_blocks
from dgp.tolerance import Margin

#: largest component listed sample by sample (X0, Y) in a certificate
LIST_MAX_N = 2000


def sub_weights(weights: LogWeights, idx: np.ndarray) -> LogWeights:
    """The canonical log-weights of the samples ``idx`` (a copy, re-canonicalised)."""
    return canonical(weights.L[np.ix_(idx, idx)], shift=weights.shift,
                     unit_roundoff=weights.unit_roundoff)


@dataclass(frozen=True, eq=False)
class ZeroPattern:
    r"""The positive weights of a weighting with zero weights, as a sparse directed graph.

    Attributes
    ----------
    n : int
        Number of samples.
    rows : ndarray of int
        Row ``i`` of each positive pair :math:`w_{ij} > 0`, :math:`i \ne j` (pairs sorted by
        ``(i, j)``).
    cols : ndarray of int
        Column ``j`` of each positive pair.
    logw : ndarray
        Their canonical log-weights :math:`L_{ij}` (finite).
    n_zero : int
        Number of zero weights off the diagonal.
    first_zero : tuple of int
        The first zero weight in row-major order.
    unit_roundoff : float
        Unit roundoff of the input.
    """

    n: int
    rows: np.ndarray
    cols: np.ndarray
    logw: np.ndarray
    n_zero: int
    first_zero: tuple[int, int]
    unit_roundoff: float

    @classmethod
    def from_log_weights(cls, weights: LogWeights) -> ZeroPattern:
        """The pattern of dense canonical log-weights (blocks of rows, no second N x N)."""
        rows, cols, vals = [], [], []
        for sl in row_blocks(weights.n):
            blk = weights.L[sl]
            r, c = np.nonzero(np.isfinite(blk))
            keep = r + sl.start != c
            rows.append(r[keep] + sl.start)
            cols.append(c[keep])
            vals.append(blk[r[keep], c[keep]])
        first = weights.first_zero if weights.first_zero is not None else (0, 0)
        return cls(weights.n, np.concatenate(rows), np.concatenate(cols), np.concatenate(vals),
                   weights.n_zero, first, weights.unit_roundoff)

    @classmethod
    def from_pairs(cls, n: int, rows: np.ndarray, cols: np.ndarray, logw: np.ndarray, *,
                   unit_roundoff: float = float(np.finfo(float).eps)) -> ZeroPattern:
        """A pattern from positive pairs and their log-weights (shifted so the largest is 0)."""
        order = np.lexsort((cols, rows))
        rows, cols = np.asarray(rows)[order], np.asarray(cols)[order]
        logw = np.asarray(logw, dtype=float)[order]
        logw = logw - float(logw.max())
        n_zero = n * (n - 1) - rows.size
        first = first_zero_pair(rows.astype(np.int64) * n + cols, cols, n) if n_zero else (0, 0)
        return cls(n, rows, cols, logw, n_zero, first, unit_roundoff)

    def support(self) -> sp.csr_matrix:
        """The boolean support :math:`w_{ij} > 0` (CSR)."""
        ones = np.ones(self.rows.size, dtype=np.int8)
        return sp.csr_matrix((ones, (self.rows, self.cols)), shape=(self.n, self.n))

    def components(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The connected components of the support (as an undirected graph), in the order of
        their first sample: each as its samples and the indices of its positive pairs (into
        :attr:`rows`), both ascending; one sort for all of them, no pass per component."""
        n_comp, comp = connected_components(self.support(), directed=False)
        by_vertex = np.argsort(comp, kind="stable")
        v_bounds = np.searchsorted(comp[by_vertex], np.arange(n_comp + 1))
        comp_rows = comp[self.rows]
        by_pair = np.argsort(comp_rows, kind="stable")
        p_bounds = np.searchsorted(comp_rows[by_pair], np.arange(n_comp + 1))
        for k in sorted(range(n_comp), key=lambda k: int(by_vertex[v_bounds[k]])):
            yield (np.sort(by_vertex[v_bounds[k]:v_bounds[k + 1]]),
                   np.sort(by_pair[p_bounds[k]:p_bounds[k + 1]]))

    def lookup(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """:math:`L_{ij}` for pairs known to be positive."""
        key = self.rows.astype(np.int64) * self.n + self.cols
        pos = np.searchsorted(key, np.asarray(i, dtype=np.int64) * self.n + np.asarray(j))
        return self.logw[pos]

    def spread(self) -> float:
        """Max minus min of the positive log-weights."""
        return float(self.logw.max() - self.logw.min()) if self.logw.size else 0.0


@dataclass(frozen=True, eq=False)
class ComponentDecision:
    """The decision on one support component.

    Attributes
    ----------
    members : ndarray of int
        Its samples (sorted).
    status : {"approached", "obstructed", "undecided"}
    kind : str
        How: ``"fixed"`` (a complete block whose target fits), ``"scaled"`` (a family
        :math:`X_0/t + tY`), an obstruction name, or ``"undecided"``.
    info : dict
        The certificate entry (plain values; arrays listed below ``LIST_MAX_N``).
    X0 : ndarray or None
        The configuration :math:`X_0` of a ``"scaled"`` family, or the fixed configuration of a
        ``"fixed"`` block.
    Y : ndarray or None
        The first-order term :math:`Y` of a ``"scaled"`` family.
    margins : tuple of Margin
        The decisive comparisons (slack and residual of a family, ranks of a block).
    evidence : float or None
        For undecided components, the smallest gap the numerical minimisation reached.
    vertices : tuple of int
        The samples an obstruction is about.
    tried : tuple of str
        For undecided components, what was attempted.
    """

    members: np.ndarray
    status: str
    kind: str
    info: dict[str, Any]
    X0: np.ndarray | None = None
    Y: np.ndarray | None = None
    margins: tuple[Margin, ...] = ()
    evidence: float | None = None
    vertices: tuple[int, ...] = ()
    tried: tuple[str, ...] = field(default_factory=tuple)

    def in_user_frame(self, shift: CanonicalShift) -> ComponentDecision:
        """The decision with the constants of its certificate entry (``c_max``, ``c``) in the
        user's convention: the canonical shift's inverse applied once, where the components'
        verdict is built (the families' own placement keeps the canonical ones)."""
        up = {k: shift.to_user_c(self.info[k]) for k in ("c_max", "c") if k in self.info}
        return replace(self, info={**self.info, **up}) if up else self


@dataclass(frozen=True, eq=False)
class PatternDecision:
    """The decision on a whole pattern: a combinatorial obstruction, or one per component."""

    kind: str  # "cycle" | "order" | "components" | "blocks"
    cycle: tuple[int, ...] = ()
    steps: tuple[str, ...] = ()
    log_ratio: float = 0.0
    margin: Margin | None = None
    components: tuple[ComponentDecision, ...] = ()
    peeled: tuple[Peeled, ...] = ()


@dataclass(frozen=True, eq=False)
class Peeled:
    """A support component reduced by peeling its pure sources: ``sources`` are ``(i, j)``
    (sample ``i``, given positive weight by no other sample, and its one positive ``j``) in
    peel order; ``members``, ``sel`` and ``base`` describe the whole component (for the
    undecided report when a source cannot be placed)."""

    members: np.ndarray
    sel: np.ndarray
    base: dict[str, Any]
    sources: tuple[tuple[int, int], ...]


def mutual_pairs(pattern: ZeroPattern) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mask of the positive pairs whose reverse is positive, and the reverse log-weights."""
    n = pattern.n
    key = pattern.rows.astype(np.int64) * n + pattern.cols
    rkey = pattern.cols.astype(np.int64) * n + pattern.rows
    pos = np.searchsorted(key, rkey)
    pos = np.minimum(pos, key.size - 1)
    mutual = key[pos] == rkey
    rev = np.where(mutual, pattern.logw[pos], np.nan)
    return mutual, rev, pos
