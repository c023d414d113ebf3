r"""Experiments that train small encoders and compare the learned geometry with the prediction.

Both experiments train **full-batch**: the theory predicts the minimiser of the loss over the whole
training set, and a full batch makes the optimised loss exactly that loss. (With mini-batches of
size ``B`` drawn uniformly, each step optimises the loss of a random sub-population whose class
sizes are about ``B n_c / N``, and a prediction for imbalance would have to be made for that
composition; at ``B = N`` the two coincide.) Metrics are computed on the training set, against:

``supcon-imbalance``
    scikit-learn's digits, class sizes decreasing tenfold (174 ... 17), SupCon and Soft SupCon at
    ``tau = 0.5``. Learned prototypes (normalised means of the normalised embeddings of each class)
    against an embedding of :func:`dgp.supcon_prototypes`' Gram for the same sizes, and against the
    regular simplex. At ``tau = 0.5`` the SupCon optimum is visibly not the simplex (prototype
    cosines from about -0.27 to 0.08 instead of -1/9); Soft SupCon's optimum is equiangular with
    ``rho = 1 + tau log eps`` whatever the sizes.

``continuous-labels``
    images of a blob whose 2-D position on an ``8 x 8`` grid is the label (each label once, so
    the prediction is made on the unique label values), trained with Euclidean–Euclidean, y-Aware
    and X-CLR at ``tau = 0.1`` in ``d = 8``. Euclidean–Euclidean is compared with
    ``z = (sqrt(tau) / sigma) y`` (its bound-attaining optimum, unique up to rigid motion),
    y-Aware and X-CLR with the target embedding of :func:`dgp.classify` when realizable, else with
    the true minimiser of :func:`dgp.optimum`. X-CLR's label embeddings are ``(y, 1)``, so that
    L2-normalising them (as X-CLR does) keeps the position.

Each run reports ``procrustes_r2`` and ``similarity_r2`` against its prediction, the
``entropic_gap`` of the learned embedding and that of the prediction (``predicted_entropic_gap``);
the learned gap can only approach the predicted one from above.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dgp.errors import check_choice
from dgp.infonce import entropic_bound, winfonce_loss
from dgp.metrics import entropic_gap, procrustes_r2, similarity_r2
from dgp.torch._compat import require_torch
from dgp.weights import gaussian_kernel_weights, soft_supcon_weights, supcon_weights, xclr_weights

torch = require_torch()

from dgp.torch import data  # noqa: E402
from dgp.torch.encoders import MLPEncoder  # noqa: E402
from dgp.torch.losses import make_loss  # noqa: E402
from dgp.torch.training import (  # noqa: E402
    cpu_threads,
    embed,
    resolve_device,
    seed_everything,
    train,
)

__all__ = [
    "EXPERIMENTS",
    "Experiment",
    "RunArtifacts",
    "continuous_labels",
    "free_optimum_gram",
    "gram_embedding",
    "regular_simplex",
    "run_experiment",
    "supcon_imbalance",
]


@dataclass
class RunArtifacts:
    """Arrays of one run, for figures: the learned and predicted embeddings (rows aligned)."""

    objective: str
    learned: np.ndarray
    predicted: np.ndarray
    similarity: str
    labels: np.ndarray
    losses: list[float] = field(default_factory=list)


@dataclass
class Experiment:
    """The JSON report of an experiment and the arrays behind it."""

    report: dict[str, Any]
    artifacts: list[RunArtifacts]


def gram_embedding(G: np.ndarray) -> np.ndarray:
    """An embedding ``U`` with ``U U^T = G`` (negative eigenvalues, rounding noise, are dropped).

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
    keep = lam > 1e-10 * max(1.0, float(lam.max()))
    return V[:, keep] * np.sqrt(lam[keep])


def regular_simplex(k: int) -> np.ndarray:
    """``k`` unit vectors of the centred regular simplex (pairwise cosine ``-1/(k-1)``)."""
    S = np.eye(k) - 1.0 / k
    return S / np.linalg.norm(S, axis=1, keepdims=True)


def _normalise(Z: np.ndarray) -> np.ndarray:
    return Z / np.linalg.norm(Z, axis=1, keepdims=True)


def _fit(
    objective: str,
    X: np.ndarray,
    labels: np.ndarray,
    *,
    loss_kwargs: dict[str, float],
    out_dim: int,
    hidden: tuple[int, ...],
    steps: int,
    lr: float,
    seed: int,
    device: str,
    progress: bool | None,
) -> tuple[np.ndarray, Any]:
    seed_everything(seed)
    encoder = MLPEncoder(in_dim=int(np.prod(X.shape[1:])), out_dim=out_dim, hidden=hidden)
    loss_fn = make_loss(objective, **loss_kwargs)
    return _train_and_embed(encoder, loss_fn, X, labels, steps, lr, seed, device, progress)


def _train_and_embed(encoder, loss_fn, X, labels, steps, lr, seed, device, progress, desc=""):
    result = train(
        encoder,
        loss_fn,
        X,
        labels,
        steps=steps,
        lr=lr,
        seed=seed,
        device=device,
        progress=progress,
        desc=desc or getattr(loss_fn, "objective", "train"),
    )
    return embed(encoder, X), result


# --------------------------------------------------------------------------------------------
# supcon-imbalance

_SUPCON_CONFIG = {
    True: {"steps": 1000, "hidden": (256, 256), "lr": 1e-3},
    False: {"steps": 6000, "hidden": (512, 512, 512), "lr": 5e-4},
}


def supcon_imbalance(
    *,
    quick: bool = True,
    seed: int = 0,
    device: str = "auto",
    progress: bool | None = None,
    tau: float = 0.5,
    eps: float = 0.25,
    ratio: float = 10.0,
    dim: int = 32,
) -> Experiment:
    """SupCon and Soft SupCon on imbalanced digits against :func:`dgp.supcon_prototypes`.

    Parameters
    ----------
    quick : bool
        Small network, 1000 full-batch steps (about a minute on 2 CPU cores); else a bigger
        network and 6000 steps (meant for a GPU).
    seed : int
        Seeds the subsampling and the training.
    device : {"auto", "cpu", "cuda"}
    progress : bool, optional
        Progress bars (default: when stderr is a terminal).
    tau, eps, ratio, dim : float, float, float, int
        Temperature, Soft SupCon's cross-class weight, largest/smallest class size, embedding
        dimension.

    Returns
    -------
    Experiment

    Raises
    ------
    TypeError, ValueError
        If an argument is invalid.
    """
    from dgp import supcon_prototypes

    dev = resolve_device(device)
    cfg = _SUPCON_CONFIG[bool(quick)]
    X, y, sizes = data.imbalanced_digits(classes=10, ratio=ratio, seed=seed)
    K = len(sizes)
    simplex = regular_simplex(K)
    runs: list[dict[str, Any]] = []
    artifacts: list[RunArtifacts] = []
    for objective, obj_eps, W in (
        ("supcon", None, supcon_weights(y)),
        ("soft-supcon", eps, soft_supcon_weights(y, eps=eps)),
    ):
        t0 = time.perf_counter()
        pred = supcon_prototypes(sizes, tau=tau, eps=obj_eps)
        U = gram_embedding(pred.gram)
        kwargs: dict[str, float] = {"tau": tau} if obj_eps is None else {"tau": tau, "eps": eps}
        Z, result = _fit(
            objective,
            X,
            y,
            loss_kwargs=kwargs,
            out_dim=dim,
            hidden=cfg["hidden"],
            steps=cfg["steps"],
            lr=cfg["lr"],
            seed=seed,
            device=str(dev),
            progress=progress,
        )
        Zn = _normalise(Z)
        means = np.stack([Zn[y == c].mean(axis=0) for c in range(K)])
        collapse = float(np.linalg.norm(means, axis=1).min())  # 1 iff every class collapsed
        P = _normalise(means)
        bound = entropic_bound(W)
        runs.append(
            {
                "objective": objective,
                "procrustes_r2": procrustes_r2(P, U),
                "similarity_r2": similarity_r2(P, U),
                "entropic_gap": entropic_gap(Z, W, tau=tau),
                "simplex_procrustes_r2": procrustes_r2(P, simplex),
                "gram_max_abs_error": float(np.abs(P @ P.T - pred.gram).max()),
                "predicted_simplex_procrustes_r2": procrustes_r2(U, simplex),
                "predicted_entropic_gap": float(pred.loss) - bound,
                "loss": winfonce_loss(Z, W, tau=tau),
                "predicted_loss": float(pred.loss),
                "prediction_method": pred.method,
                "kkt_residual": pred.kkt_residual,
                "class_collapse": collapse,
                "tau": tau,
                "eps": obj_eps,
                "steps": result.steps,
                "train_seconds": result.seconds,
                "seconds": time.perf_counter() - t0,
                "learned_gram": P @ P.T,
                "predicted_gram": pred.gram,
            }
        )
        artifacts.append(RunArtifacts(objective, P, U, "cosine", np.arange(K), list(result.losses)))
    report = {
        "experiment": "supcon-imbalance",
        "device": str(dev),
        "quick": bool(quick),
        "seed": seed,
        "config": {
            "data": "sklearn digits, imbalanced",
            "sizes": sizes.tolist(),
            "n": int(sizes.sum()),
            "tau": tau,
            "eps": eps,
            "dim": dim,
            "batch": "full",
            "encoder": f"MLP 64-{'-'.join(map(str, cfg['hidden']))}-{dim}",
            "steps": cfg["steps"],
            "lr": cfg["lr"],
        },
        "runs": runs,
    }
    return Experiment(report, artifacts)


# --------------------------------------------------------------------------------------------
# continuous-labels

_CONTINUOUS_CONFIG = {
    True: {"grid": 8, "steps": 1500, "hidden": (256, 256), "lr": 1e-3},
    # same 8 x 8 grid: the convex program behind the y-Aware prediction takes minutes at N = 100
    False: {"grid": 8, "steps": 8000, "hidden": (512, 512, 512), "lr": 5e-4},
}


def _cosine_prediction(W: np.ndarray, *, tau: float, dim: int) -> tuple[np.ndarray, dict]:
    """Target embedding from dgp.classify when realizable, else the true minimiser."""
    from dgp import classify

    verdict = classify(W, similarity="cosine", tau=tau, dim=dim)
    info: dict[str, Any] = {"verdict": verdict.verdict, "reason": verdict.reason}
    if verdict.verdict == "realizable" and verdict.embedding is not None:
        info["prediction"] = "classify"
        return np.asarray(verdict.embedding, dtype=float), info
    from dgp.optimum import optimum

    opt = optimum(W, tau=tau)
    U = gram_embedding(opt.gram)
    info["prediction"] = "optimum"
    info["optimum_rank"] = int(opt.rank)
    info["optimum_duality_gap"] = float(opt.duality_gap)
    return U, info


def free_optimum_gram(W: np.ndarray, *, tau: float, seed: int = 0) -> np.ndarray:
    """Minimiser of the cosine w-InfoNCE over all Gram matrices (``G >= 0``, ``diag G = 1``).

    The loss is convex in ``G``; factorising ``G = V V^T`` with ``V`` of full width ``N`` (rows
    normalised) loses no minimiser, and with that width every second-order critical point is
    global (Burer–Monteiro). Solved in float64 with L-BFGS; used when :mod:`dgp.optimum` is not
    available.
    """
    from dgp.torch.losses import winfonce

    n = W.shape[0]
    Wt = torch.as_tensor(W, dtype=torch.float64)
    gen = torch.Generator().manual_seed(seed)
    V = torch.randn(n, n, dtype=torch.float64, generator=gen).requires_grad_(True)
    opt = torch.optim.LBFGS(
        [V],
        max_iter=5000,
        tolerance_grad=1e-11,
        tolerance_change=1e-15,
        history_size=50,
        line_search_fn="strong_wolfe",
    )

    def closure():
        opt.zero_grad()
        value = winfonce(V, Wt, tau=tau)
        value.backward()
        return value

    opt.step(closure)
    U = torch.nn.functional.normalize(V.detach(), dim=1).numpy()
    return U @ U.T


def continuous_labels(
    *,
    quick: bool = True,
    seed: int = 0,
    device: str = "auto",
    progress: bool | None = None,
    tau: float = 0.1,
    sigma: float = 0.5,
    label_tau: float = 0.1,
    dim: int = 8,
) -> Experiment:
    """Euclidean–Euclidean, y-Aware and X-CLR on blob images against their predicted optima.

    Parameters
    ----------
    quick : bool
        Small network and 1500 full-batch steps; else a bigger network and 8000 steps (meant for
        a GPU). Both use an ``8 x 8`` label grid (``N = 64``).
    seed : int
    device : {"auto", "cpu", "cuda"}
    progress : bool, optional
    tau, sigma, label_tau, dim : float, float, float, int
        Temperature, Gaussian kernel width (y-Aware, Euclid–Euclid), X-CLR label temperature,
        embedding dimension.

    Returns
    -------
    Experiment

    Raises
    ------
    TypeError, ValueError
        If an argument is invalid.
    """
    from dgp import classify

    dev = resolve_device(device)
    cfg = _CONTINUOUS_CONFIG[bool(quick)]
    X, y = data.blob_images(grid=cfg["grid"], copies=1, size=16, seed=seed)
    y_xclr = np.hstack([y, np.ones((y.shape[0], 1))])
    specs: list[tuple[str, str, np.ndarray, np.ndarray, dict[str, float]]] = [
        (
            "euclid-euclid",
            "euclidean",
            y,
            gaussian_kernel_weights(y, sigma=sigma),
            {"tau": tau, "sigma": sigma},
        ),
        (
            "y-aware",
            "cosine",
            y,
            gaussian_kernel_weights(y, sigma=sigma),
            {"tau": tau, "sigma": sigma},
        ),
        (
            "x-clr",
            "cosine",
            y_xclr,
            xclr_weights(y_xclr, label_tau=label_tau),
            {"tau": tau, "label_tau": label_tau},
        ),
    ]
    runs: list[dict[str, Any]] = []
    artifacts: list[RunArtifacts] = []
    for objective, sim, labels, W, kwargs in specs:
        t0 = time.perf_counter()
        if objective == "euclid-euclid":
            U = (np.sqrt(tau) / sigma) * y
            verdict = classify(W, similarity="euclidean", tau=tau, dim=dim)
            info: dict[str, Any] = {
                "verdict": verdict.verdict,
                "reason": verdict.reason,
                "prediction": "closed-form z = (sqrt(tau)/sigma) y",
            }
            if verdict.embedding is not None:
                info["closed_form_vs_classify_r2"] = procrustes_r2(verdict.embedding, U)
        else:
            U, info = _cosine_prediction(W, tau=tau, dim=dim)
        Z, result = _fit(
            objective,
            X,
            labels,
            loss_kwargs=kwargs,
            out_dim=dim,
            hidden=cfg["hidden"],
            steps=cfg["steps"],
            lr=cfg["lr"],
            seed=seed,
            device=str(dev),
            progress=progress,
        )
        Zc = _normalise(Z) if sim == "cosine" else Z
        bound = entropic_bound(W)
        runs.append(
            {
                "objective": objective,
                "procrustes_r2": procrustes_r2(Zc, U),
                "similarity_r2": similarity_r2(Zc, U, similarity=sim),
                "entropic_gap": entropic_gap(Z, W, tau=tau, similarity=sim),
                "predicted_entropic_gap": winfonce_loss(U, W, tau=tau, similarity=sim) - bound,
                "label_procrustes_r2": procrustes_r2(Zc, y) if sim == "euclidean" else None,
                "similarity": sim,
                **info,
                **kwargs,
                "dim": dim,
                "steps": result.steps,
                "train_seconds": result.seconds,
                "seconds": time.perf_counter() - t0,
            }
        )
        artifacts.append(RunArtifacts(objective, Zc, U, sim, y, list(result.losses)))
    report = {
        "experiment": "continuous-labels",
        "device": str(dev),
        "quick": bool(quick),
        "seed": seed,
        "config": {
            "data": f"16x16 blob images, 2-D position on a {cfg['grid']}^2 grid in [-1, 1]^2",
            "n": int(y.shape[0]),
            "tau": tau,
            "sigma": sigma,
            "label_tau": label_tau,
            "dim": dim,
            "batch": "full",
            "encoder": f"MLP 256-{'-'.join(map(str, cfg['hidden']))}-{dim}",
            "steps": cfg["steps"],
            "lr": cfg["lr"],
        },
        "runs": runs,
    }
    return Experiment(report, artifacts)


EXPERIMENTS: dict[str, Callable[..., Experiment]] = {
    "supcon-imbalance": supcon_imbalance,
    "continuous-labels": continuous_labels,
}


def run_experiment(
    name: str,
    *,
    quick: bool = True,
    seed: int = 0,
    device: str = "auto",
    progress: bool | None = None,
) -> Experiment:
    """Run a named experiment (``supcon-imbalance`` or ``continuous-labels``).

    Torch's CPU threads are set to ``$DGP_TORCH_THREADS`` (default 1) for the duration.

    Raises
    ------
    ValueError
        If ``name`` is unknown or an argument is invalid.
    """
    check_choice(name, tuple(EXPERIMENTS), "experiment")
    with cpu_threads():  # small matrices: one thread, no contention (see cpu_threads)
        return EXPERIMENTS[name](quick=quick, seed=seed, device=device, progress=progress)
