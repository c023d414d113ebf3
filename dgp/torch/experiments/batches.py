"""``batch-size``: imbalanced SupCon at several batch sizes, full-batch vs expected-batch
prediction."""


from __future__ import annotations

from collections.abc import Sequence
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
# 2. batch-size

BATCH_SIZES = (16, 32, 64, 256)
_BATCH_KEYS = ("batch_rms_error", "full_rms_error", "gram_rms_error", "loss_excess")


def steps_for_batch(budget: Budget, B: int) -> int:
    """Steps at batch size ``B``: the budget's steps scaled by ``budget.batch_size / B``, at most
    by 1.5 (small, noisy batches) and at least 300 (large batches see most of the set each
    step).

    >>> from dgp.torch.experiments.base import QUICK
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

    budget = budget_for(quick)
    dev = resolve_device(device)
    src = class_source(quick, data)
    split = class_split(src.y, budget, ratio)
    sizes = split.imbalanced
    K, N = sizes.size, int(sizes.sum())
    bad = [b for b in batch_sizes if not 2 <= int(b) <= N]
    if bad:
        raise ValueError(f"batch_sizes must lie in [2, {N}] (the training set), got {bad}")
    full = supcon_prototypes(sizes, tau=tau)
    seeds = seeds_for(seed, budget)
    runs: list[dict[str, Any]] = []
    arts: list[RunArtifacts] = []
    per_b: list[dict[str, Any]] = []
    bar = progress_bar(len(batch_sizes) * len(seeds), desc="batch-size", enabled=progress)
    for B in batch_sizes:
        pred = supcon_prediction(sizes, tau=tau, eps=None, batch_size=int(B))
        for s in seeds:
            tr, te = datasets.split_by_class(src.y, sizes=sizes, test=split.test, seed=s)
            y = src.y[tr]
            loss_fn = SupConLoss(tau=tau, empty_rows="skip")
            run = train_run(
                src.X[tr], y, src.X[te], loss_fn, budget=budget, seed=s, device=dev,
                progress=progress, desc=f"B={B} seed {s}", batch_size=int(B),
                steps=steps_for_batch(budget, int(B)),
            )
            rec = score_prototypes(
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
                    "batch_rms_error": gram_rms(G, pred.gram),
                    "full_rms_error": gram_rms(G, full.gram),
                    "predicted_gram": pred.gram,
                    "prediction": describe_prediction(pred, int(B)),
                }
            )
            if s == seeds[0]:
                arts.append(RunArtifacts("batch-size", f"B={B}", G, pred.gram, "gram", sizes))
            if bar is not None:
                bar.update(1)
        conv = [r for r in runs if r["batch_size"] == B and r["converged"]]
        v = paired_verdict(
            [r["batch_rms_error"] for r in conv],
            [r["full_rms_error"] for r in conv],
            ("expected-batch", "full-batch"),
        )
        gap = gram_rms(pred.gram, full.gram)
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
    return build_experiment(
        "batch-size", dev=dev, quick=quick, seeds=seeds, runs=runs, keys=_BATCH_KEYS,
        arts=arts,
        config={
            "data": src.name,
            "sizes": sizes.tolist(),
            "tau": tau,
            "batch_sizes": [int(b) for b in batch_sizes],
            "sampler": "uniform, without replacement",
            "encoder": encoder_name(src.X, budget),
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


