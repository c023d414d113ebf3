"""Figures of the verification experiments (needs the ``plot`` extra, matplotlib)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from dgp.resources import atomic_output

__all__ = ["save_figures"]


def _aligned(Z: np.ndarray, U: np.ndarray) -> np.ndarray:
    """``Z`` moved by the best rigid motion onto ``U`` (zero-padded to a common width)."""
    w = max(Z.shape[1], U.shape[1])
    Zp = np.hstack([Z, np.zeros((Z.shape[0], w - Z.shape[1]))])
    Up = np.hstack([U, np.zeros((U.shape[0], w - U.shape[1]))])
    Zc, Uc = Zp - Zp.mean(0), Up - Up.mean(0)
    u, _, vt = np.linalg.svd(Zc.T @ Uc)
    return Zc @ (u @ vt) + Up.mean(0)


def _grams(fig: Any, arts: list[Any], title: str) -> None:
    """One row per condition: predicted and learned prototype Gram, and learned vs predicted
    off-diagonal cosines."""
    axes = fig.subplots(len(arts), 3, squeeze=False)
    for row, art in zip(axes, arts, strict=True):
        Gp, Gl = art.predicted.copy(), art.learned.copy()
        off = ~np.eye(Gp.shape[0], dtype=bool)
        lo = min(Gp[off].min(), Gl[off].min())
        hi = max(Gp[off].max(), Gl[off].max())
        if hi - lo < 0.2:  # an equiangular prediction: do not blow rounding noise up to a pattern
            mid = (hi + lo) / 2
            lo, hi = mid - 0.1, mid + 0.1
        np.fill_diagonal(Gp, np.nan)  # the unit diagonal would swamp the scale
        np.fill_diagonal(Gl, np.nan)
        for ax, G, what in ((row[0], Gp, "predicted"), (row[1], Gl, "learned")):
            im = ax.imshow(G, vmin=lo, vmax=hi, cmap="viridis")
            ax.set_title(f"{art.condition}: {what}", fontsize=9)
            ax.set_xlabel("class (largest first)", fontsize=8)
        fig.colorbar(im, ax=list(row[:2]), shrink=0.8, label="prototype cosine")
        ax = row[2]
        ax.scatter(art.predicted[off], art.learned[off], s=10)
        ax.plot([lo, hi], [lo, hi], "k--", lw=0.8)
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_xlabel("predicted cosine", fontsize=8)
        ax.set_ylabel("learned cosine", fontsize=8)
        ax.set_title("off-diagonal pairs", fontsize=9)
    fig.suptitle(title, fontsize=10)


def _embeddings(fig: Any, arts: list[Any], title: str) -> None:
    """One panel per condition: the learned embedding aligned on the prediction, in the two
    principal axes of the (centred) prediction, coloured by the label's angle."""
    cols = min(3, len(arts))
    rows = -(-len(arts) // cols)
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax, art in zip(axes, arts, strict=False):
        Z = _aligned(art.learned, art.predicted)
        w = max(art.predicted.shape[1], Z.shape[1])
        Up = np.hstack([art.predicted, np.zeros((Z.shape[0], w - art.predicted.shape[1]))])
        mu = Up.mean(0)
        axes2 = np.linalg.svd(Up - mu, full_matrices=False)[2][:2].T
        U, Z = (Up - mu) @ axes2, (Z - mu) @ axes2
        lab = art.labels
        colour = np.arctan2(lab[:, 1], lab[:, 0]) if lab.shape[1] >= 2 else lab[:, 0]
        ax.scatter(U[:, 0], U[:, 1 % U.shape[1]], c="none", edgecolors="0.6", s=14, lw=0.5,
                   label="predicted")
        sc = ax.scatter(Z[:, 0], Z[:, 1 % Z.shape[1]], c=colour, cmap="twilight", s=8,
                        label="learned")
        ax.set_title(art.condition, fontsize=9)
        ax.set_aspect("equal", adjustable="datalim")
        ax.legend(loc="upper right", fontsize=7)
    for ax in axes[len(arts):]:
        ax.axis("off")
    fig.colorbar(sc, ax=list(axes), shrink=0.6, label="label angle (rad)")
    fig.suptitle(title, fontsize=10)


def _batch_curve(fig: Any, report: dict[str, Any]) -> None:
    ax = fig.subplots()
    rows = report["summary"]
    B = [int(r["condition"].split("=")[1]) for r in rows]
    for key, label in (("heldout_batch_rms_error", "expected-batch prediction"),
                       ("heldout_full_rms_error", "full-batch prediction")):
        m = [np.nan if r[key] is None else r[key][0] for r in rows]
        s = [np.nan if r[key] is None else r[key][1] for r in rows]
        ax.errorbar(B, m, yerr=s, marker="o", capsize=3, label=label)
    ax.set_xscale("log", base=2)
    ax.set_xticks(B, [str(b) for b in B])
    ax.set_xlabel("batch size B")
    ax.set_ylabel("RMS distance of held-out prototype Gram")
    ax.set_title("which prediction training follows (mean ± sd, all seeds)", fontsize=10)
    ax.legend()


def save_figures(experiment: Any, out_dir: str) -> list[str]:
    """Write the experiment's figures as PNG files into ``out_dir``.

    Returns the paths written; an empty list when matplotlib is not installed. Each file is
    written atomically (:func:`dgp.resources.atomic_output`): a write that fails or is
    interrupted leaves no partial file, and an existing file of that name stays as it was.

    Raises
    ------
    OSError
        If ``out_dir`` cannot be written.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    report = experiment.report
    name = report["experiment"]
    arts = list(experiment.artifacts)
    paths = []
    title = f"{name}: seed {report['seeds'][0]}, {report['config'].get('data', '')}"
    if arts and arts[0].similarity == "gram":
        fig = plt.figure(figsize=(11, 3.3 * len(arts)), layout="constrained")
        paths.append(_save(plt, fig, lambda: _grams(fig, arts, title),
                           os.path.join(out_dir, f"{name}-gram.png")))
    elif arts:
        cols = min(3, len(arts))
        fig = plt.figure(figsize=(4 * cols, 3.8 * -(-len(arts) // cols)), layout="constrained")
        paths.append(_save(plt, fig, lambda: _embeddings(fig, arts, title),
                           os.path.join(out_dir, f"{name}-embedding.png")))
    if name == "batch-size":
        fig = plt.figure(figsize=(6, 4), layout="constrained")
        paths.append(_save(plt, fig, lambda: _batch_curve(fig, report),
                           os.path.join(out_dir, f"{name}-curve.png")))
    return paths


def _save(plt: Any, fig: Any, draw: Any, path: str) -> str:
    """Draw ``fig`` (``draw()``) and write it to ``path`` as a PNG through a temporary file
    renamed when complete (:func:`dgp.resources.atomic_output`: a crash or Ctrl-C while
    matplotlib writes leaves no truncated file and keeps the figure of an earlier run); the
    figure is closed whatever happens. Returns ``path``."""
    try:
        draw()
        with atomic_output(path) as tmp:
            fig.savefig(tmp, dpi=100, format="png")
    finally:
        plt.close(fig)
    return path
