"""The figure of a phase map (the ``plot`` extra)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from dgp.constants import GEOMETRIC_GRID_RTOL
from dgp.design._closed_form import Boundary

if TYPE_CHECKING:  # the map imports this module when it draws itself
    from dgp.design._sweep import PhaseMap

__all__ = [
    "phase_figure",
]

# ----------------------------------------------------------------------------------------------
# the figure
# ----------------------------------------------------------------------------------------------


_VERDICT_COLOURS = ("tab:green", "tab:orange", "tab:red")


def _geometric(values: np.ndarray) -> bool:
    if values.size < 3 or (values <= 0).any():
        return False
    r = np.diff(np.log(values))
    return bool(np.allclose(r, r[0], rtol=GEOMETRIC_GRID_RTOL) and not np.allclose(np.diff(values),
                                                                     np.diff(values)[0],
                                                                     rtol=GEOMETRIC_GRID_RTOL))


def _edges(values: np.ndarray) -> np.ndarray:
    v = values.astype(float)
    if v.size == 1:
        return np.array([v[0] * 0.9, v[0] * 1.1]) if v[0] > 0 else np.array([v[0] - 1,
                                                                               v[0] + 1])
    t = np.log(v) if _geometric(values) else v
    mid = 0.5 * (t[1:] + t[:-1])
    e = np.concatenate([[t[0] - (mid[0] - t[0])], mid, [t[-1] + (t[-1] - mid[-1])]])
    return np.exp(e) if _geometric(values) else e


def phase_figure(pm: PhaseMap):
    from dgp.plots import new_figure, require_matplotlib

    require_matplotlib()
    from matplotlib import colors
    from matplotlib.patches import Patch

    arrays = pm.to_arrays()
    two_d = len(pm.params) == 2
    xname = pm.params[0]
    yname = pm.params[1] if two_d else None
    nx = pm.axes[xname].size
    ny = pm.axes[yname].size if two_d else 1
    xe = _edges(pm.axes[xname])
    ye = _edges(pm.axes[yname]) if two_d else np.array([0.0, 1.0])

    def grid_of(values):
        return np.asarray(values, dtype=float).reshape(nx, ny).T

    panels = ["verdict", "excess"] + (["cosine"] if "max_cosine" in arrays else [])
    fig = new_figure(5.2 * len(panels), 4.4)
    axs = fig.subplots(1, len(panels), squeeze=False)[0]
    code = {"realizable": 0, "degenerate": 1, "inconsistent": 2}
    V = grid_of([code[v] for v in arrays["verdict"]])
    cmap = colors.ListedColormap(_VERDICT_COLOURS)
    fixed = ", ".join(f"{k} = {v:g}" for k, v in pm.fixed.items())
    sweep = pm.inputs
    what = (f", K = {sweep['classes']}, n_max = {sweep['majority']} ({sweep['profile']})"
            if "majority" in sweep else (f", K = {len(sweep['sizes'])}" if "sizes" in sweep
                                         else ""))
    title = f"{pm.objective}" + ("" if pm.n is None else f", N = {pm.n}") + what + (
        f", {fixed}" if fixed else "")
    ax = axs[0]
    ax.pcolormesh(xe, ye, V, cmap=cmap, vmin=-0.5, vmax=2.5, shading="flat")
    near = grid_of(arrays["near_threshold"])
    if near.any():
        jj, ii = np.nonzero(near)
        xc = 0.5 * (xe[:-1] + xe[1:])
        yc = 0.5 * (ye[:-1] + ye[1:])
        ax.plot(xc[ii], yc[jj], "k.", ms=2, label="near threshold")
    handles = [Patch(color=c, label=k) for k, c in zip(code, _VERDICT_COLOURS, strict=True)
               if (V == code[k]).any()]
    for b in pm.boundaries:
        line = _boundary_line(b, pm, xname, yname, xe, ye)
        if line is not None:
            (h,) = ax.plot(*line, "k--", lw=1.6, label=_boundary_label(b))
            handles.append(h)
    ax.legend(handles=handles, loc="best", fontsize=8, framealpha=0.85)
    only = [k for k in code if (V == code[k]).all()]
    if only:
        note = "\n(the bound is attained nowhere on this grid)"
        ax.text(0.5, 0.5, f"every cell {only[0]}" + (note if only[0] == "inconsistent" else ""),
            transform=ax.transAxes, ha="center", va="center", fontsize=11,
            bbox={"facecolor": "white", "alpha": 0.85, "edgecolor": "0.5"})
    ax.set_title("verdict\n" + title, fontsize=10)
    ex = grid_of(arrays["excess_loss"])
    src = grid_of([s == "attained" for s in arrays["excess_source"]])
    ax = axs[1]
    positive = ex[np.isfinite(ex) & (ex > 0)]
    if positive.size:
        norm = colors.LogNorm(vmin=positive.min(), vmax=positive.max()) if (
            positive.max() > 10 * positive.min()) else colors.Normalize(0, positive.max())
        shown = np.where(src.astype(bool), np.nan, ex)
        mesh = ax.pcolormesh(xe, ye, np.ma.masked_invalid(shown), cmap="viridis", norm=norm,
                             shading="flat")
        fig.colorbar(mesh, ax=ax, label="excess loss (nats, summed over anchors)")
    missing = grid_of([s.startswith("not-computed") for s in arrays["excess_source"]])
    ax.pcolormesh(xe, ye, np.ma.masked_where(~missing.astype(bool), np.ones_like(ex)),
                  cmap=colors.ListedColormap(["0.8"]), shading="flat")
    handles = [Patch(color="white", ec="0.5", label="bound attained (0)")]
    if missing.any():
        handles.append(Patch(color="0.8", label="not computed"))
    ax.legend(handles=handles, loc="best", fontsize=8, framealpha=0.85)
    ax.set_title("excess loss of the optimum over the bound", fontsize=10)
    if "cosine" in panels:
        ax = axs[2]
        C = grid_of(arrays["max_cosine"])
        mesh = ax.pcolormesh(xe, ye, np.ma.masked_invalid(C), cmap="magma", shading="flat")
        fig.colorbar(mesh, ax=ax, label="largest prototype cosine")
        ax.set_title("closest pair of class prototypes", fontsize=10)
    for ax in axs:
        ax.set_xlabel(_LABELS.get(xname, xname))
        if _geometric(pm.axes[xname]):
            ax.set_xscale("log")
        if two_d:
            ax.set_ylabel(_LABELS.get(yname, yname))
            if _geometric(pm.axes[yname]):
                ax.set_yscale("log")
        else:
            ax.set_yticks([])
        ax.set_xlim(xe[0], xe[-1])
        ax.set_ylim(ye[0], ye[-1])
    return fig


_LABELS = {"tau": "temperature τ", "eps": "cross-class weight ε", "sigma": "kernel width σ",
           "label_tau": "label temperature τ_y", "dim": "dimension d",
           "imbalance": "imbalance ratio n_max / n_min"}


def _boundary_label(b: Boundary) -> str:
    if b.name == "tau*":
        return "τ* = K / ((K−1)(−log ε))"
    return "τR² = σ²" if b.name.endswith("sigma^2") else "τR² = τ_y"


def _boundary_line(b: Boundary, pm: PhaseMap, xname: str, yname: str | None,
                   xe: np.ndarray, ye: np.ndarray):
    """Points of the closed-form boundary inside the plotted area, or ``None``."""
    other = {"tau*": "eps"}.get(b.name, "sigma" if b.name.endswith("sigma^2") else "label_tau")
    names = (xname, yname)
    if "tau" in names:
        t_axis = 0 if xname == "tau" else 1
        o_name = names[1 - t_axis]
        if o_name == other:
            lo, hi = (ye[0], ye[-1]) if t_axis == 0 else (xe[0], xe[-1])
            vals = np.geomspace(lo, hi, 400) if lo > 0 else np.linspace(lo, hi, 400)
            if other == "eps":
                vals = vals[(vals > 0) & (vals < 1)]
            tc = np.array([b.tau_c({**pm.fixed, other: v}) for v in vals])
            return (tc, vals) if t_axis == 0 else (vals, tc)
        tc = b.tau_c(pm.fixed)
        if t_axis == 0:
            return np.array([tc, tc]), np.array([ye[0], ye[-1]])
        return np.array([xe[0], xe[-1]]), np.array([tc, tc])
    if other in names and "tau" in pm.fixed:
        _, oc = b.other_c(pm.fixed["tau"])
        if xname == other:
            return np.array([oc, oc]), np.array([ye[0], ye[-1]])
        return np.array([xe[0], xe[-1]]), np.array([oc, oc])
    return None


