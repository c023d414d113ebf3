"""Euclidean zero-weight patterns: graph families with their certificates re-checked, graph and
sparse input, the class-block path, the CLI, and the k-NN builder.

Certificates are re-checked with code independent of the engine: losses from their definition,
neighbourhoods and cycles from the weight matrix.
"""

from __future__ import annotations

import itertools
import math

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import dgp
from dgp import strategies as ds
from dgp.engine.blocks import classify_blocks
from dgp.weights import knn_weights

EUC = {"similarity": "euclidean", "tau": 0.7}


def gap(Z: np.ndarray, W: np.ndarray, tau: float) -> float:
    """sum_i KL(p_i || q_i) from the definition, row by row (zero weights contribute 0)."""
    n = W.shape[0]
    total = 0.0
    for i in range(n):
        others = [j for j in range(n) if j != i]
        s = np.array([-((Z[i] - Z[j]) ** 2).sum() / (2 * tau) for j in others])
        logq = s - (s.max() + math.log(np.exp(s - s.max()).sum()))
        w = np.array([W[i, j] for j in others])
        p = w / w.sum()
        keep = p > 0
        total += float((p[keep] * (np.log(p[keep]) - logq[keep])).sum())
    return total


def rebuild_family(cert: dict, n: int, dim: int):
    """Z(t) from the certificate alone."""
    def Z(t):
        out = np.zeros((n, dim))
        for k, c in enumerate(cert["components"]):
            X0 = np.array(c["X0"], float).reshape(len(c["members"]), dim)
            P = X0 / t + t * np.array(c["Y"]).reshape(X0.shape) if "Y" in c else X0.copy()
            P[:, 0] += cert["offset_scale"] * k / t**2
            out[c["members"]] = P
        for src in cert["sources"]:  # pure sources, beyond their one positive, in order
            out[src["sample"]] = out[src["target"]] + (
                src["radius"] * np.array(src["direction"]) / t ** src["power"])
        return out
    return Z


def check_family(res, W, dim):
    """The family of a degenerate verdict: the listed gaps are the loss's, and they vanish."""
    cert = res.to_dict()["certificate"]
    assert res.verdict == "degenerate" and cert["kind"] == "diverging_family" and cert["decided"]
    Z = rebuild_family(cert, W.shape[0], dim)
    gaps = [gap(Z(t), W, res.tau) for t in cert["t"]]
    assert np.allclose(gaps, cert["gaps"], rtol=1e-6, atol=1e-12)
    assert gaps[-1] < 1e-6 * max(1.0, gaps[0]) + 1e-9
    norms = [np.abs(Z(t)).max() for t in cert["t"]]
    assert norms[-1] > 8 * norms[0]  # the family diverges


def check_obstruction(res, W, name):
    cert = res.to_dict()["certificate"]
    assert res.verdict == "inconsistent" and cert["kind"] == "zero_obstruction"
    assert cert["obstruction"] == name and cert["decided"], res.reason
    return cert


# --- graph families ---------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 7, 30])
def test_paths_are_approached_in_every_dimension(n):
    W = nx.to_numpy_array(nx.path_graph(n))
    if n == 2:  # complete: attained by itself, no zero weight
        assert dgp.classify(W, dim=1, **EUC).verdict == "degenerate"
        return
    for dim in (1, 2):
        check_family(dgp.classify(W, dim=dim, **EUC), W, dim)


def test_weighted_path_solves_its_log_ratios():
    rng = np.random.default_rng(0)
    A = nx.to_numpy_array(nx.path_graph(6))
    L = np.triu(rng.uniform(-2, 2, (6, 6)), 1)
    W = A * np.exp(L + L.T)
    check_family(dgp.classify(W, dim=1, **EUC), W, 1)


def test_row_rescaled_weights_use_their_potentials():
    """W = diag(a) S on a symmetric support: the same rows p_i as S, so the same problem; the
    family is built from the potentials of the mutual cycle condition."""
    rng = np.random.default_rng(11)
    A = nx.to_numpy_array(nx.cycle_graph(6))
    L = np.triu(rng.uniform(-1, 1, (6, 6)), 1)
    S = A * np.exp(L + L.T)
    W = rng.uniform(0.1, 10, 6)[:, None] * S
    assert not np.allclose(W, W.T)
    for dim in (1, 2):
        a, b = dgp.classify(S, dim=dim, **EUC), dgp.classify(W, dim=dim, **EUC)
        assert a.verdict == b.verdict
    check_family(dgp.classify(W, dim=2, **EUC), W, 2)


@pytest.mark.parametrize("k, dim, verdict", [
    (3, 1, "inconsistent"), (3, 2, "degenerate"), (5, 2, "degenerate"), (6, 2, "inconsistent"),
    (7, 2, "inconsistent"), (6, 3, "degenerate"), (13, 3, "inconsistent"),
])
def test_stars(k, dim, verdict):
    W = nx.to_numpy_array(nx.star_graph(k))
    res = dgp.classify(W, dim=dim, **EUC)
    assert res.verdict == verdict, res.reason
    if verdict == "degenerate":
        check_family(res, W, dim)
    else:
        cert = res.to_dict()["certificate"]
        hub_degree = int((W[0] > 0).sum())
        expected = {1: "line", 2: "planar_neighbourhood" if k <= 6 else "kissing",
                    3: "kissing"}[dim]
        check_obstruction(res, W, expected)
        assert cert["vertices"][0] == 0 and hub_degree == k


@pytest.mark.parametrize("n", [4, 5, 9, 16])
def test_cycles(n):
    W = nx.to_numpy_array(nx.cycle_graph(n))
    cert = check_obstruction(dgp.classify(W, dim=1, **EUC), W, "line")
    cyc = cert["vertices"]
    assert all(W[a, b] > 0 for a, b in zip(cyc, cyc[1:] + cyc[:1], strict=True))
    for dim in (2, 3):
        check_family(dgp.classify(W, dim=dim, **EUC), W, dim)


def test_trees():
    rng = np.random.default_rng(1)
    for seed in range(3):
        T = nx.random_labeled_tree(12, seed=seed) if hasattr(nx, "random_labeled_tree") else \
            nx.random_tree(12, seed=seed)
        W = nx.to_numpy_array(T, nodelist=range(12))
        deg = W.sum(axis=1)
        res = dgp.classify(W, dim=1, **EUC)
        assert res.verdict == ("degenerate" if deg.max() <= 2 else "inconsistent")
        for dim in (2, 3):
            res = dgp.classify(W, dim=dim, **EUC)
            if res.to_dict()["certificate"]["kind"] == "diverging_family":
                check_family(res, W, dim)
            else:  # only a neighbourhood too crowded for the plane
                assert dim == 2 and deg.max() >= 6
    # a complete binary tree of depth 7 cannot fit in the plane: 255 samples within 7 steps
    B = nx.to_scipy_sparse_array(nx.balanced_tree(2, 7))
    res = dgp.classify(B, dim=2, **EUC)
    cert = res.to_dict()["certificate"]
    assert res.verdict == "inconsistent" and cert["obstruction"] == "packing"
    h, v = cert["detail"]["steps"], cert["detail"]["centre"]
    ball = nx.single_source_shortest_path_length(nx.balanced_tree(2, 7), v, cutoff=h)
    assert len(ball) > (2 * h + 1) ** 2
    del rng


@pytest.mark.parametrize("parts, dim, verdict, name", [
    ((2, 2), 2, "degenerate", None),                  # the 4-cycle
    ((2, 3), 2, "inconsistent", "common_neighbours"),  # two unit circles meet twice
    ((2, 3), 3, "degenerate", None),
    ((3, 3), 3, "inconsistent", "common_neighbours"),  # three unit spheres meet twice
    ((2, 2, 2), 2, "inconsistent", "planar_neighbourhood"),
    ((2, 2, 2), 3, "degenerate", None),               # the regular octahedron
    ((3, 1, 1), 2, "inconsistent", "planar_neighbourhood"),
])
def test_complete_multipartite(parts, dim, verdict, name):
    W = nx.to_numpy_array(nx.complete_multipartite_graph(*parts))
    res = dgp.classify(W, dim=dim, **EUC)
    assert res.verdict == verdict, res.reason
    if verdict == "degenerate":
        check_family(res, W, dim)
    else:
        cert = check_obstruction(res, W, name)
        vs = cert["vertices"]
        if name == "common_neighbours":
            centres, common = cert["detail"]["centres"], cert["detail"]["common"]
            assert all(W[c, s] > 0 for c in centres for s in common[:3])
        if name == "planar_neighbourhood":
            assert vs[0] == cert["detail"]["hub"]


def test_too_many_pairwise_positive_samples():
    G = nx.complete_graph(5)
    G.add_edge(4, 5)  # K5 and a pendant sample: not complete, so one diverging scale
    W = nx.to_numpy_array(G)
    cert = check_obstruction(dgp.classify(W, dim=3, **EUC), W, "simplex")
    assert all(W[a, b] > 0 for a, b in itertools.combinations(cert["vertices"], 2))
    check_family(dgp.classify(W, dim=4, **EUC), W, 4)


def test_wheel_needs_its_stress_to_vanish():
    """The hexagonal wheel is approached in the plane only if its rim and spoke log-ratio terms
    cancel (uniform weights: yes; one rim weight changed: no)."""
    G = nx.wheel_graph(7)  # hub 0, rim 1..6
    W = nx.to_numpy_array(G)
    check_family(dgp.classify(W, dim=2, **EUC), W, 2)
    W2 = W.copy()
    W2[1, 2] = W2[2, 1] = 2.0
    res = dgp.classify(W2, dim=2, **EUC)
    cert = check_obstruction(res, W2, "wheel_stress")
    tau = res.tau
    rim = sum(-2 * tau * math.log(W2[a, b]) for a, b in nx.cycle_graph(range(1, 7)).edges())
    spokes = sum(-2 * tau * math.log(W2[0, u]) for u in range(1, 7))
    assert cert["detail"]["defect"] == pytest.approx(rim - spokes, abs=1e-12)


def test_random_knn_graphs():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 2))
    W = knn_weights(X, 6)
    dense = W.toarray()
    for dim in (2, 3):
        res = dgp.classify(W, dim=dim, **EUC)
        cert = res.to_dict()["certificate"]
        assert res.verdict == "inconsistent" and cert["decided"], res.reason
        vs, det = cert["vertices"], cert["detail"]
        if cert["obstruction"] == "kissing":
            assert (dense[vs[0]] > 0).sum() > {2: 6, 3: 12}[dim]
        elif cert["obstruction"] == "simplex":
            assert len(vs) == dim + 2
            assert all(dense[a, b] > 0 for a, b in itertools.combinations(vs, 2))
        elif cert["obstruction"] == "common_neighbours":
            assert all(dense[c, s] > 0 for c in det["centres"] for s in det["common"][:3])
            assert len(det["centres"]) == dim
        else:
            assert dim == 2 and cert["obstruction"] == "planar_neighbourhood"
    directed = knn_weights(X, 6, symmetrize="none")
    res = dgp.classify(directed, dim=8, **EUC)
    cert = res.to_dict()["certificate"]
    assert cert["kind"] == "scale_order"
    D = directed.toarray()
    for (a, b), step in zip(itertools.pairwise(cert["cycle"]), cert["steps"], strict=True):
        assert D[a, b] > 0 and (D[b, a] > 0) == (step == "mutual")


# --- combinatorial obstructions and undecided patterns -----------------------------------------


def test_broken_mutual_cycle_reports_a_checkable_cycle():
    rng = np.random.default_rng(2)
    W = nx.to_numpy_array(nx.cycle_graph(5)) * rng.uniform(0.5, 2.0, (5, 5))
    res = dgp.classify(W, dim=3, **EUC)
    cert = res.to_dict()["certificate"]
    assert res.verdict == "inconsistent" and cert["kind"] == "cycle"
    cyc = cert["cycle"]
    r = sum(math.log(W[a, b] / W[b, a]) for a, b in itertools.pairwise(cyc))
    assert r == pytest.approx(cert["log_ratio"], rel=1e-9)


def test_pure_sources_are_placed_beyond_their_positive():
    # 0 <-> 1, 2 -> 0 and 3 -> 2 one way: 3 and then 2 are weighted by nobody (pure sources);
    # 2 sits beyond 0 (0 exposed away from 1), 3 beyond 2, on a line
    W = np.array([[0, 1, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0], [0, 0, 2.0, 0]])
    for dim in (1, 2):
        res = dgp.classify(W, dim=dim, **EUC)
        check_family(res, W, dim)
        src = res.to_dict()["certificate"]["sources"]
        assert [(s["sample"], s["target"]) for s in src] == [(2, 0), (3, 2)]
        assert src[1]["power"] > src[0]["power"] >= 3
    # a hub with a pure source on each of three leaves of a plane star: each leaf is exposed
    G = nx.star_graph(3)
    W = np.zeros((7, 7))
    W[:4, :4] = nx.to_numpy_array(G)
    for leaf, src in zip((1, 2, 3), (4, 5, 6), strict=True):
        W[src, leaf] = 1.0
    check_family(dgp.classify(W, dim=2, **EUC), W, 2)


def test_a_placement_whose_gap_does_not_vanish_is_not_reported(monkeypatch):
    """The placement of pure sources is checked by its own gaps: if they stayed at 0.5 nats the
    engine would report the pattern undecided, never a family."""
    import dgp.engine.zeros._families as zeros

    W = np.array([[0, 1, 0], [1, 0, 0], [1, 0, 0.0]])
    assert dgp.classify(W, dim=1, **EUC).to_dict()["certificate"]["kind"] == "diverging_family"
    monkeypatch.setattr(zeros, "pattern_gap", lambda pattern, Z, tau: 0.5)
    cert = dgp.classify(W, dim=1, **EUC).to_dict()["certificate"]
    assert cert["kind"] == "zero_undecided" and cert["decided"] is False
    assert any("does not vanish" in t for t in cert["tried"])


def test_pure_sources_keep_the_obstruction_of_their_core():
    # a star with three leaves is not approached on a line; a pure source does not change it
    W = np.zeros((5, 5))
    W[:4, :4] = nx.to_numpy_array(nx.star_graph(3))
    W[4, 1] = 1.0
    res = dgp.classify(W, dim=1, **EUC)
    cert = check_obstruction(res, W, "line")
    assert 4 not in cert["vertices"]


def test_undecided_patterns_say_so():
    # 0 <-> 1 and 2 -> 0, 2 -> 1: a pure source with two positives (its place would need the
    # pair 0-1 as an exposed face with their log-ratio): not decided, numerical verdict
    W = np.array([[0, 1, 0], [1, 0, 0], [1, 2, 0.0]])
    res = dgp.classify(W, dim=1, **EUC)
    cert = res.to_dict()["certificate"]
    assert cert["kind"] == "zero_undecided" and cert["decided"] is False
    assert res.reason.startswith("not decided exactly")
    assert any("several positives" in t for t in cert["tried"])
    assert res.verdict == ("degenerate" if cert["evidence"] < cert["evidence_threshold"]
                           else "inconsistent")
    assert cert["evidence"] < 1e-6  # 0 and 1 collapse, 2 far: approached


@settings(max_examples=60)
@given(W=ds.weights_with_zeros(n=(3, 7), symmetric=False), dim=st.integers(1, 4),
       tau=ds.temperatures(0.05, 2.0))
def test_every_zero_pattern_gets_a_verdict(W, dim, tau):
    """No NotImplementedError (nor any other exception) for a valid W; never attained."""
    res = dgp.classify(W, similarity="euclidean", tau=tau, dim=dim)
    assert res.verdict in ("degenerate", "inconsistent") and not res.attainable
    cos = dgp.classify(W, similarity="cosine", tau=tau, dim=dim)
    assert cos.verdict == "inconsistent" and cos.certificate.kind == "zero_weight"


# --- input: graphs, sparse matrices ------------------------------------------------------------


def test_networkx_graphs_are_weightings():
    G = nx.Graph()
    G.add_edge("a", "b", weight=2.0)
    G.add_edge("b", "c")  # weight 1
    G.add_edge("c", "d", weight=0.5)
    W = np.zeros((4, 4))
    W[0, 1] = W[1, 0] = 2.0
    W[1, 2] = W[2, 1] = 1.0
    W[2, 3] = W[3, 2] = 0.5
    for dim in (1, 2):
        a, b = dgp.classify(G, dim=dim, **EUC), dgp.classify(W, dim=dim, **EUC)
        assert a.verdict == b.verdict and a.reason == b.reason
    assert dgp.infonce.entropic_bound(G) == pytest.approx(dgp.infonce.entropic_bound(W))
    Z = np.arange(8.0).reshape(4, 2) ** 2
    assert dgp.metrics.entropic_gap(Z, G, tau=0.7, similarity="euclidean") == \
        pytest.approx(dgp.metrics.entropic_gap(Z, W, tau=0.7, similarity="euclidean"))
    D = nx.DiGraph([(0, 1), (1, 0), (2, 0)])
    res = dgp.classify(D, dim=1, **EUC)
    Wd = np.array([[0, 1, 0], [1, 0, 0], [1, 0, 0.0]])
    assert res.verdict == dgp.classify(Wd, dim=1, **EUC).verdict
    with pytest.raises(TypeError, match="multigraph"):
        dgp.classify(nx.MultiGraph([(0, 1), (0, 1)]), dim=1, **EUC)
    with pytest.raises(ValueError, match="row 2"):
        dgp.classify(nx.DiGraph([(0, 1), (1, 0), (1, 2)]), dim=1, **EUC)


@pytest.mark.slow
def test_sparse_input_is_decided_on_its_graph(monkeypatch):
    """A 12000-sample k-NN graph in a 64 MB budget: the dense path would need 1.2 GB."""
    rng = np.random.default_rng(4)
    W = knn_weights(rng.normal(size=(12_000, 2)), 8)
    monkeypatch.setenv("DGP_MEMORY_LIMIT", "64M")
    res = dgp.classify(W, dim=2, **EUC)
    assert res.verdict == "inconsistent" and res.n == 12_000
    with pytest.raises(ValueError, match=r"memory|fit"):
        dgp.classify(W.toarray(), dim=2, **EUC)


def test_sparse_dense_and_graph_agree():
    rng = np.random.default_rng(5)
    for k, sym in ((3, "mean"), (2, "union"), (3, "none")):
        W = knn_weights(rng.normal(size=(40, 3)), k, symmetrize=sym, kernel="gaussian")
        for dim in (1, 3):
            a = dgp.classify(W, dim=dim, **EUC)
            b = dgp.classify(W.toarray(), dim=dim, **EUC)
            assert (a.verdict, a.certificate.kind) == (b.verdict, b.certificate.kind)
            assert a.entropic_bound == pytest.approx(b.entropic_bound, rel=1e-12)
            if a.certificate.kind != "zero_undecided":
                assert a.reason == b.reason


def test_class_block_path_matches_dense():
    labels = np.repeat(np.arange(3), [2, 3, 2])
    cases = [
        (np.zeros(3), np.ones((3, 3)) - np.eye(3)),  # complete multipartite K_{2,3,2}
        (np.ones(3), np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0.0]])),  # a path of classes
        (np.ones(3), np.zeros((3, 3))),  # complete blocks
    ]
    from dgp.engine.blocks import block_weights

    for within, cross in cases:
        bw = block_weights(labels, within=within, cross=cross)
        M = np.exp(bw.pair_log_weights())[np.ix_(bw.inverse, bw.inverse)]
        np.fill_diagonal(M, 0.0)
        for dim in (1, 2, 3):
            s = structured(labels, within, cross, dim)
            d = dgp.classify(M, dim=dim, **EUC)
            assert (s.verdict, s.certificate.kind) == (d.verdict, d.certificate.kind), \
                (within, cross, dim, s.reason, d.reason)
            assert s.entropic_bound == pytest.approx(d.entropic_bound, rel=1e-12)


def structured(labels, within, cross, dim):
    """The class-block engine on labels and per-class weights."""
    from dgp.engine.blocks import block_weights
    from dgp.tolerance import DEFAULT_RTOL, Tolerance

    bw = block_weights(labels, within=within, cross=cross)
    return classify_blocks(bw, similarity="euclidean", tau=EUC["tau"], dim=dim,
                           tol=Tolerance.make(DEFAULT_RTOL, n=bw.n))


# --- the CLI -----------------------------------------------------------------------------------


def test_cli_edge_lists(tmp_path, cli):
    f = tmp_path / "star.edges"
    f.write_text("# a star\n0 1 1\n0 2 1\n0 3 2.5\n")
    r = cli("classify", f, "--similarity", "euclidean", "--tau", "1", "--dim", "1", "--json")
    assert r.code == 0
    out = r.json
    assert out["verdict"] == "inconsistent" and out["certificate"]["obstruction"] == "line"
    g = tmp_path / "g.csv"
    g.write_text("source,target\na,b\nb,c\n")
    r = cli("classify", "--edges", g, "--similarity", "euclidean", "--tau", "1", "--dim", "1",
            "--json")
    assert r.code == 0 and r.json["verdict"] == "degenerate"
    r = cli("classify", "--edges", g, "--directed", "--similarity", "euclidean", "--tau", "1",
            "--dim", "1")
    assert r.code == 2 and r.err.startswith("error:")
    assert cli("classify", f, "--edges", g, "--tau", "1", "--dim", "1").code == 2
    assert cli("classify", "--edges", g, "--log-weights", "--tau", "1", "--dim", "1").code == 2
    r = cli("classify", "--edges", g, "--tau", "1", "--dim", "1")  # cosine
    assert r.code == 0 and "zero" in r.out


def test_cli_never_fails_on_a_zero_pattern(tmp_path, cli):
    rng = np.random.default_rng(6)
    for _ in range(5):
        A = rng.random((6, 6)) < 0.4
        np.fill_diagonal(A, False)
        A[np.arange(6), (np.arange(6) + 1) % 6] = True
        f = tmp_path / "W.csv"
        np.savetxt(f, A.astype(float), delimiter=",")
        for dim in ("1", "2"):
            r = cli("classify", f, "--similarity", "euclidean", "--tau", "0.5", "--dim", dim,
                    "--json")
            assert r.code == 0
            assert r.json["verdict"] in ("degenerate", "inconsistent")


# --- knn_weights -------------------------------------------------------------------------------


def test_knn_weights_builds_the_neighbour_graph():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(30, 3))
    D = ((X[:, None] - X[None]) ** 2).sum(axis=2)
    np.fill_diagonal(D, np.inf)
    nearest = np.argsort(D, axis=1)[:, :4]
    V = np.zeros((30, 30))
    V[np.repeat(np.arange(30), 4), nearest.ravel()] = 1.0
    W = knn_weights(X, 4, symmetrize="none")
    assert sp.issparse(W) and np.array_equal(W.toarray(), V)
    assert np.array_equal(knn_weights(X, 4).toarray(), (V + V.T) / 2)
    assert np.array_equal(knn_weights(X, 4, symmetrize="union").toarray(), np.maximum(V, V.T))
    G = knn_weights(X, 4, symmetrize="none", kernel="gaussian").toarray()
    sig = np.sqrt(np.sort(D, axis=1)[:, 3])
    expect = np.where(V > 0, np.exp(-0.5 * D / sig[:, None] ** 2), 0.0)
    assert np.allclose(G, expect, rtol=1e-12)
    assert (G[V > 0] >= math.exp(-0.5) - 1e-15).all()


@pytest.mark.parametrize("kwargs, match", [
    ({"k": 0}, "k"), ({"k": 30}, "k"), ({"k": 2, "symmetrize": "both"}, "symmetrize"),
    ({"k": 2, "kernel": "cosine"}, "kernel"), ({"k": 2, "sigma": 1.0}, "sigma"),
    ({"k": 2, "kernel": "gaussian", "sigma": -1.0}, "sigma"),
    ({"k": 2, "kernel": "gaussian", "sigma": 1e-3}, "underflow"),
])
def test_knn_weights_checks_its_arguments(kwargs, match):
    X = np.random.default_rng(9).normal(size=(30, 2)) * 10
    with pytest.raises(ValueError, match=match):
        knn_weights(X, **kwargs)
    with pytest.raises(ValueError, match="X"):
        knn_weights([[np.nan, 1.0], [0.0, 1.0]], 1)
    with pytest.raises(TypeError):
        knn_weights(X, 2.5)
