"""The command line under hostile conditions: full or closed stdout, mistyped and misplaced
flags, figure paths checked before any work. Each failure is one `error:` line, never a
traceback; exit 2 for the user's input, 1 for dgp's own failure."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import dgp


def one_error(err):
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), err
    assert "Traceback" not in err
    return lines[0]


@pytest.fixture
def weights(tmp_path):
    f = tmp_path / "W.csv"
    np.savetxt(f, dgp.weights.soft_supcon_weights([0, 0, 1, 1], eps=0.2), delimiter=",")
    return str(f)


def test_version(cli):
    r = cli("--version")
    assert r.code == 0
    assert r.out.strip() == f"dgp {dgp.__version__}"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_full_stdout_is_one_error_line(weights, extra):
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "dgp", "classify", weights, "--tau", "0.5",
                               "--dim", "2", *extra], stdout=full, stderr=subprocess.PIPE,
                              text=True)
    assert proc.returncode == 1
    assert "cannot write the output" in one_error(proc.stderr)


def test_closed_stdout_is_one_error_line(weights):
    proc = subprocess.run([sys.executable, "-m", "dgp", "classify", weights, "--tau", "0.5",
                           "--dim", "2"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, preexec_fn=lambda: os.close(1))
    assert proc.returncode == 1
    assert "stdout is closed" in one_error(proc.stderr)


def test_a_closed_pipe_is_not_an_error(weights):
    proc = subprocess.Popen([sys.executable, "-m", "dgp", "classify", weights, "--tau", "0.5",
                             "--dim", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.read(5)
    proc.stdout.close()
    assert proc.wait() == 0
    assert b"Traceback" not in proc.stderr.read()


@pytest.mark.parametrize(
    ("typed", "meant"),
    [("--temperature", "--tau"), ("--simlarity", "--similarity"), ("--dimension", "--dim")],
)
def test_mistyped_flags_name_the_fix(weights, typed, meant, cli):
    argv = ["classify", weights, "--tau", "0.5", "--dim", "2"]
    argv = [typed if a == {"--temperature": "--tau", "--dimension": "--dim"}.get(typed) else a
            for a in argv]
    if typed == "--simlarity":
        argv += [typed, "cosine"]
    r = cli(*argv)
    assert r.code == 2 and r.out == ""
    line = one_error(r.err)
    assert f"did you mean {meant}?" in line and "dgp classify --help" in line


def test_flags_that_do_not_apply_are_refused_before_reading_files(tmp_path, cli):
    missing = tmp_path / "nope.csv"
    r = cli("classify", "--objective", "supcon", "--labels", missing, "--sigma", "-5",
            "--eps", "7", "--tau", "1", "--dim", "2")
    assert r.code == 2 and "--sigma does not apply to objective 'supcon'" in one_error(r.err)
    r = cli("classify", "--objective", "y-aware", "--labels", missing, "--tau", "1", "--dim", "2")
    assert r.code == 2 and "--sigma is missing" in one_error(r.err)
    r = cli("classify", missing, "--sigma", "1", "--tau", "1", "--dim", "2")
    assert r.code == 2 and "--sigma needs --objective" in one_error(r.err)


def test_parameter_errors_name_flags_not_python(weights, cli):
    r = cli("classify", weights, "--tau", "-1", "--dim", "2")
    line = one_error(r.err)
    assert r.code == 2 and line.startswith("error: --tau must be") and "tau=" not in line
    r = cli("classify", weights, "--tau", "1.8e308", "--dim", "2")
    assert r.code == 2 and "--tau must be a finite number" in one_error(r.err)


def test_plot_paths_are_checked_before_any_work(weights, tmp_path, cli):
    base = ("classify", weights, "--tau", "0.5", "--dim", "2", "--plot")
    r = cli(*base, tmp_path / "missing" / "f.png")
    assert r.code == 2 and "does not exist" in one_error(r.err)
    r = cli(*base, tmp_path)
    assert r.code == 2 and "is a directory" in one_error(r.err)
    r = cli(*base, tmp_path / "f.jpeg2000")
    assert r.code == 2 and "unknown figure format" in one_error(r.err)
    pytest.importorskip("matplotlib")
    r = cli(*base, tmp_path / "fig")
    assert r.code == 0, r.err
    assert (tmp_path / "fig.png").exists() and str(tmp_path / "fig.png") in r.out


# ----------------------------------------------------------------------------------------------
# floors, optimum, metrics: hostile flag values and files are the user's exit 2 (issue 27)
# ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    import scipy.sparse as sp

    d = tmp_path_factory.mktemp("hostile")
    A = np.random.default_rng(0).random((6, 6))
    W = (A + A.T) / 2
    np.save(d / "W.npy", W)
    (d / "empty.npy").write_bytes(b"")
    (d / "empty.csv").write_text("")
    np.save(d / "one.npy", np.ones((1, 1)))
    np.save(d / "nonsq.npy", np.ones((3, 4)))
    bad = W.copy()
    bad[1, 2] = np.nan
    np.save(d / "nan.npy", bad)
    np.save(d / "zeros.npy", np.zeros((4, 4)))
    np.save(d / "complex.npy", np.ones((3, 3), dtype=complex))
    sp.save_npz(d / "sparse.npz", sp.csr_matrix(W))
    np.save(d / "Z.npy", np.random.default_rng(1).standard_normal((6, 3)))
    np.save(d / "Z5.npy", np.random.default_rng(2).standard_normal((5, 3)))
    return d


# (argv, a word the one error line must hold: the flag, the file or what is wrong)
HOSTILE = [
    (["optimum", "{d}/W.npy", "--tau", "nan"], "--tau"),
    (["optimum", "{d}/W.npy", "--tau", "-1"], "--tau"),
    (["optimum", "{d}/W.npy", "--tau", "1e-308"], "--tau"),  # was: internal error (Overflow)
    (["optimum", "{d}/W.npy", "--tau", "5e-324"], "--tau"),  # was: exit 1, please report it
    (["optimum", "{d}/W.npy", "--tau", "1e300", "--dim", "1"], "--tau"),  # was: exit 1
    (["optimum", "{d}/W.npy", "--tau", "0.5", "--dim", "0"], "--dim"),
    (["optimum", "{d}/W.npy", "--tau", "0.5", "--dim", "2", "--starts", "1000000000000"],
     "--starts"),
    (["optimum", "{d}/W.npy", "--tau", "0.5", "--batch-size", "-1"], "--batch-size"),
    (["optimum", "{d}/empty.npy", "--tau", "0.5"], "WEIGHTS"),
    (["optimum", "{d}/one.npy", "--tau", "0.5"], "WEIGHTS"),
    (["optimum", "{d}/nonsq.npy", "--tau", "0.5"], "WEIGHTS"),
    (["optimum", "{d}/nan.npy", "--tau", "0.5"], "[1, 2]"),
    (["optimum", "{d}/complex.npy", "--tau", "0.5"], "complex"),
    (["floors", "{d}/W.npy", "--tau", "1e308", "--dim", "2"], "--tau"),  # was: internal error
    (["floors", "{d}/W.npy", "--tau", "1e-308", "--dim", "2"], "--tau"),  # was: internal error
    (["floors", "{d}/W.npy", "--tau", "5e-324", "--dim", "2"], "--tau"),  # was: internal error
    (["floors", "{d}/W.npy", "--tau", "0.5", "--dim", "2", "--samples", "1000000000000"],
     "--samples"),
    (["floors", "{d}/W.npy", "--tau", "0.5", "--dim", "2", "--base-temperature", "nan"],
     "--base-temperature"),
    (["floors", "{d}/zeros.npy", "--tau", "0.5"], "row 0"),
    (["floors", "{d}/empty.csv", "--tau", "0.5"], "WEIGHTS"),
    (["floors", "--objective", "supcon", "--sizes", "1000000000,5", "--tau", "0.5"], "memory"),
    (["metrics", "--embeddings", "{d}/Z.npy", "--reference", "{d}/Z5.npy"], "6"),
    (["metrics", "--embeddings", "{d}/Z.npy", "--reference", "{d}/Z.npy", "--weights",
      "{d}/nan.npy", "--tau", "0.5"], "[1, 2]"),
    (["metrics", "--embeddings", "{d}/Z.npy", "--reference", "{d}/Z.npy", "--weights",
      "{d}/W.npy", "--tau", "-inf"], "--tau"),
    (["metrics", "--embeddings", "{d}/empty.npy", "--reference", "{d}/Z.npy"], "embeddings"),
]


@pytest.mark.parametrize(("argv", "word"), HOSTILE, ids=[" ".join(a[:1] + a[2:]) for a, _ in
                                                         HOSTILE])
def test_hostile_values_and_files_are_exit_2_naming_the_flag(hostile, cli, argv, word):
    r = cli(*[a.format(d=hostile) for a in argv])
    line = one_error(r.err)
    assert r.code == 2, line
    assert "please report" not in line and "internal error" not in line
    assert word in line, line


def test_a_sparse_weights_file_is_accepted_by_floors_optimum_and_metrics(hostile, cli):
    # a scipy.sparse file is a weighting like the dense one (its absent entries are zeros; this
    # one has none): the same answers
    d = hostile
    z = ["--embeddings", str(d / "Z.npy"), "--reference", str(d / "Z.npy")]
    for argv, value in (
        (["optimum", "{f}", "--tau", "0.5", "--json"], lambda j: j["loss"]),
        (["floors", "{f}", "--tau", "0.5", "--json"],
         lambda j: j["conventions"]["sum"]["optimal"]),
        (["metrics", *z, "--weights", "{f}", "--tau", "0.5", "--json"],
         lambda j: j["entropic_gap"]),
    ):
        dense = cli(*[a.format(f=d / "W.npy") for a in argv])
        sparse = cli(*[a.format(f=d / "sparse.npz") for a in argv])
        assert dense.code == sparse.code == 0, sparse.err
        assert value(sparse.json) == pytest.approx(value(dense.json), rel=1e-9)
