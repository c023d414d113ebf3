"""``controls``: what the images add (noise inputs, untrained encoder, raw pixels)."""


from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dgp.objectives import registry
from dgp.torch.experiments._class_run import class_run
from dgp.torch.experiments.base import (
    INPUTS,
    Experiment,
    RunOptions,
    Trials,
    class_source,
    class_split,
)
from dgp.torch.experiments.continuous import (
    CONTINUOUS_SAMPLES,
    continuous_data,
    continuous_run,
)
from dgp.torch.experiments.scoring import simplex_gram, supcon_prediction
from dgp.torch.experiments.statistics import paired_verdict

if TYPE_CHECKING:
    from typing_extensions import Unpack

# ----------------------------------------------------------------------------------------------
# 5. controls

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
    tau_classes: float = 0.5,
    tau: float = 0.1,
    sigma: float = 0.5,
    **run: Unpack[RunOptions],
) -> Experiment:
    """What the images add: the trained image runs beside noise inputs, an untrained encoder and
    raw pixels, for imbalanced SupCon (prototypes against :func:`dgp.supcon_prototypes`) and for
    Euclidean–Euclidean on rotated digits (embedding against its target, held-out probes).

    Noise inputs are the free-point regime (an encoder can only memorise them, nothing carries
    over to held-out noise). The runs support "images" when the trained image runs beat every
    control on held-out data, paired over all seeds (Student t, 95%): for SupCon the held-out
    advantage of the prediction over the simplex beyond a label-permutation null, for
    Euclidean–Euclidean the held-out k-NN :math:`R^2` of the label. ``against`` when a control
    beats the images on that score, ``undecided`` when some comparison is undecided.

    ``run``: the options of every experiment (:class:`~dgp.torch.experiments.base.RunOptions`).

    Raises
    ------
    ValueError
        If the data fit neither setting.
    """
    trials = Trials.start("controls", **run)
    budget, data = trials.budget, trials.data
    with_classes = data is None or bool(data.classes)
    with_continuous = data is None or not data.classes or bool(data.images)
    settings = [s for s, on in (("supcon", with_classes), ("euclid-euclid", with_continuous))
                if on]
    trials.expect(len(settings) * len(INPUTS))
    config: dict[str, Any] = {"budget": budget.to_dict()}
    if with_classes:
        src = class_source(budget, data)
        split = class_split(src.y, budget)
        pred = supcon_prediction(
            split.imbalanced, tau=tau_classes, eps=None, batch_size=budget.batch_size
        )
        K = split.imbalanced.size
        S = simplex_gram(K)
        config["supcon"] = {
            "data": src.name, "sizes": split.imbalanced.tolist(), "tau": tau_classes
        }
        for inputs in INPUTS:
            for s in trials.seeds:
                rec = class_run(
                    src, sizes=split.imbalanced, test=split.test, inputs=inputs, tau=tau_classes,
                    pred=pred, alternatives={"simplex": S}, budget=budget, seed=s,
                    device=trials.device, progress=trials.progress, cache=trials.cache,
                    desc=f"supcon {inputs} seed {s}",
                )
                trials.add(
                    {"objective": "supcon", "condition": f"supcon {inputs}", "inputs": inputs,
                     "seed": s, "tau": tau_classes, **rec}, seed=s,
                )
    if with_continuous:
        n_train, n_test = CONTINUOUS_SAMPLES.get(budget.name, CONTINUOUS_SAMPLES["full"])
        for s in trials.seeds:
            cd = continuous_data(budget, data, s, n_train, n_test)
            config["euclid-euclid"] = {"data": cd.name, "tau": tau, "sigma": sigma}
            for inputs in INPUTS:
                rec, art = continuous_run(
                    cd, condition=f"euclid-euclid {inputs}", objective="euclid-euclid",
                    inputs=inputs, tau=tau, sigma=sigma, label_tau=tau, budget=budget, seed=s,
                    device=trials.device, progress=trials.progress, cache=trials.cache,
                    data_id=id(data),
                )
                trials.add(rec, art, seed=s)
    return trials.finish(keys=_CONTROL_KEYS, config=config,
                         supports=_controls_verdict(trials.runs, settings))

def _score(setting: str, run: dict[str, Any]) -> float:
    """Held-out score of a run (higher is better): the prediction's null-corrected advantage over
    the simplex (supcon), the k-NN R^2 of the held-out label (euclid-euclid)."""
    if registry.get(setting).labels == "class":
        return run["comparisons"]["simplex"]["heldout"]["advantage"]
    return run["knn_r2"]


def _controls_verdict(runs: list[dict[str, Any]], settings: list[str]) -> dict[str, Any]:
    """Images vs each control on the held-out score of the setting, paired by seed, over all
    seeds (and, beside it, over the seeds whose image run converged)."""
    out: dict[str, Any] = {
        "criterion": (
            "held-out advantage of the prediction over the simplex beyond a label-permutation "
            "null (supcon) or held-out k-NN R^2 of the label (euclid-euclid) of the trained "
            "image runs vs each control, paired by seed over all seeds (Student t, 95%)"
        ),
    }
    verdicts = []
    for setting in settings:
        imgs = {r["seed"]: r for r in runs if r["condition"] == f"{setting} images"}
        per = {}
        for inputs in INPUTS[1:]:
            ctrl = {r["seed"]: r for r in runs if r["condition"] == f"{setting} {inputs}"}
            seeds = sorted(set(imgs) & set(ctrl))
            conv = [s for s in seeds if imgs[s]["converged"]]
            v = paired_verdict([-_score(setting, imgs[s]) for s in seeds],
                               [-_score(setting, ctrl[s]) for s in seeds], ("images", inputs))
            v["converged_runs"] = paired_verdict(
                [-_score(setting, imgs[s]) for s in conv],
                [-_score(setting, ctrl[s]) for s in conv], ("images", inputs),
            )
            per[inputs] = v
            verdicts.append(v["supports"])
        out[setting] = per
    if verdicts and all(v == "images" for v in verdicts):
        out["supports"] = "images"
    elif any(v not in ("images", "undecided") for v in verdicts):
        out["supports"] = "against"  # a control matched or beat the trained images
    else:
        out["supports"] = "undecided"
    return out
