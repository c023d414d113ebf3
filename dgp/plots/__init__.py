r"""Figures: prototype geometry, the spectrum along the ``c`` family, predicted vs learned Grams.

Needs the ``plot`` extra (``pip install -e ".[plot]"`` in a source checkout); matplotlib is
imported only when a figure is drawn, and a missing matplotlib raises an :class:`ImportError`
that names the extra. Every function returns a :class:`matplotlib.figure.Figure` built without
``pyplot`` (no GUI backend, no global state): save it with ``fig.savefig("file.png")``. It is a
:class:`dgp.mplfigure.NotebookFigure`, so a notebook cell that ends with it shows the image,
without ``%matplotlib inline``.

- :func:`prototype_geometry`: classical MDS of a (prototype) Gram matrix in 2-D or 3-D, beside a
  heatmap of the Gram itself.
- :func:`c_family_spectrum`: the smallest eigenvalues of the target :math:`G(c)` (cosine) or of
  :math:`-\tfrac12 J D(c) J` on :math:`\mathbb 1^\perp` (Euclidean) along a grid of ``c``,
  computed by an explicit ``eigvalsh`` at every grid point, independently of the spectral
  engine; the admissible interval reported by :func:`dgp.classify` is shaded, so the two can be
  compared by eye.
- :func:`gram_heatmaps`: a predicted Gram beside a learned one and their difference.
- :func:`classification_figure`: the figure of ``dgp classify --plot FILE``.

Examples
--------
>>> import dgp
>>> from dgp.plots import c_family_spectrum
>>> W = dgp.weights.soft_supcon_weights([0, 0, 1, 1, 2, 2], eps=0.1)
>>> fig = c_family_spectrum(W, tau=0.5)          # doctest: +SKIP
>>> fig.savefig("spectrum.png")                  # doctest: +SKIP
"""

from __future__ import annotations

from dgp.plots._canvas import INSTALL_HINT, new_figure, require_matplotlib
from dgp.plots._classification import classification_figure
from dgp.plots._geometry import GEOMETRY_MANY_CLASSES, gram_heatmaps, mds, prototype_geometry
from dgp.plots._spectrum import MAX_PLOT_N, c_family_grid, c_family_spectrum

__all__ = [
    "GEOMETRY_MANY_CLASSES",
    "INSTALL_HINT",
    "MAX_PLOT_N",
    "c_family_grid",
    "c_family_spectrum",
    "classification_figure",
    "gram_heatmaps",
    "mds",
    "new_figure",
    "prototype_geometry",
    "require_matplotlib",
]
