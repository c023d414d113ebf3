"""Sparse matrices (a saved k-NN graph), edge lists and networkx graphs are accepted by every
function and command that takes W: ``dgp.optimum``, ``loss_floors``/``dgp floors``,
``entropic_gap``/``dgp metrics``, ``phase``, the figures of ``dgp.plots``.

Each form must give the answer of the dense matrix it stands for (two inputs, one weighting), and
the optimum of a k-NN graph is checked against a brute-force minimisation of the loss over free
unit embeddings (scipy), written here without dgp.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize

import dgp
from dgp.design import loss_floors
from dgp.errors import ParameterError
from dgp.metrics import entropic_gap

nx = pytest.importorskip("networkx")


def _knn(n: int, k: int, seed: int) -> sp.csr_matrix:
    """A k-nearest-neighbour connectivity graph as sklearn's kneighbors_graph builds it
    (row i has a 1 at its k nearest other points): asymmetric, with zeros."""
    X = np.random.default_rng(seed).standard_normal((n, 3))
    D = ((X[:, None] - X[None]) ** 2).sum(-1)
    np.fill_diagonal(D, np.inf)
    rows = np.repeat(np.arange(n), k)
    cols = np.argsort(D, axis=1)[:, :k].reshape(-1)
    return sp.csr_matrix((np.ones(n * k), (rows, cols)), shape=(n, n))


def _brute_force_loss(W: np.ndarray, tau: float, seeds: int = 6) -> float:
    """min over unit embeddings in R^N of the cosine w-InfoNCE summed over anchors, by L-BFGS
    from several seeded starts (no dgp code)."""
    n = W.shape[0]
    P = W / W.sum(axis=1, keepdims=True)
    off = ~np.eye(n, dtype=bool)

    def loss(x):
        Z = x.reshape(n, n)
        Z = Z / np.linalg.norm(Z, axis=1, keepdims=True)
        S = (Z @ Z.T) / tau
        S = np.where(off, S, -np.inf)
        top = S.max(axis=1, keepdims=True)
        lse = top[:, 0] + np.log(np.exp(S - top).sum(axis=1))
        return float((lse - (P * np.where(off, S, 0.0)).sum(axis=1)).sum())

    best = np.inf
    for s in range(seeds):
        x0 = np.random.default_rng(100 + s).standard_normal(n * n)
        best = min(best, minimize(loss, x0, method="L-BFGS-B",
                                  options={"maxiter": 5000, "gtol": 1e-10}).fun)
    return best


def test_optimum_of_a_knn_graph_matches_brute_force_and_its_dense_matrix():
    A = _knn(7, 2, seed=1)
    dense = A.toarray()
    assert not np.array_equal(dense, dense.T)  # asymmetric, as a k-NN graph is
    tau = 0.5
    opt = dgp.optimum(A, tau=tau)
    assert opt.certified_global
    ref = _brute_force_loss(dense, tau)
    assert opt.loss == pytest.approx(ref, abs=1e-6)
    # the dense matrix and a rescaled COO copy are the same weighting
    assert dgp.optimum(dense, tau=tau).loss == pytest.approx(opt.loss, rel=1e-10)
    assert dgp.optimum(sp.coo_matrix(3.5 * dense), tau=tau).loss == pytest.approx(opt.loss,
                                                                                  rel=1e-10)


def test_optimum_of_a_networkx_graph_is_that_of_its_adjacency_matrix():
    G = nx.karate_club_graph()
    W = nx.to_numpy_array(G, nodelist=list(G.nodes), weight="weight")
    opt = dgp.optimum(G, tau=0.5)
    ref = dgp.optimum(W, tau=0.5)
    assert opt.n == 34 and opt.certified_global
    assert opt.loss == pytest.approx(ref.loss, rel=1e-10)
    assert opt.rank == ref.rank
    # relabelling the nodes permutes the samples: the same loss
    perm = np.random.default_rng(2).permutation(34)
    H = nx.relabel_nodes(G, {int(v): int(perm[v]) for v in G.nodes})
    assert dgp.optimum(H, tau=0.5).loss == pytest.approx(opt.loss, rel=1e-9)


def test_optimum_refuses_a_graph_with_an_empty_row_naming_it():
    G = nx.DiGraph([(0, 1), (1, 0), (1, 2)])  # node 2 has no out-edge
    with pytest.raises(ParameterError, match=r"^W row 2 has no positive weight"):
        dgp.optimum(G, tau=0.5)


@pytest.mark.slow  # more than about 3 s (README test line <= 4 min)
def test_entropic_gap_and_floors_of_graphs_are_those_of_the_dense_matrix():
    G = nx.les_miserables_graph()
    W = nx.to_numpy_array(G, nodelist=list(G.nodes), weight="weight")
    Z = np.random.default_rng(3).standard_normal((W.shape[0], 4))
    ref = entropic_gap(Z, W, tau=0.3)
    assert ref > 0
    assert entropic_gap(Z, G, tau=0.3) == pytest.approx(ref, rel=1e-12)
    assert entropic_gap(Z, sp.csr_matrix(W), tau=0.3) == pytest.approx(ref, rel=1e-12)
    A = _knn(9, 3, seed=4)
    f_sparse = loss_floors(W=A, tau=0.4, dim=3, samples=50)
    f_dense = loss_floors(W=A.toarray(), tau=0.4, dim=3, samples=50)
    assert f_sparse.to_dict() == f_dense.to_dict()


def test_figures_take_sparse_and_graph_weightings():
    pytest.importorskip("matplotlib")
    from dgp.plots import c_family_grid

    G = nx.cycle_graph(6)
    W = nx.to_numpy_array(G) + 0.05  # positive weights: a c family exists
    np.fill_diagonal(W, 0.0)
    ref = c_family_grid(W, tau=0.5, num=21)
    for form in (sp.csr_matrix(W), nx.from_numpy_array(W)):
        got = c_family_grid(form, tau=0.5, num=21)
        np.testing.assert_allclose(got["eigenvalues"], ref["eigenvalues"], rtol=1e-12,
                                   atol=1e-12)
        assert got["c_interval"] == pytest.approx(ref["c_interval"])


@pytest.mark.slow  # more than about 3 s (README test line <= 4 min)
def test_every_command_reads_a_saved_knn_graph_and_an_edge_list(cli, tmp_path):
    A = _knn(8, 3, seed=5)
    sp.save_npz(tmp_path / "knn.npz", A)
    G = nx.karate_club_graph()
    nx.write_edgelist(G, tmp_path / "karate.edges", data=["weight"])
    W = nx.to_numpy_array(G, nodelist=sorted(G.nodes), weight="weight")
    ref = dgp.optimum(A, tau=0.5)
    r = cli("optimum", tmp_path / "knn.npz", "--tau", "0.5", "--json")
    assert r.code == 0, r.err
    assert r.json["loss"] == pytest.approx(ref.loss, rel=1e-10)
    r = cli("optimum", tmp_path / "karate.edges", "--tau", "0.5", "--json")
    assert r.code == 0, r.err
    assert r.json["loss"] == pytest.approx(dgp.optimum(W, tau=0.5).loss, rel=1e-9)
    edges = tmp_path / "karate.edges"
    for args in (("floors", tmp_path / "knn.npz"), ("floors", "--edges", edges),
                 ("phase", tmp_path / "knn.npz", "--grid", "tau=0.2:1:3", "--dim", "3")):
        r = cli(*args, "--tau" if args[0] == "floors" else "--rtol",
                "0.5" if args[0] == "floors" else "1e-9", "--json")
        assert r.code == 0, (args, r.err)
    Z = np.random.default_rng(6).standard_normal((34, 3))
    np.save(tmp_path / "z.npy", Z)
    r = cli("metrics", "--embeddings", tmp_path / "z.npy", "--reference", tmp_path / "z.npy",
            "--weights", tmp_path / "karate.edges", "--tau", "0.5", "--json")
    assert r.code == 0, r.err
    assert r.json["entropic_gap"] == pytest.approx(entropic_gap(Z, W, tau=0.5), rel=1e-12)


def test_input_errors_name_the_flag_and_what_is_needed(cli, tmp_path):
    nx.write_edgelist(nx.path_graph(3), tmp_path / "p.edges", data=False)
    r = cli("optimum", "--edges", tmp_path / "p.edges", "--directed", "--tau", "0.5")
    assert r.code == 2 and r.err.count("\n") == 1
    assert r.err.startswith("error: WEIGHTS row 2 has no positive weight")
    np.save(tmp_path / "w.npy", np.ones((3, 3)))
    r = cli("optimum", tmp_path / "w.npy", "--edges", tmp_path / "p.edges", "--tau", "0.5")
    assert r.code == 2 and "not both" in r.err
    r = cli("optimum", tmp_path / "w.npy", "--directed", "--tau", "0.5")
    assert r.code == 2 and r.err.startswith("error: --directed applies to an edge list")
    r = cli("optimum", "--tau", "0.5")
    assert r.code == 2 and "WEIGHTS" in r.err and "--edges" in r.err


def test_dense_weights_are_the_canonical_ones_and_refuse_an_underflowing_ratio():
    from dgp.engine.target import check_weights, log_weights

    W = np.array([[0.0, 6.0, 3.0], [2.0, 0.0, 1.5], [0.0, 4.0, 0.0]])
    A = check_weights(sp.csr_matrix(W))
    np.testing.assert_allclose(A, W / 6.0, rtol=1e-15, atol=0)  # w / w_max, zero diagonal
    np.testing.assert_allclose(log_weights(W).weights(), A, rtol=1e-15, atol=0)
    # row distributions are those of W: the optimum cannot tell W from A
    assert dgp.optimum(A, tau=0.5).loss == pytest.approx(dgp.optimum(W, tau=0.5).loss,
                                                           rel=1e-12)
    tiny = np.array([[0.0, 1e300], [1e-30, 0.0]])  # 1e-330 of the largest: below any float
    with pytest.raises(ParameterError, match=r"^W\[1, 0\] is a positive weight"):
        check_weights(tiny)
