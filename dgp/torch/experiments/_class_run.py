"""The experiments on class-labelled data (``supcon-imbalance``, ``batch-size``,
``soft-supcon-tau`` and the SupCon half of ``controls``): their data and class split, and one
run scored against a prototype prediction."""


from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from dgp.torch import data as datasets
from dgp.torch.experiments.base import (
    Budget,
    ClassSplit,
    RunArtifacts,
    RunOptions,
    Trials,
    class_source,
    class_split,
    input_run,
)
from dgp.torch.experiments.scoring import score_prototypes
from dgp.torch.losses import SoftSupConLoss, SupConLoss
from dgp.weights import soft_supcon_weights, supcon_weights

if TYPE_CHECKING:
    from typing_extensions import Unpack


def class_trials(
    name: str, *, ratio: float = 10.0, **run: Unpack[RunOptions]
) -> tuple[Trials, datasets.Dataset, ClassSplit]:
    """The trials of the class experiment ``name`` (:meth:`Trials.start
    <dgp.torch.experiments.base.Trials.start>`), its class-labelled data
    (:func:`~dgp.torch.experiments.base.class_source`) and their split into imbalanced (largest
    over smallest class ``ratio``) and balanced training sizes
    (:func:`~dgp.torch.experiments.base.class_split`)."""
    trials = Trials.start(name, **run)
    src = class_source(trials.budget, trials.data)
    return trials, src, class_split(src.y, trials.budget, ratio)


def add_class_run(trials: Trials, record: dict[str, Any], *, pred: Any, sizes: np.ndarray,
                  seed: int) -> None:
    """Record a run of ``seed`` (:meth:`Trials.add <dgp.torch.experiments.base.Trials.add>`)
    with its figure panel: the learned prototype Gram of ``record`` (a :func:`class_run`'s
    ``learned_gram``) beside the prediction ``pred``'s, under the record's condition."""
    trials.add(record, RunArtifacts(trials.name, record["condition"], record["learned_gram"],
                                    pred.gram, "gram", sizes), seed=seed)


def class_run(
    src: datasets.Dataset,
    *,
    sizes: np.ndarray,
    test: int,
    tau: float,
    pred: Any,
    alternatives: dict[str, np.ndarray],
    budget: Budget,
    seed: int,
    device: Any,
    progress: bool | None,
    desc: str,
    inputs: str = "images",
    eps: float | None = None,
    batch_size: int | None = None,
    steps: int | None = None,
    cache: dict | None = None,
) -> dict[str, Any]:
    """One SupCon run (Soft SupCon with ``eps``) on ``inputs`` (one of
    :data:`~dgp.torch.experiments.base.INPUTS`), trained on ``sizes`` images per class of the
    split of ``seed`` (``test`` held out per class) in batches of ``batch_size`` for ``steps``
    (the budget's when None), its prototypes scored against ``pred`` and ``alternatives``
    (:func:`~dgp.torch.experiments.scoring.score_prototypes`). Runs are shared through
    ``cache`` by what they depend on."""
    tr, te = datasets.split_by_class(src.y, sizes=sizes, test=test, seed=seed)
    y, y_test = src.y[tr], src.y[te]
    if eps is None:
        loss_fn: Any = SupConLoss(tau=tau, empty_rows="skip")
        W = supcon_weights(y)
    else:
        loss_fn = SoftSupConLoss(tau=tau, eps=eps)
        W = soft_supcon_weights(y, eps=eps)
    key = ("class", src.name, tuple(sizes.tolist()), tau, eps, batch_size, steps, seed, budget)
    run = input_run(
        src.X[tr], y, src.X[te], loss_fn, inputs=inputs, cache=cache, key=key, budget=budget,
        seed=seed, device=device, progress=progress, desc=desc, batch_size=batch_size,
        steps=steps,
    )
    return score_prototypes(
        run, y=y, y_test=y_test, K=sizes.size, G_pred=pred.gram, alternatives=alternatives,
        W=W, tau=tau, loss_fn=loss_fn, budget=budget,
        batch_size=batch_size or budget.batch_size, seed=seed,
        trained=inputs in ("images", "noise"),
    )
