"""What every figure is drawn with: matplotlib on demand, the figure class, heat maps, numbers
and labels as the figures print them."""

from __future__ import annotations

from typing import Any

import numpy as np

from dgp.constants import PLOT_ZERO_RTOL
from dgp.errors import install_hint

INSTALL_HINT = install_hint("plot")


_CMAP = "RdBu_r"
VERDICT_COLOURS = {
    "realizable": "tab:green",
    "degenerate": "tab:orange",
    "inconsistent": "tab:red",
}


def require_matplotlib() -> Any:
    """Import matplotlib, or raise an :class:`ImportError` naming the ``plot`` extra (the
    figure class's module, :mod:`dgp.mplfigure`, makes the check)."""
    from dgp.mplfigure import require_matplotlib as required  # its import checks too

    return required()


def new_figure(width: float, height: float):
    """An empty figure of ``width x height`` inches at 100 dpi, constrained layout: a
    :class:`dgp.mplfigure.NotebookFigure`, which a notebook shows as an image without
    ``%matplotlib inline``.

    Raises
    ------
    ImportError
        If matplotlib is not installed (the ``plot`` extra).
    """
    require_matplotlib()
    from dgp.mplfigure import NotebookFigure

    return NotebookFigure(figsize=(width, height), dpi=100, layout="constrained")


_MINUS_INF = "\N{MINUS SIGN}\N{INFINITY}"


def figure_number(x: float | None, span: float = 0.0) -> str:
    """A number for a figure: ``-∞`` for an unbounded end, ``0`` within ``1e-9 * span`` of zero
    (rounding noise next to the plotted range), a true minus sign otherwise."""
    if x is None:
        return _MINUS_INF
    if abs(x) <= PLOT_ZERO_RTOL * span:
        return "0"
    return f"{x:.4g}".replace("-", "\N{MINUS SIGN}")


def heatmap(
    fig,
    ax,
    M: np.ndarray,
    *,
    title: str,
    vmax: float | None = None,
    annotate=None,
    ticklabels: list[str] | None = None,
    label: str | None = None,
):
    vmax = float(np.abs(M).max()) if vmax is None else vmax
    vmax = vmax if vmax > 0 else 1.0
    im = ax.imshow(M, cmap=_CMAP, vmin=-vmax, vmax=vmax, interpolation="nearest")
    ax.set_title(title, fontsize=10)
    k = M.shape[0]
    if annotate is None:
        annotate = k <= 8
    if annotate:
        for i in range(k):
            for j in range(M.shape[1]):
                v = M[i, j]
                ax.text(
                    j,
                    i,
                    f"{v:.2f}".replace("-", "\N{MINUS SIGN}"),
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="white" if abs(v) > 0.6 * vmax else "black",
                )
    if ticklabels is not None and k <= 12:
        ax.set_xticks(range(k), ticklabels, fontsize=8)
        ax.set_yticks(range(k), ticklabels, fontsize=8)
    elif k <= 12:
        ax.set_xticks(range(k))
        ax.set_yticks(range(k))
    else:
        ax.set_xticks([])
        ax.set_yticks([])
    fig.colorbar(im, ax=ax, shrink=0.8, label=label)
    return im


def label_3d_axes(
    ax, names: tuple[str, str, str] = ("$z_1$", "$z_2$", "$z_3$"), lim: float | None = None
) -> None:
    """Name the three axes; with ``lim``, three ticks per axis (−lim, 0, lim) so that they stay
    legible."""
    if lim is not None:
        ticks = [-lim, 0.0, lim]
        for setter in (ax.set_xticks, ax.set_yticks, ax.set_zticks):
            setter(ticks)
    ax.set_xlabel(names[0], labelpad=0)
    ax.set_ylabel(names[1], labelpad=0)
    ax.set_zlabel(names[2], labelpad=0)
    ax.tick_params(labelsize=7, pad=0)


def wrap_title(text: str, width: int) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width=width))
