"""``supcon-imbalance``: SupCon on balanced and imbalanced classes against the simplex."""


from __future__ import annotations

from typing import Any

import numpy as np

from dgp.torch._compat import require_torch
from dgp.weights import supcon_weights

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
    class_source,
    class_split,
    encoder_name,
    seeds_for,
    train_run,
)
from dgp.torch.experiments.scoring import (  # noqa: E402
    describe_prediction,
    gram_rms,
    group_cosine,
    regular_simplex,
    score_prototypes,
    supcon_prediction,
)
from dgp.torch.experiments.statistics import (  # noqa: E402
    paired_verdict,
)
from dgp.torch.losses import (  # noqa: E402
    SupConLoss,
)
from dgp.torch.training import (  # noqa: E402
    progress_bar,
    resolve_device,
)

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


def class_run(
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
        run = TrainedRun(None, flat.astype(float), flat_t.astype(float), 0.0, 0, float("nan"))
    else:
        key = ("supcon", src.name, tuple(sizes.tolist()), inputs, tau, seed, budget)
        run = cached_run(
            cache, key, lambda: train_run(
                X, y, X_test, loss_fn, budget=budget, seed=seed, device=device,
                progress=progress, desc=desc, trained=inputs != "untrained",
            )
        )
    rec = score_prototypes(
        run, y=y, y_test=y_test, K=sizes.size, G_pred=pred.gram, W=supcon_weights(y), tau=tau,
        loss_fn=loss_fn, budget=budget, batch_size=budget.batch_size, seed=seed,
        trained=inputs in ("images", "noise"),
    )
    return rec, y


def minority_stats(G: np.ndarray, sizes: np.ndarray) -> tuple[float, float]:
    order = np.argsort(sizes, kind="stable")
    g = max(2, min(3, sizes.size // 3))
    return group_cosine(G, order[:g]), group_cosine(G, order[-g:])


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
    budget = budget_for(quick)
    dev = resolve_device(device)
    src = class_source(quick, data)
    split = class_split(src.y, budget, ratio)
    K = split.imbalanced.size
    runs: list[dict[str, Any]] = []
    arts: list[RunArtifacts] = []
    preds = {
        c: supcon_prediction(sz, tau=tau, eps=None, batch_size=budget.batch_size)
        for c, sz in (("balanced", split.balanced), ("imbalanced", split.imbalanced))
    }
    conditions = (
        ("balanced", split.balanced, "images"),
        ("imbalanced", split.imbalanced, "images"),
        ("imbalanced-noise", split.imbalanced, "noise"),
    )
    seeds = seeds_for(seed, budget)
    bar = progress_bar(len(conditions) * len(seeds), desc="supcon-imbalance", enabled=progress)
    for cond, sizes, inputs in conditions:
        pred = preds["balanced" if cond == "balanced" else "imbalanced"]
        for s in seeds:
            rec, _ = class_run(
                src, sizes=sizes, test=split.test, inputs=inputs, tau=tau, pred=pred,
                budget=budget, seed=s, device=dev, progress=progress, cache=cache,
                desc=f"{cond} seed {s}",
            )
            lmin, lmaj = minority_stats(rec["learned_gram"], sizes)
            pmin, pmaj = minority_stats(pred.gram, sizes)
            tmin, tmaj = minority_stats(rec["heldout_gram"], sizes)
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
                    "prediction": describe_prediction(pred, budget.batch_size),
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
    pmin, pmaj = minority_stats(preds["imbalanced"].gram, split.imbalanced)
    supports = _supcon_imbalance_verdict(runs, preds["imbalanced"].gram, K, pmin - pmaj)
    return build_experiment(
        "supcon-imbalance", dev=dev, quick=quick, seeds=seeds, runs=runs, keys=_IMB_KEYS,
        arts=arts,
        config={
            "data": src.name,
            "sizes_imbalanced": split.imbalanced.tolist(),
            "sizes_balanced": split.balanced.tolist(),
            "heldout_per_class": split.test,
            "tau": tau,
            "encoder": encoder_name(src.X, budget),
            "budget": budget.to_dict(),
        },
        supports=supports,
    )


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
        "prediction_vs_simplex_rms": gram_rms(G_imb, S),
    }
    for where in ("", "heldout_"):
        v = paired_verdict(
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


