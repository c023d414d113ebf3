"""``supcon-imbalance``: SupCon on balanced and imbalanced classes against the simplex."""


from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from dgp.torch.experiments._class_run import add_class_run, class_run, class_trials
from dgp.torch.experiments.base import Experiment, RunOptions, report_config
from dgp.torch.experiments.scoring import (
    describe_prediction,
    gram_rms,
    group_cosine,
    simplex_gram,
    supcon_prediction,
)
from dgp.torch.experiments.statistics import decide, holm

if TYPE_CHECKING:
    from typing_extensions import Unpack

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
    "final_loss",
    "loss_excess",
)

#: the temperature people train SupCon at, beside the experiment's own
PRACTICAL_TAU = 0.1


def minority_stats(G: np.ndarray, sizes: np.ndarray) -> tuple[float, float]:
    order = np.argsort(sizes, kind="stable")
    g = max(2, min(3, sizes.size // 3))
    return group_cosine(G, order[:g]), group_cosine(G, order[-g:])


def supcon_imbalance(
    *, tau: float = 0.5, ratio: float = 10.0, **run: Unpack[RunOptions]
) -> Experiment:
    """SupCon on balanced and tenfold-imbalanced classes against :func:`dgp.supcon_prototypes`.

    Conditions: ``balanced`` (images; the prediction is the simplex), ``imbalanced`` (images at
    ``tau``), ``imbalanced tau=0.1`` (images at the temperature people train with) and
    ``imbalanced-noise`` (the same labels on Gaussian noise inputs: the control). Each
    imbalanced condition compares the prediction with the simplex
    (:func:`~dgp.torch.experiments.statistics.decide`): decided on held-out images over all
    seeds against a label-permutation null, and called ``uninformative`` when the loss cannot
    tell the two geometries apart. The control must come out undecided or against the
    prediction (``supports.control.falsifiable``).

    ``run``: the options of every experiment (:class:`~dgp.torch.experiments.base.RunOptions`).

    Raises
    ------
    ValueError
        If the data have no class labels or classes too small for the split.
    """
    trials, src, split = class_trials("supcon-imbalance", ratio=ratio, **run)
    budget = trials.budget
    K = split.imbalanced.size
    S = simplex_gram(K)
    taus = {"balanced": tau, "imbalanced": tau, "imbalanced tau=0.1": PRACTICAL_TAU,
            "imbalanced-noise": tau}
    if tau == PRACTICAL_TAU:
        del taus["imbalanced tau=0.1"]
    conditions = [
        (c, split.balanced if c == "balanced" else split.imbalanced,
         "noise" if c.endswith("noise") else "images", taus[c])
        for c in taus
    ]
    preds = {
        (tuple(sz.tolist()), t): supcon_prediction(sz, tau=t, eps=None,
                                                   batch_size=budget.batch_size)
        for _, sz, _, t in conditions
    }
    trials.expect(len(conditions))
    for cond, sizes, inputs, t in conditions:
        pred = preds[(tuple(sizes.tolist()), t)]
        alternatives = {} if cond == "balanced" else {"simplex": S}
        for s in trials.seeds:
            rec = class_run(
                src, sizes=sizes, test=split.test, inputs=inputs, tau=t, pred=pred,
                alternatives=alternatives, budget=budget, seed=s, device=trials.device,
                progress=trials.progress, cache=trials.cache, desc=f"{cond} seed {s}",
            )
            lmin, lmaj = minority_stats(rec["learned_gram"], sizes)
            pmin, pmaj = minority_stats(pred.gram, sizes)
            tmin, tmaj = minority_stats(rec["heldout_gram"], sizes)
            add_class_run(
                trials,
                {
                    "objective": "supcon",
                    "condition": cond,
                    "inputs": inputs,
                    "seed": s,
                    "sizes": sizes.tolist(),
                    "tau": t,
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
                },
                pred=pred, sizes=sizes, seed=s,
            )
    G_imb = preds[(tuple(split.imbalanced.tolist()), tau)].gram
    pmin, pmaj = minority_stats(G_imb, split.imbalanced)
    return trials.finish(
        keys=_IMB_KEYS,
        config=report_config(src.name, src.X, budget,
                             sizes_imbalanced=split.imbalanced.tolist(),
                             sizes_balanced=split.balanced.tolist(), heldout_per_class=split.test,
                             tau=tau, taus={c: t for c, _, _, t in conditions}),
        supports=_supcon_imbalance_verdict(trials.runs, G_imb, S, pmin - pmaj),
    )

_NAMES = ("imbalance prediction", "simplex")


def _supcon_imbalance_verdict(
    runs: list[dict], G_imb: np.ndarray, S: np.ndarray, predicted_mm: float
) -> dict[str, Any]:
    by: dict[str, list[dict]] = {}
    for r in runs:
        by.setdefault(r["condition"], []).append(r)
    comparisons = holm([
        {"condition": c, "tau": group[0]["tau"], **decide(group, "simplex", _NAMES)}
        for c, group in by.items() if c.startswith("imbalanced") and not c.endswith("noise")
    ])
    main = next(c for c in comparisons if c["condition"] == "imbalanced")
    control = decide(by["imbalanced-noise"], "simplex", _NAMES)
    mm = [r["heldout_minority_minus_majority"] for r in by["imbalanced"]]
    return {
        "criterion": (
            "per imbalanced condition: distance of the held-out prototype Gram to the simplex "
            "minus that to the prediction, each up to a common pull of the cosines towards 1, "
            "minus its mean over label permutations, over all seeds (Student t, 95%, Holm "
            "over the conditions); 'neither' where the prediction stays further from the "
            "held-out Gram than 3 times its noise ceiling; 'uninformative' where the "
            "simplex's expected batch loss differs from the prediction's by less than what "
            "training resolves; 'against' where the loss prefers the simplex or the runs beat "
            "the prediction's loss"
        ),
        "prediction_vs_simplex_rms": gram_rms(G_imb, S),
        "identifiability": main["identifiability"],
        "heldout": main["heldout"],
        "train": main["train"],
        "comparisons": comparisons,
        "control": {
            "condition": "imbalanced-noise",
            "inputs": "Gaussian noise with the imbalanced labels: nothing can carry over",
            **control,
            "falsifiable": control["heldout"]["supports"] != _NAMES[0],
        },
        "minority_closer": {
            "predicted": bool(predicted_mm > 0),
            "heldout_all_seeds": bool(mm) and all(v > 0 for v in mm),
        },
        "supports": main["supports"],
    }
