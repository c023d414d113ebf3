"""Obstructions of a symmetric component in dimension ``d``: clique, kissing number,
planar neighbourhood and wheel rules, common neighbours, packing."""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from dgp.engine.zeros._pattern import ComponentDecision

#: the kissing numbers known exactly (the most unit vectors pairwise at least 60 degrees apart):
#: Newton/Schütte–van der Waerden (3), Musin (4), Odlyzko–Sloane and Levenshtein (8, 24)
KISSING_NUMBERS = {1: 2, 2: 6, 3: 12, 4: 24, 8: 240, 24: 196560}
#: relative rounding allowed for in a cap count (scipy's incomplete beta is accurate to ~1e-15)
CAP_ROUNDING = 1e-12


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
    return _cap_count(frac), "cap bound"


def _circle_code_bound(d: int) -> int:
    """Most points pairwise >= 1 apart on a (d-2)-sphere of radius <= sqrt(3)/2 (common unit
    neighbours of two points at distance >= 1 in R^d): caps of angular radius
    arcsin(1/sqrt 3) are disjoint (exact count 5 on a circle, d = 3)."""
    if d == 3:
        return 5
    from scipy.special import betainc

    frac = 0.5 * float(betainc(0.5 * (d - 2), 0.5, 1.0 / 3.0))
    return _cap_count(frac)


def _cap_count(frac: float) -> int:
    """Most disjoint caps of area fraction ``frac`` (the floor of its inverse, kept from falling
    one short by the rounding of the incomplete beta function)."""
    return math.floor(1.0 / frac * (1 + CAP_ROUNDING))


def obstructed(base, name, vertices, detail, margins=()) -> ComponentDecision:
    info = dict(base, obstruction=name, vertices=list(vertices), **detail)
    return ComponentDecision(np.asarray(base["members"]), "obstructed", name, info,
                             margins=tuple(margins), vertices=tuple(vertices))


def find_obstruction(G, E, delta, *, dim, tau, tol):
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
            atol = tol.delta_atol(delta, tau, terms=12)
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
