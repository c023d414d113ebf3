"""Outputs go through a temporary file that nobody can plant in advance: an unpredictable name,
created exclusively in the output's folder, so a link planted next to the output never makes
dgp write anywhere else; what is written, and the modes, are as before."""

from __future__ import annotations

import os
import stat

import numpy as np
import pytest

from dgp.cli._output import atomic_output, save_array


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    np.savetxt("y.csv", rng.standard_normal(12))
    X = rng.standard_normal((5, 2))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    np.save("W.npy", np.exp((X @ X.T) / 0.5))
    with open("victim.txt", "w") as fh:
        fh.write("precious\n")
    return tmp_path


def _plant(name: str) -> None:
    """Links at every name the old scheme would have used for ``name``'s temporary file."""
    ext = os.path.splitext(name)[1]
    os.symlink("victim.txt", f".{name}.{os.getpid()}.tmp{ext}")


def _victim_intact() -> bool:
    with open("victim.txt") as fh:
        return fh.read() == "precious\n"


@pytest.mark.parametrize("argv, out", [
    (("classify", "W.npy", "--tau", "0.5", "--dim", "3", "--save-gram", "G.npy"), "G.npy"),
    (("supcon", "--sizes", "5,3,2", "--tau", "0.2", "--save-prototypes", "P.csv"), "P.csv"),
    (("phase", "--objective", "y-aware", "--labels", "y.csv", "--sigma", "1", "--grid",
      "tau=0.5,1", "--dim", "3", "--no-excess", "--csv", "T.csv"), "T.csv"),
])
def test_a_link_planted_at_a_temporary_name_is_never_followed(files, cli, argv, out):
    _plant(out)
    r = cli(*argv)
    assert r.code == 0, r.err
    assert _victim_intact()
    assert os.path.isfile(out) and not os.path.islink(out)


def test_a_planted_link_cannot_redirect_a_figure(files, cli):
    pytest.importorskip("matplotlib")
    _plant("F.png")
    r = cli("supcon", "--sizes", "5,3,2", "--tau", "0.2", "--plot", "F.png")
    assert r.code == 0, r.err
    assert _victim_intact()
    with open("F.png", "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"


def test_the_temporary_file_is_new_unpredictable_and_in_the_output_folder(tmp_path):
    target = str(tmp_path / "out.npy")
    seen = []
    for _ in range(2):
        with atomic_output(target) as tmp:
            st = os.lstat(tmp)  # created before the caller writes: a regular file of ours
            assert stat.S_ISREG(st.st_mode) and st.st_size == 0 and st.st_uid == os.getuid()
            assert os.path.dirname(tmp) == str(tmp_path) and tmp.endswith(".npy")
            seen.append(os.path.basename(tmp))
            with open(tmp, "wb") as fh:
                np.save(fh, np.arange(3.0))
    assert seen[0] != seen[1] and str(os.getpid()) not in seen[0]
    assert os.listdir(tmp_path) == ["out.npy"]


def test_a_new_output_gets_the_mode_open_would_give(tmp_path):
    old = os.umask(0o027)
    try:
        save_array(str(tmp_path / "a.npy"), np.eye(2))
    finally:
        os.umask(old)
    assert os.stat(tmp_path / "a.npy").st_mode & 0o777 == 0o640


def test_an_existing_output_keeps_its_mode(tmp_path):
    target = tmp_path / "a.csv"
    target.write_text("old\n")
    os.chmod(target, 0o604)
    save_array(str(target), np.eye(2))
    assert os.stat(target).st_mode & 0o777 == 0o604
    assert np.loadtxt(target, delimiter=",").shape == (2, 2)


def test_a_folder_where_no_temporary_can_be_made_names_the_output(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    os.chmod(folder, 0o500)
    try:
        if os.access(folder, os.W_OK):
            pytest.skip("running as root: permissions are not enforced")
        with pytest.raises(OSError) as info, atomic_output(str(folder / "x.npy")):
            pass
        assert info.value.filename == str(folder / "x.npy")
    finally:
        os.chmod(folder, 0o700)


def test_the_cli_and_the_library_share_one_atomic_write():
    import dgp.cli._output
    import dgp.resources

    assert dgp.cli._output.atomic_output is dgp.resources.atomic_output


class _Art:
    """A condition of a class experiment, as ``save_figures`` reads it."""

    similarity = "gram"

    def __init__(self, condition: str, seed: int) -> None:
        rng = np.random.default_rng(seed)
        X = rng.standard_normal((4, 3))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        self.condition = condition
        self.predicted = X @ X.T
        Y = X + 0.05 * rng.standard_normal(X.shape)
        Y /= np.linalg.norm(Y, axis=1, keepdims=True)
        self.learned = Y @ Y.T


class _Experiment:
    """A ``batch-size`` experiment: a Gram figure and a curve."""

    def __init__(self) -> None:
        self.artifacts = (_Art("B=16", 1), _Art("B=64", 2))
        self.report = {
            "experiment": "batch-size", "seeds": [0], "config": {"data": "synthetic"},
            "summary": [{"condition": f"B={b}", "heldout_batch_rms_error": [0.1 / b, 0.01],
                         "heldout_full_rms_error": [0.2 / b, 0.02]} for b in (16, 64)]}


def _png(path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(8) == b"\x89PNG\r\n\x1a\n"


def test_verify_figures_are_written_whole(tmp_path):
    pytest.importorskip("matplotlib")
    from dgp.torch.plots import save_figures

    paths = save_figures(_Experiment(), str(tmp_path))
    assert [os.path.basename(p) for p in paths] == ["batch-size-gram.png", "batch-size-curve.png"]
    assert all(_png(p) for p in paths)
    assert sorted(os.listdir(tmp_path)) == sorted(os.path.basename(p) for p in paths)


def test_a_figure_write_that_fails_midway_leaves_the_old_figures_and_no_partial_file(
        tmp_path, monkeypatch):
    """matplotlib dies after writing half a file (a full disk, Ctrl-C): the figures of the
    earlier run stay as they were, byte for byte, and no temporary file is left."""
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from dgp.torch.plots import save_figures

    save_figures(_Experiment(), str(tmp_path))
    before = {name: (tmp_path / name).read_bytes() for name in os.listdir(tmp_path)}
    real = Figure.savefig
    calls = []

    def dies_midway(self, fname, **kwargs):
        calls.append(fname)
        real(self, fname, **kwargs)
        with open(fname, "r+b") as fh:  # half of it written, then the failure
            fh.truncate(os.path.getsize(fname) // 2)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", dies_midway)
    with pytest.raises(OSError) as info:
        save_figures(_Experiment(), str(tmp_path))
    assert info.value.filename == str(tmp_path / "batch-size-gram.png")
    assert calls and all(os.path.basename(c) not in before for c in calls)  # never in place
    assert {name: (tmp_path / name).read_bytes() for name in os.listdir(tmp_path)} == before
