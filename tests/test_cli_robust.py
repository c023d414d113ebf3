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
