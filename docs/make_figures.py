"""Make the figures of the documentation (docs/figures/*.png), deterministically.

Run from the repository root with the ``plot`` extra installed:

    python docs/make_figures.py            # all figures
    python docs/make_figures.py NAME ...   # some of them (names below, without .png)

Every number drawn comes from dgp itself (or, for "learned" embeddings, from a plain L-BFGS run
on the w-InfoNCE loss that knows nothing of the theory). Look at each figure before committing.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import dgp
from dgp import plots

OUT = Path(__file__).resolve().parent / "figures"
DPI = 100


def _save(fig, name: str) -> None:
    OUT.mkdir(exist_ok=True)
    path = OUT / f"{name}.png"
    fig.savefig(path, dpi=DPI)
    print(f"wrote {path.relative_to(OUT.parent.parent)} ({path.stat().st_size // 1024} KiB)")


LABELS = [0, 0, 0, 1, 1, 2, 2]  # the Soft SupCon example of Getting started


def classify_plot() -> None:
    """Getting started: the figure of `dgp classify W.npy ... --plot` (classes coloured)."""
    W = dgp.weights.soft_supcon_weights(LABELS, eps=0.1)
    res = dgp.classify(W, similarity="cosine", tau=0.5, dim=3)
    _save(plots.classification_figure(W, res, labels=LABELS), "classify_plot")


def classify_plot_rank() -> None:
    """The same weighting in d = 2: PSD targets exist, but every one needs more dimensions."""
    W = dgp.weights.soft_supcon_weights(LABELS, eps=0.1)
    res = dgp.classify(W, similarity="cosine", tau=0.5, dim=2)
    _save(plots.classification_figure(W, res, labels=LABELS), "classify_plot_rank")


def classify_plot_supcon() -> None:
    """SupCon (zero weights) under the cosine similarity: no target family at all."""
    W = dgp.weights.supcon_weights(LABELS)
    res = dgp.classify(W, similarity="cosine", tau=0.1, dim=3)
    _save(plots.classification_figure(W, res, labels=LABELS), "classify_plot_supcon")


def c_family_soft_supcon() -> None:
    """Theory / Soft SupCon: the spectrum of G(c) at tau*/2, tau*, 1.5 tau*."""
    from matplotlib.figure import Figure

    labels = np.repeat([0, 1, 2], [8, 4, 2])
    eps, K = 0.1, 3
    W = dgp.weights.soft_supcon_weights(labels, eps=eps)
    tau_star = K / ((K - 1) * -np.log(eps))
    fig = Figure(figsize=(14, 3.9), layout="constrained")
    for i, (f, tag) in enumerate(((0.5, "τ*/2"), (1.0, "τ*"), (1.5, "1.5 τ*"))):
        ax = fig.add_subplot(1, 3, i + 1)
        tau = f * tau_star
        res = dgp.classify(W, similarity="cosine", tau=tau, dim=K)
        verdict = res.verdict + (f", rank {res.rank}" if res.rank is not None else "")
        plots.c_family_spectrum(
            W,
            tau=tau,
            ax=ax,
            c_range=(0.0, 4.0),
            title=f"τ = {tag} = {tau:.3f}: {verdict} in d = {K}",
        )
    fig.suptitle(
        f"Soft SupCon, classes of 8, 4 and 2 (N = {len(labels)}), ε = {eps:g}, τ* = {tau_star:.3f}",
        fontsize=11,
    )
    _save(fig, "c_family_soft_supcon")


def prototypes_supcon() -> None:
    """SupCon under imbalance: the optimal prototypes against the balanced simplex."""
    p = dgp.supcon_prototypes([100, 10, 10], tau=0.1)
    simplex = dgp.supcon_prototypes([10, 10, 10], tau=0.1).gram
    fig = plots.prototype_geometry(
        p.gram,
        sizes=p.sizes,
        reference=simplex,
        reference_label="balanced: regular simplex",
        title="SupCon prototypes, classes of 100, 10 and 10, τ = 0.1: minority pair at "
        f"{np.degrees(np.arccos(p.gram[1, 2])):.1f}°,\nmajority–minority pairs at "
        f"{np.degrees(np.arccos(p.gram[0, 1])):.1f}° (balanced classes: the regular simplex, "
        "120°)",
    )
    _save(fig, "prototypes_supcon")


def _cifar100_lt_sizes() -> np.ndarray:
    """CIFAR-100-LT class sizes: imbalance factor 100, exponential profile (500 down to 5)."""
    return np.round(500 * 100.0 ** (-np.arange(100) / 99)).astype(int)


def targets_in_dim() -> None:
    """Fixed targets for CIFAR-100-LT in R^64: dgp's imbalance-aware prototypes against
    approximately uniform points (the class-agnostic targets of targeted SupCon)."""
    from matplotlib.figure import Figure

    sizes = _cifar100_lt_sizes()
    p = dgp.supcon_prototypes(sizes, tau=0.1, dim=64, starts=4)
    Z = p.prototypes
    U = dgp.geometry.uniform_sphere_points(100, 64, seed=0)
    iu = np.triu_indices(100, 1)
    cz, cu = (Z @ Z.T)[iu], (U @ U.T)[iu]
    fig = Figure(figsize=(13, 4.2), layout="constrained")
    ax = fig.add_subplot(1, 2, 1)
    bins = np.linspace(-1.0, 0.3, 66)
    ax.hist(cu, bins=bins, alpha=0.6, label="uniform targets (repulsion)", color="tab:gray")
    ax.hist(cz, bins=bins, alpha=0.6, label="dgp: SupCon prototypes, τ = 0.1", color="tab:blue")
    ax.set_yscale("log")
    ax.set_xlabel("cosine between two class targets")
    ax.set_ylabel("pairs (log scale)")
    ax.set_title("pairwise cosines of the 4950 class pairs")
    ax.legend(loc="upper left")
    ax = fig.add_subplot(1, 2, 2)
    Cz, Cu = Z @ Z.T, U @ U.T
    np.fill_diagonal(Cz, np.nan)
    np.fill_diagonal(Cu, np.nan)
    ax.plot(sizes, np.nanmax(Cu, axis=1), ".", color="tab:gray", label="uniform: nearest target")
    ax.plot(sizes, np.nanmax(Cz, axis=1), ".", color="tab:blue", label="dgp: nearest target")
    ax.plot(sizes, np.nanmin(Cz, axis=1), "x", color="tab:blue", ms=4,
            label="dgp: farthest target")
    ax.set_xscale("log")
    ax.set_xlabel("class size (CIFAR-100-LT, imbalance factor 100)")
    ax.set_ylabel("cosine")
    ax.set_title("per class: cosine to its nearest and farthest other target")
    ax.legend(loc="center right")
    fig.suptitle(
        f"Fixed targets for 100 classes in R^64: loss {p.loss:.1f} nats, certified lower "
        f"bound {p.lower_bound:.1f} (gap {100 * (p.loss - p.lower_bound) / p.loss:.2g}%)",
        fontsize=11,
    )
    _save(fig, "targets_in_dim")


def _learn_cosine(W: np.ndarray, tau: float, d: int, seed: int) -> np.ndarray:
    """Free unit-norm embeddings minimising the w-InfoNCE loss by L-BFGS (as in the tutorial)."""
    from scipy.optimize import minimize

    P = dgp.weights.row_distribution(W)

    def loss_and_grad(x):
        X = x.reshape(-1, d)
        norms = np.linalg.norm(X, axis=1, keepdims=True)
        Z = X / norms
        S = Z @ Z.T / tau
        np.fill_diagonal(S, -np.inf)
        m = S.max(axis=1, keepdims=True)
        E = np.exp(S - m)
        lse = m + np.log(E.sum(axis=1, keepdims=True))
        loss = float(np.sum(P * (lse - np.where(np.isfinite(S), S, 0.0))))
        M = E / E.sum(axis=1, keepdims=True) - P
        gZ = (M + M.T) @ Z / tau
        return loss, ((gZ - Z * np.sum(Z * gZ, axis=1, keepdims=True)) / norms).ravel()

    x0 = np.random.default_rng(seed).standard_normal(W.shape[0] * d)
    opt = minimize(
        loss_and_grad,
        x0,
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 20000, "gtol": 1e-12, "ftol": 1e-16},
    )
    Z = opt.x.reshape(-1, d)
    return Z / np.linalg.norm(Z, axis=1, keepdims=True)


def gram_y_aware() -> None:
    """y-Aware tutorial: predicted vs learned Gram at tau R^2 = sigma^2."""
    rng = np.random.default_rng(1)
    angles = np.sort(rng.uniform(0, 2 * np.pi, 24))
    y = np.array([1.0, -0.5]) + 2.0 * np.c_[np.cos(angles), np.sin(angles)]
    W = dgp.weights.gaussian_kernel_weights(y, sigma=1.0)
    tau = 0.25
    predicted = dgp.classify(W, similarity="cosine", tau=tau, dim=2).embedding
    Z = _learn_cosine(W, tau, d=3, seed=0)
    fig = plots.gram_heatmaps(
        predicted @ predicted.T,
        Z @ Z.T,
        titles=("predicted Gram (dgp.classify, d = 2)", "learned Gram (L-BFGS on the loss, d = 3)"),
        suptitle="y-Aware, 24 labels on a circle of radius 2, σ = 1, τ = 0.25 = σ²/R² "
        "(samples sorted by angle)",
    )
    _save(fig, "gram_y_aware")


FIGURES = {
    f.__name__: f
    for f in (
        classify_plot,
        classify_plot_rank,
        classify_plot_supcon,
        c_family_soft_supcon,
        prototypes_supcon,
        gram_y_aware,
        targets_in_dim,
    )
}


def main(argv: list[str]) -> int:
    names = argv or list(FIGURES)
    unknown = [n for n in names if n not in FIGURES]
    if unknown:
        print(f"unknown figure(s) {unknown}; choose from {sorted(FIGURES)}", file=sys.stderr)
        return 2
    for name in names:
        FIGURES[name]()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
