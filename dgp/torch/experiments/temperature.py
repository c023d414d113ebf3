"""``soft-supcon-tau``: Soft SupCon across its critical temperature."""


from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dgp.errors import InputError
from dgp.torch.experiments._class_run import add_class_run, class_run, class_trials
from dgp.torch.experiments.base import Experiment, RunOptions, report_config
from dgp.torch.experiments.scoring import (
    describe_prediction,
    gram_rms,
    off_diagonal,
    simplex_gram,
    supcon_prediction,
)
from dgp.torch.experiments.statistics import (
    change_point,
    decide,
    holm,
    knot,
    mean_sd,
    one_sample_verdict,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

# ----------------------------------------------------------------------------------------------
# 3. soft-supcon-tau

_SOFT_KEYS = (
    "gram_rms_error",
    "simplex_gram_rms_error",
    "mean_cosine",
    "cosine_spread",
    "heldout_mean_cosine",
    "heldout_cosine_spread",
    "similarity_r2",
    "heldout_gram_rms_error",
    "final_loss",
    "loss_excess",
)

#: multiples of tau* trained by default (``dgp verify soft-supcon-tau --taus``)
TAU_MULTIPLES = (0.5, 0.75, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0)
#: fewest temperatures whose curve of spreads locates the onset (tau*)
MIN_MULTIPLES_FOR_ONSET = 5


def _corrected_spread(spread: float, noise: float) -> float:
    """Spread of the held-out off-diagonal cosines with the sampling noise taken out (the noise
    adds its variance to the spread's)."""
    return math.sqrt(max(0.0, spread**2 - noise**2))


def soft_supcon_tau(
    *,
    eps: float = 0.25,
    ratio: float = 10.0,
    multiples: Sequence[float] = TAU_MULTIPLES,
    **run: Unpack[RunOptions],
) -> Experiment:
    r"""Soft SupCon on imbalanced classes at temperatures ``multiples`` of :math:`\tau^*`, and
    :math:`\tau^*` located from the data.

    Predictions (:func:`dgp.supcon_prototypes`): for :math:`\tau \le \tau^*` equiangular
    prototypes at :math:`\rho = 1 + \tau\log\varepsilon` (the simplex at :math:`\tau^*`),
    whatever the class sizes; above :math:`\tau^*` a size-dependent geometry. Below and at
    :math:`\tau^*` the equiangular configuration attains the entropic bound of the whole set,
    hence of every batch, so mini-batches do not change it.

    **Where is** :math:`\tau^*`? The spread of the held-out prototype cosines (their standard
    deviation, with the sampling noise of the split-half noise ceiling taken out) is zero below
    :math:`\tau^*` and grows above it. A hinge ``a + b max(0, m - m0)^p`` (``p`` from a
    square-root to a linear rise) fit over the multiples ``m`` locates the onset ``m0``, pooled
    over seeds, with a Student-t interval over the seeds' own onsets (``tau_star_estimate``).
    The estimator is biased on a coarse grid (a smooth rise starts between grid points), so it
    is calibrated: the same fit on the predicted spread curve, on the same grid, gives
    ``predicted_by_estimator``, and the data agree with the prediction when their interval
    contains it. The predicted :math:`\tau^*` is used by neither fit.

    **Per temperature**, the prediction is compared with the closest geometry of the other
    regime, the simplex (the end of the equiangular branch, and the start of the size-dependent
    one), on held-out images (:func:`~dgp.torch.experiments.statistics.decide`, Holm-corrected
    over the temperatures). Below :math:`\tau^*` both are equiangular and held-out cosines are
    pulled up by a common amount, so held-out data tie them; the level is then compared on the
    training images (``train_level``: the learned mean cosine against
    :math:`1 + \tau\log\varepsilon` and against the simplex's :math:`-1/(K-1)`). At
    :math:`\tau^*` the two regimes meet: that temperature is a ``boundary``, tested by the
    estimate of :math:`\tau^*`.

    ``run``: the options of every experiment (:class:`~dgp.torch.experiments.base.RunOptions`).

    Raises
    ------
    ValueError
        If the data have no class labels, or fewer than three temperatures are given.
    """
    from dgp.prototypes import soft_supcon_rho, soft_supcon_tau_star

    mults = sorted({float(m) for m in multiples})
    if len(mults) < 3 or mults[0] <= 0:
        raise InputError(f"taus: give at least three positive multiples of tau*, got {multiples}")
    trials, src, split = class_trials("soft-supcon-tau", ratio=ratio, **run)
    budget = trials.budget
    sizes = split.imbalanced
    K = sizes.size
    tau_star = soft_supcon_tau_star(K=K, eps=eps)
    S = simplex_gram(K)
    seeds = trials.seeds
    per_tau: list[dict[str, Any]] = []
    trials.expect(len(mults))
    for mult in mults:
        tau = mult * tau_star
        pred = supcon_prediction(sizes, tau=tau, eps=eps, batch_size=budget.batch_size)
        rho = soft_supcon_rho(tau=tau, eps=eps)
        boundary = math.isclose(mult, 1.0, rel_tol=1e-9)
        alternatives = {} if boundary else {"simplex": S}
        cond = f"tau={mult:g}tau*"
        group = []
        for s in seeds:
            rec = class_run(
                src, sizes=sizes, test=split.test, tau=tau, eps=eps, pred=pred,
                alternatives=alternatives, budget=budget, seed=s, device=trials.device,
                progress=trials.progress, desc=f"{cond} seed {s}",
            )
            G, Gt = rec["learned_gram"], rec["heldout_gram"]
            spread_t = float(off_diagonal(Gt).std())
            group.append(
                {
                    "objective": "soft-supcon",
                    "condition": cond,
                    "seed": s,
                    "tau": tau,
                    "tau_over_tau_star": mult,
                    "tau_star": tau_star,
                    "eps": eps,
                    "rho": rho,
                    "batch_size": budget.batch_size,
                    **rec,
                    "mean_cosine": float(off_diagonal(G).mean()),
                    "cosine_spread": float(off_diagonal(G).std()),
                    "heldout_mean_cosine": float(off_diagonal(Gt).mean()),
                    "heldout_cosine_spread": spread_t,
                    "heldout_corrected_spread": _corrected_spread(
                        spread_t, rec["heldout_noise"]["noise_rms"]
                    ),
                    "predicted_mean_cosine": float(off_diagonal(pred.gram).mean()),
                    "predicted_cosine_spread": float(off_diagonal(pred.gram).std()),
                    "predicted_gram": pred.gram,
                    "prediction": describe_prediction(pred, budget.batch_size),
                }
            )
            add_class_run(trials, group[-1], pred=pred, sizes=sizes, seed=s)
        row: dict[str, Any] = {
            "tau_over_tau_star": mult,
            "tau": tau,
            "regime": "below" if mult < 1 and not boundary else (
                "boundary" if boundary else "above"
            ),
            "prediction": pred.method,
            "predicted_mean_cosine": float(off_diagonal(pred.gram).mean()),
            "predicted_cosine_spread": float(off_diagonal(pred.gram).std()),
            "predictions_rms": gram_rms(pred.gram, S),
        }
        if mult <= 1.0 or boundary:
            row["mean_cosine_minus_rho"] = {
                "train": mean_sd([r["mean_cosine"] - rho for r in group]),
                "heldout": mean_sd([r["heldout_mean_cosine"] - rho for r in group]),
            }
        if mult < 1.0 and not boundary:  # both equiangular: the level, on training images
            simplex_level = -1.0 / (K - 1)
            row["train_level"] = one_sample_verdict(
                [abs(r["mean_cosine"] - simplex_level) - abs(r["mean_cosine"] - rho)
                 for r in group], ("prediction", "simplex"),
            )
        if boundary:
            row.update(supports="boundary", why=(
                "at tau* both regimes give the simplex: no alternative to compare with; tested "
                "by tau_star_estimate"
            ))
        else:
            row.update(decide(group, "simplex", ("prediction", "simplex")))
        per_tau.append(row)
    per_tau = holm(per_tau)
    predicted_curve = [d["predicted_cosine_spread"] for d in per_tau]
    runs = trials.runs
    estimate = _tau_star_estimate(runs, seeds, tau_star, "heldout_corrected_spread",
                                  mults, predicted_curve)
    wins = [d["supports"] for d in per_tau if d["supports"] != "boundary"]
    return trials.finish(
        keys=_SOFT_KEYS,
        config=report_config(src.name, src.X, budget, sizes=sizes.tolist(), eps=eps,
                             tau_star=tau_star, tau_multiples=mults,
                             taus=[m * tau_star for m in mults]),
        supports={
            "criterion": (
                "tau* located by a hinge fit of the held-out cosine spread (noise taken out) "
                "over the multiples of tau*, Student-t interval over the seeds' onsets, "
                "against the same fit on the predicted curve; per temperature: distance of the "
                "held-out prototype Gram to the simplex minus that to the prediction, each up "
                "to a common pull of the cosines towards 1, minus its mean over label "
                "permutations, over all seeds (Student t, 95%, Holm over the temperatures); "
                "'uninformative' where the loss cannot tell the two apart, 'tie' where held-out "
                "data cannot (two equiangular levels: see train_level)"
            ),
            "tau_star_estimate": estimate,
            "tau_star_estimate_train": _tau_star_estimate(runs, seeds, tau_star,
                                                          "cosine_spread", mults,
                                                          predicted_curve),
            "per_tau": per_tau,
            "heldout": {
                f"{d['tau_over_tau_star']:g}tau*": (
                    "tie" if d["supports"] == "tie" else d["heldout"]["all_runs"]["supports"]
                ) for d in per_tau if "heldout" in d
            },
            "supports": _overall(wins, estimate),
        },
    )


def _tau_star_estimate(runs: list[dict[str, Any]], seeds: list[int], tau_star: float,
                       key: str, mults: list[float], predicted_curve: list[float]
                       ) -> dict[str, Any]:
    """Change point of ``key`` over the multiples of tau*, in units of tau, beside the predicted
    tau* and what the same estimator gives on the predicted curve."""
    if len(mults) < MIN_MULTIPLES_FOR_ONSET:
        return {
            "located": False,
            "why": (f"{len(mults)} temperatures; the onset needs at least "
                    f"{MIN_MULTIPLES_FOR_ONSET} (a hinge through fewer points is not pinned down)"),
            "value": None, "interval": [None, None], "predicted": tau_star,
            "predicted_by_estimator": None, "contains_prediction": None,
            "contains_tau_star": None, "statistic": key,
        }
    xs = [[r["tau_over_tau_star"] for r in runs if r["seed"] == s] for s in seeds]
    ys = [[r[key] for r in runs if r["seed"] == s] for s in seeds]
    cp = change_point(xs, ys)
    lo, hi = cp["interval"]
    calibrated = knot(mults, predicted_curve)
    return {
        "located": True,
        "value": cp["value"] * tau_star,
        "interval": [lo * tau_star, hi * tau_star],
        "predicted": tau_star,
        "predicted_by_estimator": calibrated * tau_star,
        "multiple": cp["value"],
        "per_seed_multiples": cp["per_seed"],
        "contains_prediction": bool(lo <= calibrated <= hi),
        "contains_tau_star": bool(lo <= 1.0 <= hi),
        "statistic": key,
        "interval_kind": "Student t over the seeds' own onsets (95%)",
    }


def _overall(wins: list[str], estimate: dict[str, Any]) -> str:
    """``against`` when a temperature supports the simplex or comes out against the prediction,
    or the interval of the estimate of tau* excludes what the estimator gives on the predicted
    curve; ``prediction`` when at least one temperature supports the prediction and none goes
    the other way; else ``undecided`` (uninformative temperatures, ties and ``neither`` decide
    nothing for the prediction)."""
    if {"simplex", "against"} & set(wins) or estimate["contains_prediction"] is False:
        return "against"
    if "prediction" in wins:
        return "prediction"
    return "undecided"
