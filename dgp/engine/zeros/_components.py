r"""Zero weights: the bound needs :math:`q_{ij} \to 0` where :math:`w_{ij} = 0`.

**Cosine.** The similarity is bounded, so :math:`q_{ij} \ge e^{-2/\tau}/(N-1) > 0`: the bound is
neither attained nor approached (inconsistent).

**Euclidean.** With :math:`s_{ij} = -D_{ij}/2\tau`, :math:`D_{ij} = |z_i - z_j|^2`, a sequence of
embeddings approaches the bound iff every row's softmax tends to its target row, i.e. (one scale
:math:`a_i` per row, :math:`P_i` the positive weights of row :math:`i`)

.. math::

    D_{ij} = a_i - 2\tau L_{ij} + o(1)\quad (j \in P_i), \qquad
    D_{il} - a_i \to +\infty\quad (l \notin P_i \cup \{i\}).

Every sample is the centre of a sphere (radius :math:`\sqrt{a_i}`) through its positives with
every other sample outside. The bound is never attained with a zero weight. Consequences, all
decided exactly (``proofs/t22_zero_patterns.py``):

1. *Mutual cycle condition.* A mutual pair (:math:`w_{ij}, w_{ji} > 0`) fixes
   :math:`a_i - a_j \to 2\tau(L_{ij} - L_{ji})`: the positive weights must satisfy the cycle
   condition on the cycle space of the mutual graph (a fundamental cycle of a spanning tree is
   reported when they do not).
2. *Scale order.* A one-way pair (:math:`w_{ij} > 0 = w_{ji}`) forces :math:`a_i - a_j \to
   +\infty`: no cycle of mutual and one-way steps with a one-way step may exist (the one-way
   weights must form a directed acyclic graph on the mutual components).
3. *Decoupling.* Support components (joined by positive weights either way) are independent:
   translating them apart by more than all their scales changes nothing else.
4. *Symmetric components.* A complete block may keep a bounded scale: it is approached iff its
   own target :math:`D(c)` fits, i.e. :math:`\operatorname{rank} D(c_{\max}) \le d` (as before).
   Any other component has one diverging scale :math:`\alpha`; rescaled by
   :math:`\alpha^{-1/2}`, its limit has unit distance on positive pairs and distance
   :math:`\ge 1` on the others (the *leading-order problem*, a unit-ball contact problem). It is
   approached whenever some :math:`X_0` has unit positive pairs, every other pair
   :math:`> 1`, and :math:`\delta_{ij} = -2\tau\ell_{ij}` in the image of its rigidity map
   (:math:`Y` with :math:`2\langle x_i - x_j, y_i - y_j\rangle = \delta_{ij}`): then
   :math:`Z(t) = X_0/t + tY`. Exact in :math:`d = 1` (paths only) and for components of at most
   :math:`d + 1` samples (always); otherwise obstructions (a clique of more than :math:`d + 1`
   samples, the kissing number, the planar neighbourhood and wheel rules, common neighbours,
   packing) prove inconsistency, a numerical search for :math:`X_0` proves approach.
5. *Pure sources.* A sample no sample gives positive weight to is peeled (repeatedly); the
   symmetric core left is necessary (an obstruction of the core decides the component). A pure
   source with one positive :math:`j` is placed at :math:`z_j(t) + \rho u/t^q` with :math:`j`
   exposed in direction :math:`u` at leading order and :math:`q` above every power placed
   before: its row then sees every other sample farther than :math:`j` by a diverging amount
   and every other row sees it beyond its scale.
6. What remains is *not decided exactly*: the leading-order problem contains penny-graph
   recognition (NP-hard) and strict kissing configurations (open in most dimensions), and other
   one-way weights (a source with several positives, one-way weights into a sample that others
   weight) add nested scales. Such components are reported with ``decided: false`` and the
   verdict of a numerical minimisation of the loss (small components), never silently.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from dgp.engine import rules
from dgp.engine.dense import DenseEuclideanSpectrum
from dgp.engine.family import euclidean_family
from dgp.engine.rules import Context
from dgp.engine.target import LogWeights, canonical, log_target, row_blocks
from dgp.engine.tolerance import NEAR, Margin, Tolerance
from dgp.result import Classification

__all__ = [
    "KISSING_NUMBERS",
    "ComponentDecision",
    "ZeroPattern",
    "classify_pattern",
    "classify_sparse",
    "classify_zeros",
    "decide_pattern",
    "kissing_bound",
    "pattern_gap",
    "sparse_pattern",
    "sub_weights",
]

#: the kissing numbers known exactly (the most unit vectors pairwise at least 60 degrees apart):
#: Newton/Schütte–van der Waerden (3), Musin (4), Odlyzko–Sloane and Levenshtein (8, 24)
KISSING_NUMBERS = {1: 2, 2: 6, 3: 12, 4: 24, 8: 240, 24: 196560}
#: largest component listed sample by sample (X0, Y) in a certificate
LIST_MAX_N = 2000
#: largest N whose family gaps are evaluated (an O(N^2) pass per t)
GAP_MAX_N = 20000
#: largest component for which the numerical evidence (a loss minimisation) is computed
EVIDENCE_MAX_N = 24
#: a numerical gap below this (nats per sample) reads as approached (undecided components
#: only): minimisations of approached patterns with nested scales stall near 1e-5, the loss
#: floors of patterns that are not approached seen on small supports are above 4e-2
EVIDENCE_THRESHOLD = 1e-3
#: largest component the numerical constructor of X0 is run on
CONSTRUCT_MAX_N = 3000
#: a family's gap below this counts as zero (rounding of log-softmax rows, measured ~1e-14)
GAP_ZERO = 1e-9
#: most pure sources one family places (the k-th placed sits at distance ~ t^-(3 + k))
SOURCES_MAX = 16
#: a constructed X0 is accepted when every non-positive pair has squared distance above 1 + this
SLACK_MIN = 1e-6
#: ... and the rigidity system is solved to this relative residual
RESIDUAL_RTOL = 1e-9


def kissing_bound(d: int) -> tuple[int, str]:
    """An upper bound on the number of points pairwise at least 1 apart on a unit sphere of
    :math:`\\mathbb R^d` (the kissing number), and where it comes from.

    Exact where known; otherwise the cap bound: caps of angular radius 30 degrees around such
    points are disjoint, so their number is at most the inverse of one cap's area fraction
    :math:`\\tfrac12 I_{1/4}(\\tfrac{d-1}{2}, \\tfrac12)`.

    Examples
    --------
    >>> kissing_bound(2), kissing_bound(5)[0] >= 40
    ((6, 'exact'), True)
    """
    if d in KISSING_NUMBERS:
        return KISSING_NUMBERS[d], "exact"
    from scipy.special import betainc

    frac = 0.5 * float(betainc(0.5 * (d - 1), 0.5, 0.25))
    return math.floor(1.0 / frac * (1 + 1e-12)), "cap bound"


def _circle_code_bound(d: int) -> int:
    """Most points pairwise >= 1 apart on a (d-2)-sphere of radius <= sqrt(3)/2 (common unit
    neighbours of two points at distance >= 1 in R^d): caps of angular radius
    arcsin(1/sqrt 3) are disjoint (exact count 5 on a circle, d = 3)."""
    if d == 3:
        return 5
    from scipy.special import betainc

    frac = 0.5 * float(betainc(0.5 * (d - 2), 0.5, 1.0 / 3.0))
    return math.floor(1.0 / frac * (1 + 1e-12))


def sub_weights(weights: LogWeights, idx: np.ndarray) -> LogWeights:
    """The canonical log-weights of the samples ``idx`` (a copy, re-canonicalised)."""
    L = weights.L[np.ix_(idx, idx)]
    np.fill_diagonal(L, -np.inf)
    top = float(L.max())
    L -= top
    finite = np.isfinite(L)
    n_zero = int((~finite).sum()) - idx.size
    first = None
    if n_zero:
        off = ~finite
        np.fill_diagonal(off, False)
        first = tuple(int(k) for k in np.argwhere(off)[0])
    return LogWeights(L, weights.shift + top, bool(np.array_equal(L, L.T)), n_zero, first,
                      weights.unit_roundoff, ())


# ----------------------------------------------------------------------------------------------
# the pattern: positive weights as a sparse graph
# ----------------------------------------------------------------------------------------------


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
        first = (0, 0)
        if n_zero:
            key = rows.astype(np.int64) * n + cols
            for i in range(n):  # first row with a zero, then its first zero column
                lo, hi = np.searchsorted(key, [i * n, (i + 1) * n])
                if hi - lo < n - 1:
                    present = set(cols[lo:hi].tolist()) | {i}
                    first = (i, next(j for j in range(n) if j not in present))
                    break
        return cls(n, rows, cols, logw, n_zero, first, unit_roundoff)

    def support(self) -> sp.csr_matrix:
        """The boolean support :math:`w_{ij} > 0` (CSR)."""
        ones = np.ones(self.rows.size, dtype=np.int8)
        return sp.csr_matrix((ones, (self.rows, self.cols)), shape=(self.n, self.n))

    def lookup(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """:math:`L_{ij}` for pairs known to be positive."""
        key = self.rows.astype(np.int64) * self.n + self.cols
        pos = np.searchsorted(key, np.asarray(i, dtype=np.int64) * self.n + np.asarray(j))
        return self.logw[pos]

    def spread(self) -> float:
        """Max minus min of the positive log-weights."""
        return float(self.logw.max() - self.logw.min()) if self.logw.size else 0.0


# ----------------------------------------------------------------------------------------------
# decisions
# ----------------------------------------------------------------------------------------------


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


def _mutual(pattern: ZeroPattern) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mask of the positive pairs whose reverse is positive, and the reverse log-weights."""
    n = pattern.n
    key = pattern.rows.astype(np.int64) * n + pattern.cols
    rkey = pattern.cols.astype(np.int64) * n + pattern.rows
    pos = np.searchsorted(key, rkey)
    pos = np.minimum(pos, key.size - 1)
    mutual = key[pos] == rkey
    rev = np.where(mutual, pattern.logw[pos], np.nan)
    return mutual, rev, pos


def _tree_path(pred: np.ndarray, a: int, b: int) -> list[int]:
    """The path from ``a`` to ``b`` in a BFS tree (predecessors ``pred``, -9999 at roots)."""
    up_a, up_b = [a], [b]
    seen = {a: 0}
    while pred[up_a[-1]] >= 0:
        up_a.append(int(pred[up_a[-1]]))
        seen[up_a[-1]] = len(up_a) - 1
    while up_b[-1] not in seen:
        up_b.append(int(pred[up_b[-1]]))
    meet = seen[up_b[-1]]
    return up_a[: meet + 1] + up_b[-2::-1]


def _potentials(pattern: ZeroPattern, mutual: np.ndarray, rev: np.ndarray, tol: Tolerance):
    r"""Row potentials :math:`\psi` with :math:`\psi_i - \psi_j = L_{ij} - L_{ji}` on a spanning
    forest of the mutual graph, the worst residual of the other mutual pairs (a fundamental
    cycle), the margin and the BFS predecessors."""
    n = pattern.n
    r, c = pattern.rows[mutual], pattern.cols[mutual]
    diff = pattern.logw[mutual] - rev[mutual]  # L_ij - L_ji
    M = sp.csr_matrix((np.ones(r.size), (r, c)), shape=(n, n))
    _, label = connected_components(M, directed=False)
    psi = np.zeros(n)
    pred = np.full(n, -9999, dtype=np.int64)
    if r.size:  # one breadth-first search of the whole forest, level by level (O(nnz))
        indptr = np.searchsorted(r, np.arange(n + 1))  # the mutual pairs are sorted by row
        seen = np.zeros(n, dtype=bool)
        roots = np.unique(label, return_index=True)[1]
        seen[roots] = True
        frontier = roots
        while frontier.size:
            lens = indptr[frontier + 1] - indptr[frontier]
            if not lens.sum():
                break
            src = np.repeat(frontier, lens)
            start = np.repeat(indptr[frontier] - np.cumsum(np.r_[0, lens[:-1]]), lens)
            pos = start + np.arange(src.size)
            dst = c[pos]
            fresh = ~seen[dst]
            dst, src, pos = dst[fresh], src[fresh], pos[fresh]
            dst, first = np.unique(dst, return_index=True)
            src, pos = src[first], pos[first]
            pred[dst] = src
            psi[dst] = psi[src] - diff[pos]  # psi_u - psi_v = L_uv - L_vu
            seen[dst] = True
            frontier = dst
    atol = tol.log_atol(pattern.spread())
    resid = diff - (psi[r] - psi[c]) if r.size else np.zeros(0)
    worst_val, cycle = 0.0, ()
    if resid.size:
        top = float(np.abs(resid).max())
        k = int(np.flatnonzero(np.abs(resid) >= top - atol)[0])
        worst_val = float(resid[k])
        if abs(worst_val) > atol:
            i, j = int(r[k]), int(c[k])
            path = _tree_path(pred, j, i)  # j -> ... -> i along the tree
            cycle = (i, *path)
    margin = tol.margin("largest fundamental-cycle log-ratio of the mutual positive weights",
                        worst_val, atol, zero_is_near=False)
    return psi, cycle, worst_val, margin, label


def _scale_order(pattern: ZeroPattern, mutual: np.ndarray, label: np.ndarray):
    """A cycle of mutual and one-way steps with a one-way step, or ``None``; and the heights of
    the mutual components in the one-way DAG."""
    import networkx as nx

    one = ~mutual
    oi, oj = pattern.rows[one], pattern.cols[one]
    if oi.size == 0:
        return None, None
    n = pattern.n
    r, c = pattern.rows[mutual], pattern.cols[mutual]
    M = nx.Graph()
    M.add_nodes_from(range(n))
    M.add_edges_from(zip(r.tolist(), c.tolist(), strict=True))
    inside = label[oi] == label[oj]
    if inside.any():
        k = int(np.flatnonzero(inside)[0])
        i, j = int(oi[k]), int(oj[k])
        back = nx.shortest_path(M, j, i)
        cyc = (i, *back)
        steps = ("one-way",) + ("mutual",) * (len(back) - 1)
        return (cyc, steps), None
    D = nx.DiGraph()
    D.add_nodes_from(np.unique(label).tolist())
    via: dict[tuple[int, int], tuple[int, int]] = {}
    for a, b in zip(oi.tolist(), oj.tolist(), strict=True):
        key = (int(label[a]), int(label[b]))
        if key not in via:
            via[key] = (a, b)
            D.add_edge(*key)
    try:
        cyc_edges = nx.find_cycle(D, orientation="original")
    except nx.NetworkXNoCycle:
        height = {}
        for comp in reversed(list(nx.topological_sort(D))):
            succ = list(D.successors(comp))
            height[comp] = 1 + max(height[s] for s in succ) if succ else 0
        return None, height
    verts: list[int] = []
    steps: list[str] = []
    links = [via[(u, v)] for u, v, _ in cyc_edges]
    for k, (a, b) in enumerate(links):
        verts.append(a)
        steps.append("one-way")
        nxt = links[(k + 1) % len(links)][0]
        path = nx.shortest_path(M, b, nxt)
        verts.extend(path[:-1])
        steps.extend(["mutual"] * (len(path) - 1))
    verts.append(verts[0])
    return (tuple(verts), tuple(steps)), None


def decide_pattern(pattern: ZeroPattern, *, dim: int, tau: float, tol: Tolerance,
                   seed: int = 0) -> PatternDecision:
    """Decide a zero pattern under the Euclidean similarity (module docstring)."""
    mutual, rev, _ = _mutual(pattern)
    psi, cycle, log_ratio, margin, label = _potentials(pattern, mutual, rev, tol)
    if cycle:
        return PatternDecision("cycle", cycle=cycle, log_ratio=log_ratio, margin=margin)
    bad, _height = _scale_order(pattern, mutual, label)
    if bad is not None:
        return PatternDecision("order", cycle=bad[0], steps=bad[1])
    U = pattern.support()
    n_comp, comp = connected_components(U, directed=False)
    # members and positive pairs of each component, by one sort (no pass per component)
    by_vertex = np.argsort(comp, kind="stable")
    v_bounds = np.searchsorted(comp[by_vertex], np.arange(n_comp + 1))
    comp_rows = comp[pattern.rows]
    by_pair = np.argsort(comp_rows, kind="stable")
    p_bounds = np.searchsorted(comp_rows[by_pair], np.arange(n_comp + 1))
    first = [int(by_vertex[v_bounds[k]]) for k in range(n_comp)]
    rng = np.random.default_rng(seed)
    out: list[ComponentDecision] = []
    peeled: list[Peeled] = []
    for k in sorted(range(n_comp), key=lambda k: first[k]):
        members = np.sort(by_vertex[v_bounds[k]:v_bounds[k + 1]])
        sel = np.sort(by_pair[p_bounds[k]:p_bounds[k + 1]])
        one_way = bool((~mutual[sel]).any())
        if one_way:
            decs, peel = _asymmetric_component(pattern, members, sel, mutual, psi, dim=dim,
                                               tau=tau, tol=tol, rng=rng)
            if peel is not None:
                peeled.append(peel)
        else:
            decs = [_symmetric_component(pattern, members, sel, psi, dim=dim, tau=tau, tol=tol,
                                         rng=rng)]
        out.extend(decs)
        if decs[-1].status == "obstructed":
            break
    kinds = {d.kind for d in out}
    if all(d.status == "approached" for d in out) and kinds <= {"fixed"} and \
            not (~mutual).any():
        return PatternDecision("blocks", components=tuple(out))
    return PatternDecision("components", components=tuple(out), peeled=tuple(peeled))


# ----------------------------------------------------------------------------------------------
# symmetric components
# ----------------------------------------------------------------------------------------------


def _local_edges(pattern: ZeroPattern, members: np.ndarray, sel: np.ndarray,
                 psi: np.ndarray, tau: float):
    """Undirected edges (local indices, i < j) of a symmetric component and their
    :math:`\\delta_{ij} = -2\\tau(L_{ij} - \\psi_i)` (symmetric under the cycle condition)."""
    r, c = pattern.rows[sel], pattern.cols[sel]
    keep = r < c
    r, c = r[keep], c[keep]
    ell_ij = pattern.logw[sel][keep] - psi[r]
    ell_ji = pattern.lookup(c, r) - psi[c]
    delta = -tau * (ell_ij + ell_ji)  # -2 tau times their mean (equal within tolerance)
    loc = np.full(pattern.n, -1, dtype=np.int64)
    loc[members] = np.arange(members.size)
    return np.stack([loc[r], loc[c]], axis=1), delta


def _symmetric_component(pattern, members, sel, psi, *, dim, tau, tol, rng,
                         open_block: bool = False) -> ComponentDecision:
    import networkx as nx

    n_c = members.size
    E, delta = _local_edges(pattern, members, sel, psi, tau)
    m = E.shape[0]
    base = {"members": members.tolist(), "size": int(n_c), "positive_pairs": int(m)}
    if m == n_c * (n_c - 1) // 2:
        return _clique(pattern, members, sel, dim=dim, tau=tau, tol=tol, base=base,
                       open_block=open_block)
    G = nx.Graph()
    G.add_nodes_from(range(n_c))
    G.add_edges_from(E.tolist())
    glob = lambda vs: tuple(int(members[v]) for v in vs)  # noqa: E731
    if dim == 1:
        deg = np.bincount(E.ravel(), minlength=n_c)
        if deg.max() > 2:
            v = int(np.argmax(deg))
            nb = sorted(G[v])[:3]
            return _obstructed(base, "line", glob([v, *nb]), {
                "reason": "three samples at unit distance from one sample of a line: two of "
                "them coincide, yet every pair of distinct samples is at least 1 apart"})
        if m != n_c - 1:
            cyc = [u for u, _ in nx.find_cycle(G)]
            return _obstructed(base, "line", glob(cyc), {
                "reason": "a closed walk of unit steps on a line revisits a point, yet distinct "
                "samples are at least 1 apart"})
        ends = [v for v in range(n_c) if deg[v] == 1]
        order = nx.shortest_path(G, ends[0], ends[1])
        X0 = np.zeros((n_c, 1))
        X0[order, 0] = np.arange(n_c, dtype=float)
        return _scaled(base, "path", X0, E, delta, tol)
    if n_c <= dim + 1:
        X0 = _simplex_start(E, n_c, dim)
        return _scaled(base, "simplex", X0, E, delta, tol)
    obs = _obstruction(G, E, delta, dim=dim, tau=tau, tol=tol)
    if obs is not None:
        name, vs, detail, margins = obs
        return _obstructed(base, name, glob(vs), detail, margins)
    tried = ["line/simplex rules", "clique, kissing, planar neighbourhood, wheel, common "
             "neighbours and packing obstructions"]
    if n_c <= CONSTRUCT_MAX_N:
        found = _construct(E, n_c, dim, delta, rng)
        if found is not None:
            return _scaled(base, "construction", found, E, delta, tol)
        tried.append("numerical search for X0 (unit positive pairs, every other pair > 1, "
                     "log-ratios in the image of the rigidity map)")
    return _undecided(pattern, members, sel, base, tried, dim=dim, tau=tau)


def _obstructed(base, name, vertices, detail, margins=()) -> ComponentDecision:
    info = dict(base, obstruction=name, vertices=list(vertices), **detail)
    return ComponentDecision(np.asarray(base["members"]), "obstructed", name, info,
                             margins=tuple(margins), vertices=tuple(vertices))


def _clique(pattern, members, sel, *, dim, tau, tol, base,
            open_block: bool = False) -> ComponentDecision:
    """A complete block: its own family D(c), c <= c_max (exact). ``open_block``: where
    ``dim >= n - 1``, the configuration at ``c = c_max - 1`` (distinct points, a
    non-degenerate simplex: every sample exposed, for the pure sources placed beyond it)."""
    n_c = members.size
    opened = open_block and dim >= n_c - 1
    if n_c == 2:  # D(c) = -2 tau (ell + c) >= 0 for c <= c_max = -ell, rank 0 there
        ell = 0.5 * float(pattern.logw[sel].sum())
        info = dict(base, c_max=-ell, rank=0)
        X0 = np.zeros((2, dim))
        if opened:  # c = c_max - 1: D = 2 tau
            X0[1, 0] = math.sqrt(2.0 * tau)
            info.update(c=-ell - 1.0, rank=1)
        if n_c <= LIST_MAX_N:
            info["X0"] = X0.tolist()
        return ComponentDecision(members, "approached", "fixed", info, X0=X0)
    L = np.full((n_c, n_c), -np.inf)
    loc = np.full(pattern.n, -1, dtype=np.int64)
    loc[members] = np.arange(n_c)
    L[loc[pattern.rows[sel]], loc[pattern.cols[sel]]] = pattern.logw[sel]
    sub = canonical(L)
    sub = LogWeights(sub.L, sub.shift, sub.symmetric, 0, None, pattern.unit_roundoff, ())
    stol = Tolerance(tol.rtol, tol.unit_roundoff, n_c)
    tgt = log_target(sub, stol)
    fam = euclidean_family(DenseEuclideanSpectrum(tgt), tau=tau, tol=stol)
    end = fam.hi
    info = dict(base, c_max=end.c - sub.shift, rank=end.rank)
    if end.rank > dim:
        info.update(reason=f"a complete block: its targets D(c), c <= c_max, have rank at least "
                    f"{end.rank} > dim = {dim}")
        return ComponentDecision(members, "obstructed", "clique_rank", info,
                                 margins=tuple(fam.margins), vertices=tuple(members.tolist()))
    if opened:
        X = fam.embed(end.c - 1.0, n_c - 1)
        info.update(c=end.c - 1.0 - sub.shift, rank=n_c - 1)
    else:
        X = fam.embed(end.c, end.rank) if end.rank else np.zeros((n_c, 0))
    X0 = np.zeros((n_c, dim))
    X0[:, : X.shape[1]] = X
    if n_c <= LIST_MAX_N:
        info["X0"] = X0.tolist()
    return ComponentDecision(members, "approached", "fixed", info, X0=X0,
                             margins=tuple(fam.margins))


def _rigidity(X: np.ndarray, E: np.ndarray) -> sp.csr_matrix:
    r"""The rigidity map :math:`Y \mapsto (2\langle x_i - x_j, y_i - y_j\rangle)_{ij}` (sparse,
    ``m x (n d)``)."""
    n, d = X.shape
    m = E.shape[0]
    diff = 2.0 * (X[E[:, 0]] - X[E[:, 1]])
    rows = np.repeat(np.arange(m), 2 * d)
    cols = np.concatenate([E[:, :1] * d + np.arange(d), E[:, 1:] * d + np.arange(d)], axis=1)
    vals = np.concatenate([diff, -diff], axis=1)
    return sp.csr_matrix((vals.ravel(), (rows, cols.ravel())), shape=(m, n * d))


def _solve(R: sp.csr_matrix, b: np.ndarray) -> np.ndarray:
    r"""A least-norm (least-squares when inconsistent) solution of ``R y = b``: dense for small
    systems, else :math:`y = R^\top (RR^\top + \lambda I)^{-1} b` with a sparse factorisation
    and a tiny ridge :math:`\lambda` (the caller checks the residual)."""
    if R.shape[0] * R.shape[1] <= 250_000:
        return np.linalg.lstsq(R.toarray(), b, rcond=None)[0]
    from scipy.sparse.linalg import splu

    RRt = (R @ R.T).tocsc()
    lam = 1e-13 * float(abs(RRt).max())
    lu = splu((RRt + lam * sp.identity(RRt.shape[0], format="csc")).tocsc())
    y = R.T @ lu.solve(b)
    r = b - R @ y
    return y + R.T @ lu.solve(r)  # one step of iterative refinement


def _polish(X: np.ndarray, E: np.ndarray, steps: int = 12) -> np.ndarray:
    """Gauss–Newton on the unit-length equations of the positive pairs (least-norm steps),
    until the residual stops halving."""
    n, d = X.shape
    prev = math.inf
    for _ in range(steps):
        dx = X[E[:, 0]] - X[E[:, 1]]
        res = (dx * dx).sum(axis=1) - 1.0
        top = float(np.abs(res).max())
        if top <= 1e-15 or top > 0.5 * prev:
            break
        prev = top
        step = _solve(_rigidity(X, E), -res)
        X = X + step.reshape(n, d)
    return X


def _non_edge_slack(X: np.ndarray, E: np.ndarray) -> tuple[float, tuple[int, int]]:
    """Smallest squared distance minus 1 over the non-positive pairs, and the pair."""
    from scipy.spatial import cKDTree

    n = X.shape[0]
    key_e = np.sort(E, axis=1)
    keys = set((key_e[:, 0] * n + key_e[:, 1]).tolist())
    radius = 2.0
    while True:
        pairs = cKDTree(X).query_pairs(radius, output_type="ndarray")
        if pairs.size:
            k = pairs[:, 0].astype(np.int64) * n + pairs[:, 1]
            pairs = pairs[~np.isin(k, np.fromiter(keys, dtype=np.int64, count=len(keys)))]
        if pairs.size or radius > 1e6 * max(1.0, float(np.ptp(X)) if X.size else 1.0):
            break
        radius *= 4.0
    if not pairs.size:
        return math.inf, (-1, -1)
    dd = ((X[pairs[:, 0]] - X[pairs[:, 1]]) ** 2).sum(axis=1)
    k = int(np.argmin(dd))
    return float(dd[k] - 1.0), (int(pairs[k, 0]), int(pairs[k, 1]))


def _scaled(base, how, X0, E, delta, tol) -> ComponentDecision:
    """The family X0 / t + t Y of a strict configuration X0 (unit positive pairs)."""
    R = _rigidity(X0, E)
    rhs = delta - float(delta.mean()) if delta.size else delta
    Y = _solve(R, rhs).reshape(X0.shape)
    resid = float(np.abs(R @ Y.ravel() - rhs).max()) if rhs.size else 0.0
    dx = X0[E[:, 0]] - X0[E[:, 1]]
    edge = float(np.abs((dx * dx).sum(axis=1) - 1.0).max())
    slack, pair = _non_edge_slack(X0, E)
    info = dict(base, construction=how, min_slack=slack, tightest_pair=list(pair),
                edge_residual=edge, delta_residual=resid,
                delta_constant=float(delta.mean()) if delta.size else 0.0)
    if X0.shape[0] <= LIST_MAX_N:
        info.update(X0=X0.tolist(), Y=Y.tolist())
    atol = RESIDUAL_RTOL * (1.0 + float(np.abs(delta).max(initial=0.0)))
    margins = (
        Margin("smallest squared distance minus 1 of a non-positive pair at X0 (accepted above "
               "atol)", slack, SLACK_MIN, bool(slack <= NEAR * SLACK_MIN)),
        Margin("residual of the rigidity system 2<x_i - x_j, y_i - y_j> = delta_ij - mean "
               "(accepted below atol)", resid, atol, bool(resid > atol / NEAR)),
    )
    return ComponentDecision(np.asarray(base["members"]), "approached", "scaled", info, X0=X0,
                             Y=Y, margins=margins)


def _simplex_start(E: np.ndarray, n: int, dim: int) -> np.ndarray:
    """A configuration of ``n <= dim + 1`` points: unit positive pairs, the others at squared
    distance ``1 + mu`` (a perturbed regular simplex, affinely independent)."""
    F = np.ones((n, n)) - np.eye(n)
    F[E[:, 0], E[:, 1]] = F[E[:, 1], E[:, 0]] = 0.0
    J = np.eye(n) - 1.0 / n
    JFJ = J @ F @ J
    mu = 0.5 / max(1.0, float(np.abs(np.linalg.eigvalsh(JFJ)).max()))
    D = 1.0 + mu * F
    np.fill_diagonal(D, 0.0)
    lam, U = np.linalg.eigh(-0.5 * J @ D @ J)
    lam, U = lam[::-1], U[:, ::-1]
    X = U[:, : n - 1] * np.sqrt(np.clip(lam[: n - 1], 0.0, None))
    out = np.zeros((n, dim))
    out[:, : X.shape[1]] = X
    return out


# --- obstructions ------------------------------------------------------------------------------


def _obstruction(G, E, delta, *, dim, tau, tol):
    """The first obstruction that applies (name, vertices, detail, margins), or ``None``."""
    import networkx as nx

    n = G.number_of_nodes()
    deg = np.bincount(E.ravel(), minlength=n)
    kiss, source = kissing_bound(dim)
    if deg.max() > kiss:
        v = int(np.argmax(deg))
        return ("kissing", [v, *sorted(G[v])], {
            "degree": int(deg[v]), "kissing_bound": kiss, "bound_source": source,
            "reason": f"{int(deg[v])} samples at unit distance from one sample, pairwise at "
            f"least 1 apart, but at most {kiss} fit around a point of R^{dim}"}, ())
    if deg.max() <= 64:
        for clique in nx.find_cliques(G):
            if len(clique) >= dim + 2:
                c = sorted(clique)[: dim + 2]
                return ("simplex", c, {
                    "clique_size": len(clique),
                    "reason": f"{dim + 2} samples pairwise at unit distance form a regular "
                    f"simplex, which needs dimension {dim + 1} > dim = {dim}"}, ())
    if dim == 2:
        found = _planar_neighbourhoods(G, E, delta, tau=tau, tol=tol)
        if found is not None:
            return found
    A = nx.to_scipy_sparse_array(G, nodelist=range(n), format="csr", dtype=np.int32)
    common = (A @ A).tolil()
    common.setdiag(0)
    common = common.tocsr()
    if dim in (2, 3):
        need = 3
        cand = sp.triu(common, 1).tocoo()
        hits = cand.data >= need
        for a, b in zip(cand.row[hits].tolist(), cand.col[hits].tolist(), strict=True):
            S = sorted(set(G[a]) & set(G[b]))
            if dim == 2:
                return ("common_neighbours", [a, b, *S[:3]], {
                    "centres": [a, b], "common": S,
                    "reason": "three samples at unit distance from two distinct points of the "
                    "plane, but two unit circles with distinct centres meet in at most two "
                    "points"}, ())
            counts = np.asarray(A[:, S].sum(axis=1)).ravel()
            counts[[a, b]] = 0
            for c in np.flatnonzero(counts >= 3).tolist():
                S3 = sorted(set(S) & set(G[c]))[:3]
                return ("common_neighbours", [a, b, c, *S3], {
                    "centres": [a, b, c], "common": S3,
                    "reason": "three samples at unit distance from three distinct points of "
                    "R^3, but three unit spheres with distinct centres meet in at most two "
                    "points"}, ())
    if dim >= 3:
        bound = _circle_code_bound(dim)
        cand = sp.triu(common, 1).tocoo()
        hits = np.flatnonzero(cand.data > bound)
        if hits.size:
            a, b = int(cand.row[hits[0]]), int(cand.col[hits[0]])
            S = sorted(set(G[a]) & set(G[b]))
            return ("common_circle", [a, b, *S], {
                "centres": [a, b], "common": S, "bound": bound,
                "reason": f"{len(S)} common neighbours of two samples lie on a sphere of "
                f"dimension {dim - 2} and radius at most sqrt(3)/2, pairwise at least 1 apart: "
                f"at most {bound} fit"}, ())
    return _packing(A, dim)


def _planar_neighbourhoods(G, E, delta, *, tau, tol):
    """The plane: a sample's neighbours sit on a unit circle around it, 60 degrees apart when
    positive to each other, more than 60 degrees (to the next order) otherwise."""
    import networkx as nx

    dl = {}
    for (a, b), v in zip(E.tolist(), delta.tolist(), strict=True):
        dl[(a, b)] = dl[(b, a)] = v
    for v in G.nodes:
        nb = sorted(G[v])
        H = G.subgraph(nb)
        if len(nb) == 6 and all(dg == 2 for _, dg in H.degree()) and nx.is_connected(H):
            rim = list(H.edges())
            s = sum(dl[e] for e in rim) - sum(dl[(v, u)] for u in nb)
            atol = 2.0 * tau * 12.0 * tol.log_atol(max(1.0, float(np.ptp(delta)) / (2 * tau)))
            mg = tol.margin("hexagon angle defect: sum of rim minus spoke log-ratio terms", s,
                            atol, zero_is_near=False)
            if abs(s) > atol:
                return ("wheel_stress", [v, *nb], {
                    "hub": v, "rim": [list(e) for e in rim], "defect": s, "atol": atol,
                    "reason": "six neighbours close a regular hexagon around a sample; at the "
                    "next order its six angles must still sum to 360 degrees, which needs the "
                    "rim log-ratio terms to sum to the spoke ones"}, (mg,))
            continue
        bad = None
        if any(dg >= 3 for _, dg in H.degree()):
            u = next(u for u, dg in H.degree() if dg >= 3)
            bad = ([v, u, *sorted(H[u])[:3]],
                   "a neighbour adjacent to three other neighbours: at most two points of a "
                   "unit circle lie 60 degrees from a given one")
        elif not nx.is_forest(H):
            cyc = [a for a, _ in nx.find_cycle(H)]
            bad = ([v, *cyc], f"neighbours forming a {len(cyc)}-cycle: 60-degree steps close "
                   "up on a circle only after six")
        elif len(nb) > 5:
            bad = ([v, *nb], f"{len(nb)} neighbours in paths: the gaps between paths exceed 60 "
                   "degrees, so at most five fit around the circle")
        if bad is not None:
            return ("planar_neighbourhood", bad[0], {"hub": v, "neighbours": nb,
                                                     "reason": bad[1]}, ())
    return None


def _packing(A: sp.csr_matrix, dim: int, h_max: int = 64):
    """Samples within ``h`` steps of a sample lie within distance ``h``, pairwise at least 1
    apart: at most ``(2h + 1)^d`` of them (disjoint balls of radius 1/2)."""
    n = A.shape[0]
    if n <= 3 ** dim:
        return None
    B = (A + sp.identity(n, dtype=np.int32, format="csr")).astype(bool).astype(np.int32)
    P = B.copy()
    for h in range(1, h_max + 1):
        if h > 1:
            P = (P @ B).astype(bool).astype(np.int32)
            if P.nnz > 20_000_000:
                return None
        sizes = np.diff(P.indptr)
        cap = (2 * h + 1) ** dim
        if sizes.max() > cap:
            v = int(np.argmax(sizes))
            return ("packing", [v], {
                "centre": v, "steps": h, "ball_size": int(sizes[v]), "bound": cap,
                "reason": f"{int(sizes[v])} samples within {h} steps of one sample lie in a ball "
                f"of radius {h}, pairwise at least 1 apart, but at most (2h+1)^d = {cap} fit"},
                ())
        if n <= cap:
            return None
    return None


# --- the numerical search for X0 ---------------------------------------------------------------


def _construct(E: np.ndarray, n: int, dim: int, delta: np.ndarray,
               rng: np.random.Generator) -> np.ndarray | None:
    """Search for X0: unit positive pairs, every other pair at squared distance > 1, and the
    log-ratios in the image of its rigidity map. ``None`` when not found (nothing is proven)."""
    from scipy.optimize import minimize
    from scipy.sparse.csgraph import shortest_path

    A = sp.csr_matrix((np.ones(E.shape[0]), (E[:, 0], E[:, 1])), shape=(n, n))
    A = A + A.T
    dense_pairs = n <= 400
    if dense_pairs:
        iu = np.triu_indices(n, 1)
        adj = np.zeros((n, n), dtype=bool)
        adj[E[:, 0], E[:, 1]] = adj[E[:, 1], E[:, 0]] = True
        far = ~adj[iu]
        NE = np.stack([iu[0][far], iu[1][far]], axis=1)
    keys_e = np.sort(E, axis=1)
    key_set = keys_e[:, 0].astype(np.int64) * n + keys_e[:, 1]

    def pairs_near(X, mu):
        if dense_pairs:
            return NE
        from scipy.spatial import cKDTree

        P = cKDTree(X).query_pairs(math.sqrt(1.0 + mu), output_type="ndarray")
        if not P.size:
            return np.zeros((0, 2), dtype=np.int64)
        k = P[:, 0].astype(np.int64) * n + P[:, 1]
        return P[~np.isin(k, key_set)]

    def fg(x, mu, NEc):
        X = x.reshape(n, dim)
        de = X[E[:, 0]] - X[E[:, 1]]
        le = (de * de).sum(axis=1) - 1.0
        g = np.zeros_like(X)
        val = float(le @ le)
        ge = 4.0 * le[:, None] * de
        np.add.at(g, E[:, 0], ge)
        np.add.at(g, E[:, 1], -ge)
        NEx = NEc if dense_pairs else pairs_near(X, mu)
        if NEx.size:
            dn = X[NEx[:, 0]] - X[NEx[:, 1]]
            ln = np.maximum(1.0 + mu - (dn * dn).sum(axis=1), 0.0)
            val += float(ln @ ln)
            gn = -4.0 * ln[:, None] * dn
            np.add.at(g, NEx[:, 0], gn)
            np.add.at(g, NEx[:, 1], -gn)
        return val, g.ravel()

    SP = shortest_path(A, unweighted=True, directed=False)
    J = -0.5 * (SP**2)
    J -= J.mean(axis=0, keepdims=True)
    J -= J.mean(axis=1, keepdims=True)
    if n > 400:
        from scipy.sparse.linalg import eigsh

        lam, U = eigsh(J, k=dim, which="LA", v0=rng.standard_normal(n))
        lam, U = lam[::-1], U[:, ::-1]
    else:
        lam, U = np.linalg.eigh(J)
        lam, U = lam[::-1][:dim], U[:, ::-1][:, :dim]
    starts = [U * np.sqrt(np.clip(lam, 0.0, None))]
    # effort by size: the search proves approach when it succeeds, nothing when it fails
    restarts, maxiter = (8, 4000) if n <= 60 else (2, 2000) if n <= 400 else (0, 300)
    for k in range(restarts):
        starts.append(rng.standard_normal((n, dim)) * (0.5 * n ** (1.0 / dim) + 0.5 * k))
    rhs = delta - float(delta.mean())
    for k, X0 in enumerate(starts):
        mu = 0.3 if k % 2 == 0 else 0.05
        X0 = X0 + 1e-3 * rng.standard_normal(X0.shape)
        seen = {"it": 0, "x": X0.ravel()}

        def stall(xk, seen=seen, mu=mu):
            # large searches stop when they are not heading to zero (nothing is claimed then)
            seen["it"] += 1
            seen["x"] = xk
            if n > 400 and seen["it"] == 40 and fg(xk, mu, None)[0] > 1e-3 * E.shape[0]:
                raise StopIteration

        res = minimize(fg, X0.ravel(), args=(mu, NE if dense_pairs else None), jac=True,
                       method="L-BFGS-B", callback=stall,
                       options={"maxiter": maxiter, "gtol": 1e-12, "ftol": 1e-15})
        X = np.asarray(res.x if res.x is not None else seen["x"]).reshape(n, dim)
        dx = X[E[:, 0]] - X[E[:, 1]]
        if np.abs((dx * dx).sum(axis=1) - 1.0).max() > 1e-3:
            continue  # not near a configuration with unit positive pairs: no polishing
        X = _polish(X, E)
        dx = X[E[:, 0]] - X[E[:, 1]]
        if np.abs((dx * dx).sum(axis=1) - 1.0).max() > 1e-12:
            continue
        slack, _ = _non_edge_slack(X, E)
        if not slack > SLACK_MIN:
            continue
        R = _rigidity(X, E)
        Y = _solve(R, rhs)
        atol = RESIDUAL_RTOL * (1.0 + float(np.abs(delta).max(initial=0.0)))
        if np.abs(R @ Y - rhs).max() <= atol:
            return X
    return None


# ----------------------------------------------------------------------------------------------
# asymmetric components and undecided ones
# ----------------------------------------------------------------------------------------------


def _peel(pattern: ZeroPattern, members: np.ndarray, sel: np.ndarray):
    """Peel pure sources (samples no remaining sample gives positive weight to), repeatedly.

    Returns the sources in peel order as ``(i, positives of i)`` and the core's members and
    positive pairs. Every positive of a core sample is in the core (a sample is peeled only
    when no remaining sample weights it)."""
    n_c = members.size
    loc = np.full(pattern.n, -1, dtype=np.int64)
    loc[members] = np.arange(n_c)
    r, c = loc[pattern.rows[sel]], loc[pattern.cols[sel]]
    starts = np.searchsorted(r, np.arange(n_c + 1))  # pairs are sorted by row
    indeg = np.bincount(c, minlength=n_c)
    alive = np.ones(n_c, dtype=bool)
    stack = list(np.flatnonzero(indeg == 0)[::-1])
    sources = []
    while stack:
        v = int(stack.pop())
        alive[v] = False
        out = c[starts[v]:starts[v + 1]]
        sources.append((int(members[v]), members[out]))
        indeg[out] -= 1
        stack.extend(int(u) for u in out[indeg[out] == 0][::-1])
    return sources, members[alive], sel[alive[r]]


def _asymmetric_component(pattern, members, sel, mutual, psi, *, dim, tau, tol, rng):
    """A component with one-way weights: its pure sources peeled, the symmetric core decided.

    The core is necessary (``proofs/t22_zero_patterns.py``): restricted to the core, an
    approaching family approaches the core's pattern, so an obstruction of the core decides
    the component. When every source has one positive and the core is approached, the sources
    are placed beyond their targets by :func:`_family`. Returns the decisions and the
    :class:`Peeled` record (``None`` unless sources wait to be placed)."""
    base = {"members": members.tolist(), "size": int(members.size),
            "positive_pairs": int(sel.size), "one_way_pairs": int((~mutual[sel]).sum())}
    tried = ["mutual cycle condition and scale order (both hold)"]
    sources, core, core_sel = _peel(pattern, members, sel)
    if not sources or (~mutual[core_sel]).any():
        if sources:
            tried.append(f"peeled {len(sources)} pure sources (samples no other sample "
                         "weights); the rest still has one-way weights")
        return [_undecided(pattern, members, sel, base, tried, dim=dim, tau=tau)], None
    n_core = core.size
    loc = np.full(pattern.n, -1, dtype=np.int64)
    loc[core] = np.arange(n_core)
    r, c = loc[pattern.rows[core_sel]], loc[pattern.cols[core_sel]]
    sub = sp.csr_matrix((np.ones(r.size, dtype=np.int8), (r, c)), shape=(n_core, n_core))
    n_sub, lab = connected_components(sub, directed=False)
    decs = []
    for k in sorted(range(n_sub), key=lambda k: int(np.flatnonzero(lab == k)[0])):
        dec = _symmetric_component(pattern, core[lab == k], core_sel[lab[r] == k], psi,
                                   dim=dim, tau=tau, tol=tol, rng=rng, open_block=True)
        dec.info["peeled_from"] = int(members[0])
        if dec.status == "obstructed":
            return [dec], None
        decs.append(dec)
    multi = [(i, t.size) for i, t in sources if t.size > 1]
    if multi or len(sources) > SOURCES_MAX or any(d.status != "approached" for d in decs):
        tried.append(f"peeled {len(sources)} pure sources; the core is "
                     + ("approached" if all(d.status == "approached" for d in decs)
                        else "not decided")
                     + (f", but source {multi[0][0]} has {multi[0][1]} positives (placing a "
                        "source with several positives is not implemented)" if multi else "")
                     + (f", but more than {SOURCES_MAX} sources" if len(sources) > SOURCES_MAX
                        else ""))
        return [_undecided(pattern, members, sel, base, tried, dim=dim, tau=tau)], None
    pairs = tuple((i, int(t[0])) for i, t in sources)
    return decs, Peeled(members, sel, dict(base, tried=tried), pairs)


def _undecided(pattern, members, sel, base, tried, *, dim, tau) -> ComponentDecision:
    evidence = None
    if members.size <= EVIDENCE_MAX_N:
        evidence = _numerical_evidence(pattern, members, sel, dim=dim, tau=tau)
        tried = [*tried, "numerical minimisation of the loss (evidence only)"]
    info = dict(base, tried=list(tried), evidence=evidence)
    return ComponentDecision(members, "undecided", "undecided", info, evidence=evidence,
                             tried=tuple(tried))


def _numerical_evidence(pattern: ZeroPattern, members: np.ndarray, sel: np.ndarray, *,
                        dim: int, tau: float) -> float:
    """The smallest entropic gap (per sample) a few L-BFGS runs reach on the component alone."""
    from scipy.optimize import minimize
    from scipy.special import logsumexp

    n = members.size
    loc = np.full(pattern.n, -1, dtype=np.int64)
    loc[members] = np.arange(n)
    L = np.full((n, n), -np.inf)
    L[loc[pattern.rows[sel]], loc[pattern.cols[sel]]] = pattern.logw[sel]
    logp = L - logsumexp(L, axis=1, keepdims=True)
    P = np.exp(logp)
    pos = np.isfinite(L)
    logp0 = np.where(pos, logp, 0.0)
    eye = np.eye(n, dtype=bool)

    def fg(x):
        Z = x.reshape(n, dim)
        diff = Z[:, None, :] - Z[None, :, :]
        S = -(diff**2).sum(axis=2) / (2.0 * tau)
        S[eye] = -np.inf
        logq = S - logsumexp(S, axis=1, keepdims=True)
        val = float(np.where(pos, P * (logp0 - np.where(pos, logq, 0.0)), 0.0).sum())
        Gm = np.exp(logq) - P
        Gm[eye] = 0.0
        M = Gm + Gm.T
        grad = -(M[:, :, None] * diff).sum(axis=1) / tau
        return val, grad.ravel()

    best = math.inf
    rng = np.random.default_rng(12345)
    for k in range(8):
        x0 = rng.standard_normal((n, dim)) * math.sqrt(tau) * (1.0 + 2.0 * k)
        if k % 2:  # nested scales: one random magnitude per sample
            x0 *= np.exp(rng.uniform(0.0, 4.0, size=(n, 1)))
        x0 = x0.ravel()
        res = minimize(fg, x0, jac=True, method="L-BFGS-B",
                       options={"maxiter": 2000, "gtol": 1e-14, "ftol": 1e-16})
        best = min(best, max(0.0, float(res.fun)) / n)
        if best < 1e-3 * EVIDENCE_THRESHOLD:
            break
    return best


# ----------------------------------------------------------------------------------------------
# the family's gap, the entry points
# ----------------------------------------------------------------------------------------------


def pattern_gap(pattern: ZeroPattern, Z: np.ndarray, tau: float) -> float:
    r""":math:`\sum_i \mathrm{KL}(p_i \| q_i)` of embeddings ``Z`` (Euclidean similarity), in
    log space, by blocks of rows (from exact coordinate differences).

    Examples
    --------
    >>> pat = ZeroPattern.from_pairs(3, np.array([0, 1, 1, 2]), np.array([1, 0, 2, 1]),
    ...                              np.zeros(4))
    >>> pattern_gap(pat, np.array([[0.0], [10.0], [20.0]]), 1.0) < 1e-12
    True
    """
    from scipy.special import logsumexp

    n = pattern.n
    starts = np.searchsorted(pattern.rows, np.arange(n + 1))
    # log p on the positive pairs, row by row (segment reductions)
    seg = np.maximum.reduceat(pattern.logw, starts[:-1])
    shifted = np.exp(pattern.logw - seg[pattern.rows])
    lse = seg + np.log(np.add.reduceat(shifted, starts[:-1]))
    logp = pattern.logw - lse[pattern.rows]
    p = np.exp(logp)
    total = 0.0
    for sl in row_blocks(n):
        rows = np.arange(sl.start, sl.stop)
        D = np.zeros((rows.size, n))
        for k in range(Z.shape[1]):
            D += (Z[rows, k][:, None] - Z[None, :, k]) ** 2
        S = -D / (2.0 * tau)
        S[np.arange(rows.size), rows] = -np.inf
        logq = S - logsumexp(S, axis=1, keepdims=True)
        a, b = starts[sl.start], starts[sl.stop]
        lq = logq[pattern.rows[a:b] - sl.start, pattern.cols[a:b]]
        total += float(p[a:b] @ (logp[a:b] - lq))
    return max(total, 0.0)


def _coefficients(pattern: ZeroPattern, comps, dim: int, offset: float, n_pow: int):
    """Z(t) of the components as a polynomial in 1/t: ``C[v, k]`` multiplies ``t^-(p_k)``,
    powers ``p = n_pow + 2, ..., 2, 1, 0, -1`` (component shift, X0 of a scaled family, a
    fixed block, Y), and the mask of the samples placed."""
    C = np.zeros((pattern.n, n_pow + 4, dim))
    placed = np.zeros(pattern.n, dtype=bool)
    top = n_pow  # index of the power 2
    for k, c in enumerate(comps):
        m = c.members
        C[m, top, 0] = offset * k
        if c.kind == "scaled":
            C[m, top + 1] = c.X0
            C[m, top + 3] = c.Y
        else:
            C[m, top + 2] = c.X0
        placed[m] = True
    return C, placed


def _exposing_direction(C: np.ndarray, placed: np.ndarray, j: int, hint: list[np.ndarray]):
    """A unit vector u with <u, z_j(t) - z_l(t)> positive at leading order for every placed
    l != j (lexicographically over the powers of 1/t), from a few candidates, or ``None``."""
    others = np.flatnonzero(placed)
    others = others[others != j]
    if others.size == 0:
        return np.eye(C.shape[2])[0]
    diff = C[j][None] - C[others]  # (l, power, dim)
    scale = float(np.abs(C[placed]).max(initial=1.0))
    dim = C.shape[2]
    cands = [*hint]
    for k in range(dim):
        e = np.zeros(dim)
        e[k] = 1.0
        cands += [e, -e]
    for q in range(C.shape[1]):
        v = C[j, q] - C[placed, q].mean(axis=0)
        if np.linalg.norm(v) > 1e-12 * scale:
            cands.append(v / np.linalg.norm(v))
    for u in cands:
        proj = diff @ u  # (l, power)
        nz = np.abs(proj) > 1e-9 * scale
        if not nz.any(axis=1).all():
            continue  # some l ties with j at every power
        lead = proj[np.arange(proj.shape[0]), nz.argmax(axis=1)]
        if (lead > 0).all():
            return u
    return None


def _place_sources(pattern, comps, peeled, dim: int, offset: float):
    """Each pure source i at z_j(t) + offset u / t^(3 + k) beyond its target j (placed in
    reverse peel order, k counting the sources placed before), or the first that cannot be
    placed."""
    order = [(i, j, pe) for pe in peeled for i, j in reversed(pe.sources)]
    if not order:
        return [], None
    C, placed = _coefficients(pattern, comps, dim, offset, len(order))
    out, direction = [], {}
    for k, (i, j, pe) in enumerate(order):
        hint = [direction[j]] if j in direction else []
        u = _exposing_direction(C, placed, j, hint)
        if u is None:
            return None, (i, j, pe)
        power = 3 + k
        C[i] = C[j]
        C[i, len(order) + 2 - power] += offset * u
        placed[i] = True
        direction[i] = u
        out.append({"sample": i, "target": j, "direction": u.tolist(), "radius": offset,
                    "power": power})
    return out, None


def _vanishing(gaps: list[float]) -> bool:
    """Gaps that decrease along the listed t until they are (numerically) zero: below
    ``GAP_ZERO``, rounding of the log-softmax dominates."""
    return gaps[-1] <= 1e-6 + 1e-3 * gaps[0] and all(
        b <= a * (1 + 1e-9) or b <= GAP_ZERO for a, b in itertools.pairwise(gaps))


def _source_of(peeled: tuple[Peeled, ...], i: int) -> tuple[int, int, Peeled]:
    """The peeled record and target of source ``i``."""
    pe = next(pe for pe in peeled if any(s == i for s, _ in pe.sources))
    return i, next(j for s, j in pe.sources if s == i), pe


def _family(pattern: ZeroPattern, comps: tuple[ComponentDecision, ...], dim: int, tau: float,
            peeled: tuple[Peeled, ...] = ()):
    """The whole family Z(t) and its gaps at a few t; ``sources`` is ``None`` when a pure
    source cannot be placed (then ``failed`` names it)."""
    diam = 1.0
    for c in comps:
        if c.X0 is not None and c.X0.size:
            diam = max(diam, float(np.ptp(c.X0, axis=0).max()))
        if c.Y is not None and c.Y.size:
            diam = max(diam, float(np.ptp(c.Y, axis=0).max()))
    offset = 4.0 * (diam + 1.0)
    slack = min([c.info.get("min_slack", 1.0) for c in comps if c.kind == "scaled"] + [1.0])
    slack = min(max(slack, 1e-6), 1.0)
    # t halves: the leakage onto the zero weights, ~exp(-slack / (2 tau t^2)), goes exp(-2),
    # exp(-8), exp(-32), ...; the O(t^2) error of the positive pairs costs O(t^4) in the gap
    ts = [math.sqrt(slack / (4.0 * tau)) / 2.0**k for k in range(5)]

    sources, failed = _place_sources(pattern, comps, peeled, dim, offset)
    if sources is None:
        return ts, [], offset, None, failed

    def Z(t: float) -> np.ndarray:
        out = np.zeros((pattern.n, dim))
        for k, c in enumerate(comps):
            if c.kind == "scaled":
                P = c.X0 / t + t * c.Y
            else:
                P = c.X0.copy()
            P[:, 0] += offset * k / t**2
            out[c.members] = P
        for src in sources:
            out[src["sample"]] = out[src["target"]] + (
                src["radius"] * np.asarray(src["direction"]) / t ** src["power"])
        return out

    gaps = [pattern_gap(pattern, Z(t), tau) for t in ts] if pattern.n <= GAP_MAX_N else []
    return ts, gaps, offset, sources, None


def classify_pattern(pattern: ZeroPattern, ctx: Context, *, seed: int = 0) -> Classification:
    """The verdict on a zero pattern (module docstring); the dense and the class-block paths
    both come here."""
    if ctx.similarity == "cosine":
        return rules.zero_weight_cosine(ctx, entry=pattern.first_zero, n_zero=pattern.n_zero)
    dec = decide_pattern(pattern, dim=ctx.dim, tau=ctx.tau, tol=ctx.tol, seed=seed)
    if dec.kind == "cycle":
        return rules.zero_cycle_broken(ctx, cycle=dec.cycle, log_ratio=dec.log_ratio,
                                       margin=dec.margin, n_zero=pattern.n_zero)
    if dec.kind == "order":
        return rules.zero_scale_order(ctx, cycle=dec.cycle, steps=dec.steps,
                                      n_zero=pattern.n_zero)
    comps = dec.components
    if dec.kind == "blocks":
        blocks = tuple({"members": c.info["members"], "c_max": c.info["c_max"] - ctx.shift,
                        "rank": c.info["rank"], "ok": True} for c in comps)
        margins = tuple(m for c in comps for m in c.margins)
        return rules.blocks_verdict(ctx, n_blocks=len(comps), failing=None, blocks=blocks,
                                    n_zero=pattern.n_zero, margins=margins)
    failing = next((c for c in comps if c.status == "obstructed"), None)
    if failing is not None:
        if failing.kind == "clique_rank" and all(c.kind in ("fixed", "clique_rank")
                                                 for c in comps) and \
                _all_cliques(pattern):
            return _blocks_failure(pattern, comps, ctx)
        return rules.zero_obstructed(ctx, component=failing, n_zero=pattern.n_zero)
    undecided = [c for c in comps if c.status == "undecided"]
    if undecided:
        return rules.zero_undecided(ctx, component=undecided[0], n_zero=pattern.n_zero,
                                    threshold=EVIDENCE_THRESHOLD)
    ts, gaps, offset, sources, failed = _family(pattern, comps, ctx.dim, ctx.tau, dec.peeled)
    if sources and gaps and not _vanishing(gaps):  # the placement's own check, never silent
        sources, failed = None, (*_source_of(dec.peeled, sources[-1]["sample"]),
                                 "the family's gap does not vanish at the listed t")
    if sources is None:
        i, j, pe, *why = failed
        why = why[0] if why else f"no direction found in which {j} is exposed"
        tried = [*pe.base["tried"], f"pure source {i} placed beyond its positive {j}: {why}"]
        base = {k: v for k, v in pe.base.items() if k != "tried"}
        comp = _undecided(pattern, pe.members, pe.sel, base, tried, dim=ctx.dim, tau=ctx.tau)
        return rules.zero_undecided(ctx, component=comp, n_zero=pattern.n_zero,
                                    threshold=EVIDENCE_THRESHOLD)
    return rules.zero_approached(ctx, components=comps, t=ts, gaps=gaps, offset=offset,
                                 n_zero=pattern.n_zero, sources=tuple(sources))


def _all_cliques(pattern: ZeroPattern) -> bool:
    """Whether the support is a union of complete blocks (symmetric)."""
    mutual, _, _ = _mutual(pattern)
    if not mutual.all():
        return False
    _n_comp, comp = connected_components(pattern.support(), directed=False)
    sizes = np.bincount(comp)
    per_row = np.bincount(pattern.rows, minlength=pattern.n)
    return bool((per_row == sizes[comp] - 1).all())


def _blocks_failure(pattern, comps, ctx) -> Classification:
    """Complete blocks with a block whose own target does not fit (as before)."""
    n_comp, comp = connected_components(pattern.support(), directed=False)
    by_vertex = np.argsort(comp, kind="stable")
    v_bounds = np.searchsorted(comp[by_vertex], np.arange(n_comp + 1))
    comp_rows = comp[pattern.rows]
    by_pair = np.argsort(comp_rows, kind="stable")
    p_bounds = np.searchsorted(comp_rows[by_pair], np.arange(n_comp + 1))
    order = sorted(range(n_comp), key=lambda k: int(by_vertex[v_bounds[k]]))
    done = {int(c.members[0]): c for c in comps}
    blocks, failing, margins = [], None, []
    for b, k in enumerate(order):
        idx = np.sort(by_vertex[v_bounds[k]:v_bounds[k + 1]])
        c = done.get(int(idx[0]))
        if c is None:  # not examined (after the first failing block): decide it now
            sel = np.sort(by_pair[p_bounds[k]:p_bounds[k + 1]])
            c = _clique(pattern, idx, sel, dim=ctx.dim, tau=ctx.tau, tol=ctx.tol,
                        base={"members": idx.tolist()})
        ok = c.kind == "fixed"
        blocks.append({"members": idx.tolist(), "c_max": c.info["c_max"] - ctx.shift,
                       "rank": c.info["rank"], "ok": ok})
        margins.extend(c.margins)
        if not ok and failing is None:
            failing = (b, f"needs dimension {c.info['rank']} > dim = {ctx.dim}")
    return rules.blocks_verdict(ctx, n_blocks=n_comp, failing=failing, blocks=tuple(blocks),
                                n_zero=pattern.n_zero, margins=tuple(margins))


def classify_zeros(weights: LogWeights, ctx: Context) -> Classification:
    """The verdict on a dense weighting with zero weights (see :func:`classify_pattern`)."""
    if ctx.similarity == "cosine":
        return rules.zero_weight_cosine(ctx, entry=weights.first_zero, n_zero=weights.n_zero)
    return classify_pattern(ZeroPattern.from_log_weights(weights), ctx)



# ----------------------------------------------------------------------------------------------
# sparse input: decided on the graph, never densified
# ----------------------------------------------------------------------------------------------


def sparse_pattern(W: object, name: str = "W") -> tuple[ZeroPattern, float, float,
                                                         tuple[str, ...]] | None:
    r"""A sparse weighting (``scipy.sparse`` or a networkx graph) with zero weights, validated
    and canonicalised without an ``N x N`` array: ``(pattern, entropic bound, shift,
    warnings)``; ``None`` when ``W`` is not sparse or has no zero weight off the diagonal (the
    dense path then decides it).

    The checks and the canonical log-weights are those of
    :func:`dgp.engine.target.log_weights` (missing and explicit zeros are zero weights, the
    diagonal is ignored, logarithms from mantissa and exponent).

    Raises
    ------
    ParameterError
        If the matrix is not square with at least 2 rows, an entry off the diagonal is not
        finite or is negative, or a row has no positive weight off the diagonal.
    """
    from dgp.engine.target import graph_weights, is_graph
    from dgp.errors import ParameterError, ParameterTypeError

    if is_graph(W):
        W = graph_weights(W, name)
    if not sp.issparse(W):
        return None
    shape = W.shape
    if len(shape) != 2 or shape[0] != shape[1] or shape[0] < 2:
        raise ParameterError(name, f"must be a square N x N matrix with N >= 2, got shape "
                             f"{shape}")
    coo = sp.coo_matrix(W)
    if coo.dtype.kind not in "biuf":
        raise ParameterTypeError(name, f"must hold real numbers, got dtype {coo.dtype}")
    n = int(shape[0])
    r, c = coo.row.astype(np.int64), coo.col.astype(np.int64)
    v = coo.data.astype(np.float64)
    off = r != c
    r, c, v = r[off], c[off], v[off]
    bad = ~np.isfinite(v)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ParameterError(name, f"[{r[k]}, {c[k]}] is {v[k]}; all weights must be finite")
    if (v < 0).any():
        k = int(np.flatnonzero(v < 0)[0])
        raise ParameterError(name, f"[{r[k]}, {c[k]}] = {v[k]:g} is negative; weights must be "
                             ">= 0")
    pos = v > 0
    r, c, v = r[pos], c[pos], v[pos]
    key = r * n + c
    if np.unique(key).size != key.size:  # duplicate entries of a COO matrix add up
        csr = sp.csr_matrix((v, (r, c)), shape=(n, n))
        csr.sum_duplicates()
        coo2 = csr.tocoo()
        r, c, v = coo2.row.astype(np.int64), coo2.col.astype(np.int64), coo2.data
    counts = np.bincount(r, minlength=n)
    if (counts == 0).any():
        i = int(np.flatnonzero(counts == 0)[0])
        raise ParameterError(name, f"row {i} has no positive weight off the diagonal; every "
                             "anchor needs at least one positive weight")
    if r.size == n * (n - 1):
        return None
    notes: list[str] = []
    u = float(np.finfo(float).eps)
    if coo.dtype.kind == "f" and coo.dtype.itemsize < 8:
        u = float(np.finfo(coo.dtype).eps)
        notes.append(f"{name} is {coo.dtype}: its tolerances are those of {coo.dtype} (unit "
                     f"roundoff {u:.2g})")
    top = float(v.max())
    m_max, e_max = np.frexp(np.float64(top))
    m, e = np.frexp(v)
    logw = np.log(m) - math.log(float(m_max)) + (e - int(e_max)) * math.log(2.0)
    shift = math.log(float(m_max)) + int(e_max) * math.log(2.0)
    pattern = ZeroPattern.from_pairs(n, r, c, logw, unit_roundoff=u)
    return pattern, _pattern_bound(pattern), shift, tuple(notes)


def _pattern_bound(pattern: ZeroPattern) -> float:
    r""":math:`\sum_i H(p_i)` of a pattern, in log space (segment reductions over rows)."""
    starts = np.searchsorted(pattern.rows, np.arange(pattern.n + 1))
    seg = np.maximum.reduceat(pattern.logw, starts[:-1])
    x = pattern.logw - seg[pattern.rows]
    e = np.exp(x)
    tot = np.add.reduceat(e, starts[:-1])
    H = np.log(tot) - np.add.reduceat(e * x, starts[:-1]) / tot
    return float(H.sum())


def classify_sparse(W: object, *, similarity: str, tau: float, dim: int, tol_rtol: float,
                    method: str, dense_up_to: int = 1) -> Classification | None:
    """Classify a sparse weighting with zero weights on its graph (no ``N x N`` array);
    ``None`` when it is not one (see :func:`sparse_pattern`) or has at most ``dense_up_to``
    samples (the dense path then decides it, with what it adds for small N)."""
    import warnings

    from dgp.errors import DgpWarning

    shape = getattr(W, "shape", None)
    if shape is not None and len(shape) == 2 and shape[0] <= dense_up_to:
        return None
    if hasattr(W, "number_of_nodes") and W.number_of_nodes() <= dense_up_to:
        return None
    found = sparse_pattern(W)
    if found is None:
        return None
    pattern, bound, shift, notes = found
    for note in notes:
        warnings.warn(note, DgpWarning, stacklevel=3)
    tol = Tolerance.make(tol_rtol, n=pattern.n, unit_roundoff=pattern.unit_roundoff)
    ctx = Context(similarity=similarity, tau=tau, dim=dim, n=pattern.n, tol=tol,
                  method=method, entropic_bound=bound, shift=shift, warnings=notes)
    return classify_pattern(pattern, ctx)
