"""Prototype geometry: classical MDS of a Gram matrix, the geometry figure (an MDS picture, or a
size-sorted heat map for many classes), and predicted vs learned Gram heat maps."""

from __future__ import annotations

import numpy as np

from dgp.errors import InputError
from dgp.plots._canvas import heatmap, label_3d_axes, new_figure
from dgp.tolerance import DEFAULT_POLICY


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
    heatmap(fig, axh, S, title="cosines between prototypes (scale fitted to them)",
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
        label_3d_axes(ax, ("MDS 1", "MDS 2", "MDS 3"), lim=1.0 if unit else None)
    shown = f"classical MDS of the Gram (rank {rank})" + (
        f",\nprojected on its top {dim} eigenvectors" if rank > dim else ""
    )
    ax.set_title(shown, fontsize=10)
    short = [str(k + 1) for k in range(K)] if names[0] == "class 1" else names
    axh = fig.add_subplot(1, 2, 2)
    axh.set_xlabel("class", fontsize=9)
    axh.set_ylabel("class", fontsize=9)
    heatmap(
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
    heatmap(fig, axes[0], P, title=titles[0], vmax=vmax, annotate=annotate)
    heatmap(fig, axes[1], L, title=titles[1], vmax=vmax, annotate=annotate)
    D = L - P
    heatmap(
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
