"""dgp.plots: figures build, the c-family grid agrees with the engine, `--plot FILE`, and a clear
ImportError naming the plot extra when matplotlib is missing."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import dgp

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


def test_cli_plot_writes_file(soft, tmp_path, cli):
    np.save(tmp_path / "W.npy", soft)
    out = tmp_path / "v.png"
    r = cli("classify", tmp_path / "W.npy", "--tau", "0.5", "--dim", "3", "--plot", out)
    assert r.code == 0 and out.stat().st_size > 1000
    assert f"figure       {out}" in r.out
    out2 = tmp_path / "j.png"
    r = cli("classify", tmp_path / "W.npy", "--tau", "0.5", "--dim", "3", "--json", "--plot", out2)
    assert r.code == 0 and r.json["verdict"] == "realizable"
    assert out2.exists()


def test_missing_matplotlib_names_the_extra(soft, tmp_path, monkeypatch, cli):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError, match=r"dgp-contrastive\[plot\]"):
        plots.c_family_spectrum(soft, tau=0.5)
    np.save(tmp_path / "W.npy", soft)
    r = cli("classify", tmp_path / "W.npy", "--tau", "0.5", "--dim", "3", "--plot",
            tmp_path / "x.png")
    assert r.code == 2 and r.err.startswith("error:") and "dgp-contrastive[plot]" in r.err
    assert not (tmp_path / "x.png").exists()


def test_supcon_plot_writes_the_prototype_figure(tmp_path, cli):
    out = tmp_path / "protos.png"
    r = cli("supcon", "--sizes", "50,10,10", "--tau", "0.2", "--plot", out)
    assert r.code == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000
    assert "prototype Gram" in r.out


# ---------------------------------------------------------------------------------------------
# what the figures say


def _texts(fig) -> list[str]:
    from matplotlib.text import Text

    return [t.get_text() for t in fig.findobj(Text) if t.get_text()]


def _legend_texts(ax) -> list[str]:
    leg = ax.get_legend()
    return [] if leg is None else [t.get_text() for t in leg.get_texts()]


@pytest.mark.parametrize(
    ("sigma", "tau", "similarity"),
    [(0.3, 0.5, "cosine"), (1.0, 1.0, "cosine"), (1.0, 0.1, "cosine"), (1.0, 0.5, "euclidean")],
)
def test_spectrum_shows_zero_and_the_peak_of_lambda_min(sigma, tau, similarity):
    """However far below zero the smallest eigenvalue stays (y-Aware families far from PSD), the
    y range holds both the zero line and its peak, with room around them."""
    y = np.random.default_rng(0).standard_normal((40, 2))
    W = dgp.weights.gaussian_kernel_weights(y, sigma=sigma)
    fig = plots.c_family_spectrum(W, tau=tau, similarity=similarity, num=121)
    grid = plots.c_family_grid(W, tau=tau, similarity=similarity, num=121)
    peak = float(grid["eigenvalues"][:, 0].max())
    lo, hi = fig.axes[0].get_ylim()
    margin = 0.1 * (hi - lo)
    assert lo + margin < min(peak, 0.0) and max(peak, 0.0) < hi - margin
    # the title counts samples, not the N - 1 eigenvalues of the Euclidean family on 1-perp
    assert "N = 40" in fig.axes[0].get_title()


def test_no_internal_words_in_the_figures(soft):
    figs = [
        plots.c_family_spectrum(soft, tau=0.5),
        plots.classification_figure(soft, dgp.classify(soft, tau=0.5, dim=3)),
        plots.classification_figure(soft, dgp.classify(soft, tau=0.5, dim=1)),
    ]
    for fig in figs:
        words = " ".join(_texts(fig)).lower()
        assert "engine" not in words and "eigvalsh" not in words, words


def test_collapsed_classes_are_drawn_once_and_counted():
    """Soft SupCon at a realizable temperature collapses each class to one point (the closed
    form of the theory): 7 samples are 3 points, each marked with its multiplicity."""
    labels = [4, 4, 9, 9, 9, 1, 1]
    W = dgp.weights.soft_supcon_weights(labels, eps=0.1)
    res = dgp.classify(W, tau=0.5, dim=3)
    assert res.verdict == "realizable" and res.rank == 3
    fig = plots.classification_figure(W, res, labels=labels)
    emb = fig.axes[-1]
    assert emb.name == "3d"
    from mpl_toolkits.mplot3d.art3d import Path3DCollection

    (points,) = [c for c in emb.collections if isinstance(c, Path3DCollection)]
    assert len(points.get_sizes()) == 3  # one marker per point, sized by its samples
    texts = _texts(fig)
    assert sorted(t for t in texts if t.startswith("×")) == ["×2", "×2", "×3"]
    assert "7 samples at 3 points" in emb.get_title()
    # classes named by their label values, in sorted order, with their sizes
    assert _legend_texts(emb) == ["class 1 (n = 2)", "class 4 (n = 2)", "class 9 (n = 3)"]
    # the 3-D axes are labelled
    assert (emb.get_xlabel(), emb.get_ylabel(), emb.get_zlabel()) == ("$z_1$", "$z_2$", "$z_3$")


def test_uncollapsed_embedding_is_not_annotated():
    y = np.random.default_rng(1).standard_normal((12, 2))
    W = dgp.weights.gaussian_kernel_weights(y, sigma=1.0)
    res = dgp.classify(W, similarity="euclidean", tau=0.5, dim=2)
    assert res.verdict == "realizable"
    fig = plots.classification_figure(W, res)
    assert not [t for t in _texts(fig) if t.startswith("×")]
    assert "points" not in fig.axes[-1].get_title()
    assert (fig.axes[-1].get_xlabel(), fig.axes[-1].get_ylabel()) == ("$z_1$", "$z_2$")


def test_rank_against_d_explains_an_inconsistent_band(soft):
    """PSD targets exist but all need more than d dimensions: the band is not drawn as
    admissible, and a rank panel shows the ranks of the interval against d."""
    res = dgp.classify(soft, tau=0.5, dim=1)
    assert res.verdict == "inconsistent" and res.c_interval is not None
    fig = plots.classification_figure(soft, res)
    spectrum, ranks = fig.axes[0], fig.axes[1]
    assert any("rank above $d$" in t for t in _legend_texts(spectrum))
    band = [p for p in spectrum.patches if p.get_hatch()]
    assert band, "the PSD interval of an inconsistent verdict is hatched"
    assert ranks.get_ylabel() == "rank"
    cert = res.to_dict()["certificate"]["ranks"]
    shown = {t.get_text() for t in ranks.texts}
    assert {str(cert["lo"]), str(cert["hi"]), str(cert["interior"]), "d = 1"} <= shown
    # realizable: the band is green, not hatched, and the chosen c is marked
    ok = plots.classification_figure(soft, dgp.classify(soft, tau=0.5, dim=3))
    assert not [p for p in ok.axes[0].patches if p.get_hatch()]
    assert any(t.startswith("optimum") for t in _legend_texts(ok.axes[0]))


def test_zero_weights_figure_has_no_meaningless_colour_bar():
    """SupCon: all positive weights equal; the figure names the values in a legend instead of a
    colour bar over a constant, and outlines the zero weight the verdict names."""
    labels = [0, 0, 1, 1, 2, 2]
    W = dgp.weights.supcon_weights(labels)
    res = dgp.classify(W, tau=0.1, dim=2)
    fig = plots.classification_figure(W, res, labels=labels)
    assert len(fig.axes) == 1  # no colour-bar axes
    legend = _legend_texts(fig.axes[0])
    assert "$w_{ij}$ = 1" in legend and any("w_{ij} = 0" in t for t in legend)
    i, j = res.to_dict()["certificate"]["entry"]
    outlined = [p for p in fig.axes[0].patches if p.get_edgecolor()[0] > 0.5]
    assert [(p.get_x() + 0.5, p.get_y() + 0.5) for p in outlined] == [(j, i)]
    # varying positive weights keep a colour bar of log w
    A = dgp.weights.soft_supcon_weights(labels, eps=0.1) * (1 + np.arange(6))[:, None]
    A[0, 3] = A[3, 0] = 0.0
    fig = plots.classification_figure(A, dgp.classify(A, tau=0.1, dim=2))
    assert len(fig.axes) == 2 and fig.axes[1].get_ylabel() == r"$\log w_{ij}$"


def test_prototype_classes_are_numbered_from_one():
    p = dgp.supcon_prototypes([30, 10, 10], tau=0.2)
    fig = plots.prototype_geometry(p.gram, sizes=p.sizes)
    texts = _texts(fig)
    assert {"class 1 (n = 30)", "class 2 (n = 10)", "class 3 (n = 10)"} <= set(texts)
    assert not [t for t in texts if t.startswith("class 0")]
    heat = fig.axes[1]
    assert [t.get_text() for t in heat.get_xticklabels()] == ["1", "2", "3"]
    named = plots.prototype_geometry(p.gram, names=["cat", "dog", "eel"])
    assert {"cat", "dog", "eel"} <= set(_texts(named))
    with pytest.raises(ValueError, match="names"):
        plots.prototype_geometry(p.gram, names=["cat"])


# ---------------------------------------------------------------------------------------------
# notebooks: what dgp returns shows itself (tests/test_notebooks.py runs a real kernel)


def _notebook_figures(soft):
    res = dgp.classify(soft, similarity="cosine", tau=0.5, dim=3)
    G = dgp.supcon_prototypes([100, 10, 10], tau=0.2).gram
    pm = dgp.phase("soft-supcon", sizes=[3, 4, 5], grid={"tau": [0.3, 0.9], "eps": [0.1, 0.3]},
                   dim=3)
    Z = res.embedding
    return {
        "classification_figure": plots.classification_figure(soft, res),
        "c_family_spectrum": plots.c_family_spectrum(soft, tau=0.5),
        "prototype_geometry": plots.prototype_geometry(G, sizes=[100, 10, 10]),
        "gram_heatmaps": plots.gram_heatmaps(Z @ Z.T, Z @ Z.T + 0.01),
        "PhaseMap.figure": pm.figure(),
    }


@pytest.mark.slow
def test_every_figure_has_an_image_for_ipython(soft):
    import pickle
    import struct

    from matplotlib.figure import Figure

    from dgp.mplfigure import NotebookFigure

    formatters = pytest.importorskip("IPython.core.formatters")
    png_formatter = formatters.PNGFormatter()
    for name, fig in _notebook_figures(soft).items():
        assert isinstance(fig, Figure) and isinstance(fig, NotebookFigure), name
        png = png_formatter(fig)  # what IPython's display system calls, without any magic
        assert png is not None and png[:8] == b"\x89PNG\r\n\x1a\n", name
        width, height = struct.unpack(">II", png[16:24])
        full_w, full_h = fig.get_size_inches() * fig.dpi
        # cropped (or grown) to what is drawn, as the inline backend does: about the figure
        assert 0.6 < width / full_w < 1.2 and 0.6 < height / full_h < 1.2, (name, width, height)
        again = pickle.loads(pickle.dumps(fig))  # our own object: the class is importable
        assert type(again) is NotebookFigure
