"""Threads: the dense engine runs its O(N^3) tridiagonalisation on every BLAS thread, and its
decisions do not depend on how many there are; ``dgp.deterministic()``, ``DGP_DETERMINISTIC=1``
and ``--deterministic`` pin one thread for bit-identical output.

The matrices have a few hundred rows: below about 130 LAPACK's ``dsytrd`` runs unblocked and
OpenBLAS keeps small level-2 calls on one thread, so smaller inputs would not exercise the
threads at all. The Soft SupCon matrices are class weightings, which the engine would decide
through their twin classes without any tridiagonalisation (tests/test_dense_twins.py): here that
search is switched off, so that every case runs the dense engine whose threads are tested.
"""

import json
import os

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import dgp
from dgp._linalg import fix_embedding, soft_supcon_tau_star
from dgp.errors import InputError
from dgp.resources import DETERMINISTIC_ENV, deterministic_requested
from dgp.weights import gaussian_kernel_weights, soft_supcon_weights, supcon_weights

N = 300
K = 5
EPS = 0.3
LABELS = np.arange(N) % K
TAU_STAR = soft_supcon_tau_star(K, EPS)


@pytest.fixture(autouse=True)
def dense_engine(monkeypatch):
    """Every case through the dense engine (no twin-class search)."""
    import dgp.constants

    monkeypatch.setattr(dgp.constants, "TWIN_MIN_MEAN_SIZE", 10**9)


def _thread_counts() -> list[int]:
    """1, 2 and (where the machine has them) all cores."""
    counts = [1, 2]
    cores = os.cpu_count() or 1
    if cores > 2:
        counts.append(min(cores, 8))
    return counts


THREADS = _thread_counts()


def _sphere(n: int, p: int, seed: int) -> np.ndarray:
    Z = np.random.default_rng(seed).standard_normal((n, p))
    return Z / np.linalg.norm(Z, axis=1, keepdims=True)


def _kernel(seed: int) -> np.ndarray:
    return gaussian_kernel_weights(np.random.default_rng(seed).standard_normal((N, 3)), sigma=1.5)


def _random_symmetric(seed: int) -> np.ndarray:
    A = np.random.default_rng(seed).random((N, N))
    return np.exp(A + A.T)


def _asymmetric(seed: int) -> np.ndarray:
    W = np.exp(np.random.default_rng(seed).random((N, N)))
    return W  # breaks the cycle condition


# name -> (W, keyword arguments, the verdict the case is there for)
CASES = {
    "cosine-realizable-rank-3": (lambda: np.exp(_sphere(N, 3, 0) @ _sphere(N, 3, 0).T / 0.5),
                                 {"tau": 0.5, "dim": 3}, "realizable"),
    "soft-supcon-realizable": (lambda: soft_supcon_weights(LABELS, eps=EPS),
                               {"tau": 0.5 * TAU_STAR, "dim": K}, "realizable"),
    "soft-supcon-at-tau-star": (lambda: soft_supcon_weights(LABELS, eps=EPS),
                                {"tau": TAU_STAR, "dim": K - 1}, "realizable"),
    "soft-supcon-at-tau-star-too-few-dims": (lambda: soft_supcon_weights(LABELS, eps=EPS),
                                             {"tau": TAU_STAR, "dim": K - 2}, "inconsistent"),
    "soft-supcon-degenerate": (lambda: soft_supcon_weights(LABELS, eps=EPS),
                               {"tau": 0.5 * TAU_STAR, "dim": N - 1}, "degenerate"),
    "soft-supcon-above-tau-star": (lambda: soft_supcon_weights(LABELS, eps=EPS),
                                   {"tau": 1.5 * TAU_STAR, "dim": K}, "inconsistent"),
    "kernel-cosine": (lambda: _kernel(1), {"tau": 0.5, "dim": 20}, "inconsistent"),
    "random-symmetric": (lambda: _random_symmetric(2), {"tau": 0.5, "dim": 3}, "inconsistent"),
    "cycle-broken": (lambda: _asymmetric(3), {"tau": 0.5, "dim": 3}, "inconsistent"),
    "euclidean-realizable": (lambda: _kernel(1), {"tau": 0.5, "dim": 3,
                                                   "similarity": "euclidean"}, "realizable"),
    "euclidean-rank-deficient": (lambda: _kernel(1), {"tau": 0.5, "dim": 2,
                                                       "similarity": "euclidean"}, "inconsistent"),
    "euclidean-degenerate": (lambda: _kernel(1), {"tau": 0.5, "dim": N - 1,
                                                   "similarity": "euclidean"}, "degenerate"),
    "supcon-zero-weights-cosine": (lambda: supcon_weights(LABELS), {"tau": 0.1, "dim": K},
                                   "inconsistent"),
    "supcon-zero-weights-euclidean": (lambda: supcon_weights(LABELS),
                                      {"tau": 0.1, "dim": 1, "similarity": "euclidean"},
                                      "degenerate"),
}


def _shape(x):
    """The structure of a JSON value: keys, lengths, types, ``None`` where a value is none;
    every string, bool and int (the decided fields), floats replaced by their type."""
    if isinstance(x, dict):
        return {k: _shape(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_shape(v) for v in x]
    if isinstance(x, float):
        return "float"
    return x


def _floats(x):
    if isinstance(x, dict):
        for v in x.values():
            yield from _floats(v)
    elif isinstance(x, list | tuple):
        for v in x:
            yield from _floats(v)
    elif isinstance(x, float):
        yield x


def _classify(name: str, threads: int) -> dgp.Classification:
    W, kw, _ = CASES[name]
    with threadpool_limits(limits=threads, user_api="blas"):
        return dgp.classify(W(), **kw)


@pytest.mark.parametrize("name", sorted(CASES))
def test_decisions_do_not_depend_on_the_thread_count(name):
    expected = CASES[name][2]
    runs = [_classify(name, t) for t in THREADS]
    first = runs[0]
    assert first.verdict == expected
    for res in runs[1:]:
        assert (res.verdict, res.attainable, res.rank, res.min_dim, res.near_threshold) == (
            first.verdict, first.attainable, first.rank, first.min_dim, first.near_threshold)
        assert type(res.certificate) is type(first.certificate)
        a, b = first.to_dict(), res.to_dict()
        # every key, every string, int and bool (kinds, decided flags, margins' near flags)
        assert _shape(a) == _shape(b)
        assert (a["c_interval"] is None) == (b["c_interval"] is None)
        if a["c_interval"] is not None:
            for x, y in zip(a["c_interval"], b["c_interval"], strict=True):
                assert (x is None) == (y is None)
                if x is not None:  # c is decided to rounding of the log-weights (about 1)
                    assert x == pytest.approx(y, rel=1e-9, abs=1e-9)
        assert a["entropic_bound"] == pytest.approx(b["entropic_bound"], rel=1e-12)


def test_rank_at_a_kink_does_not_follow_the_rounding():
    """At tau* Soft SupCon's family is one point where N - K eigenvalues of slope -1 and one of
    slope near N - 1 vanish together: the end point must be located by the steep one, or that
    eigenvalue reads |slope| times the location error and the rank (4 or 5 here, so the verdict
    in dim 4) follows the rounding: the thread count and the order of the samples."""
    n = 600
    W = soft_supcon_weights(np.arange(n) % K, eps=EPS)
    rng = np.random.default_rng(1)
    seen = set()
    for trial in range(3):
        p = rng.permutation(n) if trial else np.arange(n)
        for t in THREADS:
            with threadpool_limits(limits=t, user_api="blas"):
                res = dgp.classify(W[p][:, p], tau=TAU_STAR, dim=K - 1)
            seen.add((res.verdict, res.rank, res.near_threshold))
    assert seen == {("realizable", K - 1, True)}


@pytest.mark.parametrize("name", ["soft-supcon-realizable", "soft-supcon-at-tau-star",
                                  "cosine-realizable-rank-3", "euclidean-realizable"])
def test_embedding_does_not_depend_on_the_thread_count(name):
    """Soft SupCon's simplex has a (K - 1)-fold eigenvalue: LAPACK's basis of its eigenspace
    changes with the rounding, the embedding does not (fix_embedding)."""
    runs = [_classify(name, t).embedding for t in THREADS]
    assert runs[0] is not None and runs[0].shape[1] >= 3
    for Z in runs[1:]:
        assert Z.shape == runs[0].shape
        assert np.allclose(Z, runs[0], rtol=0, atol=1e-9)


def test_fix_embedding_depends_on_the_gram_matrix_only():
    rng = np.random.default_rng(5)
    U = np.linalg.qr(rng.standard_normal((40, 5)))[0]
    lam = np.array([3.0, 2.0, 2.0, 2.0, 1.0])  # a three-fold eigenvalue in the middle
    X = U * np.sqrt(lam)
    R = np.linalg.qr(rng.standard_normal((3, 3)))[0]  # another basis of its eigenspace
    Y = X.copy()
    Y[:, 1:4] = Y[:, 1:4] @ R
    Y[:, 0] *= -1.0  # and another sign of a simple one
    assert not np.allclose(X, Y)
    fx, fy = fix_embedding(X, lam), fix_embedding(Y, lam)
    assert np.allclose(fx, fy, atol=1e-12)
    assert np.allclose(fx @ fx.T, X @ X.T, atol=1e-12)  # the same Gram matrix
    # a simple eigenvalue keeps its column, up to sign
    assert np.allclose(np.abs(fx[:, 0]), np.abs(X[:, 0])) and np.allclose(fx[:, 4], fix_embedding(
        X[:, 4:], lam[4:])[:, 0])


# ------------------------------------------------------------------------------------------
# deterministic: bit-identical output
# ------------------------------------------------------------------------------------------


def _blas_threads() -> set[int]:
    return {m["num_threads"] for m in threadpool_info() if m["user_api"] == "blas"}


def test_deterministic_pins_one_thread_and_restores():
    with threadpool_limits(limits=2, user_api="blas"):
        before = _blas_threads()
        assert not deterministic_requested()
        with dgp.deterministic():
            assert _blas_threads() == {1}
            assert deterministic_requested()
        assert _blas_threads() == before
        assert not deterministic_requested()


DETERMINISTIC_CASES = ["soft-supcon-realizable", "soft-supcon-above-tau-star",
                       "cosine-realizable-rank-3", "euclidean-realizable"]


@pytest.mark.parametrize("name", DETERMINISTIC_CASES)
def test_deterministic_output_is_bit_identical(name):
    W, kw, _ = CASES[name]
    outs = []
    for t in THREADS:
        with threadpool_limits(limits=t, user_api="blas"), dgp.deterministic():
            outs.append(dgp.classify(W(), **kw).to_dict(embedding=True))
    assert all(o == outs[0] for o in outs[1:])
    assert any(True for _ in _floats(outs[0]))


@pytest.mark.parametrize("name", DETERMINISTIC_CASES)
def test_environment_variable_gives_bit_identical_output(name, monkeypatch):
    monkeypatch.setenv(DETERMINISTIC_ENV, "1")
    W, kw, _ = CASES[name]
    outs = []
    for t in THREADS:
        with threadpool_limits(limits=t, user_api="blas"):
            outs.append(dgp.classify(W(), **kw).to_dict(embedding=True))
    assert all(o == outs[0] for o in outs[1:])


def test_environment_variable_pins_the_engine(monkeypatch):
    """Under DGP_DETERMINISTIC=1 the tridiagonalisation runs on one thread, whatever the
    caller's limit."""
    import dgp.engine.tridiag as tridiag

    seen = []
    real = tridiag.dsytrd

    def spy(*args, **kwargs):
        seen.append(_blas_threads())
        return real(*args, **kwargs)

    monkeypatch.setattr(tridiag, "dsytrd", spy)
    W = soft_supcon_weights(LABELS, eps=EPS)
    with threadpool_limits(limits=2, user_api="blas"):
        given = _blas_threads()  # {2}, or {1} on a one-core machine
        dgp.classify(W, tau=0.5, dim=K)
        monkeypatch.setenv(DETERMINISTIC_ENV, "1")
        dgp.classify(W, tau=0.5, dim=K)
        monkeypatch.setenv(DETERMINISTIC_ENV, "0")
        dgp.classify(W, tau=0.5, dim=K)
    assert seen == [given, {1}, given]


@pytest.mark.parametrize("value, expected", [("1", True), ("true", True), ("on", True),
                                             ("0", False), ("", False), ("no", False)])
def test_environment_variable_values(value, expected, monkeypatch):
    monkeypatch.setenv(DETERMINISTIC_ENV, value)
    assert deterministic_requested() is expected


def test_malformed_environment_variable_is_bad_input(monkeypatch):
    monkeypatch.setenv(DETERMINISTIC_ENV, "maybe")
    with pytest.raises(InputError, match="DGP_DETERMINISTIC='maybe'"):
        dgp.classify(soft_supcon_weights([0, 0, 1, 1], eps=0.3), tau=0.5, dim=2)


# ------------------------------------------------------------------------------------------
# the command line
# ------------------------------------------------------------------------------------------


@pytest.fixture
def weights_file(tmp_path):
    path = tmp_path / "W.npy"
    np.save(path, soft_supcon_weights(LABELS, eps=EPS))
    return str(path)


def _outputs_on_every_thread_count(cli, argv) -> list[str]:
    """stdout of the command at each of :data:`THREADS`, each run successful and silent."""
    outs = []
    for t in THREADS:
        with threadpool_limits(limits=t, user_api="blas"):
            r = cli(*argv)
        assert r.code == 0 and r.err == ""
        outs.append(r.out)
    return outs


@pytest.mark.parametrize("where", ["global", "command"])
def test_cli_deterministic_is_bit_identical(where, weights_file, cli):
    cmd = ["classify", weights_file, "--tau", "0.5", "--dim", str(K), "--json", "--embedding"]
    argv = ["--deterministic", *cmd] if where == "global" else [*cmd, "--deterministic"]
    outs = _outputs_on_every_thread_count(cli, argv)
    assert all(o == outs[0] for o in outs[1:])
    data = json.loads(outs[0])
    assert data["verdict"] == "realizable" and data["rank"] == K
    assert os.environ.get(DETERMINISTIC_ENV) is None  # set for the command only


def test_cli_environment_variable(weights_file, cli, monkeypatch):
    monkeypatch.setenv(DETERMINISTIC_ENV, "1")
    argv = ["classify", weights_file, "--tau", "0.5", "--dim", str(K), "--json"]
    outs = _outputs_on_every_thread_count(cli, argv)
    assert all(o == outs[0] for o in outs[1:])
    monkeypatch.setenv(DETERMINISTIC_ENV, "sometimes")
    r = cli(*argv)
    assert r.code == 2 and r.out == ""
    assert r.err.startswith("error: DGP_DETERMINISTIC='sometimes'") and r.err.count("\n") == 1


def test_cli_deterministic_flag_on_every_command():
    from dgp.cli import build_parser

    parser = build_parser()
    assert parser.parse_args(["--deterministic", "tour"]).deterministic is True
    assert parser.parse_args(["tour"]).deterministic is False
    for name, sub in parser.parse_args(["tour"]).subcommands.items():
        assert "--deterministic" in sub.format_help(), name
    assert parser.parse_args(["tour", "--deterministic"]).deterministic is True


def test_cli_deterministic_takes_no_value(weights_file, cli):
    r = cli("classify", weights_file, "--tau", "0.5", "--dim", "3", "--deterministic=yes")
    assert r.code == 2 and r.out == "" and r.err.startswith("error:")
