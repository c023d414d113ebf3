"""``soft-supcon-tau``: Soft SupCon across its critical temperature."""


from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dgp.torch._compat import require_torch
from dgp.weights import soft_supcon_weights

torch = require_torch()

from dgp.torch import data as datasets  # noqa: E402
from dgp.torch.experiments.base import (  # noqa: E402
    Experiment,
    RunArtifacts,
    budget_for,
    build_experiment,
    class_source,
    class_split,
    encoder_name,
    seeds_for,
    train_run,
)
from dgp.torch.experiments.scoring import (  # noqa: E402
    describe_prediction,
    gram_rms,
    off_diagonal,
    regular_simplex,
    score_prototypes,
    supcon_prediction,
)
from dgp.torch.experiments.statistics import (  # noqa: E402
    paired_verdict,
)
from dgp.torch.losses import (  # noqa: E402
    SoftSupConLoss,
)
from dgp.torch.training import (  # noqa: E402
    progress_bar,
    resolve_device,
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

    budget = budget_for(quick)
    dev = resolve_device(device)
    src = class_source(quick, data)
    split = class_split(src.y, budget, ratio)
    sizes = split.imbalanced
    K = sizes.size
    tau_star = soft_supcon_tau_star(K=K, eps=eps)
    S = regular_simplex(K) @ regular_simplex(K).T
    seeds = seeds_for(seed, budget)
    runs: list[dict[str, Any]] = []
    arts: list[RunArtifacts] = []
    per_tau: list[dict[str, Any]] = []
    bar = progress_bar(len(multiples) * len(seeds), desc="soft-supcon-tau", enabled=progress)
    for mult in multiples:
        tau = float(mult) * tau_star
        pred = supcon_prediction(sizes, tau=tau, eps=eps, batch_size=budget.batch_size)
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
            run = train_run(
                src.X[tr], y, src.X[te], loss_fn, budget=budget, seed=s, device=dev,
                progress=progress, desc=f"{cond} seed {s}",
            )
            rec = score_prototypes(
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
                    "mean_cosine": float(off_diagonal(G).mean()),
                    "cosine_spread": float(off_diagonal(G).std()),
                    "predicted_mean_cosine": float(off_diagonal(pred.gram).mean()),
                    "predicted_cosine_spread": float(off_diagonal(pred.gram).std()),
                    "alternative_rms_error": gram_rms(G, alt),
                    "predicted_gram": pred.gram,
                    "prediction": describe_prediction(pred, budget.batch_size),
                }
            )
            if s == seeds[0]:
                arts.append(RunArtifacts("soft-supcon-tau", cond, G, pred.gram, "gram", sizes))
            if bar is not None:
                bar.update(1)
        conv = [r for r in runs if r["condition"] == cond and r["converged"]]
        v = paired_verdict(
            [r["gram_rms_error"] for r in conv],
            [r["alternative_rms_error"] for r in conv],
            ("prediction", "alternative"),
        )
        per_tau.append(
            {
                "tau_over_tau_star": float(mult),
                "tau": tau,
                "prediction": pred.method,
                "predicted_mean_cosine": float(off_diagonal(pred.gram).mean()),
                "alternative_mean_cosine": float(alt_rho),
                "predictions_rms": gram_rms(pred.gram, alt),
                **v,
            }
        )
    if bar is not None:
        bar.close()
    wins = [d["supports"] for d in per_tau]
    return build_experiment(
        "soft-supcon-tau", dev=dev, quick=quick, seeds=seeds, runs=runs, keys=_SOFT_KEYS,
        arts=arts,
        config={
            "data": src.name,
            "sizes": sizes.tolist(),
            "eps": eps,
            "tau_star": tau_star,
            "taus": [float(m) * tau_star for m in multiples],
            "encoder": encoder_name(src.X, budget),
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
            "simplex_gram_rms_at_tau_star": gram_rms(
                supcon_prediction(sizes, tau=tau_star, eps=eps, batch_size=None).gram, S
            ),
            "supports": "prediction" if all(w == "prediction" for w in wins) else (
                "mixed" if "prediction" in wins else "undecided"
            ),
        },
    )


