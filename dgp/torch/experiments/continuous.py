"""``continuous-labels``: y-Aware, Euclidean-Euclidean and X-CLR on continuous labels."""


from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dgp.metrics import entropic_gap, procrustes_r2, similarity_r2
from dgp.torch._compat import require_torch
from dgp.weights import gaussian_kernel_weights, xclr_weights

torch = require_torch()

from dgp.torch import data as datasets  # noqa: E402
from dgp.torch.experiments.base import (  # noqa: E402
    Budget,
    Experiment,
    RunArtifacts,
    TrainedRun,
    budget_for,
    build_experiment,
    cached_run,
    encoder_name,
    image_source,
    seeds_for,
    train_run,
)
from dgp.torch.experiments.scoring import (  # noqa: E402
    finite_or_none,
    loss_excess,
    unit_rows,
)
from dgp.torch.experiments.statistics import (  # noqa: E402
    paired_verdict,
)
from dgp.torch.losses import (  # noqa: E402
    EuclidEuclidLoss,
    WInfoNCELoss,
    XCLRLoss,
    YAwareLoss,
)
from dgp.torch.training import (  # noqa: E402
    progress_bar,
    resolve_device,
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
class ContinuousData:
    X: np.ndarray
    y: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    name: str


def continuous_data(
    quick: bool, data: datasets.Dataset | None, seed: int, n_train: int, n_test: int
) -> ContinuousData:
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
        src = image_source(quick, data)
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
    return ContinuousData(X[tr], y[tr], X[te], y[te], name)


def continuous_prediction(
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


def probes(
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


CONTINUOUS_OBJECTIVES: dict[
    str, tuple[str, Callable[..., WInfoNCELoss], Callable[..., np.ndarray]]
] = {
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


def continuous_conditions(tau: float) -> list[tuple[str, str, float, str, bool]]:
    """(condition, objective, label_tau, inputs, whether it trains on the smaller subset whose
    prediction needs :func:`dgp.optimum.optimum`)."""
    return [
        ("euclid-euclid", "euclid-euclid", tau, "images", False),
        ("y-aware", "y-aware", tau, "images", False),
        ("x-clr consistent", "x-clr", tau, "images", False),
        ("x-clr mismatched", "x-clr", tau / 2, "images", True),
        ("euclid-euclid noise", "euclid-euclid", tau, "noise", False),
    ]


def subset(cd: ContinuousData, n_train: int, n_test: int) -> ContinuousData:
    """The first samples of a (randomly ordered) split."""
    return ContinuousData(
        cd.X[:n_train], cd.y[:n_train], cd.X_test[:n_test], cd.y_test[:n_test], cd.name
    )


def continuous_run(
    cd: ContinuousData,
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
    sim, make_loss, make_w = CONTINUOUS_OBJECTIVES[objective]
    W = make_w(cd.y, sigma, label_tau)
    U, info = continuous_prediction(W, similarity=sim, tau=tau, dim=budget.dim)
    Ut, info_t = continuous_prediction(
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
        run = TrainedRun(None, flat.astype(float), flat_t.astype(float), 0.0, 0, float("nan"))
    else:
        run = cached_run(
            cache, key, lambda: train_run(
                X, cd.y, X_test, loss_fn, budget=budget, seed=seed, device=device,
                progress=progress, desc=f"{condition} seed {seed}", trained=inputs != "untrained",
                steps=budget.steps_continuous,
            )
        )
    Z = unit_rows(run.Z) if sim == "cosine" else run.Z
    Zt = unit_rows(run.Z_test) if sim == "cosine" else run.Z_test
    excess, se = loss_excess(
        run.Z, U, np.arange(cd.y.shape[0]), indexed_loss(loss_fn, W),
        batch_size=min(budget.batch_size, cd.y.shape[0]), batches=budget.mc_batches,
        seed=10_000 + seed,
    )
    probe, knn = probes(Z, cd.y, Zt, cd.y_test)
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
        "similarity_r2": finite_or_none(lambda: similarity_r2(Z, U, similarity=sim)),
        "label_procrustes_r2": procrustes_r2(Z, cd.y),
        "label_similarity_r2": finite_or_none(lambda: similarity_r2(Z, cd.y, similarity=sim)),
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


def indexed_loss(loss_fn: WInfoNCELoss, W: np.ndarray) -> WInfoNCELoss:
    """The same loss over the fixed training weighting, called with sample indices (so that
    :func:`loss_excess` scores batches exactly as the trainer formed them)."""
    return WInfoNCELoss(tau=loss_fn.tau, similarity=loss_fn.similarity, weights=W)


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
    budget = budget_for(quick)
    dev = resolve_device(device)
    n_train, n_test = (600, 300) if quick else (1500, 500)
    seeds = seeds_for(seed, budget)
    conds = continuous_conditions(tau)
    runs: list[dict[str, Any]] = []
    arts: list[RunArtifacts] = []
    bar = progress_bar(len(conds) * len(seeds), desc="continuous-labels", enabled=progress)
    name = ""
    for s in seeds:
        cd = continuous_data(quick, data, s, n_train, n_test)
        name = cd.name
        for cond, objective, label_tau, inputs, small in conds:
            rec, art = continuous_run(
                subset(cd, *OPTIMUM_SAMPLES[bool(quick)]) if small else cd,
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
    return build_experiment(
        "continuous-labels", dev=dev, quick=quick, seeds=seeds, runs=runs, keys=_CONT_KEYS,
        arts=arts,
        config={
            "data": name,
            "n_train": int(cd.y.shape[0]),
            "n_test": n_test,
            "tau": tau,
            "sigma": sigma,
            "label_tau": {"consistent": tau, "mismatched": tau / 2},
            "encoder": encoder_name(cd.X, budget),
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
            v = paired_verdict(
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


