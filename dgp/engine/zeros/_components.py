"""The decision on one support component: a symmetric one (complete block, line, simplex,
obstruction, construction) or one with one-way weights (its pure sources peeled)."""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from dgp.engine._reduction_base import Located, LogShift
from dgp.engine.dense import DenseEuclideanSpectrum
from dgp.engine.family import euclidean_family
from dgp.engine.target import LogWeights, log_target
from dgp.engine.zeros._obstructions import find_obstruction, obstructed
from dgp.engine.zeros._pattern import LIST_MAX_N, ComponentDecision, Peeled, ZeroPattern
from dgp.engine.zeros._rigidity import scaled_family, simplex_start
from dgp.engine.zeros._search import construct, undecided_component
from dgp.engine.zeros._split import Component
from dgp.tolerance import Tolerance

#: largest component the numerical constructor of X0 is run on
CONSTRUCT_MAX_N = 3000
#: most pure sources one family places (the k-th placed sits at distance ~ t^-(3 + k))
SOURCES_MAX = 16


def _local_edges(pattern: ZeroPattern, part: Component, psi: np.ndarray, tau: float):
    """Undirected edges (local indices, i < j) of a symmetric component and their
    :math:`\\delta_{ij} = -2\\tau(L_{ij} - \\psi_i)` (symmetric under the cycle condition)."""
    sel = part.sel
    r, c = pattern.rows[sel], pattern.cols[sel]
    keep = r < c  # the local numbering keeps the order (members ascending)
    r, c = r[keep], c[keep]
    ell_ij = pattern.logw[sel][keep] - psi[r]
    ell_ji = pattern.lookup(c, r) - psi[c]
    delta = -tau * (ell_ij + ell_ji)  # -2 tau times their mean (equal within tolerance)
    lr, lc = part.local
    return np.stack([lr[keep], lc[keep]], axis=1), delta


def symmetric_component(pattern, part: Component, psi, *, dim, tau, tol, rng,
                         open_block: bool = False) -> ComponentDecision:
    """The decision on a component whose positive weights are all mutual (its samples
    numbered ``0..n_c - 1`` within ``part``; what it reports is lifted by ``part.lift``)."""
    import networkx as nx

    members = part.members
    n_c = members.size
    E, delta = _local_edges(pattern, part, psi, tau)
    m = E.shape[0]
    base = {"members": members.tolist(), "size": int(n_c), "positive_pairs": int(m)}
    if m == n_c * (n_c - 1) // 2:
        return clique(pattern, part, dim=dim, tau=tau, tol=tol, base=base,
                       open_block=open_block)
    G = nx.Graph()
    G.add_nodes_from(range(n_c))
    G.add_edges_from(E.tolist())
    glob = part.lift
    if dim == 1:
        deg = np.bincount(E.ravel(), minlength=n_c)
        if deg.max() > 2:
            v = int(np.argmax(deg))
            nb = sorted(G[v])[:3]
            return obstructed(base, "line", glob([v, *nb]), {
                "reason": "three samples at unit distance from one sample of a line: two of "
                "them coincide, yet every pair of distinct samples is at least 1 apart"})
        if m != n_c - 1:
            cyc = [u for u, _ in nx.find_cycle(G)]
            return obstructed(base, "line", glob(cyc), {
                "reason": "a closed walk of unit steps on a line revisits a point, yet distinct "
                "samples are at least 1 apart"})
        ends = [v for v in range(n_c) if deg[v] == 1]
        order = nx.shortest_path(G, ends[0], ends[1])
        X0 = np.zeros((n_c, 1))
        X0[order, 0] = np.arange(n_c, dtype=float)
        return scaled_family(base, "path", X0, E, delta, tol, tau)
    if n_c <= dim + 1:
        X0 = simplex_start(E, n_c, dim)
        return scaled_family(base, "simplex", X0, E, delta, tol, tau)
    obs = find_obstruction(G, E, delta, dim=dim, tau=tau, tol=tol)
    if obs is not None:
        name, vs, detail, margins = obs
        return obstructed(base, name, glob(vs), detail, margins)
    tried = ["line/simplex rules", "clique, kissing, planar neighbourhood, wheel, common "
             "neighbours and packing obstructions"]
    if n_c <= CONSTRUCT_MAX_N:
        found = construct(E, n_c, dim, delta, rng, tol=tol, tau=tau)
        if found is not None:
            return scaled_family(base, "construction", found, E, delta, tol, tau)
        tried.append("numerical search for X0 (unit positive pairs, every other pair > 1, "
                     "log-ratios in the image of the rigidity map)")
    return undecided_component(pattern, part, base, tried, dim=dim, tau=tau, tol=tol)


def clique(pattern, part: Component, *, dim, tau, tol, base,
            open_block: bool = False) -> ComponentDecision:
    """A complete block: its own family D(c), c <= c_max (exact). ``open_block``: where
    ``dim >= n - 1``, the configuration at ``c = c_max - 1`` (distinct points, a
    non-degenerate simplex: every sample exposed, for the pure sources placed beyond it)."""
    members, sel = part.members, part.sel
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
    L[part.local] = pattern.logw[sel]
    shift = LogShift()
    sub, back = shift.apply(L)  # the block's own canonical log-weights
    sub = LogWeights(sub.L, sub.shift, sub.symmetric, 0, None, pattern.unit_roundoff, ())
    stol = Tolerance(tol.rtol, tol.unit_roundoff, n_c)
    tgt = log_target(sub, stol)
    fam = euclidean_family(DenseEuclideanSpectrum(tgt), tau=tau, tol=stol)
    end = fam.hi

    def pattern_c(c: float) -> float:  # the block's constant in the pattern's convention
        return shift.invert(Located(c=c), back).c

    info = dict(base, c_max=pattern_c(end.c), rank=end.rank)
    if end.rank > dim:
        info.update(reason=f"a complete block: its targets D(c), c <= c_max, have rank at least "
                    f"{end.rank} > dim = {dim}")
        return ComponentDecision(members, "obstructed", "clique_rank", info,
                                 margins=tuple(fam.margins), vertices=tuple(members.tolist()))
    if opened:
        X = fam.embed(end.c - 1.0, n_c - 1)
        info.update(c=pattern_c(end.c - 1.0), rank=n_c - 1)
    else:
        X = fam.embed(end.c, end.rank) if end.rank else np.zeros((n_c, 0))
    X0 = np.zeros((n_c, dim))
    X0[:, : X.shape[1]] = X
    if n_c <= LIST_MAX_N:
        info["X0"] = X0.tolist()
    return ComponentDecision(members, "approached", "fixed", info, X0=X0,
                             margins=tuple(fam.margins))


def _peel(part: Component):
    """Peel pure sources (samples no remaining sample gives positive weight to), repeatedly.

    Returns the sources in peel order as ``(i, positives of i)`` (original samples) and the
    core as a sub-problem of ``part``. Every positive of a core sample is in the core (a sample
    is peeled only when no remaining sample weights it)."""
    members = part.members
    n_c = members.size
    r, c = part.local
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
    return sources, part.part(alive, part.sel[alive[r]])


def asymmetric_component(pattern, part: Component, mutual, psi, *, dim, tau, tol, rng):
    """A component with one-way weights: its pure sources peeled, the symmetric core decided.

    The core is necessary (``proofs/t22_zero_patterns.py``): restricted to the core, an
    approaching family approaches the core's pattern, so an obstruction of the core decides
    the component. When every source has one positive and the core is approached, the sources
    are placed beyond their targets (:mod:`dgp.engine.zeros._families`). Returns the decisions
    and the :class:`Peeled` record (``None`` unless sources wait to be placed)."""
    members, sel = part.members, part.sel
    base = {"members": members.tolist(), "size": int(members.size),
            "positive_pairs": int(sel.size), "one_way_pairs": int((~mutual[sel]).sum())}
    tried = ["mutual cycle condition and scale order (both hold)"]
    sources, core = _peel(part)
    if not sources or (~mutual[core.sel]).any():
        if sources:
            tried.append(f"peeled {len(sources)} pure sources (samples no other sample "
                         "weights); the rest still has one-way weights")
        return [undecided_component(pattern, part, base, tried, dim=dim, tau=tau,
                                    tol=tol)], None
    n_core = core.members.size
    r, c = core.local
    sub = sp.csr_matrix((np.ones(r.size, dtype=np.int8), (r, c)), shape=(n_core, n_core))
    n_sub, lab = connected_components(sub, directed=False)
    decs = []
    for k in sorted(range(n_sub), key=lambda k: int(np.flatnonzero(lab == k)[0])):
        dec = symmetric_component(pattern, core.part(lab == k, core.sel[lab[r] == k]), psi,
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
        return [undecided_component(pattern, part, base, tried, dim=dim, tau=tau,
                                    tol=tol)], None
    pairs = tuple((i, int(t[0])) for i, t in sources)
    return decs, Peeled(members, sel, dict(base, tried=tried), pairs)
