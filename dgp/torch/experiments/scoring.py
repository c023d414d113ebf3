"""Geometry of learned embeddings: prototypes, their Gram, distances and the expected-batch
loss excess."""


from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from dgp.constants import SYMMETRY_ATOL
from dgp.errors import InputError
from dgp.metrics import entropic_gap, procrustes_r2, similarity_r2
from dgp.tolerance import DEFAULT_POLICY
from dgp.torch._compat import require_torch

torch = require_torch()

from dgp.torch.experiments.base import (  # noqa: E402
    Budget,
    TrainedRun,
)
from dgp.torch.experiments.statistics import (  # noqa: E402
    null_corrected,
    permutation_null,
    plateau,
    prototypes_of,
    split_half,
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
    if G.ndim != 2 or G.shape[0] != G.shape[1] or not np.allclose(G, G.T, atol=SYMMETRY_ATOL):
        raise InputError(f"G must be a symmetric square matrix, got shape {G.shape}")
    lam, V = np.linalg.eigh((G + G.T) / 2.0)
    lam, V = lam[::-1], V[:, ::-1]  # principal axes first
    keep = DEFAULT_POLICY.rank(lam)  # a prefix: lam is sorted down
    V = V[:, :keep]
    V = V * np.sign(V[np.argmax(np.abs(V), axis=0), np.arange(V.shape[1])])  # fixed signs
    return V * np.sqrt(np.clip(lam[:keep], 0.0, None))


def regular_simplex(k: int) -> np.ndarray:
    """``k`` unit vectors of the centred regular simplex (pairwise cosine ``-1/(k-1)``)."""
    S = np.eye(k) - 1.0 / k
    return S / np.linalg.norm(S, axis=1, keepdims=True)


def simplex_gram(k: int) -> np.ndarray:
    """The Gram matrix of :func:`regular_simplex`: the class experiments' alternative to a
    prediction (1 on the diagonal, ``-1/(k-1)`` off it).

    >>> bool(np.allclose(simplex_gram(3), [[1, -0.5, -0.5], [-0.5, 1, -0.5], [-0.5, -0.5, 1]]))
    True
    """
    S = regular_simplex(k)
    return S @ S.T


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
    counts = np.bincount(y, minlength=K)
    if counts.min() == 0:
        raise InputError(f"class {int(np.argmin(counts))} has no sample")
    P, norms = prototypes_of(unit_rows(Z), y, K)
    collapse = float(norms.min())
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


def batch_losses(
    embeddings: Sequence[np.ndarray],
    labels: np.ndarray,
    loss_fn: WInfoNCELoss,
    *,
    batch_size: int,
    batches: int,
    seed: int,
) -> tuple[np.ndarray, np.ndarray]:
    """The loss ``loss_fn`` (``reduction="sum"``) of each embedding on the **same** uniform
    random batches (drawn without replacement from a generator seeded by ``seed``), and the
    number of anchors of each batch. With ``batch_size`` equal to the number of samples there
    is one batch, the whole set.

    Returns
    -------
    losses : ndarray, shape (len(embeddings), batches)
    anchors : ndarray, shape (batches,)

    Raises
    ------
    ValueError
        If the shapes disagree or ``batch_size`` is not in ``[2, N]``.
    """
    n = labels.shape[0]
    if any(Z.shape[0] != n for Z in embeddings):
        raise InputError("every embedding and labels must have one row per sample")
    if not 2 <= batch_size <= n:
        raise InputError(f"batch_size must be in [2, {n}], got {batch_size}")
    Zs = [torch.as_tensor(Z, dtype=torch.float64) for Z in embeddings]
    yt = torch.as_tensor(labels)
    gen = torch.Generator().manual_seed(int(seed))
    full = batch_size == n
    count = 1 if full else batches
    out = np.empty((len(Zs), count))
    anchors = np.empty(count)
    with torch.no_grad():
        for b in range(count):
            idx = torch.arange(n) if full else torch.randperm(n, generator=gen)[:batch_size]
            W = loss_fn.weights_from_labels(yt[idx])
            W = W.to(torch.float64).masked_fill(torch.eye(len(idx), dtype=torch.bool), 0.0)
            anchors[b] = float((W.sum(dim=1) > 0).sum())
            for e, Z in enumerate(Zs):
                out[e, b] = float(loss_fn(Z[idx], weights=W))
    return out, anchors


def per_anchor_difference(a: np.ndarray, b: np.ndarray, anchors: np.ndarray
                          ) -> tuple[float, float]:
    """Mean per-anchor ``a - b`` over paired batches and its standard error (0 for one batch)."""
    d = np.asarray(a) - np.asarray(b)
    scale = float(np.mean(anchors))
    se = 0.0 if d.size == 1 else float(d.std(ddof=1) / math.sqrt(d.size))
    return float(d.mean()) / scale, se / scale


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
    error (:func:`batch_losses`: both embeddings on the same batches; exact for one batch).

    Raises
    ------
    ValueError
        If the shapes disagree or ``batch_size`` is not in ``[2, N]``.
    """
    if Zstar.shape[0] != Z.shape[0]:
        raise InputError("Z, Zstar and labels must have one row per sample")
    L, anchors = batch_losses([Z, Zstar], labels, loss_fn, batch_size=batch_size,
                              batches=batches, seed=seed)
    return per_anchor_difference(L[0], L[1], anchors)

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
    from dgp.prototypes import supcon_prototypes

    if batch_size is None or batch_size >= int(np.sum(sizes)):
        return supcon_prototypes(sizes, tau=tau, eps=eps)
    return supcon_prototypes(
        sizes, tau=tau, eps=eps, batch_size=int(batch_size), sampler="uniform",
        reduction=TRAIN_REDUCTION,
    )


def describe_prediction(pred: Any, batch_size: int | None) -> str:
    where = "full batch" if pred.batch is None else f"uniform batches of {batch_size}"
    return f"dgp.supcon_prototypes, {where} ({pred.method})"


#: label permutations of the held-out null, and random splits of the noise ceiling
PERMUTATIONS = 200
SPLITS = 20
#: label permutations of the held-out Procrustes null (continuous labels)
PROCRUSTES_PERMUTATIONS = 100


def procrustes_null(Zt: np.ndarray, Ut: np.ndarray, At: np.ndarray, *, permutations: int,
                    seed: int) -> dict[str, Any]:
    """Held-out advantage of the prediction ``Ut`` over the alternative ``At`` in Procrustes
    :math:`r^2` (``r2(Zt, Ut) - r2(Zt, At)``), corrected by its mean when the labels are
    shuffled (rows of both references permuted together).

    The residual of an embedding unrelated to a reference grows with the reference's own spread
    relative to the embedding's, so the uncorrected difference favours whichever reference is
    larger; the shuffled labels measure that bias, and ``advantage`` is what the labels add.
    """
    s = procrustes_r2(Zt, Ut) - procrustes_r2(Zt, At)
    rng = np.random.default_rng(seed)
    null = []
    for _ in range(permutations):
        perm = rng.permutation(Zt.shape[0])
        null.append(procrustes_r2(Zt, Ut[perm]) - procrustes_r2(Zt, At[perm]))
    return {**permutation_null(s, null), "distance": "Procrustes r^2 (no scaling)"}


def score_prototypes(
    run: TrainedRun,
    *,
    y: np.ndarray,
    y_test: np.ndarray,
    K: int,
    G_pred: np.ndarray,
    alternatives: Mapping[str, np.ndarray],
    W: np.ndarray,
    tau: float,
    loss_fn: WInfoNCELoss,
    budget: Budget,
    batch_size: int,
    seed: int,
    trained: bool,
) -> dict[str, Any]:
    """Score one run's class prototypes against the prediction ``G_pred`` and each of the
    ``alternatives`` (name -> Gram), on training and on held-out samples.

    Convergence is the run's own (:func:`~dgp.torch.experiments.statistics.plateau` of its
    training loss); the prediction is not consulted. For every alternative the record holds,
    under ``comparisons[name]``: ``delta`` (the alternative's expected batch loss excess over
    the prediction, per anchor, on this run's labels and the trainer's batch size) with
    ``delta_se``; ``train`` (the two off-diagonal RMS distances of the training prototype Gram
    and their difference); ``heldout`` (the same for the held-out Gram up to a common pull of
    its cosines towards 1, corrected by a label-permutation null:
    :func:`~dgp.torch.experiments.statistics.null_corrected`). ``heldout_noise`` is the
    noise ceiling of the held-out Gram.
    """
    U = gram_embedding(G_pred)
    simplex = regular_simplex(K)
    S = simplex @ simplex.T
    P, G, collapse = prototype_gram(run.Z, y, K)
    Pt, Gt, collapse_t = prototype_gram(run.Z_test, y_test, K)
    alt_names = list(alternatives)
    B = min(batch_size, y.size)
    L, anchors = batch_losses(
        [run.Z, U[y], *(gram_embedding(alternatives[a])[y] for a in alt_names)], y, loss_fn,
        batch_size=B, batches=budget.mc_batches, seed=10_000 + seed,
    )
    excess, se = per_anchor_difference(L[0], L[1], anchors)
    Zt = unit_rows(run.Z_test)
    comparisons = {}
    for k, name in enumerate(alt_names):
        A = alternatives[name]
        delta, delta_se = per_anchor_difference(L[2 + k], L[1], anchors)
        dp, da = gram_rms(G, G_pred), gram_rms(G, A)  # training images: nothing pulls them
        comparisons[name] = {
            "delta": delta,
            "delta_se": delta_se,
            "predictions_rms": gram_rms(G_pred, A),
            "train": {"dist_prediction": dp, "dist_alternative": da, "advantage": da - dp},
            "heldout": null_corrected(Zt, y_test, G_pred, A, permutations=PERMUTATIONS,
                                      seed=20_000 + seed),
        }
    conv = plateau(run.losses) if trained else None
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
        "heldout_noise": split_half(Zt, y_test, K, splits=SPLITS, seed=30_000 + seed),
        "final_loss": float(L[0].mean() / anchors.mean()),
        "loss_excess": excess,
        "loss_excess_se": se,
        "comparisons": comparisons,
        "converged": conv.converged if conv is not None else None,
        "plateau": conv.to_dict() if conv is not None else None,
        "steps": run.steps,
        "train_seconds": run.seconds,
        "learned_gram": G,
        "heldout_gram": Gt,
    }
