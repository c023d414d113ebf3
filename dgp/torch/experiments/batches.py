"""``batch-size``: imbalanced SupCon at several batch sizes, full-batch vs expected-batch
prediction."""


from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dgp.errors import InputError
from dgp.torch.experiments._class_run import add_class_run, class_run, class_trials
from dgp.torch.experiments.base import Budget, Experiment, RunOptions, report_config
from dgp.torch.experiments.scoring import describe_prediction, gram_rms, supcon_prediction
from dgp.torch.experiments.statistics import decide, holm

if TYPE_CHECKING:
    from typing_extensions import Unpack

# ----------------------------------------------------------------------------------------------
# 2. batch-size

BATCH_SIZES = (16, 32, 64, 256)
_BATCH_KEYS = (
    "batch_rms_error", "full_rms_error", "heldout_batch_rms_error", "heldout_full_rms_error",
    "final_loss", "loss_excess",
)


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
    tau: float = 0.5,
    ratio: float = 10.0,
    batch_sizes: Sequence[int] = BATCH_SIZES,
    **run: Unpack[RunOptions],
) -> Experiment:
    """Imbalanced SupCon trained at several batch sizes, against the full-batch prediction and
    the expected-batch prediction for uniform batches of that size.

    For each ``B`` the prediction (expected batch) is compared with the alternative (full
    batch) by :func:`~dgp.torch.experiments.statistics.decide`: held-out prototype Grams over
    all seeds against a label-permutation null; ``uninformative`` where the full-batch
    prediction's expected batch loss is within what training resolves of the expected-batch
    one (at large ``B`` the two coincide).

    ``run``: the options of every experiment (:class:`~dgp.torch.experiments.base.RunOptions`).

    Raises
    ------
    ValueError
        If the data have no class labels, or a batch size exceeds the training set.
    """
    from dgp.prototypes import supcon_prototypes

    trials, src, split = class_trials("batch-size", ratio=ratio, **run)
    budget = trials.budget
    sizes = split.imbalanced
    N = int(sizes.sum())
    bad = [b for b in batch_sizes if not 2 <= int(b) <= N]
    if bad:
        raise InputError(f"batch_sizes must lie in [2, {N}] (the training set), got {bad}")
    full = supcon_prototypes(sizes, tau=tau)
    per_b: list[dict[str, Any]] = []
    trials.expect(len(batch_sizes))
    for B in batch_sizes:
        pred = supcon_prediction(sizes, tau=tau, eps=None, batch_size=int(B))
        group = []
        for s in trials.seeds:
            rec = class_run(
                src, sizes=sizes, test=split.test, tau=tau, pred=pred,
                alternatives={"full_batch": full.gram}, budget=budget, seed=s,
                device=trials.device, progress=trials.progress, desc=f"B={B} seed {s}",
                batch_size=int(B), steps=steps_for_batch(budget, int(B)),
            )
            G = rec["learned_gram"]
            group.append(
                {
                    "objective": "supcon",
                    "condition": f"B={B}",
                    "seed": s,
                    "batch_size": int(B),
                    "tau": tau,
                    **rec,
                    "batch_rms_error": gram_rms(G, pred.gram),
                    "full_rms_error": gram_rms(G, full.gram),
                    "heldout_batch_rms_error": gram_rms(rec["heldout_gram"], pred.gram),
                    "heldout_full_rms_error": gram_rms(rec["heldout_gram"], full.gram),
                    "predicted_gram": pred.gram,
                    "prediction": describe_prediction(pred, int(B)),
                }
            )
            add_class_run(trials, group[-1], pred=pred, sizes=sizes, seed=s)
        v = decide(group, "full_batch", ("expected-batch", "full-batch"))
        per_b.append({"batch_size": int(B), "predictions_rms": gram_rms(pred.gram, full.gram),
                      **v})
    per_b = holm(per_b)
    decided = {d["supports"] for d in per_b} - {"undecided", "uninformative", "neither"}
    return trials.finish(
        keys=_BATCH_KEYS,
        config=report_config(src.name, src.X, budget, sizes=sizes.tolist(), tau=tau,
                             batch_sizes=[int(b) for b in batch_sizes],
                             sampler="uniform, without replacement"),
        supports={
            "criterion": (
                "per batch size: distance of the held-out prototype Gram to the full-batch "
                "prediction minus that to the expected-batch prediction, each up to a common "
                "pull of the cosines towards 1, minus its mean over label permutations, over "
                "all seeds (Student t, 95%, Holm over the batch sizes); 'uninformative' where "
                "the two predictions' expected batch losses differ by less than what training "
                "resolves"
            ),
            "per_batch_size": per_b,
            "heldout": {f"B={d['batch_size']}": d["heldout"]["all_runs"]["supports"]
                        for d in per_b},
            "supports": decided.pop() if len(decided) == 1 else (
                "mixed" if decided else "undecided"
            ),
        },
    )
