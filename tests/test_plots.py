"""dgp.plots: figures build, the c-family grid agrees with the engine, `--plot FILE`, and a clear
ImportError naming the plot extra when matplotlib is missing."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import dgp
from dgp.cli import main

pytest.importorskip("matplotlib")

from dgp import plots


@pytest.fixture
def soft():
    return dgp.weights.soft_supcon_weights([0, 0, 0, 1, 1, 2, 2], eps=0.1)


@pytest.mark.parametrize("tau", [0.3, 0.5, 0.6514417228548778, 0.9])
def test_grid_agrees_with_engine(soft, tau):
    grid = plots.c_family_grid(soft, tau=tau, num=801)
    inside = grid["c"][grid["admissible"]]
    step = grid["c"][1] - grid["c"][0]
    if grid["c_interval"] is None:
        assert inside.size == 0 or np.ptp(inside) <= 2 * step
    else:
        lo, hi = grid["c_interval"]
        assert inside.size > 0 or hi - lo < step
        if inside.size:
            assert lo - step <= inside.min() and inside.max() <= hi + step


def test_grid_euclidean_half_line():
    y = np.random.default_rng(0).standard_normal((9, 2))
    W = dgp.weights.gaussian_kernel_weights(y, sigma=1.0)
    grid = plots.c_family_grid(W, tau=0.5, similarity="euclidean", num=301)
    lo, hi = grid["c_interval"]
    assert lo is None
    ok = grid["c"][grid["admissible"]]
    step = grid["c"][1] - grid["c"][0]
    assert ok.min() == grid["c"][0] and abs(ok.max() - hi) <= step


def test_mds_recovers_gram():
    G = np.full((4, 4), -1 / 3) + (4 / 3) * np.eye(4)
    X, lam = plots.mds(G, dim=3)
    assert np.allclose(X @ X.T, G)
    assert lam[-1] == pytest.approx(0.0, abs=1e-12)


def test_figures_build(soft, tmp_path):
    res = dgp.classify(soft, tau=0.5, dim=3)
    G = np.array([[1.0, -0.55, -0.55], [-0.55, 1.0, -0.39], [-0.55, -0.39, 1.0]])
    simplex = np.full((3, 3), -0.5) + 1.5 * np.eye(3)
    figs = [
        plots.classification_figure(soft, res),
        plots.classification_figure(
            dgp.weights.supcon_weights([0, 0, 1, 1]),
            dgp.classify(dgp.weights.supcon_weights([0, 0, 1, 1]), tau=0.1, dim=2),
        ),
        plots.c_family_spectrum(soft, tau=0.5),
        plots.prototype_geometry(G, sizes=[100, 10, 10], reference=simplex),
        plots.prototype_geometry(np.eye(4), dim=3),
        plots.gram_heatmaps(G, simplex),
    ]
    for k, fig in enumerate(figs):
        path = tmp_path / f"f{k}.png"
        fig.savefig(path)
        assert path.stat().st_size > 1000


def test_bad_arguments(soft):
    with pytest.raises(ValueError, match="c_range"):
        plots.c_family_grid(soft, tau=0.5, c_range=(1.0, 0.0))
    with pytest.raises(ValueError, match="zero weights"):
        plots.c_family_grid(dgp.weights.supcon_weights([0, 0, 1, 1]), tau=0.5)
    with pytest.raises(ValueError, match="dim"):
        plots.prototype_geometry(np.eye(3), dim=4)
    with pytest.raises(ValueError, match="square"):
        plots.gram_heatmaps(np.eye(3), np.eye(4))


def test_cli_plot_writes_file(soft, tmp_path, capsys):
    np.save(tmp_path / "W.npy", soft)
    out = tmp_path / "v.png"
    code = main(
        ["classify", str(tmp_path / "W.npy"), "--tau", "0.5", "--dim", "3", "--plot", str(out)]
    )
    assert code == 0 and out.stat().st_size > 1000
    assert f"figure       {out}" in capsys.readouterr().out
    out2 = tmp_path / "j.png"
    code = main(
        [
            "classify",
            str(tmp_path / "W.npy"),
            "--tau",
            "0.5",
            "--dim",
            "3",
            "--json",
            "--plot",
            str(out2),
        ]
    )
    import json

    assert code == 0 and json.loads(capsys.readouterr().out)["verdict"] == "realizable"
    assert out2.exists()


def test_missing_matplotlib_names_the_extra(soft, tmp_path, monkeypatch, capsys):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r"dgp-contrastive\[plot\]"):
        plots.c_family_spectrum(soft, tau=0.5)
    np.save(tmp_path / "W.npy", soft)
    code = main(
        [
            "classify",
            str(tmp_path / "W.npy"),
            "--tau",
            "0.5",
            "--dim",
            "3",
            "--plot",
            str(tmp_path / "x.png"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error:") and "dgp-contrastive[plot]" in err
    assert not (tmp_path / "x.png").exists()


def test_supcon_plot_writes_the_prototype_figure(tmp_path, capsys):
    from dgp.cli import main

    out = tmp_path / "protos.png"
    assert main(["supcon", "--sizes", "50,10,10", "--tau", "0.2", "--plot", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000
    assert "prototype Gram" in capsys.readouterr().out
