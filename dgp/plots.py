r"""Figures: prototype geometry, the spectrum along the ``c`` family, predicted vs learned Grams.

Needs the ``plot`` extra (``pip install "dgp-contrastive[plot]"``); matplotlib is imported only
when a figure is drawn, and a missing matplotlib raises an :class:`ImportError` that names the
extra. Every function returns a :class:`matplotlib.figure.Figure` built without ``pyplot`` (no
GUI backend, no global state): save it with ``fig.savefig("file.png")``.

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

from typing import Any

import numpy as np

from dgp.engine.tolerance import DEFAULT_RTOL
from dgp.errors import check_choice, check_positive, check_weights
from dgp.infonce import SIMILARITIES

__all__ = [
    "INSTALL_HINT",
    "MAX_PLOT_N",
    "c_family_grid",
    "c_family_spectrum",
    "classification_figure",
    "gram_heatmaps",
    "mds",
    "prototype_geometry",
    "require_matplotlib",
]

INSTALL_HINT = 'pip install "dgp-contrastive[plot]"'
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
    """Import matplotlib, or raise an :class:`ImportError` naming the ``plot`` extra."""
    try:
        import matplotlib
        from matplotlib.figure import Figure  # noqa: F401
    except ImportError as exc:  # pragma: no cover - exercised by a monkeypatched test
        raise ImportError(
            f"figures need matplotlib, which is not installed: {INSTALL_HINT}"
        ) from exc
    return matplotlib


def _figure(width: float, height: float):
    require_matplotlib()
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=100, layout="constrained")


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
        raise ValueError(f"gram must be a finite square matrix, got shape {G.shape}")
    if int(dim) < 1:
        raise ValueError(f"dim must be >= 1, got {dim}")
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
    from dgp.engine.scan import family_grid
    from dgp.engine.target import log_weights
    from dgp.engine.tolerance import Tolerance

    tau = check_positive(tau, "tau")
    check_choice(similarity, SIMILARITIES, "similarity")
    A = check_weights(W)
    if A.shape[0] > MAX_PLOT_N:
        raise ValueError(f"N = {A.shape[0]} is above {MAX_PLOT_N}: too large to draw the family")
    num = int(num)
    if num < 2:
        raise ValueError(f"num must be >= 2, got {num}")
    num = min(num, max(25, int(_GRID_FLOPS / A.shape[0] ** 3)))
    res = classify(A, similarity=similarity, tau=tau, dim=A.shape[0], rtol=rtol)
    interval = res.c_interval
    c_max = interval[1] if interval is not None else None
    grid = family_grid(log_weights(A), tau=tau, similarity=similarity,
                       tol=Tolerance.make(rtol, n=A.shape[0]), c_range=c_range, num=num,
                       c_max=c_max)
    cs, lam, admissible = grid.c, grid.eigenvalues, grid.admissible
    return {
        "c": cs,
        "eigenvalues": lam,
        "admissible": admissible,
        "c_interval": interval,
        "similarity": similarity,
        "tau": tau,
        "verdict_any_dim": res.verdict,
    }


# ----------------------------------------------------------------------------------------------
# figures
# ----------------------------------------------------------------------------------------------


def _heatmap(fig, ax, M: np.ndarray, *, title: str, vmax: float | None = None, annotate=None):
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
                    f"{v:.2f}",
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="white" if abs(v) > 0.6 * vmax else "black",
                )
    if k <= 12:
        ax.set_xticks(range(k))
        ax.set_yticks(range(k))
    else:
        ax.set_xticks([])
        ax.set_yticks([])
    fig.colorbar(im, ax=ax, shrink=0.8)
    return im


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
        Point labels (default ``"class k"``).
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
    """
    G = np.asarray(gram, dtype=float)
    X3, lam = mds(G, 3)
    scale = max(float(lam[0]), 1e-300)
    rank = int((lam > 1e-9 * scale).sum())
    dim = (2 if rank <= 2 else 3) if dim is None else int(dim)
    if dim not in (2, 3):
        raise ValueError(f"dim must be 2 or 3, got {dim}")
    K = G.shape[0]
    names = [f"class {k}" for k in range(K)] if names is None else list(names)
    n = None if sizes is None else np.asarray(sizes, dtype=float)
    if n is not None and n.shape != (K,):
        raise ValueError(f"sizes must have {K} entries (one per row of gram), got {n.shape}")
    area = 60.0 if n is None else 40.0 + 260.0 * np.sqrt(n / n.max())
    labels = names if n is None else [f"{a} (n={int(v)})" for a, v in zip(names, n, strict=True)]
    unit = bool(np.allclose(np.diag(G), 1.0))

    Xref = None
    if reference is not None:
        R = np.asarray(reference, dtype=float)
        if R.shape != G.shape:
            raise ValueError(f"reference must have the shape of gram {G.shape}, got {R.shape}")
        Xr, _ = mds(R, 3)
        U, _, Vt = np.linalg.svd(Xr.T @ X3)  # rotate the reference onto the main configuration
        Xref = Xr @ (U @ Vt)
    fig = _figure(9.0, 4.0)
    colours = [f"C{k % 10}" for k in range(K)]
    if dim == 2:
        ax = fig.add_subplot(1, 2, 1)
        X = X3[:, :2]
        if unit:
            t = np.linspace(0, 2 * np.pi, 200)
            ax.plot(np.cos(t), np.sin(t), color="0.8", lw=1)
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
            ax.legend(fontsize=8, loc="lower left")
        ax.scatter(X[:, 0], X[:, 1], s=area, c=colours, edgecolors="k", zorder=3)
        for k in range(K):
            ax.plot([0, X[k, 0]], [0, X[k, 1]], color=colours[k], lw=1, alpha=0.6)
            ax.annotate(labels[k], X[k], textcoords="offset points", xytext=(6, 6), fontsize=8)
        ax.set_aspect("equal")
        lim = 1.25 if unit else 1.25 * float(np.abs(X).max() or 1.0)
        ax.set_xlim(-lim, lim)
        ax.set_ylim(-lim, lim)
    else:
        ax = fig.add_subplot(1, 2, 1, projection="3d")
        X = X3
        if unit:
            u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 24), np.linspace(0, np.pi, 12))
            ax.plot_wireframe(
                np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v), color="0.85", lw=0.5
            )
        if Xref is not None:
            ax.scatter(
                Xref[:, 0],
                Xref[:, 1],
                Xref[:, 2],
                s=area,
                facecolors="none",
                edgecolors=colours,
                depthshade=False,
                label=reference_label,
            )
            ax.legend(fontsize=8, loc="lower left")
        ax.scatter(X[:, 0], X[:, 1], X[:, 2], s=area, c=colours, edgecolors="k", depthshade=False)
        for k in range(K):
            ax.plot([0, X[k, 0]], [0, X[k, 1]], [0, X[k, 2]], color=colours[k], lw=1)
            ax.text(*(1.08 * X[k]), labels[k], fontsize=7)
        ax.set_box_aspect((1, 1, 1))
    shown = f"MDS, rank {rank}" + (f", top {dim} of {rank} shown" if rank > dim else "")
    ax.set_title(shown, fontsize=10)
    _heatmap(fig, fig.add_subplot(1, 2, 2), G, title="Gram matrix", vmax=1.0 if unit else None)
    if title:
        fig.suptitle(title, fontsize=11)
    return fig


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
    r"""The smallest eigenvalues along the ``c`` family, with the admissible interval shaded.

    Eigenvalues come from :func:`c_family_grid` (explicit ``eigvalsh`` per grid point); the
    shaded band is the ``c_interval`` of :func:`dgp.classify`, so the curve crossing zero at the
    band's edges is an independent check of the engine.

    Parameters
    ----------
    W : array_like, shape (N, N)
        Positive weights satisfying the cycle condition (otherwise there is no family).
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
    grid = c_family_grid(W, tau=tau, similarity=similarity, c_range=c_range, num=num, rtol=rtol)
    cs, lam, interval = grid["c"], grid["eigenvalues"], grid["c_interval"]
    if ax is None:
        fig = _figure(6.4, 3.8)
        ax = fig.add_subplot(1, 1, 1)
    else:
        fig = ax.figure
    k = max(1, min(int(k), lam.shape[1]))
    for j in range(1, k):
        ax.plot(cs, lam[:, j], color="0.6", lw=1, label="next eigenvalues" if j == 1 else None)
    ax.plot(cs, lam[:, 0], color="C0", lw=2, label=r"$\lambda_{\min}$ (eigvalsh on the grid)")
    ax.axhline(0.0, color="k", lw=0.8)
    lo_c, hi_c = cs[0], cs[-1]
    if interval is not None:
        a = lo_c if interval[0] is None else interval[0]
        b = hi_c if interval[1] is None else interval[1]
        if b - a <= 1e-9 * max(1.0, abs(a)):
            ax.axvline(a, color="tab:green", lw=2, label=f"admissible: c = {a:.4g}")
        else:
            fmt = lambda x: "-inf" if x is None else f"{x:.4g}"  # noqa: E731
            ax.axvspan(
                a,
                b,
                color="tab:green",
                alpha=0.18,
                label=f"admissible c (engine): [{fmt(interval[0])}, {fmt(interval[1])}]",
            )
    else:
        ax.text(0.02, 0.04, "no admissible c (engine)", transform=ax.transAxes, color="tab:red")
    top = max(float(np.percentile(lam[:, k - 1], 90)), 0.2)
    bottom = min(float(lam[:, 0].min()), -0.2 * top)
    ax.set_ylim(max(bottom, -2.0 * top), 1.15 * top)
    ax.set_xlim(lo_c, hi_c)
    what = "G(c)" if similarity == "cosine" else r"$-\frac{1}{2}JD(c)J$ on $1^\perp$"
    ax.set_xlabel(r"$c$ (target $s^*_{ij} = \log w_{ij} + c$)")
    ax.set_ylabel(f"eigenvalues of {what}")
    ax.legend(fontsize=8, loc="lower left" if similarity == "euclidean" else "upper left")
    ax.set_title(
        title or f"{similarity} family, tau = {grid['tau']:g}, N = {lam.shape[1]}", fontsize=10
    )
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
        raise ValueError(
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
    fig = _figure(11.0, 3.5)
    annotate = P.shape[0] <= 6
    _heatmap(fig, fig.add_subplot(1, 3, 1), P, title=titles[0], vmax=vmax, annotate=annotate)
    _heatmap(fig, fig.add_subplot(1, 3, 2), L, title=titles[1], vmax=vmax, annotate=annotate)
    D = L - P
    _heatmap(
        fig,
        fig.add_subplot(1, 3, 3),
        D,
        title=f"difference (max |.| = {np.abs(D).max():.2g}, r² = {r * r:.4f})",
        annotate=annotate,
    )
    if suptitle:
        fig.suptitle(suptitle, fontsize=11)
    return fig


def classification_figure(W: object, result: Any):
    """The figure of ``dgp classify --plot``: the ``c`` family and, when realizable, the target.

    With a family (positive weights, cycle condition holds): its spectrum with the admissible
    interval, and beside it the optimal embedding (first two or three coordinates) when the
    verdict is realizable. Without one (zero weights, broken cycle): a heatmap of ``log W``.

    Parameters
    ----------
    W : array_like, shape (N, N)
        The weighting that was classified.
    result : dgp.Classification
        The verdict on ``W``.

    Returns
    -------
    matplotlib.figure.Figure
    """
    A = check_weights(W)
    if A.shape[0] > MAX_PLOT_N:
        raise ValueError(
            f"--plot draws N x N matrices; N = {A.shape[0]} is above {MAX_PLOT_N} (drop --plot)"
        )
    colour = _VERDICT_COLOURS.get(result.verdict, "k")
    head = result.verdict + (f" (rank {result.rank})" if result.rank is not None else "")
    off = ~np.eye(A.shape[0], dtype=bool)
    kind = result.certificate.kind
    has_family = bool((A[off] > 0).all()) and kind != "cycle"
    emb = getattr(result, "embedding", None)
    show_emb = has_family and emb is not None and result.rank is not None and result.rank >= 1
    fig = _figure(11.0 if show_emb else 6.4, 4.0)
    if has_family:
        ax = fig.add_subplot(1, 2 if show_emb else 1, 1)
        c_family_spectrum(
            A,
            tau=result.tau,
            similarity=result.similarity,
            ax=ax,
            rtol=result.tolerance["rtol"],
        )
        if show_emb:
            r = min(int(result.rank), 3)
            Z = np.asarray(emb, dtype=float)[:, :r]
            if r == 1:
                Z = np.c_[Z, np.zeros(len(Z))]
                r = 2
            if r == 2:
                ax2 = fig.add_subplot(1, 2, 2)
                ax2.scatter(Z[:, 0], Z[:, 1], c=np.arange(len(Z)), cmap="viridis", edgecolors="k")
                ax2.set_aspect("equal")
            else:
                ax2 = fig.add_subplot(1, 2, 2, projection="3d")
                ax2.scatter(
                    Z[:, 0],
                    Z[:, 1],
                    Z[:, 2],
                    c=np.arange(len(Z)),
                    cmap="viridis",
                    edgecolors="k",
                    depthshade=False,
                )
                m = float(np.abs(Z).max() or 1.0)
                ax2.set_xlim(-m, m)
                ax2.set_ylim(-m, m)
                ax2.set_zlim(-m, m)
                ax2.set_box_aspect((1, 1, 1))
            more = f" (first 3 of {result.rank} coordinates)" if result.rank > 3 else ""
            ax2.set_title(
                f"optimal embedding at c = {result.c:.4g}{more}\n(points coloured by sample index)",
                fontsize=10,
            )
    else:
        ax = fig.add_subplot(1, 1, 1)
        with np.errstate(divide="ignore"):
            L = np.log(A)
        L[~off] = np.nan
        im = ax.imshow(np.where(np.isfinite(L), L, np.nan), cmap="viridis", interpolation="nearest")
        fig.colorbar(im, ax=ax, shrink=0.8, label="log w_ij (blank: zero weight)")
        ax.set_title(
            "log W: no target family ("
            + ("zero weights" if kind != "cycle" else "cycle condition broken")
            + ")",
            fontsize=10,
        )
    width = fig.get_figwidth()
    fig.suptitle(f"{head}: " + _wrap(result.reason, int(13 * width)), fontsize=9, color=colour)
    return fig


def _wrap(text: str, width: int) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width=width))
