"""What dgp prints never crashes on, nor is hijacked by, what the user's files and environment
hold: class names the output encoding cannot represent are escaped, terminal escape sequences in
names are shown escaped, a closed stderr changes no exit status, and matplotlib's environment
(a bad MPLBACKEND, an unwritable HOME) gives a clear error or nothing on stderr."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from dgp.cli._text import printable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMES = ["caf\u00e9", "caf\u00e9", "dog\x1b[2J\x1b]0;owned\x07", "dog\x1b[2J\x1b]0;owned\x07",
         "\u732b", "\u732b"]


def _run(argv, cwd, *, env=None, close_stderr=False):
    child = {**os.environ, "PYTHONPATH": ROOT, "OMP_NUM_THREADS": "1", **(env or {})}
    for k, v in list(child.items()):
        if v is None:
            del child[k]
    return subprocess.run(
        [sys.executable, "-m", "dgp", *argv], cwd=cwd, env=child, capture_output=not close_stderr,
        stdout=subprocess.PIPE if close_stderr else None,
        preexec_fn=(lambda: os.close(2)) if close_stderr else None, timeout=120, check=False,
    )


@pytest.fixture
def names(tmp_path):
    (tmp_path / "names.txt").write_text("\n".join(NAMES) + "\n", encoding="utf-8")
    return tmp_path


def test_control_characters_are_escaped_and_tabs_kept():
    assert printable("a\x1b[31mb\nc\td\x9b\x7f") == "a\\x1b[31mb\\x0ac\td\\x9b\\x7f"
    assert printable("caf\u00e9 \u732b") == "caf\u00e9 \u732b"


# slow: each encoding is a child process (about 2 s of CPU); ascii, the one that crashed, stays
@pytest.mark.parametrize("encoding", ["ascii", pytest.param("latin-1", marks=pytest.mark.slow),
                                      pytest.param("utf-8", marks=pytest.mark.slow)])
def test_class_names_print_in_any_output_encoding(names, encoding):
    r = _run(["supcon", "--labels", "names.txt", "--tau", "0.5"], names,
             env={"PYTHONIOENCODING": encoding})
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode(encoding)
    assert "\x1b" not in out and "\x07" not in out
    assert "dog\\x1b[2J\\x1b]0;owned\\x07" in out
    if encoding == "utf-8":
        assert "caf\u00e9" in out and "\u732b" in out
    elif encoding == "ascii":
        assert "caf\\xe9" in out and "\\u732b" in out


def test_json_keeps_the_names_exact(names):
    import json

    r = _run(["supcon", "--labels", "names.txt", "--tau", "0.5", "--json"], names,
             env={"PYTHONIOENCODING": "ascii"})
    assert r.returncode == 0, r.stderr
    assert sorted(json.loads(r.stdout)["classes"]) == sorted(set(NAMES))


def test_an_error_naming_a_class_is_escaped_and_one_line(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "one.txt").write_text("a\x1b[2Jb\na\x1b[2Jb\nlone\x1b]0;x\x07\n", encoding="utf-8")
    r = cli("supcon", "--labels", "one.txt", "--tau", "0.5")
    assert r.code == 2 and r.err.startswith("error: ") and r.err.count("\n") == 1, r.err
    assert "\x1b" not in r.err and "\x07" not in r.err


def test_with_stderr_closed_a_missing_input_is_still_exit_2(tmp_path):
    missing = _run(["classify", "nope.npy", "--tau", "0.5", "--dim", "2"], tmp_path,
                   close_stderr=True)
    assert missing.returncode == 2 and missing.stdout == b""


# slow: a second child process of about 2 s of CPU
@pytest.mark.slow
def test_with_stderr_closed_a_success_is_exit_0(tmp_path):
    X = np.random.default_rng(0).standard_normal((4, 2))
    np.save(tmp_path / "W.npy", np.exp(X @ X.T))
    ok = _run(["classify", "W.npy", "--tau", "0.5", "--dim", "2"], tmp_path, close_stderr=True)
    assert ok.returncode == 0 and b"verdict" in ok.stdout


def _figure_problem(tmp_path):
    pytest.importorskip("matplotlib")
    X = np.random.default_rng(1).standard_normal((5, 2))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    np.save(tmp_path / "R.npy", np.exp(X @ X.T / 0.5))


def test_a_bad_mplbackend_is_named(tmp_path):
    _figure_problem(tmp_path)
    r = _run(["classify", "R.npy", "--tau", "0.5", "--dim", "3", "--plot", "f.png"], tmp_path,
             env={"MPLBACKEND": "junk"})
    err = r.stderr.decode()
    assert r.returncode == 2 and err.startswith("error: MPLBACKEND='junk'"), err
    assert err.count("\n") == 1 and not (tmp_path / "f.png").exists()


# slow: a child process that imports matplotlib and draws (about 4 s of CPU)
@pytest.mark.slow
def test_an_unwritable_home_puts_nothing_on_stderr(tmp_path):
    _figure_problem(tmp_path)
    (tmp_path / "home").write_text("a file, so nothing can be made under it")
    r = _run(["classify", "R.npy", "--tau", "0.5", "--dim", "3", "--plot", "f.png"], tmp_path,
             env={"HOME": str(tmp_path / "home"), "MPLCONFIGDIR": None, "XDG_CONFIG_HOME": None,
                  "XDG_CACHE_HOME": None})
    assert r.returncode == 0 and r.stderr == b"", r.stderr.decode()
    assert (tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG"
