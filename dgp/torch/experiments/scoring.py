"""Geometry of learned embeddings: prototypes, their Gram, distances and the expected-batch
loss excess."""


from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from dgp.metrics import entropic_gap, procrustes_r2, similarity_r2
from dgp.torch._compat import require_torch

torch = require_torch()

from dgp.torch.experiments.base import (  # noqa: E402
    Budget,
    TrainedRun,
)
from dgp.torch.losses import (  # noqa: E402
    WInfoNCELoss,
)

# ----------------------------------------------------------------------------------------------
# geometry helpers


def gram_embedding(G: np.ndarray) -> np.ndarray:
    """An embedding ``U`` with ``U U^T = G``; eigenvalues are clipped at 0 before the square root.

    Examples
    --------
    >>> U = gram_embedding(regular_simplex(3) @ regular_simplex(3).T)
    >>> U.shape
    (3, 2)

    Raises
    ------
    ValueError
        If ``G`` is not a square symmetric matrix.
    """
    G = np.asarray(G, dtype=float)
    if G.ndim != 2 or G.shape[0] != G.shape[1] or not np.allclose(G, G.T, atol=1e-8):
        raise ValueError(f"G must be a symmetric square matrix, got shape {G.shape}")
    lam, V = np.linalg.eigh((G + G.T) / 2.0)
    lam, V = lam[::-1], V[:, ::-1]  # principal axes first
    keep = lam > 1e-10 * max(1.0, float(lam[0]))
    V = V[:, keep]
    V = V * np.sign(V[np.argmax(np.abs(V), axis=0), np.arange(V.shape[1])])  # fixed signs
    return V * np.sqrt(np.clip(lam[keep], 0.0, None))


def regular_simplex(k: int) -> np.ndarray:
    """``k`` unit vectors of the centred regular simplex (pairwise cosine ``-1/(k-1)``)."""
    S = np.eye(k) - 1.0 / k
    return S / np.linalg.norm(S, axis=1, keepdims=True)


def unit_rows(Z: np.ndarray) -> np.ndarray:
    return Z / np.linalg.norm(Z, axis=1, keepdims=True)


def prototype_gram(Z: np.ndarray, y: np.ndarray, K: int) -> tuple[np.ndarray, np.ndarray, float]:
    """Class prototypes (normalised means of the normalised embeddings), their Gram, and the
    collapse (the smallest norm of a class mean: 1 when every class sits on one point).

    Raises
    ------
    ValueError
        If a class ``0..K-1`` has no sample.
    """
    Zn = unit_rows(Z)
    counts = np.bincount(y, minlength=K)
    if counts.min() == 0:
        raise ValueError(f"class {int(np.argmin(counts))} has no sample")
    means = np.stack([Zn[y == c].mean(axis=0) for c in range(K)])
    collapse = float(np.linalg.norm(means, axis=1).min())
    P = unit_rows(means)
    return P, P @ P.T, collapse


def off_diagonal(G: np.ndarray) -> np.ndarray:
    return G[~np.eye(G.shape[0], dtype=bool)]


def gram_rms(A: np.ndarray, B: np.ndarray) -> float:
    return float(np.sqrt(np.mean((off_diagonal(A) - off_diagonal(B)) ** 2)))


def group_cosine(G: np.ndarray, group: np.ndarray) -> float:
    sub = G[np.ix_(group, group)]
    return float(off_diagonal(sub).mean())


def finite_or_none(f: Callable[[], float]) -> float | None:
    value = f()
    return None if not math.isfinite(value) else value


# ----------------------------------------------------------------------------------------------
# convergence: the expected-batch loss excess over the prediction


def loss_excess(
    Z: np.ndarray,
    Zstar: np.ndarray,
    labels: np.ndarray,
    loss_fn: WInfoNCELoss,
    *,
    batch_size: int,
    batches: int,
    seed: int,
) -> tuple[float, float]:
    r"""Per-anchor excess :math:`\mathbb E_b[L_b(Z) - L_b(Z^*)] / \mathbb E_b[\#\text{anchors}]`
    of the loss ``loss_fn`` (``reduction="sum"``) over uniform random batches, and its standard
    error.

    Both embeddings are scored on the **same** batches, which removes most of the sampling noise
    from the difference. With ``batch_size`` equal to the number of samples there is one batch and
    the value is exact (standard error 0).

    Raises
    ------
    ValueError
        If the shapes disagree or ``batch_size`` is not in ``[2, N]``.
    """
    n = Z.shape[0]
    if Zstar.shape[0] != n or labels.shape[0] != n:
        raise ValueError("Z, Zstar and labels must have one row per sample")
    if not 2 <= batch_size <= n:
        raise ValueError(f"batch_size must be in [2, {n}], got {batch_size}")
    Zt = torch.as_tensor(Z, dtype=torch.float64)
    Zs = torch.as_tensor(Zstar, dtype=torch.float64)
    yt = torch.as_tensor(labels)
    gen = torch.Generator().manual_seed(int(seed))
    full = batch_size == n
    diffs, anchors = [], []
    with torch.no_grad():
        for _ in range(1 if full else batches):
            idx = torch.arange(n) if full else torch.randperm(n, generator=gen)[:batch_size]
            W = loss_fn.weights_from_labels(yt[idx])
            W = W.to(torch.float64).masked_fill(torch.eye(len(idx), dtype=torch.bool), 0.0)
            anchors.append(float((W.sum(dim=1) > 0).sum()))
            diffs.append(float(loss_fn(Zt[idx], weights=W) - loss_fn(Zs[idx], weights=W)))
    d = np.asarray(diffs)
    scale = float(np.mean(anchors))
    se = 0.0 if full else float(d.std(ddof=1) / math.sqrt(d.size))
    return float(d.mean()) / scale, se / scale

# ----------------------------------------------------------------------------------------------
# SupCon family: scoring learned prototypes


#: how the trainer combines a batch's anchors (the losses' default), and so the predictions'
TRAIN_REDUCTION = "sum"


def supcon_prediction(
    sizes: np.ndarray, *, tau: float, eps: float | None, batch_size: int | None
) -> Any:
    """:func:`dgp.supcon_prototypes` for the trainer's batches: uniform batches of
    ``batch_size`` drawn without replacement, anchor losses summed, anchors without positives
    dropped (``SupConLoss(empty_rows="skip")``); the full-batch prediction when ``batch_size``
    is None or covers the training set."""
    from dgp import supcon_prototypes

    if batch_size is None or batch_size >= int(np.sum(sizes)):
        return supcon_prototypes(sizes, tau=tau, eps=eps)
    return supcon_prototypes(
        sizes, tau=tau, eps=eps, batch_size=int(batch_size), sampler="uniform",
        reduction=TRAIN_REDUCTION,
    )


def describe_prediction(pred: Any, batch_size: int | None) -> str:
    where = "full batch" if pred.batch is None else f"uniform batches of {batch_size}"
    return f"dgp.supcon_prototypes, {where} ({pred.method})"


def score_prototypes(
    run: TrainedRun,
    *,
    y: np.ndarray,
    y_test: np.ndarray,
    K: int,
    G_pred: np.ndarray,
    W: np.ndarray,
    tau: float,
    loss_fn: WInfoNCELoss,
    budget: Budget,
    batch_size: int,
    seed: int,
    trained: bool,
) -> dict[str, Any]:
    U = gram_embedding(G_pred)
    simplex = regular_simplex(K)
    S = simplex @ simplex.T
    P, G, collapse = prototype_gram(run.Z, y, K)
    Pt, Gt, collapse_t = prototype_gram(run.Z_test, y_test, K)
    excess, se = loss_excess(
        run.Z,
        U[y],
        y,
        loss_fn,
        batch_size=min(batch_size, y.size),
        batches=budget.mc_batches,
        seed=10_000 + seed,
    )
    return {
        "procrustes_r2": procrustes_r2(P, U),
        "similarity_r2": finite_or_none(lambda: similarity_r2(P, U)),
        "entropic_gap": entropic_gap(run.Z, W, tau=tau),
        "simplex_procrustes_r2": procrustes_r2(P, simplex),
        "gram_rms_error": gram_rms(G, G_pred),
        "simplex_gram_rms_error": gram_rms(G, S),
        "class_collapse": collapse,
        "heldout_procrustes_r2": procrustes_r2(Pt, U),
        "heldout_similarity_r2": finite_or_none(lambda: similarity_r2(Pt, U)),
        "heldout_gram_rms_error": gram_rms(Gt, G_pred),
        "heldout_simplex_gram_rms_error": gram_rms(Gt, S),
        "heldout_class_collapse": collapse_t,
        "loss_excess": excess,
        "loss_excess_se": se,
        "converged": bool(excess <= budget.converge_tol) if trained else None,
        "steps": run.steps,
        "train_seconds": run.seconds,
        "learned_gram": G,
        "heldout_gram": Gt,
    }


