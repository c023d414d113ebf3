"""Figures of the verification experiments (needs the ``plot`` extra, matplotlib)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

__all__ = ["save_figures"]


def _aligned(Z: np.ndarray, U: np.ndarray) -> np.ndarray:
    """``Z`` moved by the best rigid motion onto ``U`` (zero-padded to a common width)."""
    w = max(Z.shape[1], U.shape[1])
    Zp = np.hstack([Z, np.zeros((Z.shape[0], w - Z.shape[1]))])
    Up = np.hstack([U, np.zeros((U.shape[0], w - U.shape[1]))])
    Zc, Uc = Zp - Zp.mean(0), Up - Up.mean(0)
    u, _, vt = np.linalg.svd(Zc.T @ Uc)
    return Zc @ (u @ vt) + Up.mean(0)


def _gram(Z: np.ndarray, similarity: str) -> np.ndarray:
    if similarity == "cosine":
        Zn = Z / np.linalg.norm(Z, axis=1, keepdims=True)
        return Zn @ Zn.T
    sq = (Z * Z).sum(1)
    return -(sq[:, None] + sq[None, :] - 2 * Z @ Z.T)


def save_figures(experiment: Any, out_dir: str) -> list[str]:
    """Write predicted-vs-learned Gram heatmaps and embedding scatter plots as PNG files.

    Returns the paths written; an empty list when matplotlib is not installed.

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
    name = experiment.report["experiment"]
    paths = []
    arts = experiment.artifacts
    fig, axes = plt.subplots(len(arts), 2, figsize=(8, 3.6 * len(arts)), squeeze=False)
    for row, art in zip(axes, arts, strict=True):
        Gp, Gl = _gram(art.predicted, art.similarity), _gram(art.learned, art.similarity)
        np.fill_diagonal(Gp, np.nan)  # the diagonal (1, or 0 for -D) would swamp the scale
        np.fill_diagonal(Gl, np.nan)
        lo, hi = min(np.nanmin(Gp), np.nanmin(Gl)), max(np.nanmax(Gp), np.nanmax(Gl))
        for ax, G, title in ((row[0], Gp, "predicted"), (row[1], Gl, "learned")):
            im = ax.imshow(G, vmin=lo, vmax=hi, cmap="viridis")
            ax.set_title(
                f"{art.objective}: {title} {'Gram' if art.similarity == 'cosine' else '-D'}"
            )
        fig.colorbar(im, ax=list(row), shrink=0.8)
    path = os.path.join(out_dir, f"{name}-gram.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    paths.append(path)
    fig, axes = plt.subplots(1, len(arts), figsize=(4.2 * len(arts), 4), squeeze=False)
    for ax, art in zip(axes[0], arts, strict=True):
        Z = _aligned(art.learned, art.predicted)
        U = art.predicted
        colour = art.labels if art.labels.ndim == 1 else art.labels[:, 0]
        ax.scatter(U[:, 0], U[:, 1], c="none", edgecolors="k", s=60, label="predicted")
        ax.scatter(Z[:, 0], Z[:, 1], c=colour, cmap="viridis", s=18, label="learned")
        ax.set_title(f"{art.objective} (first 2 predicted axes)")
        ax.set_aspect("equal", adjustable="datalim")
        ax.legend(loc="best", fontsize=7)
    path = os.path.join(out_dir, f"{name}-embedding.png")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    paths.append(path)
    return paths
