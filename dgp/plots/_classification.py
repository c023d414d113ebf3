"""The figure of ``dgp classify --plot FILE``: the weights, the spectrum along the family, the
ranks and the optimal embedding of one classification."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from dgp.constants import PLOT_VARIES_RTOL, UNIT_NORM_ATOL
from dgp.errors import InputError
from dgp.plots._canvas import VERDICT_COLOURS, figure_number, label_3d_axes, new_figure, wrap_title
from dgp.plots._spectrum import MAX_PLOT_N, draw_spectrum, family_grid, grid_size

_POSITIVE, _ZERO = "#4a86c5", "0.84"  # weight-matrix colours: positive, zero


def _draw_ranks(ax, interval, ranks: dict[str, Any], dim: int, xlim: tuple[float, float]) -> None:
    """Rank of the targets of the PSD (EDM) interval against the dimension ``d``: the verdict's
    reason when the interval is not empty."""
    a = xlim[0] if interval[0] is None else interval[0]
    b = xlim[1] if interval[1] is None else interval[1]

    def colour(r: int) -> str:
        return "tab:green" if r <= dim else "tab:red"

    shown = [dim]
    inner = ranks.get("interior")
    if inner is not None and b > a:
        ax.hlines(inner, a, b, color=colour(inner), lw=3)
        ax.annotate(
            f"{inner}",
            ((a + b) / 2, inner),
            textcoords="offset points",
            xytext=(0, 4),
            ha="center",
            fontsize=8,
            color=colour(inner),
        )
        shown.append(inner)
    for key, x in (("lo", interval[0]), ("hi", interval[1])):
        r = ranks.get(key)
        if r is None or x is None:
            continue
        ax.plot([x], [r], "o", ms=6, color=colour(r), mec="k", zorder=4)
        ax.annotate(
            f"{r}",
            (x, r),
            textcoords="offset points",
            xytext=(5, -10) if key == "hi" else (-5, -10),
            ha="left" if key == "hi" else "right",
            fontsize=8,
            color=colour(r),
        )
        shown.append(r)
    ax.axhline(dim, color="k", lw=1, ls="--")
    ax.annotate(
        f"d = {dim}",
        (1.0, dim),
        xycoords=("axes fraction", "data"),
        textcoords="offset points",
        xytext=(-4, 3),
        ha="right",
        fontsize=8,
    )
    ax.set_xlim(*xlim)
    ax.set_ylim(-0.5, 1.35 * max(shown) + 1)
    ax.set_ylabel("rank", fontsize=9)
    ax.tick_params(labelsize=8)
    from matplotlib.ticker import MaxNLocator

    ax.yaxis.set_major_locator(MaxNLocator(integer=True, nbins=4))


def _groups(Z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct points of an embedding (rows equal up to 1e-6 of its scale): the points, the
    point of each row, and how many rows each point holds."""
    scale = float(np.abs(Z).max()) or 1.0
    key = np.round(Z / scale, 6) + 0.0  # + 0.0: no -0.0 apart from 0.0
    _, first, inverse, counts = np.unique(
        key, axis=0, return_index=True, return_inverse=True, return_counts=True
    )
    return Z[first], inverse.ravel(), counts


def _draw_embedding(fig, spec, Z: np.ndarray, *, rank: int, c: float, labels, unit: bool):
    """The optimal embedding: distinct points sized by the samples they hold (``×m``), coloured
    by class when labels are given."""
    r = min(int(rank), 3)
    Z = np.asarray(Z, dtype=float)[:, :r]
    if r == 1:
        Z = np.c_[Z, np.zeros(len(Z))]
    r = max(r, 2)
    P, point_of, counts = _groups(Z)
    N, m = len(Z), len(P)
    if labels is not None:
        y = np.asarray(labels).ravel()
        if y.shape != (N,):
            raise InputError(f"labels must have one entry per row of W ({N}), got {y.shape}")
        classes, cls = np.unique(y, return_inverse=True)
        # the class of each point (all its samples share it when the classes collapse)
        point_class = np.array([cls[point_of == p][0] for p in range(m)])
        mixed = any(len(set(cls[point_of == p])) > 1 for p in range(m))
    else:  # no classes: a colour per point only when few samples share few points
        classes, mixed = None, False
        point_class = np.arange(m) if m < N and m <= 10 else np.zeros(m, dtype=int)
    colours = [f"C{int(j) % 10}" for j in point_class]
    area = 30.0 + 50.0 * np.sqrt(counts)
    ax = fig.add_subplot(spec, projection="3d" if r == 3 else None)
    if r == 3:
        if unit:
            u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 24), np.linspace(0, np.pi, 12))
            ax.plot_wireframe(
                np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v), color="0.88", lw=0.5
            )
        ax.scatter(P[:, 0], P[:, 1], P[:, 2], s=area, c=colours, edgecolors="k", depthshade=False)
        lim = 1.1 if unit else 1.1 * float(np.abs(P).max() or 1.0)
        for p in np.flatnonzero(counts > 1):  # above the point: clear of it from any view
            ax.text(
                P[p, 0], P[p, 1], P[p, 2] + 0.14 * lim, f"×{counts[p]}", fontsize=8, ha="center"
            )
        for setter in (ax.set_xlim, ax.set_ylim, ax.set_zlim):
            setter(-lim, lim)
        ax.set_box_aspect((1, 1, 1))
        label_3d_axes(ax, lim=1.0 if unit else None)
    else:
        if unit:
            t = np.linspace(0, 2 * np.pi, 200)
            ax.plot(np.cos(t), np.sin(t), color="0.85", lw=1, zorder=1)
        ax.scatter(P[:, 0], P[:, 1], s=area, c=colours, edgecolors="k", zorder=3)
        for p in np.flatnonzero(counts > 1):
            ax.annotate(
                f"×{counts[p]}", P[p], textcoords="offset points", xytext=(7, 5), fontsize=8
            )
        lim = 1.25 if unit else 1.25 * float(np.abs(P).max() or 1.0)
        ax.set_xlim(-lim, lim)
        ax.set_ylim(-lim, lim)
        ax.set_aspect("equal")
        ax.set_xlabel("$z_1$")
        ax.set_ylabel("$z_2$")
    if classes is not None and len(classes) <= 10 and not mixed:
        from matplotlib.lines import Line2D

        sizes = np.bincount(cls, minlength=len(classes))
        handles = [
            Line2D(
                [], [], ls="", marker="o", mfc=f"C{j % 10}", mec="k", label=f"class {v} (n = {s})"
            )
            for j, (v, s) in enumerate(zip(classes, sizes, strict=True))
        ]
        ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(0.0, 1.0))
    head = f"optimal embedding, c = {figure_number(c, 1.0)}"
    if rank > 3:
        head += f" (first 3 of {rank} coordinates)"
    if m < N:
        head += f"\n{N} samples at {m} points (×m: m samples at one point)"
    ax.set_title(head, fontsize=9)


def _draw_weights(fig, ax, weights: Any, cert: dict[str, Any]) -> None:
    """The weight matrix when it has no target family, drawn from its log-weights (nothing
    overflows or underflows): zero weights (which ask for ``s = -inf``) in their own colour,
    the certificate's entry or cycle outlined."""
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch, Rectangle

    n = weights.n
    zero = weights.zero_mask()
    positive = ~zero
    np.fill_diagonal(positive, False)
    L = np.where(positive, weights.to_user_log_weights(weights.L), np.nan)
    values = L[positive]
    size = max(1.0, np.abs(values).max()) if values.size else 1.0
    varies = values.size > 0 and float(np.ptp(values)) > PLOT_VARIES_RTOL * size
    handles = []
    if varies:
        im = ax.imshow(L, cmap="viridis", interpolation="nearest")
        fig.colorbar(im, ax=ax, shrink=0.8, label=r"$\log w_{ij}$")
    else:  # one positive value: a colour bar would only show a meaningless ±0.1 range
        ax.imshow(np.where(positive, 1.0, np.nan), cmap=ListedColormap([_POSITIVE]))
        if values.size:
            with np.errstate(over="ignore", under="ignore"):
                w = float(np.exp(values[0]))
            w = (figure_number(w) if 0.0 < w < np.inf
                 else f"$e^{{{figure_number(float(values[0]))}}}$")
            handles.append(Patch(facecolor=_POSITIVE, label=f"$w_{{ij}}$ = {w}"))
    zmask = np.where(zero, 1.0, np.nan)
    ax.imshow(zmask, cmap=ListedColormap([_ZERO]), interpolation="nearest")
    if zero.any():
        handles.append(Patch(facecolor=_ZERO, label="$w_{ij} = 0$ (asks for $s_{ij} = -\\infty$)"))
    handles.append(Patch(facecolor="white", edgecolor="0.6", label="diagonal (not used)"))
    kind = cert.get("kind")
    marked = []
    if kind == "zero_weight" and cert.get("entry") is not None:
        marked = [tuple(cert["entry"])]
        what = "the zero weight the verdict names"
    elif kind == "cycle" and cert.get("cycle"):
        cyc = list(cert["cycle"])
        marked = list(itertools.pairwise(cyc))
        what = "the cycle that breaks the condition"
    for i, j in marked:
        ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, ec="tab:red", lw=2))
    if marked:
        handles.append(Patch(facecolor="none", edgecolor="tab:red", lw=2, label=what))
    if n <= 16:
        ax.set_xticks(range(n))
        ax.set_yticks(range(n))
    ax.tick_params(labelsize=8)
    ax.set_xlabel("$j$", fontsize=9)
    ax.set_ylabel("$i$", fontsize=9)
    ax.legend(handles=handles, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2)
    reason = "zero weights" if kind != "cycle" else "the cycle condition is broken"
    ax.set_title(f"weights $w_{{ij}}$: no target family ({reason})", fontsize=10)


def classification_figure(W: object, result: Any, *, labels: object | None = None):
    """The figure of ``dgp classify --plot``: the ``c`` family, the rank of its targets against
    the dimension, and the optimal embedding when realizable.

    With a family (positive weights, cycle condition holds): the smallest eigenvalues along
    ``c`` with the PSD (EDM) interval, below it the rank of the interval's targets against
    ``d`` (the reason of the verdict), and beside them the optimal embedding (first two or three
    coordinates) when the verdict is realizable; samples that share a point (collapsed classes)
    are drawn once, sized by their number and marked ``×m``. Without a family (zero weights,
    broken cycle): the weight matrix, zero weights and the certificate's entry or cycle marked.

    Parameters
    ----------
    W : array_like, shape (N, N), or LogWeights
        The weighting that was classified, or its :class:`~dgp.engine.target.LogWeights`
        (``dgp classify --plot`` passes these: huge or tiny log-weights are drawn as they are).
    result : dgp.Classification
        The verdict on ``W``: the figure draws its interval, ranks and embedding (``W`` is not
        classified again).
    labels : array_like, shape (N,), optional
        Class labels of the samples: the embedding is coloured by class, the classes named by
        their label values in sorted order.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from dgp.engine.target import log_weights

    weights = log_weights(W)
    n = weights.n
    if n > MAX_PLOT_N:
        raise InputError(
            f"--plot draws N x N matrices; N = {n} is above {MAX_PLOT_N} (drop --plot)"
        )
    colour = VERDICT_COLOURS.get(result.verdict, "k")
    head = result.verdict + (f" (rank {result.rank})" if result.rank is not None else "")
    cert = result.to_dict()["certificate"]
    kind = cert["kind"]
    if weights.pairs is not None:  # a sparse weighting with zero weights, drawn as a matrix
        weights = weights.dense()
    has_family = not weights.has_zeros and kind != "cycle"
    emb = getattr(result, "embedding", None)
    show_emb = has_family and emb is not None and result.rank is not None and result.rank >= 1
    if has_family:
        # the family of the weights and the interval of the result: no second classification
        grid = family_grid(weights, tau=result.tau, similarity=result.similarity,
                            c_interval=result.c_interval, c_range=None,
                            num=grid_size(241, n), rtol=result.tolerance["rtol"])
        ranks = cert.get("ranks") if isinstance(cert.get("ranks"), dict) else None
        interval = grid["c_interval"]
        strip = interval is not None and ranks is not None  # the rank of the targets vs d
        fig = new_figure(11.5 if show_emb else 6.8, 4.8 if strip or show_emb else 4.0)
        ratios = [1.25, 1] if show_emb else None
        outer = fig.add_gridspec(1, 2 if show_emb else 1, width_ratios=ratios)
        left = outer[0, 0].subgridspec(
            2 if strip else 1, 1, height_ratios=[3.2, 1] if strip else None
        )
        ax = fig.add_subplot(left[0, 0])
        fits = None if interval is None else result.verdict != "inconsistent"
        chosen = result.c if result.verdict == "realizable" else None
        draw_spectrum(ax, grid, n=n, k=4, fits=fits, chosen=chosen)
        if strip:
            ax.set_xlabel("")
            ax.tick_params(labelbottom=False)
            axr = fig.add_subplot(left[1, 0], sharex=ax)
            _draw_ranks(axr, interval, ranks, int(result.dim), ax.get_xlim())
            axr.set_xlabel(r"$c$   (target similarities $s^*_{ij} = \log w_{ij} + c$)", fontsize=9)
        if show_emb:
            norms = np.linalg.norm(np.asarray(emb, dtype=float), axis=1)
            unit_rows = bool(np.allclose(norms, 1.0, atol=UNIT_NORM_ATOL))
            unit = result.similarity == "cosine" and unit_rows
            _draw_embedding(
                fig, outer[0, 1], emb, rank=int(result.rank), c=result.c, labels=labels, unit=unit
            )
    else:
        fig = new_figure(6.4, 6.0)
        _draw_weights(fig, fig.add_subplot(1, 1, 1), weights, cert)
    width = fig.get_figwidth()
    fig.suptitle(wrap_title(f"{head}: {result.reason}", int(12.5 * width)), fontsize=9,
                 color=colour)
    return fig
