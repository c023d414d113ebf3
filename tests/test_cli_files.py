"""No lost file: outputs that would overwrite an input (or each other) are refused before any
work, and outputs are written atomically."""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest

from dgp.cli._output import atomic_output, save_array


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    np.savetxt("y.csv", rng.standard_normal(20))
    W = np.exp(rng.standard_normal((5, 5)))
    np.save("W.npy", 0.5 * (W + W.T))
    return tmp_path


def _unchanged(path, before):
    with open(path, "rb") as fh:
        return fh.read() == before


def _bytes(path):
    with open(path, "rb") as fh:
        return fh.read()


@pytest.mark.parametrize("argv", [
    ("classify", "--objective", "y-aware", "--labels", "y.csv", "--sigma", "1", "--tau", "0.5",
     "--dim", "3", "--save-gram", "y.csv"),
    ("classify", "W.npy", "--tau", "0.5", "--dim", "3", "--save-embedding", "W.npy"),
    ("classify", "W.npy", "--tau", "0.5", "--dim", "3", "--save-gram", "./W.npy"),
    ("optimum", "W.npy", "--tau", "0.5", "--save-gram", "W.npy"),
    ("optimum", "link.npy", "--tau", "0.5", "--save-embedding", "W.npy"),
    ("phase", "--objective", "y-aware", "--labels", "y.csv", "--sigma", "1", "--grid",
     "tau=0.5,1", "--csv", "y.csv"),
])
def test_an_output_that_is_an_input_is_refused_before_any_work(files, cli, argv):
    os.symlink("W.npy", "link.npy")
    before = {p: _bytes(p) for p in ("W.npy", "y.csv")}
    r = cli(*argv)
    assert r.code == 2, r.err
    assert r.err.startswith("error: ") and "would destroy the input" in r.err
    assert r.err.count("\n") == 1 and r.out == ""
    assert all(_unchanged(p, b) for p, b in before.items())


def test_two_outputs_naming_one_file_are_refused(files, cli):
    r = cli("classify", "W.npy", "--tau", "0.5", "--dim", "3", "--save-embedding", "Z.npy",
            "--save-gram", "./Z.npy")
    assert r.code == 2 and "are the same file" in r.err
    assert not os.path.exists("Z.npy")


def test_distinct_outputs_are_written(files, cli):
    X = np.random.default_rng(1).standard_normal((6, 2))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    np.save("R.npy", np.exp((X @ X.T) / 0.5))
    r = cli("classify", "R.npy", "--tau", "0.5", "--dim", "3", "--save-embedding", "Z.npy",
            "--save-gram", "G.csv")
    assert r.code == 0, r.err
    Z, G = np.load("Z.npy"), np.loadtxt("G.csv", delimiter=",")
    assert np.allclose(Z @ Z.T, G) and np.allclose(G, X @ X.T, atol=1e-8)
    assert sorted(p for p in os.listdir(".") if p.startswith(".")) == []  # no temporary left


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "out.npy"
    np.save(target, np.arange(3.0))
    before = target.read_bytes()
    with pytest.raises(RuntimeError), atomic_output(str(target)) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(b"partial")
        raise RuntimeError("interrupted half way")
    assert target.read_bytes() == before
    assert os.listdir(tmp_path) == ["out.npy"]


def test_save_array_replaces_the_file_whole(tmp_path):
    target = tmp_path / "a.csv"
    save_array(str(target), np.eye(2))
    save_array(str(target), np.ones((3, 3)))
    assert np.loadtxt(target, delimiter=",").shape == (3, 3)
    assert os.listdir(tmp_path) == ["a.csv"]


def test_verify_out_must_be_a_folder(files, cli):
    r = cli("verify", "supcon-imbalance", "--out", "W.npy")
    assert r.code == 2 and "is not a directory" in r.err


@pytest.mark.parametrize("name", ["T.NPY", "T.Npy", "T.npy", "T.CSV", "T.TXT"])
def test_an_upper_case_extension_is_written_under_the_name_given(files, cli, name):
    r = cli("supcon", "--sizes", "5,3,2", "--tau", "0.2", "--dim", "2", "--save-prototypes", name)
    assert r.code == 0, r.err
    P = np.load(name) if name.lower().endswith(".npy") else np.loadtxt(name, delimiter=",")
    assert P.shape == (3, 2) and np.allclose(np.linalg.norm(P, axis=1), 1.0)
    assert [p for p in os.listdir(".") if p.startswith(".")] == []  # no temporary left


def test_a_link_output_keeps_the_link_and_replaces_its_target(files, cli):
    with open("notes.txt", "w") as fh:
        fh.write("old\n")
    os.chmod("notes.txt", 0o600)
    os.symlink("notes.txt", "link.npy")
    r = cli("supcon", "--sizes", "5,3,2", "--tau", "0.2", "--dim", "2", "--save-prototypes",
            "link.npy")
    assert r.code == 0, r.err
    assert os.path.islink("link.npy") and os.readlink("link.npy") == "notes.txt"
    assert np.load("notes.txt").shape == (3, 2)
    assert os.stat("notes.txt").st_mode & 0o777 == 0o600  # the replaced file keeps its mode


def test_an_output_that_cannot_be_created_is_refused_before_any_work(files, cli, monkeypatch):
    os.mkfifo("pipe.npy")
    r = cli("supcon", "--sizes", "5,3,2", "--tau", "0.2", "--save-prototypes", "pipe.npy")
    assert r.code == 2 and "--save-prototypes 'pipe.npy' exists and is not a regular file" in r.err
    os.mkdir("ro")
    real = tempfile.NamedTemporaryFile

    def refuse(*args, dir=None, **kwargs):  # a folder that passes os.access but refuses files
        if dir is not None and os.path.basename(dir) == "ro":
            raise PermissionError(13, "Read-only file system")
        return real(*args, dir=dir, **kwargs)

    monkeypatch.setattr("tempfile.NamedTemporaryFile", refuse)
    r = cli("supcon", "--sizes", "5,3,2", "--tau", "0.2", "--save-gram", "ro/G.npy")
    assert r.code == 2 and r.out == "", r.err
    assert "--save-gram 'ro/G.npy': cannot write in the folder" in r.err
    assert "Read-only file system" in r.err


def test_a_write_that_fails_late_names_the_file(files, cli, monkeypatch):
    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("os.replace", full)
    r = cli("supcon", "--sizes", "5,3,2", "--tau", "0.2", "--save-gram", "G.npy")
    assert r.code == 1
    assert r.err == "error: cannot write the output 'G.npy' (No space left on device)\n"
    assert sorted(os.listdir(".")) == ["W.npy", "y.csv"]  # nothing written, no temporary


@pytest.mark.parametrize("argv, words", [
    (("--save-gram", "loop1.npy"), "--save-gram 'loop1.npy' cannot be resolved"),
    (("--save-gram", "a" * 300 + ".npy"), "File name too long"),
    (("--save-gram", "W.npy/x.npy"), "--save-gram 'W.npy/x.npy' cannot be resolved"),
    (("--plot", "pipe"), "--plot 'pipe' exists and is not a regular file"),  # before '.png'
])
def test_unresolvable_or_special_outputs_are_refused_before_any_work(files, cli, argv, words):
    os.symlink("loop2.npy", "loop1.npy")
    os.symlink("loop1.npy", "loop2.npy")
    os.mkfifo("pipe")
    r = cli("supcon", "--sizes", "5,3,2", "--tau", "0.2", *argv)
    assert r.code == 2 and r.out == "" and words in r.err, r.err
    assert os.path.islink("loop1.npy") and not os.path.exists("pipe.png")


@pytest.mark.slow  # more than about 3 s (README test line <= 4 min)
def test_csv_tables_take_csv_or_txt_from_one_declaration(files, cli):
    for name in ("ph.tsv", "ph.npy"):
        r = cli("phase", "--objective", "y-aware", "--labels", "y.csv", "--sigma", "1", "--grid",
                "tau=0.5,1", "--csv", name)
        assert r.code == 2 and r.err == f"error: --csv '{name}': use a .csv or .txt file name\n"
    r = cli("phase", "--objective", "y-aware", "--labels", "y.csv", "--sigma", "1", "--grid",
            "tau=0.5,1", "--dim", "2", "--csv", "PH.CSV", "--quiet")
    assert r.code == 0 and os.path.isfile("PH.CSV") and r.err == ""


@pytest.mark.parametrize("flag, shown", [(None, True), ("--quiet", False), ("--json", True),
                                         ("--json --quiet", False)])
@pytest.mark.slow  # more than about 3 s (README test line <= 4 min)
def test_phase_progress_only_on_a_terminal_without_quiet(files, cli, monkeypatch, flag, shown):
    """``--quiet`` silences the progress bar; ``--json`` does not (its object is stdout's)."""
    import dgp.cli.phase as phase_cli

    seen = {}
    real = phase_cli.phase

    def spy(**kwargs):
        seen["progress"] = kwargs["progress"]
        return real(**kwargs)

    class Terminal:  # what phase_cli sees as sys.stderr: a terminal
        def isatty(self):
            return True

        def write(self, text):
            return len(text)

        def flush(self):
            pass

    monkeypatch.setattr(phase_cli, "phase", spy)
    monkeypatch.setattr(phase_cli, "sys", type("S", (), {"stderr": Terminal()}))
    argv = ["phase", "--objective", "y-aware", "--labels", "y.csv", "--sigma", "1", "--grid",
            "tau=0.5,1", "--dim", "2"] + (flag.split() if flag else [])
    r = cli(*argv)
    assert r.code == 0 and seen["progress"] is shown
