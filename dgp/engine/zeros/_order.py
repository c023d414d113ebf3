"""The two combinatorial decisions: the cycle condition on the mutual graph and the scale
order of the one-way weights."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from dgp.engine.zeros._pattern import ZeroPattern
from dgp.tolerance import Tolerance


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


def potentials(pattern: ZeroPattern, mutual: np.ndarray, rev: np.ndarray, tol: Tolerance):
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


def scale_order(pattern: ZeroPattern, mutual: np.ndarray, label: np.ndarray):
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
