"""One validator of weightings (dgp.engine.target.log_weights): every kind of input gives the
same canonical log-weights, the shift is recorded once with its inverse, every entry point
names a bad entry the same way, and figures draw from what they are given."""

import math
import warnings

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import dgp
from dgp.cli import main
from dgp.engine import target
from dgp.engine.target import LogWeights, Shift, check_weights, log_weights
from dgp.engine.zeros import sparse_pattern
from dgp.metrics import entropic_gap

EPS = float(np.finfo(float).eps)


def _kernel(n: int, seed: int = 0) -> np.ndarray:
    """A symmetric positive weighting with a cycle-consistent target (a Gaussian kernel)."""
    x = np.random.default_rng(seed).normal(size=(n, 2))
    return np.exp(-((x[:, None, :] - x[None, :, :]) ** 2).sum(-1))


def _with_zeros(n: int = 7) -> np.ndarray:
    """A path-like weighting with zero weights (every row keeps a positive weight)."""
    W = np.zeros((n, n))
    for i in range(n - 1):
        W[i, i + 1] = W[i + 1, i] = 1.0 + 0.25 * i
    W[0, 2] = W[2, 0] = 0.5
    return W


def _graph(W: np.ndarray) -> nx.Graph:
    G = nx.Graph()
    G.add_nodes_from(range(W.shape[0]))
    for i, j in zip(*np.nonzero(np.triu(W, 1)), strict=True):
        G.add_edge(int(i), int(j), weight=float(W[i, j]))
    return G


# ----------------------------------------------------------------------------------------------
# one validator, every kind of input, one LogWeights
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("W", [_kernel(6), _with_zeros()], ids=["positive", "zeros"])
def test_dense_sparse_and_graph_give_the_same_dense_log_weights(W):
    ref = log_weights(W)
    for other in (log_weights(sp.csr_matrix(W)), log_weights(sp.coo_matrix(W)),
                  log_weights(_graph(W))):
        assert other.pairs is None
        assert np.array_equal(other.L, ref.L)
        assert other.shift == ref.shift
        assert (other.n_zero, other.first_zero, other.symmetric) == (
            ref.n_zero, ref.first_zero, ref.symmetric)


def test_log_weights_input_gives_the_same_canonical_matrix():
    W = _with_zeros()
    ref = log_weights(W)
    with np.errstate(divide="ignore"):
        lw = log_weights(log_weights=np.log(W))
    assert np.array_equal(np.isfinite(lw.L), np.isfinite(ref.L))
    fin = np.isfinite(ref.L)
    np.testing.assert_allclose(lw.L[fin], ref.L[fin], rtol=0, atol=8 * EPS)
    assert lw.shift == pytest.approx(ref.shift, abs=8 * EPS)
    assert (lw.n_zero, lw.first_zero, lw.symmetric) == (ref.n_zero, ref.first_zero, True)


@pytest.mark.parametrize("make", [sp.csr_matrix, sp.coo_matrix, _graph],
                         ids=["csr", "coo", "graph"])
def test_sparse_input_with_zeros_is_kept_as_its_pairs(make):
    W = _with_zeros()
    dense = log_weights(W)
    kept = log_weights(make(W), sparse_above=1)
    assert kept.L is None and kept.pairs is not None and kept.n == W.shape[0]
    p = kept.pairs
    rows, cols = np.nonzero(W)
    assert np.array_equal(p.rows, rows) and np.array_equal(p.cols, cols)  # row-major order
    np.testing.assert_allclose(p.logw, dense.L[rows, cols], rtol=0, atol=8 * EPS)
    assert kept.shift == pytest.approx(dense.shift, abs=8 * EPS)
    assert (kept.n_zero, kept.first_zero, kept.symmetric) == (
        dense.n_zero, dense.first_zero, dense.symmetric)
    with pytest.raises(dgp.errors.InputError, match="positive pairs"):
        kept.zero_mask()
    # the zero-pattern entry takes the kept form and the raw input alike, without revalidating
    a, b = sparse_pattern(kept), sparse_pattern(make(W))
    assert np.array_equal(a[0].logw, b[0].logw) and a[1:] == b[1:]


def test_an_asymmetric_sparse_weighting_is_not_called_symmetric():
    W = _with_zeros()
    W[0, 1] = 3.0
    kept = log_weights(sp.csr_matrix(W), sparse_above=1)
    assert kept.symmetric is False and log_weights(W).symmetric is False
    D = nx.DiGraph(_graph(_with_zeros()))
    assert log_weights(D, sparse_above=1).symmetric is True  # both directions, same weights


def test_small_sparse_input_is_dense_and_a_complete_one_too():
    W = _with_zeros()
    assert log_weights(sp.csr_matrix(W), sparse_above=W.shape[0]).pairs is None
    assert log_weights(sp.csr_matrix(_kernel(5)), sparse_above=1).pairs is None


def test_log_weights_are_taken_as_they_are_and_never_consumed():
    lw = log_weights(_kernel(6))
    before = lw.L.copy()
    again = log_weights(lw)
    assert again is not lw and again.L is not lw.L and np.array_equal(again.L, before)
    res = dgp.classify(lw, tau=0.5, dim=6)  # the engine overwrites its own copy only
    assert np.array_equal(lw.L, before)
    assert res.c_interval == dgp.classify(_kernel(6), tau=0.5, dim=6).c_interval


def test_zero_mask_marks_the_zero_weights_off_the_diagonal():
    W = _with_zeros()
    mask = log_weights(W).zero_mask()
    off = ~np.eye(W.shape[0], dtype=bool)
    assert np.array_equal(mask, off & (W == 0))


def test_classify_decides_a_sparse_weighting_on_its_pairs_as_before():
    W = _with_zeros(9)
    for sim in ("euclidean", "cosine"):
        a = dgp.classify(sp.csr_matrix(W), similarity=sim, tau=0.5, dim=2)
        b = dgp.classify(log_weights(sp.csr_matrix(W), sparse_above=1), similarity=sim, tau=0.5,
                         dim=2)
        assert a.to_dict() == b.to_dict()


# ----------------------------------------------------------------------------------------------
# the shift and its inverse
# ----------------------------------------------------------------------------------------------


def test_the_inverse_of_the_shift():
    s = Shift(math.log(3e-200))
    assert s.to_user_c(None) is None
    assert s.to_user_c(2.0) == 2.0 - s.shift
    assert s.to_canonical_c(s.to_user_c(2.0)) == pytest.approx(2.0, abs=4 * EPS * abs(s.shift))
    L = np.array([[-np.inf, 0.0], [-1.5, -np.inf]])
    assert np.array_equal(s.to_user_log_weights(L), L + s.shift)


@given(k=st.integers(-900, 900), seed=st.integers(0, 2**16),
       similarity=st.sampled_from(["cosine", "euclidean"]))
def test_a_power_of_two_changes_only_the_shift(k, seed, similarity):
    """W -> 2**k W: identical canonical log-weights and canonical constants; the user's
    interval moves by exactly what the recorded shifts differ by (k log 2)."""
    W = _kernel(5, seed)
    A = np.ldexp(W, k)
    lw, la = log_weights(W), log_weights(A)
    assert np.array_equal(lw.L, la.L)
    assert la.shift - lw.shift == pytest.approx(k * math.log(2.0), abs=64 * EPS * (1 + abs(k)))
    r, ra = (dgp.classify(M, similarity=similarity, tau=0.5, dim=5) for M in (W, A))
    assert r.verdict == ra.verdict and r.rank == ra.rank
    assert (r.c_interval is None) == (ra.c_interval is None)
    assert r.c_interval is not None or similarity == "cosine"
    for c, ca in zip(r.c_interval or (), ra.c_interval or (), strict=True):
        if c is None:
            assert ca is None
            continue
        assert lw.to_canonical_c(c) == pytest.approx(la.to_canonical_c(ca),
                                                     abs=8 * EPS * (1 + abs(la.shift)))
        assert ca - c == pytest.approx(-(la.shift - lw.shift), abs=8 * EPS * (1 + abs(la.shift)))


@given(alpha=st.floats(1e-250, 1e250), seed=st.integers(0, 2**16))
def test_any_scale_gives_the_same_canonical_log_weights(alpha, seed):
    W = _kernel(5, seed)
    lw, la = log_weights(W), log_weights(alpha * W)
    fin = np.isfinite(lw.L)
    np.testing.assert_allclose(la.L[fin], lw.L[fin], rtol=0,
                               atol=4 * EPS * max(1.0, float(np.abs(lw.L[fin]).max())))
    assert la.shift - lw.shift == pytest.approx(math.log(alpha), rel=1e-12, abs=1e-12)
    r, ra = (dgp.classify(M, tau=0.5, dim=5) for M in (W, alpha * W))
    assert r.verdict == ra.verdict and r.rank == ra.rank
    if r.c_interval is not None:
        for c, ca in zip(r.c_interval, ra.c_interval, strict=True):
            assert ca == pytest.approx(c - math.log(alpha), abs=1e-9 * (1 + abs(math.log(alpha))))


# ----------------------------------------------------------------------------------------------
# one message for one bad entry, from every entry point
# ----------------------------------------------------------------------------------------------


def _bad(value: float) -> np.ndarray:
    W = _with_zeros(5)
    W[1, 3] = value
    return W


ENTRY_POINTS = {
    "log_weights": lambda W: log_weights(W),
    "classify": lambda W: dgp.classify(W, tau=0.5, dim=2),
    "classify_euclidean": lambda W: dgp.classify(W, similarity="euclidean", tau=0.5, dim=2),
    "check_weights": check_weights,
    "entropic_gap": lambda W: entropic_gap(np.eye(5), W, tau=0.5),
    "c_family_grid": lambda W: dgp.plots.c_family_grid(W, tau=0.5),
    "optimum": lambda W: dgp.optimum(W, tau=0.5),
}


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
@pytest.mark.parametrize(("value", "match"), [
    (np.nan, r"^W\[1, 3\] is nan; all weights must be finite$"),
    (np.inf, r"^W\[1, 3\] is inf; all weights must be finite$"),
    (-2.0, r"^W\[1, 3\] = -2 is negative; weights must be >= 0$"),
])
def test_a_bad_dense_entry_is_named_the_same_everywhere(entry, value, match):
    pytest.importorskip("matplotlib") if entry == "c_family_grid" else None
    with pytest.raises(dgp.errors.ParameterError, match=match) as info:
        ENTRY_POINTS[entry](_bad(value))
    assert info.value.param == "W"


@pytest.mark.parametrize("make", [sp.csr_matrix, sp.coo_matrix], ids=["csr", "coo"])
@pytest.mark.parametrize(("value", "match"), [
    (np.nan, r"^W\[1, 3\] is nan; all weights must be finite$"),
    (-2.0, r"^W\[1, 3\] = -2 is negative; weights must be >= 0$"),
])
def test_a_bad_sparse_entry_is_named_as_a_dense_one(make, value, match):
    W = _bad(value)
    W[4, 0] = value  # a second bad entry, later in row-major order: the first is named
    M = make(W)
    if make is sp.coo_matrix:  # entries in reverse order: still the first in row-major order
        M = sp.coo_matrix((M.data[::-1], (M.row[::-1], M.col[::-1])), shape=M.shape)
    for call in (lambda: log_weights(M, sparse_above=1), lambda: dgp.classify(M, tau=0.5, dim=2),
                 lambda: sparse_pattern(M), lambda: log_weights(W)):
        with pytest.raises(dgp.errors.ParameterError, match=match):
            call()


def test_a_row_without_positive_weight_is_named_the_same_everywhere():
    W = _with_zeros(5)
    W[2, :] = 0.0
    match = r"^W row 2 has no positive weight off the diagonal"
    for call in (lambda: log_weights(W), lambda: log_weights(sp.csr_matrix(W), sparse_above=1),
                 lambda: dgp.classify(sp.csr_matrix(W), tau=0.5, dim=2),
                 lambda: check_weights(W), lambda: entropic_gap(np.eye(5), W, tau=0.5)):
        with pytest.raises(dgp.errors.ParameterError, match=match):
            call()
    with pytest.raises(dgp.errors.ParameterError, match=r"^log_weights row 2 has no positive"):
        with np.errstate(divide="ignore"):
            log_weights(log_weights=np.log(W))


def test_errors_is_the_ground_floor():
    """dgp.errors imports nothing of dgp (check_weights lives beside the validator)."""
    import ast
    import inspect

    import dgp.errors

    tree = ast.parse(inspect.getsource(dgp.errors))
    imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in imported if m.startswith("dgp")]
    assert not hasattr(dgp.errors, "check_weights")
    assert target.check_weights is check_weights


# ----------------------------------------------------------------------------------------------
# figures draw from what they are given
# ----------------------------------------------------------------------------------------------


def _extreme_log_weights(n: int = 8) -> np.ndarray:
    """Log-weights spread over 1e3 nats up to +800: exp overflows at the top, underflows at
    the bottom (a Gaussian kernel, cycle-consistent)."""
    x = np.linspace(0.0, 1.0, n)
    LW = 800.0 - 1e3 * (x[:, None] - x[None, :]) ** 2
    np.fill_diagonal(LW, 0.0)
    return LW


@pytest.mark.parametrize("similarity", ["cosine", "euclidean"])
def test_figures_from_extreme_log_weights_do_not_overflow(similarity):
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    LW = _extreme_log_weights()
    with np.errstate(over="ignore"):
        assert np.isinf(np.exp(LW)).any()  # what np.exp of the log-weights would give
    res = dgp.classify(log_weights=LW, similarity=similarity, tau=0.5, dim=2)
    with warnings.catch_warnings(), np.errstate(over="raise"):
        warnings.simplefilter("error", RuntimeWarning)
        fig = dgp.plots.classification_figure(log_weights(log_weights=LW), res)
        grid = dgp.plots.c_family_grid(log_weights(log_weights=LW), tau=0.5,
                                       similarity=similarity)
    assert grid["c_interval"] == res.c_interval and np.isfinite(grid["eigenvalues"]).all()
    plt.close(fig)


def test_the_weights_figure_draws_the_users_log_weights():
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    LW = _extreme_log_weights(6)
    LW[0, 3] = LW[3, 0] = -np.inf  # a zero weight: no family, the weights are drawn
    res = dgp.classify(log_weights=LW, similarity="euclidean", tau=0.5, dim=2)
    with warnings.catch_warnings(), np.errstate(over="raise"):
        warnings.simplefilter("error", RuntimeWarning)
        fig = dgp.plots.classification_figure(log_weights(log_weights=LW), res)
    shown = fig.axes[0].images[0].get_array()
    off = ~np.eye(6, dtype=bool) & np.isfinite(LW)
    np.testing.assert_allclose(np.asarray(shown)[off], LW[off], rtol=1e-12)
    plt.close(fig)


def _count_classifications(monkeypatch):
    import dgp.classification
    import dgp.cli.classify
    import dgp.objectives

    calls = []

    def counting(fn):
        def wrapped(*args, **kwargs):
            calls.append(fn.__name__)
            return fn(*args, **kwargs)

        return wrapped

    monkeypatch.setattr(dgp.classification, "classify", counting(dgp.classification.classify))
    monkeypatch.setattr(dgp.cli.classify, "classify", counting(dgp.cli.classify.classify))
    monkeypatch.setattr(dgp.cli.classify, "classify_objective",
                        counting(dgp.objectives.classify_objective))
    return calls


@pytest.mark.parametrize("log", [False, True])
def test_the_cli_plot_path_classifies_once(tmp_path, capsys, monkeypatch, log):
    pytest.importorskip("matplotlib")
    W = dgp.weights.soft_supcon_weights([0, 0, 1, 1, 2, 2], eps=0.1)
    path = tmp_path / "W.npy"
    with np.errstate(divide="ignore"):
        np.save(path, np.log(W) if log else W)
    calls = _count_classifications(monkeypatch)
    argv = ["classify", str(path), "--tau", "0.5", "--dim", "3", "--plot",
            str(tmp_path / "f.png")] + (["--log-weights"] if log else [])
    assert main(argv) == 0
    assert calls == ["classify"] and (tmp_path / "f.png").stat().st_size > 0
    capsys.readouterr()


def test_the_cli_plot_path_of_an_objective_classifies_once(tmp_path, capsys, monkeypatch):
    pytest.importorskip("matplotlib")
    labels = tmp_path / "y.txt"
    labels.write_text("0\n0\n1\n1\n2\n2\n")
    calls = _count_classifications(monkeypatch)
    assert main(["classify", "--objective", "supcon", "--labels", str(labels), "--tau", "0.5",
                 "--dim", "2", "--plot", str(tmp_path / "f.png")]) == 0
    assert calls == ["classify_objective"] and (tmp_path / "f.png").stat().st_size > 0
    capsys.readouterr()


def test_the_cli_plots_extreme_log_weights(tmp_path, capsys):
    """``--log-weights`` spread over 1e3 nats: the figure is drawn (np.exp of the log-weights
    overflowed to inf, which the figure's validation refused)."""
    pytest.importorskip("matplotlib")
    path = tmp_path / "LW.npy"
    np.save(path, _extreme_log_weights())
    assert main(["classify", str(path), "--log-weights", "--tau", "0.5", "--dim", "2",
                 "--similarity", "euclidean", "--plot", str(tmp_path / "f.png")]) == 0
    assert (tmp_path / "f.png").stat().st_size > 0
    capsys.readouterr()


def test_log_weights_type_is_what_every_caller_receives():
    assert isinstance(log_weights(_kernel(4)), LogWeights)
    L = np.array([[-np.inf, 0.0], [0.0, -np.inf]])
    assert isinstance(log_weights(LogWeights(L, 0.0, True, 0, None, EPS)), LogWeights)


def _count_validations(monkeypatch):
    """The calls of the one validator that validate (a LogWeights passed on is not one)."""
    seen = []
    real = target.log_weights

    def counting(W=None, **kwargs):
        if not isinstance(W if W is not None else kwargs.get("log_weights"), LogWeights):
            seen.append(type(W).__name__)
        return real(W, **kwargs)

    monkeypatch.setattr(target, "log_weights", counting)
    return seen


@pytest.mark.parametrize("similarity", ["euclidean", "cosine"])
def test_the_cli_plot_path_validates_an_edge_list_once_and_decides_it_as_without(
        tmp_path, capsys, monkeypatch, similarity):
    """A graph with zero weights: decided on its graph with or without --plot (same output),
    validated once, drawn from its pairs."""
    pytest.importorskip("matplotlib")
    path = tmp_path / "g.edges"
    W = _with_zeros(9)
    path.write_text("".join(f"{i} {j} {W[i, j]}\n" for i, j in zip(*np.nonzero(np.triu(W, 1)),
                                                                   strict=True)))
    argv = ["classify", "--edges", str(path), "--tau", "0.5", "--dim", "2", "--similarity",
            similarity, "--no-floor"]
    assert main(argv) == 0
    plain = capsys.readouterr().out
    seen = _count_validations(monkeypatch)
    calls = _count_classifications(monkeypatch)
    assert main([*argv, "--plot", str(tmp_path / "f.png")]) == 0
    out = capsys.readouterr().out
    assert out.startswith(plain) and "figure" in out[len(plain):]
    assert seen == ["Graph"] and calls == ["classify"]
    assert (tmp_path / "f.png").stat().st_size > 0


def test_a_sparse_weighting_is_drawn_from_its_pairs():
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    import dgp.classification

    W = _with_zeros(6)
    kept = dgp.classification.weighting(sp.csr_matrix(W))
    assert kept.pairs is not None
    res = dgp.classify(kept, similarity="euclidean", tau=0.5, dim=2)
    assert res.to_dict() == dgp.classify(sp.csr_matrix(W), similarity="euclidean", tau=0.5,
                                         dim=2).to_dict()
    fig = dgp.plots.classification_figure(kept, res)
    shown = np.asarray(fig.axes[0].images[0].get_array())
    pos = W > 0
    np.testing.assert_allclose(shown[pos], np.log(W[pos]), rtol=0, atol=1e-15)
    dense = kept.dense()
    assert dense.pairs is None and np.array_equal(np.isfinite(dense.L), pos)
    plt.close(fig)


@pytest.mark.parametrize(("value", "match"), [
    (np.nan, r"^W\[1, 3\] is nan; all weights must be finite$"),
    (-2.0, r"^W\[1, 3\] = -2 is negative; weights must be >= 0$"),
])
def test_a_bad_edge_weight_is_named_as_a_dense_entry(value, match):
    G = _graph(_bad(value))  # the edge 1 - 3 carries the bad weight both ways
    for call in (lambda: log_weights(G), lambda: log_weights(G, sparse_above=1),
                 lambda: dgp.classify(G, tau=0.5, dim=2), lambda: entropic_gap(np.eye(5), G,
                                                                               tau=0.5)):
        with pytest.raises(dgp.errors.ParameterError, match=match):
            call()
