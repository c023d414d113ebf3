"""The spectrum along the ``c`` family: the grid of smallest eigenvalues (an explicit ``eigvalsh``
per grid point, independent of the spectral engine) and its figure, the admissible interval
shaded."""

from __future__ import annotations

from typing import Any

import numpy as np

from dgp.constants import PLOT_MIN_SPAN, PLOT_ZERO_RTOL
from dgp.errors import InputError, check_choice, check_positive
from dgp.infonce import SIMILARITIES
from dgp.plots._canvas import figure_number, new_figure
from dgp.tolerance import DEFAULT_RTOL

#: largest N drawn by :func:`c_family_spectrum` / ``--plot`` (one eigvalsh of N x N per grid point)
MAX_PLOT_N = 1500
#: flop budget of one grid: ``num`` is lowered to about ``_GRID_FLOPS / N**3`` (at least 25)
_GRID_FLOPS = 3e10


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
    num = grid_size(num, weights.n)
    res = classify(weights, similarity=similarity, tau=tau, dim=weights.n, rtol=rtol)
    grid = family_grid(weights, tau=tau, similarity=similarity, c_interval=res.c_interval,
                        c_range=c_range, num=num, rtol=rtol)
    grid["verdict_any_dim"] = res.verdict
    return grid


def grid_size(num: object, n: int) -> int:
    """The number of grid points: ``num``, coarsened for large ``N``."""
    num = int(num)
    if num < 2:
        raise InputError(f"num must be >= 2, got {num}")
    return min(num, max(25, int(_GRID_FLOPS / n**3)))


def family_grid(weights: Any, *, tau: float, similarity: str, c_interval: Any,
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


def _spectrum_limits(lam: np.ndarray, k: int) -> tuple[float, float]:
    """A y range that always shows the zero line and the peak of the smallest eigenvalue (how
    far the family comes to PSD-ness, above or below zero), with room on both sides."""
    lam0 = lam[:, 0]
    peak = float(lam0.max())
    spread = float(np.percentile(lam[:, k - 1] - lam0, 90)) if k > 1 else 0.0
    scale = float(np.abs(lam).max()) or 1.0
    ref = max(abs(peak), 0.25 * spread, PLOT_MIN_SPAN * scale)
    return min(peak, 0.0) - 1.6 * ref, max(peak, 0.0) + 1.1 * ref


def draw_spectrum(
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
        ends = [figure_number(e, span) for e in interval]
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
            f"{figure_number(float(lam[top, 0]))}",
        )
    if chosen is not None:
        ax.axvline(chosen, color="k", lw=1, ls=":",
                   label=f"optimum: $c$ = {figure_number(chosen, span)}")
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
    draw_spectrum(ax, grid, n=n, k=k, title=title)
    return fig
