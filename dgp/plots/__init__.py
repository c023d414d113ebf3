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

import itertools
from typing import Any

import numpy as np

from dgp.constants import PLOT_MIN_SPAN, PLOT_VARIES_RTOL, PLOT_ZERO_RTOL, UNIT_NORM_ATOL
from dgp.errors import InputError, check_choice, check_positive, install_hint
from dgp.infonce import SIMILARITIES
from dgp.tolerance import DEFAULT_POLICY, DEFAULT_RTOL

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

INSTALL_HINT = install_hint("plot")
#: largest N drawn by :func:`c_family_spectrum` / ``--plot`` (one eigvalsh of N x N per grid point)
MAX_PLOT_N = 1500
#: flop budget of one grid: ``num`` is lowered to about ``_GRID_FLOPS / N**3`` (at least 25)
_GRID_FLOPS = 3e10

_CMAP = "RdBu_r"
_VERDICT_COLOURS = {
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


# ----------------------------------------------------------------------------------------------
# numerics (no matplotlib)
# ----------------------------------------------------------------------------------------------


def mds(gram: object, dim: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Classical MDS of a Gram matrix: the top ``dim`` coordinates and all eigenvalues.

    Parameters
    ----------
    gram : array_like, shape (K, K)
        Symmetric matrix (negative eigenvalues are clipped to zero).
    dim : int
        Number of coordinates, padded with zeros when the Gram has fewer positive eigenvalues.

    Returns
    -------
    points : ndarray, shape (K, dim)
        Coordinates along the top eigenvectors, scaled by the square roots of the eigenvalues.
    eigenvalues : ndarray, shape (K,)
        All eigenvalues, largest first.

    Examples
    --------
    >>> import numpy as np
    >>> G = np.full((3, 3), -0.5) + 1.5 * np.eye(3)   # the regular simplex (triangle)
    >>> X, lam = mds(G, dim=2)
    >>> bool(np.allclose(X @ X.T, G)), np.round(lam, 12).tolist()
    (True, [1.5, 1.5, 0.0])
    """
    G = np.asarray(gram, dtype=float)
    if G.ndim != 2 or G.shape[0] != G.shape[1] or not np.isfinite(G).all():
        raise InputError(f"gram must be a finite square matrix, got shape {G.shape}")
    if int(dim) < 1:
        raise InputError(f"dim must be >= 1, got {dim}")
    lam, U = np.linalg.eigh(0.5 * (G + G.T))
    lam, U = lam[::-1], U[:, ::-1]
    k = min(int(dim), G.shape[0])
    U = U[:, :k] * np.sign(U[np.abs(U[:, :k]).argmax(axis=0), np.arange(k)])
    X = U * np.sqrt(np.clip(lam[:k], 0.0, None))
    if k < dim:
        X = np.c_[X, np.zeros((G.shape[0], int(dim) - k))]
    return X, lam


def c_family_grid(
    W: object,
    *,
    tau: float,
    similarity: str = "cosine",
    c_range: tuple[float, float] | None = None,
    num: int = 241,
    rtol: float = DEFAULT_RTOL,
) -> dict[str, Any]:
    r"""Eigenvalues of every member of the target family on a grid of ``c`` (explicit eigvalsh).

    The cosine family is :math:`G(c)_{ij} = \tau(\ell_{ij} + c)`, :math:`G_{ii} = 1`; the
    Euclidean one is :math:`-\tfrac12 J D(c) J` restricted to :math:`\mathbb 1^\perp`,
    :math:`D(c)_{ij} = -2\tau(\ell_{ij} + c)`. A member is admissible when its smallest
    eigenvalue is at least ``-rtol`` times its spectral norm. For large ``N`` the grid is
    coarsened to about ``3e10 / N**3`` points (at least 25), so that a figure stays quick.
    ``W`` is validated once (:func:`dgp.engine.target.log_weights`; a
    :class:`~dgp.engine.target.LogWeights` is used as it is) and the grid is built from its
    log-weights, so huge or tiny weights lose nothing.

    Returns
    -------
    dict
        ``c`` (grid), ``eigenvalues`` (``num x M``, ascending), ``admissible`` (bool per grid
        point), ``c_interval`` (the engine's, from :func:`dgp.classify`), ``similarity``, ``tau``.

    Examples
    --------
    >>> import dgp
    >>> W = dgp.weights.soft_supcon_weights([0, 0, 1, 1, 2, 2], eps=0.1)
    >>> grid = c_family_grid(W, tau=0.5, num=101)
    >>> lo, hi = grid["c_interval"]
    >>> ok = grid["c"][grid["admissible"]]
    >>> bool(lo - 0.1 < ok.min() and ok.max() < hi + 0.1)   # grid and engine agree
    True
    """
    from dgp.classification import classify
    from dgp.engine.target import log_weights

    tau = check_positive(tau, "tau")
    check_choice(similarity, SIMILARITIES, "similarity")
    weights = log_weights(W)
    if weights.n > MAX_PLOT_N:
        raise InputError(f"N = {weights.n} is above {MAX_PLOT_N}: too large to draw the family")
    num = _grid_size(num, weights.n)
    res = classify(weights, similarity=similarity, tau=tau, dim=weights.n, rtol=rtol)
    grid = _family_grid(weights, tau=tau, similarity=similarity, c_interval=res.c_interval,
                        c_range=c_range, num=num, rtol=rtol)
    grid["verdict_any_dim"] = res.verdict
    return grid


def _grid_size(num: object, n: int) -> int:
    """The number of grid points: ``num``, coarsened for large ``N``."""
    num = int(num)
    if num < 2:
        raise InputError(f"num must be >= 2, got {num}")
    return min(num, max(25, int(_GRID_FLOPS / n**3)))


def _family_grid(weights: Any, *, tau: float, similarity: str, c_interval: Any,
                 c_range: tuple[float, float] | None, num: int, rtol: float) -> dict[str, Any]:
    """The grid of :func:`c_family_grid` from validated log-weights (consumed) and the
    engine's interval (no classification here)."""
    from dgp.engine.scan import family_grid
    from dgp.tolerance import Tolerance

    c_max = c_interval[1] if c_interval is not None else None
    grid = family_grid(weights, tau=tau, similarity=similarity,
                       tol=Tolerance.make(rtol, n=weights.n), c_range=c_range, num=num,
                       c_max=c_max)
    return {
        "c": grid.c,
        "eigenvalues": grid.eigenvalues,
        "admissible": grid.admissible,
        "c_interval": c_interval,
        "similarity": similarity,
        "tau": tau,
    }


# ----------------------------------------------------------------------------------------------
# figures
# ----------------------------------------------------------------------------------------------


#: how the two families are named on the figures
_FAMILY_TEXT = {
    "cosine": {
        "matrix": r"$G(c)$",
        "lam": r"$\lambda_{\min}\,(G(c))$",
        "band": r"$G(c) \succeq 0$",
        "target": "Gram",
    },
    "euclidean": {
        "matrix": r"$-\frac{1}{2}JD(c)J$ on $\mathbf{1}^{\perp}$",
        "lam": r"$\lambda_{\min}$ on $\mathbf{1}^{\perp}$",
        "band": r"$D(c)$ is a distance matrix",
        "target": "distance matrix",
    },
}
_POSITIVE, _ZERO = "#4a86c5", "0.84"  # weight-matrix colours: positive, zero
_MINUS_INF = "\N{MINUS SIGN}\N{INFINITY}"


def _num(x: float | None, span: float = 0.0) -> str:
    """A number for a figure: ``-∞`` for an unbounded end, ``0`` within ``1e-9 * span`` of zero
    (rounding noise next to the plotted range), a true minus sign otherwise."""
    if x is None:
        return _MINUS_INF
    if abs(x) <= PLOT_ZERO_RTOL * span:
        return "0"
    return f"{x:.4g}".replace("-", "\N{MINUS SIGN}")


def _heatmap(
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


def _label_3d_axes(
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


#: above this many classes :func:`prototype_geometry` draws a size-sorted heat map and the
#: cosines against the sizes instead of an MDS picture
GEOMETRY_MANY_CLASSES = 12


def _many_classes_geometry(G: np.ndarray, sizes: object | None, title: str | None):
    """:func:`prototype_geometry` for many classes (see its notes)."""
    K = G.shape[0]
    n = None if sizes is None else np.asarray(sizes, dtype=float)
    if n is not None and n.shape != (K,):
        raise InputError(f"sizes must have {K} entries (one per row of gram), got {n.shape}")
    order = np.arange(K) if n is None else np.argsort(-n, kind="stable")
    S = G[np.ix_(order, order)].copy()
    off = ~np.eye(K, dtype=bool)
    np.fill_diagonal(S, np.nan)  # the unit diagonal would swamp the scale
    fig = new_figure(10.5, 4.4)
    ax = fig.add_subplot(1, 2, 1)
    rows = np.where(off, G, np.nan)
    x = np.arange(1, K + 1) if n is None else n
    ax.scatter(x, np.nanmax(rows, axis=1), s=12, color="C3", label="nearest other class")
    ax.scatter(x, np.nanmean(rows, axis=1), s=12, color="C0", label="mean over the others")
    if n is not None and n.min() > 0:
        ax.set_xscale("log")
    ax.set_xlabel("class size" if n is not None else "class", fontsize=9)
    ax.set_ylabel("cosine to the other prototypes", fontsize=9)
    ax.legend(fontsize=8)
    ax.set_title(f"each of the {K} classes", fontsize=10)
    axh = fig.add_subplot(1, 2, 2)
    axh.set_xlabel("class (largest first)" if n is not None else "class", fontsize=9)
    axh.set_ylabel("class (largest first)" if n is not None else "class", fontsize=9)
    vmax = float(np.abs(G[off]).max())
    _heatmap(fig, axh, S, title="cosines between prototypes (scale fitted to them)",
             vmax=vmax, annotate=False)
    if title:
        fig.suptitle(title, fontsize=11)
    return fig


def prototype_geometry(
    gram: object,
    *,
    sizes: object | None = None,
    names: list[str] | None = None,
    dim: int | None = None,
    title: str | None = None,
    reference: object | None = None,
    reference_label: str = "reference",
):
    """Classical MDS of a (prototype) Gram matrix in 2-D or 3-D beside a heatmap of the Gram.

    Parameters
    ----------
    gram : array_like, shape (K, K)
        A Gram matrix, e.g. :attr:`dgp.Prototypes.gram` (unit diagonal: the points lie on the
        unit sphere, which is drawn).
    sizes : sequence of int, optional
        Class sizes: marker areas grow with them and labels show them.
    names : list of str, optional
        Point labels. Default ``"class 1"`` ... ``"class K"``, in the order of the rows (the
        order of ``sizes``, as ``dgp supcon --sizes`` numbers them); pass the label values for
        classes that come from labels (sorted, as :func:`numpy.unique` orders them).
    dim : {2, 3}, optional
        Default: 2 when the Gram has rank <= 2, else 3. With a higher rank the picture is the
        projection on the top ``dim`` eigenvectors (the title says so).
    title : str, optional
    reference : array_like, shape (K, K), optional
        A second Gram (e.g. the regular simplex) drawn as hollow markers, rotated onto the first
        by orthogonal Procrustes so that the two configurations can be compared point by point.
    reference_label : str
        Legend entry of the reference.

    Returns
    -------
    matplotlib.figure.Figure

    Notes
    -----
    Above ``GEOMETRY_MANY_CLASSES`` classes (K = 100 to 1000 in long-tailed sets) a 3-D picture
    is a blob: the figure shows instead the heat map of the cosines with the classes sorted by
    size (largest first) and a colour scale fitted to the off-diagonal cosines (the diagonal
    is left blank), beside each class's nearest and mean cosine to the others against its size
    (log scale): where the tail classes lean together, if they do.
    """
    G = np.asarray(gram, dtype=float)
    if G.ndim == 2 and G.shape[0] == G.shape[1] and G.shape[0] > GEOMETRY_MANY_CLASSES:
        return _many_classes_geometry(G, sizes, title)
    X3, lam = mds(G, 3)
    rank = DEFAULT_POLICY.rank(lam)
    dim = (2 if rank <= 2 else 3) if dim is None else int(dim)
    if dim not in (2, 3):
        raise InputError(f"dim must be 2 or 3, got {dim}")
    K = G.shape[0]
    names = [f"class {k + 1}" for k in range(K)] if names is None else [str(a) for a in names]
    if len(names) != K:
        raise InputError(f"names must have {K} entries (one per row of gram), got {len(names)}")
    n = None if sizes is None else np.asarray(sizes, dtype=float)
    if n is not None and n.shape != (K,):
        raise InputError(f"sizes must have {K} entries (one per row of gram), got {n.shape}")
    area = 60.0 if n is None else 40.0 + 260.0 * np.sqrt(n / n.max())
    labels = names if n is None else [f"{a} (n = {int(v)})" for a, v in zip(names, n, strict=True)]
    unit = bool(np.allclose(np.diag(G), 1.0))

    Xref = None
    if reference is not None:
        R = np.asarray(reference, dtype=float)
        if R.shape != G.shape:
            raise InputError(f"reference must have the shape of gram {G.shape}, got {R.shape}")
        Xr, _ = mds(R, 3)
        U, _, Vt = np.linalg.svd(Xr.T @ X3)  # rotate the reference onto the main configuration
        Xref = Xr @ (U @ Vt)
    fig = new_figure(9.5, 4.2)
    colours = [f"C{k % 10}" for k in range(K)]
    if dim == 2:
        ax = fig.add_subplot(1, 2, 1)
        X = X3[:, :2]
        if unit:
            t = np.linspace(0, 2 * np.pi, 200)
            ax.plot(np.cos(t), np.sin(t), color="0.8", lw=1, zorder=1)
        if Xref is not None:
            for k in range(K):
                ax.plot(
                    [0, Xref[k, 0]],
                    [0, Xref[k, 1]],
                    color="0.45",
                    lw=1,
                    ls="--",
                    label=reference_label if k == 0 else None,
                )
            ax.scatter(Xref[:, 0], Xref[:, 1], s=25, facecolors="white", edgecolors="0.3", zorder=4)
        ax.scatter(X[:, 0], X[:, 1], s=area, c=colours, edgecolors="k", zorder=3)
        for k in range(K):
            ax.plot([0, X[k, 0]], [0, X[k, 1]], color=colours[k], lw=1.2, alpha=0.8)
            # the label on the far side of the point, away from the centre
            off = X[k] / (np.linalg.norm(X[k]) or 1.0)
            ax.annotate(
                labels[k],
                X[k],
                textcoords="offset points",
                xytext=tuple(14 * off),
                ha="left" if off[0] > 0.6 else ("right" if off[0] < -0.6 else "center"),
                va="bottom" if off[1] > 0.4 else ("top" if off[1] < -0.4 else "center"),
                fontsize=8,
            )
        if Xref is not None:
            ax.legend(fontsize=8, loc="lower left")
        ax.set_aspect("equal")
        lim = 1.45 if unit else 1.45 * float(np.abs(X).max() or 1.0)
        ax.set_xlim(-lim, lim)
        ax.set_ylim(-lim, lim)
        ax.set_xlabel("first MDS coordinate", fontsize=9)
        ax.set_ylabel("second MDS coordinate", fontsize=9)
    else:
        ax = fig.add_subplot(1, 2, 1, projection="3d")
        X = X3
        if unit:
            u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 24), np.linspace(0, np.pi, 12))
            ax.plot_wireframe(
                np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v), color="0.85", lw=0.5
            )
        from matplotlib.lines import Line2D

        handles = []
        if Xref is not None:
            ax.scatter(
                Xref[:, 0],
                Xref[:, 1],
                Xref[:, 2],
                s=area,
                facecolors="none",
                edgecolors=colours,
                depthshade=False,
            )
            handles.append(
                Line2D([], [], ls="", marker="o", mfc="none", mec="0.3", label=reference_label)
            )
        ax.scatter(X[:, 0], X[:, 1], X[:, 2], s=area, c=colours, edgecolors="k", depthshade=False)
        for k in range(K):
            ax.plot([0, X[k, 0]], [0, X[k, 1]], [0, X[k, 2]], color=colours[k], lw=1)
        # names in a legend: text next to points in 3-D lands on other points from most views
        if K <= 12:
            handles = [
                Line2D([], [], ls="", marker="o", mfc=colours[k], mec="k", label=labels[k])
                for k in range(K)
            ] + handles
        if handles:
            ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(-0.05, 1.0))
        ax.set_box_aspect((1, 1, 1))
        _label_3d_axes(ax, ("MDS 1", "MDS 2", "MDS 3"), lim=1.0 if unit else None)
    shown = f"classical MDS of the Gram (rank {rank})" + (
        f",\nprojected on its top {dim} eigenvectors" if rank > dim else ""
    )
    ax.set_title(shown, fontsize=10)
    short = [str(k + 1) for k in range(K)] if names[0] == "class 1" else names
    axh = fig.add_subplot(1, 2, 2)
    axh.set_xlabel("class", fontsize=9)
    axh.set_ylabel("class", fontsize=9)
    _heatmap(
        fig,
        axh,
        G,
        title="Gram matrix (cosines between prototypes)" if unit else "Gram matrix",
        vmax=1.0 if unit else None,
        ticklabels=short,
    )
    if title:
        fig.suptitle(title, fontsize=11)
    return fig


def _spectrum_limits(lam: np.ndarray, k: int) -> tuple[float, float]:
    """A y range that always shows the zero line and the peak of the smallest eigenvalue (how
    far the family comes to PSD-ness, above or below zero), with room on both sides."""
    lam0 = lam[:, 0]
    peak = float(lam0.max())
    spread = float(np.percentile(lam[:, k - 1] - lam0, 90)) if k > 1 else 0.0
    scale = float(np.abs(lam).max()) or 1.0
    ref = max(abs(peak), 0.25 * spread, PLOT_MIN_SPAN * scale)
    return min(peak, 0.0) - 1.6 * ref, max(peak, 0.0) + 1.1 * ref


def _draw_spectrum(
    ax,
    grid: dict[str, Any],
    *,
    n: int,
    k: int,
    fits: bool | None = None,
    chosen: float | None = None,
    title: str | None = None,
) -> None:
    """The smallest eigenvalues of the family along ``c`` and its PSD (EDM) interval.

    ``fits``: whether a target of the interval fits in the requested dimension (``None``: no
    dimension asked); an interval none of whose targets fits is hatched grey, not green.
    """
    cs, lam, interval = grid["c"], grid["eigenvalues"], grid["c_interval"]
    text = _FAMILY_TEXT[grid["similarity"]]
    k = max(1, min(int(k), lam.shape[1]))
    for j in range(1, k):
        ax.plot(
            cs, lam[:, j], color="0.6", lw=1, label=f"next {k - 1} eigenvalues" if j == 1 else None
        )
    ax.plot(cs, lam[:, 0], color="C0", lw=2, label=text["lam"])
    ax.axhline(0.0, color="k", lw=0.8)
    lo_c, hi_c = float(cs[0]), float(cs[-1])
    span = hi_c - lo_c
    if interval is not None:
        a = lo_c if interval[0] is None else interval[0]
        b = hi_c if interval[1] is None else interval[1]
        ends = [_num(e, span) for e in interval]
        if grid["similarity"] == "euclidean":
            what = f"{text['band']}: $c \\leq$ {ends[1]}"
        elif b - a <= PLOT_ZERO_RTOL * max(1.0, abs(a)):
            what = f"{text['band']} only at $c$ = {ends[0]}"
        else:
            what = f"{text['band']}: $c \\in$ [{ends[0]}, {ends[1]}]"
        style = (
            {"color": "tab:green", "alpha": 0.18}
            if fits is not False
            else {"facecolor": "0.85", "edgecolor": "0.55", "hatch": "//", "lw": 0}
        )
        if fits is False:
            what += ", rank above $d$"
        if b - a <= PLOT_ZERO_RTOL * max(1.0, abs(a)):
            ax.axvline(a, color="tab:green" if fits is not False else "0.5", lw=2, label=what)
        else:
            ax.axvspan(a, b, label=what, **style)
    else:  # how far the family stays from PSD-ness: the peak of the smallest eigenvalue
        top = int(np.argmax(lam[:, 0]))
        ax.plot(
            [cs[top]],
            [lam[top, 0]],
            "v",
            color="tab:red",
            ms=7,
            label=f"no $c$ gives {text['band']}; highest $\\lambda_{{\\min}}$: "
            f"{_num(float(lam[top, 0]))}",
        )
    if chosen is not None:
        ax.axvline(chosen, color="k", lw=1, ls=":", label=f"optimum: $c$ = {_num(chosen, span)}")
    ax.set_ylim(*_spectrum_limits(lam, k))
    ax.set_xlim(lo_c, hi_c)
    ax.set_xlabel(r"$c$   (target similarities $s^*_{ij} = \log w_{ij} + c$)", fontsize=9)
    ax.set_ylabel(f"eigenvalues of {text['matrix']}", fontsize=9)
    ax.legend(fontsize=8, loc="best", framealpha=0.9)
    tau = f"{grid['tau']:g}"
    ax.set_title(title or f"{grid['similarity']} target family, τ = {tau}, N = {n}", fontsize=10)


def c_family_spectrum(
    W: object,
    *,
    tau: float,
    similarity: str = "cosine",
    c_range: tuple[float, float] | None = None,
    num: int = 241,
    k: int = 4,
    rtol: float = DEFAULT_RTOL,
    title: str | None = None,
    ax: Any = None,
):
    r"""The smallest eigenvalues along the ``c`` family, with the PSD interval shaded.

    Eigenvalues come from :func:`c_family_grid` (an explicit ``eigvalsh`` per grid point); the
    shaded band is the ``c_interval`` of :func:`dgp.classify` (the constants whose target is a
    Gram matrix, for cosine, or a Euclidean distance matrix), so the curve crossing zero at the
    band's edges is an independent check of the classification. The y range always shows the
    zero line and the peak of the smallest eigenvalue, however far below zero it lies.

    Parameters
    ----------
    W : array_like, shape (N, N), or LogWeights
        Positive weights satisfying the cycle condition (otherwise there is no family), or
        their :class:`~dgp.engine.target.LogWeights` (validated once, not again).
    tau : float
        Temperature.
    similarity : {"cosine", "euclidean"}
    c_range : (float, float), optional
        Grid limits; by default a box that holds every admissible ``c``.
    num : int
        Grid size.
    k : int
        Number of smallest eigenvalues drawn (the smallest in bold).
    rtol : float
        Relative tolerance passed to the engine and used for the grid's admissibility marks.
    title : str, optional
    ax : matplotlib Axes, optional
        Draw into it instead of a new figure.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from dgp.engine.target import log_weights

    weights = log_weights(W)  # validated once: c_family_grid takes it as it is
    grid = c_family_grid(weights, tau=tau, similarity=similarity, c_range=c_range, num=num,
                         rtol=rtol)
    n = weights.n
    if ax is None:
        fig = new_figure(6.4, 3.9)
        ax = fig.add_subplot(1, 1, 1)
    else:
        fig = ax.figure
    _draw_spectrum(ax, grid, n=n, k=k, title=title)
    return fig


def gram_heatmaps(
    predicted: object,
    learned: object,
    *,
    titles: tuple[str, str] = ("predicted", "learned"),
    order: object | None = None,
    suptitle: str | None = None,
):
    """Heatmaps of a predicted and a learned Gram matrix (same colour scale) and their difference.

    Parameters
    ----------
    predicted, learned : array_like, shape (N, N)
        E.g. the target Gram of a realizable verdict and ``Z @ Z.T`` of trained embeddings.
    titles : (str, str)
    order : sequence of int, optional
        A permutation applied to rows and columns (e.g. sort by label).
    suptitle : str, optional

    Returns
    -------
    matplotlib.figure.Figure
    """
    P = np.asarray(predicted, dtype=float)
    L = np.asarray(learned, dtype=float)
    if P.ndim != 2 or P.shape[0] != P.shape[1] or P.shape != L.shape:
        raise InputError(
            f"predicted and learned must be square and alike, got {P.shape}, {L.shape}"
        )
    if order is not None:
        idx = np.asarray(order, dtype=int)
        P, L = P[np.ix_(idx, idx)], L[np.ix_(idx, idx)]
    vmax = float(max(np.abs(P).max(), np.abs(L).max()))
    off = ~np.eye(P.shape[0], dtype=bool)
    a, b = P[off], L[off]
    spread = P.shape[0] > 2 and np.ptp(a) > 0 and np.ptp(b) > 0
    r = float(np.corrcoef(a, b)[0, 1]) if spread else float("nan")
    fig = new_figure(11.0, 3.6)
    annotate = P.shape[0] <= 6
    axes = [fig.add_subplot(1, 3, j + 1) for j in range(3)]
    _heatmap(fig, axes[0], P, title=titles[0], vmax=vmax, annotate=annotate)
    _heatmap(fig, axes[1], L, title=titles[1], vmax=vmax, annotate=annotate)
    D = L - P
    _heatmap(
        fig,
        axes[2],
        D,
        title=f"learned − predicted (max |·| = {np.abs(D).max():.2g},\n"
        f"r² of the off-diagonal entries = {r * r:.4f})",
        annotate=annotate,
    )
    for ax in axes:
        ax.set_xlabel("sample", fontsize=9)
    axes[0].set_ylabel("sample", fontsize=9)
    if suptitle:
        fig.suptitle(suptitle, fontsize=11)
    return fig


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
        _label_3d_axes(ax, lim=1.0 if unit else None)
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
    head = f"optimal embedding, c = {_num(c, 1.0)}"
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
            w = _num(w) if 0.0 < w < np.inf else f"$e^{{{_num(float(values[0]))}}}$"
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
    colour = _VERDICT_COLOURS.get(result.verdict, "k")
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
        grid = _family_grid(weights, tau=result.tau, similarity=result.similarity,
                            c_interval=result.c_interval, c_range=None,
                            num=_grid_size(241, n), rtol=result.tolerance["rtol"])
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
        _draw_spectrum(ax, grid, n=n, k=4, fits=fits, chosen=chosen)
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
    fig.suptitle(_wrap(f"{head}: {result.reason}", int(12.5 * width)), fontsize=9, color=colour)
    return fig


def _wrap(text: str, width: int) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width=width))
