"""dgp.plots.prototype_geometry at K = 100 (CIFAR-100-LT sizes): a size-sorted heat map with a
colour scale fitted to the off-diagonal cosines, and each class's cosines against its size,
instead of an unreadable 3-D blob with a +-1 scale."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from dgp import plots


def long_tail_gram(K=100, seed=0):
    """A Gram of unit vectors whose tail leans together a little (cosines within +-0.2)."""
    rng = np.random.default_rng(seed)
    V = rng.standard_normal((K, 128)) + np.linspace(0, 2.0, K)[:, None] * np.eye(1, 128)
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    return V @ V.T


def test_many_classes_get_a_sorted_fitted_heat_map():
    G = long_tail_gram()
    K = G.shape[0]
    sizes = np.random.default_rng(1).permutation([round(500 * 0.01 ** (k / 99)) for k in range(K)])
    fig = plots.prototype_geometry(G, sizes=sizes, title="CIFAR-100-LT")
    left, heat = fig.axes[0], fig.axes[1]
    assert left.name == "rectilinear" and left.get_xscale() == "log"  # no 3-D blob
    (image,) = heat.get_images()
    order = np.argsort(-sizes, kind="stable")
    expected = G[np.ix_(order, order)]
    shown = np.asarray(image.get_array(), dtype=float)
    off = ~np.eye(K, dtype=bool)
    np.testing.assert_allclose(shown[off], expected[off])  # largest class first
    assert np.isnan(np.diag(np.ma.filled(image.get_array(), np.nan))).all()
    vmin, vmax = image.get_clim()
    top = np.abs(G[off]).max()
    assert vmax == pytest.approx(top) and vmin == pytest.approx(-top)
    assert vmax < 0.6  # fitted to the cosines, not +-1
    # the left panel: each class's nearest and mean cosine, at its size
    near, mean = (c.get_offsets() for c in left.collections[:2])
    rows = np.where(off, G, np.nan)
    np.testing.assert_allclose(np.asarray(near)[:, 0], sizes)
    np.testing.assert_allclose(np.asarray(near)[:, 1], np.nanmax(rows, axis=1))
    np.testing.assert_allclose(np.asarray(mean)[:, 1], np.nanmean(rows, axis=1))


def test_few_classes_keep_the_mds_picture():
    G = long_tail_gram(K=plots.GEOMETRY_MANY_CLASSES)
    fig = plots.prototype_geometry(G)
    assert fig.axes[0].name == "3d"
    with pytest.raises(ValueError, match="sizes"):
        plots.prototype_geometry(long_tail_gram(K=20), sizes=[1, 2])
