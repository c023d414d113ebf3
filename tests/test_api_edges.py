"""The edges of the parameter space are bad input with a message naming the parameter, or a
right answer; never numpy's bare error, a NaN with warnings, or an out-of-memory death."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import dgp
from dgp.errors import ParameterError
from dgp.infonce import winfonce_loss

_W = np.exp(np.random.default_rng(0).standard_normal((5, 5)))
_W = _W + _W.T


@pytest.mark.parametrize("tau", [1e-320, 5e-324, 5.5e-309])
@pytest.mark.parametrize("similarity", ["cosine", "euclidean"])
def test_a_tau_whose_inverse_overflows_is_refused_by_name(tau, similarity):
    with pytest.raises(ParameterError, match=r"^tau = .* too small: its inverse"):
        dgp.classify(_W, tau=tau, dim=2, similarity=similarity)


def test_the_smallest_tau_taken_is_answered():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert dgp.classify(_W, tau=5.57e-309, dim=2).verdict in (
            "realizable", "degenerate", "inconsistent")


@pytest.mark.parametrize("objective, extra", [
    ("soft-supcon", {"labels": np.repeat([0, 1, 2], [3, 2, 2]), "eps": 0.1}),
    ("supcon", {"labels": np.repeat([0, 1, 2], [3, 2, 2])}),
    ("y-aware", {"labels": np.linspace(0.0, 1.0, 8), "sigma": 1.0}),
])
def test_every_engine_refuses_the_same_tiny_tau(objective, extra):
    with pytest.raises(ParameterError, match=r"^tau = .* too small"):
        dgp.classify_objective(objective, tau=1e-320, dim=2, **extra)


def test_cli_tiny_tau_is_exit_2(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    np.save("W.npy", _W)
    r = cli("classify", "W.npy", "--tau", "1e-320", "--dim", "2")
    assert r.code == 2 and r.err.startswith("error: --tau") and r.err.count("\n") == 1, r.err
    r = cli("phase", "--objective", "soft-supcon", "--sizes", "3,2,2", "--eps", "0.1",
            "--grid", "tau=1e-320,1", "--dim", "2")
    assert r.code == 2 and "too small" in r.err and "LinAlgError" not in r.err, r.err


def test_a_huge_tau_is_answered_without_warnings(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    np.save("W.npy", _W)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for sim in ("cosine", "euclidean"):
            assert dgp.classify(_W, tau=1e300, dim=2, similarity=sim).verdict == "inconsistent"
    r = cli("phase", "W.npy", "--grid", "tau=1e300,1", "--dim", "2", "--json", "--no-excess")
    assert r.code == 0 and "Warning" not in r.err, r.err


@pytest.mark.parametrize("graph", ["Graph", "DiGraph", "one node"])
def test_an_empty_graph_names_W(graph):
    nx = pytest.importorskip("networkx")
    G = nx.empty_graph(1) if graph == "one node" else getattr(nx, graph)()
    with pytest.raises(ParameterError, match=r"^W is a networkx graph with [01] nodes?"):
        dgp.classify(G, tau=0.5, dim=2)


def test_winfonce_loss_at_tiny_tau_is_finite_or_refused():
    Z = np.random.default_rng(1).standard_normal((5, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for sim in ("cosine", "euclidean"):
            with pytest.raises(ParameterError, match=r"^tau = 1e-310 is too small"):
                winfonce_loss(Z, _W, tau=1e-310, similarity=sim)
            with pytest.raises(ParameterError, match=r"beyond the float range"):
                winfonce_loss(Z, _W, tau=1e-308, similarity=sim)
            big = winfonce_loss(Z, _W, tau=1e-300, similarity=sim)
            assert np.isfinite(big) and big > 1e298
            # the stable form agrees with the plain one where the plain one is exact
            assert winfonce_loss(Z, _W, tau=0.3, similarity=sim) == pytest.approx(
                _plain_loss(Z, _W, 0.3, sim), rel=1e-12)


def _plain_loss(Z, W, tau, sim):
    from scipy.special import logsumexp

    if sim == "cosine":
        Zn = Z / np.linalg.norm(Z, axis=1, keepdims=True)
        S = Zn @ Zn.T / tau
    else:
        S = -((Z[:, None] - Z[None]) ** 2).sum(-1) / (2 * tau)
    np.fill_diagonal(S, -np.inf)
    logq = S - logsumexp(S, axis=1, keepdims=True)
    P = W * (1 - np.eye(len(W)))
    P = P / P.sum(1, keepdims=True)
    off = ~np.eye(len(W), dtype=bool)
    return float(-(P[off] * logq[off]).sum())


@pytest.mark.parametrize("spec", ["tau=0.1:inf:3", "tau=-inf:1:3", "tau=1e-3:inf:4:log",
                                  "tau=nan:1:3"])
def test_a_grid_with_an_infinite_end_is_refused_without_warnings(tmp_path, cli, monkeypatch, spec):
    monkeypatch.chdir(tmp_path)
    np.save("W.npy", _W)
    r = cli("phase", "W.npy", "--grid", spec, "--dim", "2")
    assert r.code == 2 and r.err == f"error: --grid {spec!r}: every value must be a finite number\n"


def test_an_imbalance_sweep_beyond_memory_is_refused_before_the_work(cli, monkeypatch):
    monkeypatch.setenv("DGP_MEMORY_LIMIT", "1G")
    r = cli("phase", "--objective", "supcon", "--classes", "5", "--majority", "1000000000000",
            "--grid", "tau=0.5,1", "imbalance=1:100:3", "--dim", "2")
    assert r.code == 2 and r.err.count("\n") == 1, r.err
    assert "(--classes 5 x --majority 1000000000000) needs about 72.8 TiB" in r.err
    assert "memory budget of 1.0 GiB" in r.err and "--majority <= 13421772 fits" in r.err


def test_an_imbalance_sweep_too_large_for_memory_is_refused_from_python_too():
    """The labels of a sweep's largest cell are guarded before they are built (the command line
    refuses it before the work; the library names the memory it would need)."""
    from dgp.errors import InputError

    with pytest.raises(InputError, match="majority"):
        dgp.phase("supcon", classes=3, majority=10**12, grid={"imbalance": (1, 10, 3)},
                  tau=0.1, dim=2)


def test_a_dimension_above_n_is_n_not_a_time_refusal_blaming_the_weights():
    """N points span at most N dimensions: optimum(dim=1e9) answers as dim = N."""
    W = np.array([[0.0, 1.0, 0.5], [1.0, 0.0, 0.2], [0.5, 0.2, 0.0]])
    big = dgp.optimum(W, tau=0.5, dim=10**9)
    ref = dgp.optimum(W, tau=0.5, dim=3)
    assert big.dim == 3 and big.loss == pytest.approx(ref.loss, rel=1e-12)


@pytest.mark.parametrize("labels", [[0, 0, 1, 1, 2, 2], [1, 0, 0, 1, 1]])
def test_class_labels_given_as_sizes_get_a_hint(labels):
    """One label per sample passed where sizes go is named for what it looks like."""
    with pytest.raises(dgp.InvalidParameterError, match="one class label per sample"):
        dgp.supcon_prototypes(sizes=labels, tau=0.5)


def test_true_sizes_below_two_keep_their_own_message():
    with pytest.raises(dgp.InvalidParameterError, match=r"sizes\[1\] = 1"):
        dgp.supcon_prototypes(sizes=[5, 1, 3], tau=0.5)


@pytest.mark.parametrize("call", [
    lambda G: dgp.prototypes.prototype_loss(G, [3, 2, 2], tau=0.5),
    lambda G: dgp.prototypes.kkt_certificate(G, [3, 2, 2], tau=0.5),
], ids=["prototype_loss", "kkt_certificate"])
@pytest.mark.parametrize("gram", [np.eye(2), np.ones((3, 2)), np.ones(3), np.ones((3, 3, 1)),
                                  np.where(np.eye(3) > 0, 1.0, np.nan),
                                  np.where(np.eye(3) > 0, 1.0, -np.inf)])
def test_a_gram_that_is_not_a_finite_k_by_k_matrix_is_refused_by_name(call, gram):
    # the one validator of a square matrix (dgp.errors.check_square) names the argument,
    # the size asked and the shape given
    with pytest.raises(ParameterError, match=r"^gram must be a finite 3 x 3 matrix, got shape "
                       + re.escape(str(np.shape(gram)))):
        call(gram)


def test_a_finite_square_gram_is_taken_as_its_symmetric_part():
    rng = np.random.default_rng(3)
    M = rng.standard_normal((3, 3))
    G = np.full((3, 3), -0.5) + 1.5 * np.eye(3)
    skew = 0.5 * (M - M.T)  # the loss reads <G, .> of symmetric matrices: a skew part is nothing
    assert dgp.prototypes.prototype_loss(G + skew, [3, 2, 2], tau=0.5) == pytest.approx(
        dgp.prototypes.prototype_loss(G, [3, 2, 2], tau=0.5), rel=1e-13)
