"""``continuous-labels``: y-Aware, Euclidean-Euclidean and X-CLR on continuous labels."""


from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from dgp.classification import classify
from dgp.errors import InputError
from dgp.metrics import entropic_gap, procrustes_r2, similarity_r2
from dgp.objectives import registry
from dgp.solver import SampleBatches
from dgp.torch import data as datasets
from dgp.torch.experiments.base import (
    Budget,
    Experiment,
    RunArtifacts,
    RunOptions,
    Trials,
    cached_run,
    image_source,
    input_run,
    paired_difference,
    report_config,
)
from dgp.torch.experiments.expected_batch import (
    SamplePrediction,
    nearest_label_rows,
    paired_losses,
    sample_prediction,
)
from dgp.torch.experiments.scoring import (
    PROCRUSTES_PERMUTATIONS,
    batch_losses,
    finite_or_none,
    per_anchor_difference,
    procrustes_null,
    unit_rows,
)
from dgp.torch.experiments.statistics import Z95, decide, holm, plateau
from dgp.torch.losses import WInfoNCELoss, make_loss
from dgp.weights import objective_weights

if TYPE_CHECKING:
    from typing_extensions import Unpack

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


#: label geometries of the rotated digits: the point of the angle on the unit circle, or the
#: angle itself in [0, pi) (a segment, on no sphere: where y-Aware's bound cannot be attained)
LABEL_GEOMETRIES = ("circle", "segment")


def continuous_data(
    budget: Budget, data: datasets.Dataset | None, seed: int, n_train: int, n_test: int,
    labels: str = "circle",
) -> ContinuousData:
    """Rotated digits (label: the angle's point on the circle, or the angle in [0, pi) as one
    standardised coordinate, ``labels="segment"``), or the user's data: continuous labels
    standardised (centred, each column scaled to unit variance, then by 1/sqrt(q)), or images
    rotated."""
    rng = np.random.default_rng(seed)
    if data is not None and not data.classes:
        y = data.y - data.y.mean(axis=0)
        sd = y.std(axis=0)
        if (sd == 0).any():
            raise InputError("data: a label column is constant; it carries no geometry")
        y = y / sd / math.sqrt(y.shape[1])
        X, name = data.X, f"{data.name} (labels standardised)"
    else:
        if data is not None and not data.images:
            raise InputError(
                "data: continuous-labels needs continuous labels, or images to rotate; the file "
                "has class labels on feature vectors"
            )
        src = image_source(budget, data)
        keep = np.isin(src.y, ASYMMETRIC_DIGITS) if data is None else np.ones(src.y.size, bool)
        what = f"digits {list(ASYMMETRIC_DIGITS)}" if data is None else "images"
        if labels == "segment":
            X, circle = datasets.rotated(src.X[keep], seed=seed, span=math.pi)
            theta = np.mod(np.arctan2(circle[:, 1], circle[:, 0]), 2 * math.pi)
            y = ((theta - theta.mean()) / theta.std())[:, None]
            name = f"{src.name}, {what} rotated by a uniform angle in [0, pi); label the angle"
        else:
            X, y = datasets.rotated(src.X[keep], seed=seed)
            name = f"{src.name}, {what} rotated by a uniform angle; label (cos, sin)"
    n = X.shape[0]
    if n < 8:
        raise InputError(f"data: continuous-labels needs at least 8 samples, got {n}")
    n_test = min(n_test, n // 3)
    n_train = min(n_train, n - n_test)
    order = rng.permutation(n)
    tr, te = order[:n_train], order[n_train : n_train + n_test]  # random order: subsets too
    return ContinuousData(X[tr], y[tr], X[te], y[te], name)


def label_geometry(y: np.ndarray, similarity: str) -> np.ndarray:
    """The labels' own geometry as an embedding of the latent: the labels themselves
    (Euclidean, or cosine when they lie on the unit sphere), else their rows ``[y, 1]``
    normalised (labels off the sphere put on it by a radial projection from below)."""
    if similarity != "cosine" or np.allclose(np.linalg.norm(y, axis=1), 1.0, atol=1e-9):
        return np.asarray(y, dtype=float)
    lifted = np.column_stack([y, np.ones(y.shape[0])])
    return lifted / np.linalg.norm(lifted, axis=1, keepdims=True)


def continuous_prediction(
    W: np.ndarray, *, similarity: str, tau: float, dim: int
) -> tuple[np.ndarray, dict[str, Any]]:
    """The predicted embedding in ``R^dim``: the bound-attaining target of :func:`dgp.classify`
    when it is realizable there, else the best embedding in ``R^dim`` (:func:`dgp.optimum`
    with ``dim``)."""
    from dgp.classification import classify

    res = classify(W, similarity=similarity, tau=tau, dim=dim)
    info: dict[str, Any] = {"verdict": res.verdict, "rank": res.rank}
    if res.verdict == "realizable":
        info["prediction"] = "dgp.classify target (attains the entropic bound)"
        return np.asarray(res.embedding, dtype=float), info
    if similarity != "cosine":
        raise InputError(f"no prediction for a {res.verdict} Euclidean weighting: {res.reason}")
    from dgp.optima import optimum

    opt = optimum(W, tau=tau, dim=dim, progress=False)  # the experiment shows its own
    info["prediction"] = f"dgp.optimum(dim={dim})"
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


#: training and held-out samples of the conditions whose prediction needs :func:`dgp.optimum`
#: (the expected-batch optimum at the trainer's batch size, beside the full-batch optimum in
#: ``d``, a Burer–Monteiro solve whose cost grows with N²), by mode; kept as published so that
#: the rerun against the batch prediction trains on the same images
OPTIMUM_SAMPLES = {"quick": (100, 50), "mnist-cpu": (120, 60), "full": (300, 100)}
#: training and held-out samples of the other conditions, by mode
CONTINUOUS_SAMPLES = {"quick": (600, 300), "mnist-cpu": (800, 300), "full": (1500, 500)}


def continuous_conditions(tau: float) -> list[tuple[str, str, float, str, bool, str]]:
    """(condition, objective, label_tau, inputs, whether it trains on the smaller subset whose
    prediction needs :func:`dgp.optimum`, label geometry)."""
    return [
        ("euclid-euclid", "euclid-euclid", tau, "images", False, "circle"),
        ("y-aware", "y-aware", tau, "images", False, "circle"),
        ("x-clr consistent", "x-clr", tau, "images", False, "circle"),
        ("x-clr mismatched", "x-clr", tau / 2, "images", True, "circle"),
        ("euclid-euclid-off-sphere", "euclid-euclid", tau, "images", False, "segment"),
        ("y-aware-off-sphere", "y-aware", tau, "images", True, "segment"),
        ("euclid-euclid noise", "euclid-euclid", tau, "noise", False, "circle"),
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
    data_id: int,
    batch_prediction: bool = False,
) -> tuple[dict[str, Any], RunArtifacts]:
    """One run scored against its prediction and against the labels' own geometry
    (:func:`label_geometry`), on training and held-out samples; the held-out comparison is
    corrected by a label-permutation null (:func:`~dgp.torch.experiments.scoring.procrustes_null`)
    and ``comparisons["labels"]`` carries what :func:`~dgp.torch.experiments.statistics.decide`
    reads. Trained runs are shared through ``cache`` by what they depend on (``data_id``
    names the user's data set, or none)."""
    rec = registry.get(objective)
    params = rec.own_params({"sigma": sigma, "label_tau": label_tau})
    sim = rec.similarity
    W = objective_weights(objective, cd.y, **params)
    B = min(budget.batch_size, cd.y.shape[0])
    pred: SamplePrediction | None = None
    if batch_prediction and B < cd.y.shape[0]:
        # the prediction for the trainer's batches (DESIGN §13), the full-batch optimum in d as
        # its alternative; held-out samples predicted at their nearest training label
        from dgp.problem import Problem

        problem = Problem(objective=objective, labels=cd.y, tau=tau, **params)
        pred = cached_run(cache, ("continuous-prediction", objective, label_tau, tau,
                                         budget.dim, B, data_id, cd.y.tobytes()),
                                 lambda: sample_prediction(problem, dim=budget.dim,
                                                           batch_size=B, seed=seed))
        res = classify(W, similarity=sim, tau=tau, dim=budget.dim)
        U = pred.batch
        near = nearest_label_rows(cd.y, cd.y_test)
        Ut, Ft = pred.batch[near], pred.full[near]
        info = {"verdict": res.verdict, "rank": res.rank,
                "prediction": (f"dgp.optimum(dim={budget.dim}, batch_size={B}): the "
                               "expected-batch optimum"),
                "batch_prediction": pred.info}
        info_t = {"verdict": res.verdict}
    else:
        U, info = continuous_prediction(W, similarity=sim, tau=tau, dim=budget.dim)
        Ut, info_t = continuous_prediction(
            objective_weights(objective, cd.y_test, **params), similarity=sim, tau=tau,
            dim=budget.dim
        )
    A, At = label_geometry(cd.y, sim), label_geometry(cd.y_test, sim)
    loss_fn = make_loss(objective, tau=tau, **params)
    trained = inputs in ("images", "noise")
    run = input_run(
        cd.X, cd.y, cd.X_test, loss_fn, inputs=inputs, cache=cache,
        key=("continuous", budget, data_id, objective, label_tau, cd.y.shape,
             cd.X_test.shape[0], seed),
        budget=budget, seed=seed, device=device, progress=progress,
        desc=f"{condition} seed {seed}", steps=budget.steps_continuous,
    )
    Z = unit_rows(run.Z) if sim == "cosine" else run.Z
    Zt = unit_rows(run.Z_test) if sim == "cosine" else run.Z_test
    extra: dict[str, Any] = {}
    if pred is not None:
        # every loss on the same fresh batches (a stream of its own), nats per anchor
        est = paired_losses([Z, U, A, pred.full], pred, SampleBatches(cd.y.shape[0], B),
                            seed=[seed, 10_000])
        excess, se = paired_difference(est[0], est[1])
        delta, delta_se = paired_difference(est[2], est[1])
        fdelta, fdelta_se = paired_difference(est[3], est[1])
        final = float(est[0].mean)
        extra = {
            "prediction_half_width": pred.half_width,
            "prediction_kept_full_batch": pred.info["kept_full_batch"],
            "prediction_identifiable": (pred.info["identifiability"] or {}).get("identifiable"),
            "evaluation_batches": int(est[0].batches),
        }
        full_cmp = {
            "delta": fdelta,
            "delta_se": fdelta_se,
            "same_point": bool(pred.info["kept_full_batch"]),
            "train": {"dist_prediction": 1 - procrustes_r2(Z, U),
                      "dist_alternative": 1 - procrustes_r2(Z, pred.full),
                      "advantage": procrustes_r2(Z, U) - procrustes_r2(Z, pred.full)},
            "heldout": procrustes_null(Zt, Ut, Ft, permutations=PROCRUSTES_PERMUTATIONS,
                                       seed=21_000 + seed),
        }
    else:
        L, anchors = batch_losses(
            [run.Z, U, A], np.arange(cd.y.shape[0]), indexed_loss(loss_fn, W),
            batch_size=B, batches=budget.mc_batches, seed=10_000 + seed,
        )
        excess, se = per_anchor_difference(L[0], L[1], anchors)
        delta, delta_se = per_anchor_difference(L[2], L[1], anchors)
        final = float(L[0].mean() / anchors.mean())
    probe, knn = probes(Z, cd.y, Zt, cd.y_test)
    r2_p, r2_a = procrustes_r2(Z, U), procrustes_r2(Z, A)
    conv = plateau(run.losses) if trained else None
    out = {
        "objective": objective,
        "condition": condition,
        "inputs": inputs,
        "seed": seed,
        "similarity": sim,
        "tau": tau,
        "sigma": params.get("sigma"),
        "label_tau": params.get("label_tau"),
        "label_geometry": "segment" if cd.y.shape[1] == 1 else "circle",
        "batch_size": budget.batch_size,
        "dim": budget.dim,
        "n_train": int(cd.y.shape[0]),
        **info,
        "heldout_verdict": info_t["verdict"],
        "procrustes_r2": r2_p,
        "similarity_r2": finite_or_none(lambda: similarity_r2(Z, U, similarity=sim)),
        "label_procrustes_r2": r2_a,
        "label_similarity_r2": finite_or_none(lambda: similarity_r2(Z, A, similarity=sim)),
        "prediction_vs_labels_r2": procrustes_r2(U, A),
        "entropic_gap": entropic_gap(run.Z, W, tau=tau, similarity=sim),
        "heldout_procrustes_r2": procrustes_r2(Zt, Ut),
        "heldout_label_procrustes_r2": procrustes_r2(Zt, At),
        "probe_r2": probe,
        "knn_r2": knn,
        "final_loss": final,
        "loss_excess": excess,
        "loss_excess_se": se,
        **extra,
        "comparisons": {
            "labels": {
                "delta": delta,
                "delta_se": delta_se,
                "train": {"dist_prediction": 1 - r2_p, "dist_alternative": 1 - r2_a,
                          "advantage": r2_p - r2_a},
                "heldout": procrustes_null(Zt, Ut, At, permutations=PROCRUSTES_PERMUTATIONS,
                                           seed=20_000 + seed),
            }
        },
        "heldout_noise": None,
        "heldout_prediction": ("nearest training label" if pred is not None
                               else "optimum of the held-out labels"),
        "converged": conv.converged if conv is not None else None,
        "plateau": conv.to_dict() if conv is not None else None,
        "steps": run.steps,
        "train_seconds": run.seconds,
    }
    if pred is not None:
        out["comparisons"]["full-batch"] = full_cmp
        out["full_batch_procrustes_r2"] = procrustes_r2(Z, pred.full)
        out["heldout_full_batch_procrustes_r2"] = procrustes_r2(Zt, Ft)
    art = RunArtifacts("continuous-labels", condition, Z, U, sim, cd.y)
    return out, art


def indexed_loss(loss_fn: WInfoNCELoss, W: np.ndarray) -> WInfoNCELoss:
    """The same loss over the fixed training weighting, called with sample indices (so that
    :func:`~dgp.torch.experiments.scoring.batch_losses` scores batches as the trainer formed
    them)."""
    return WInfoNCELoss(tau=loss_fn.tau, similarity=loss_fn.similarity, weights=W)


def continuous_labels(
    *, tau: float = 0.1, sigma: float = 0.5, **run: Unpack[RunOptions]
) -> Experiment:
    r"""Continuous labels: the rotation angle of digits, on the circle and off any sphere.

    Conditions on the circle, :math:`y = (\cos\theta, \sin\theta)`: Euclidean–Euclidean,
    y-Aware (realizable when :math:`\tau \le \sigma^2` for labels on the unit circle, theorem
    13), X-CLR with :math:`\tau_y = \tau` (consistent: the target is the labels themselves) and
    :math:`\tau_y = \tau/2` (mismatched: no target is realizable, the prediction is the
    expected-batch optimum at the trainer's batch size in ``d`` dimensions, computed for a
    smaller training subset, :data:`OPTIMUM_SAMPLES`), and Euclidean–Euclidean on noise
    inputs. Off any sphere, the angle
    :math:`\theta \in [0, \pi)` itself as a one-dimensional label (a segment):
    ``euclid-euclid-off-sphere`` (still realizable: the labels scaled by
    :math:`\sqrt\tau/\sigma`) and ``y-aware-off-sphere`` (inconsistent: no embedding attains
    the bound; the prediction is :func:`dgp.optimum` with ``dim`` and ``batch_size``). Both
    inconsistent conditions are also compared with the full-batch optimum in ``d``
    (:func:`batch_vs_full`), every loss paired on fresh batches
    (:mod:`~dgp.torch.experiments.expected_batch`).

    Each run is scored against its prediction and against the labels' own geometry
    (:func:`label_geometry`), on training and on held-out images (the held-out prediction is
    made from the held-out labels), with linear-probe and k-NN :math:`R^2` of the held-out
    labels. Per condition the verdict is decided on held-out images over all seeds, corrected by
    a label-permutation null, and ``uninformative`` where the loss cannot tell the prediction
    from the labels' geometry (:func:`~dgp.torch.experiments.statistics.decide`).

    ``run``: the options of every experiment (:class:`~dgp.torch.experiments.base.RunOptions`).

    Raises
    ------
    ValueError
        If the data fit neither form (continuous labels, or images to rotate).
    """
    trials = Trials.start("continuous-labels", **run)
    budget, data = trials.budget, trials.data
    n_train, n_test = CONTINUOUS_SAMPLES.get(budget.name, CONTINUOUS_SAMPLES["full"])
    small = OPTIMUM_SAMPLES.get(budget.name, OPTIMUM_SAMPLES["full"])
    conds = continuous_conditions(tau)
    if data is not None and not data.classes:  # the user's labels: one geometry, theirs
        conds = [c for c in conds if c[5] == "circle"]
    trials.expect(len(conds))
    names: dict[str, str] = {}
    for s in trials.seeds:
        cds = {g: continuous_data(budget, data, s, n_train, n_test, labels=g)
               for g in dict.fromkeys(c[5] for c in conds)}
        names = {g: cd.name for g, cd in cds.items()}
        for cond, objective, label_tau, inputs, on_subset, geometry in conds:
            cd = cds[geometry]
            rec, art = continuous_run(
                subset(cd, *small) if on_subset else cd,
                condition=cond, objective=objective, inputs=inputs, tau=tau, sigma=sigma,
                label_tau=label_tau, budget=budget, seed=s, device=trials.device,
                progress=trials.progress, cache=trials.cache, data_id=id(data),
                batch_prediction=on_subset,
            )
            trials.add(rec, art, seed=s)
    return trials.finish(
        keys=_CONT_KEYS,
        config=report_config(names, cds[conds[0][5]].X, budget, n_train=n_train, n_test=n_test,
                             n_train_optimum=small[0], tau=tau, sigma=sigma,
                             label_tau={"consistent": tau, "mismatched": tau / 2}),
        supports=_continuous_verdict(trials.runs),
    )

_NAMES = ("prediction", "labels' geometry")


def _continuous_verdict(runs: list[dict[str, Any]]) -> dict[str, Any]:
    per: list[dict[str, Any]] = []
    for cond in dict.fromkeys(r["condition"] for r in runs if r["inputs"] == "images"):
        group = [r for r in runs if r["condition"] == cond]
        same = min(r["prediction_vs_labels_r2"] for r in group) > 1 - 1e-6
        v = decide(group, "labels", _NAMES)
        if same:
            v = {**v, "supports": "coincide", "why": "prediction = labels' geometry"}
        if group[0].get("prediction_half_width") is not None:
            v = not_pinned(v, group)
        per.append({"condition": cond, "verdict": group[0]["verdict"],
                    "label_geometry": group[0]["label_geometry"], **v})
        if "full-batch" in group[0]["comparisons"]:
            per.append({"condition": cond, "verdict": group[0]["verdict"],
                        "label_geometry": group[0]["label_geometry"],
                        **batch_vs_full(group)})
    per = holm(per)
    wins = {d["supports"] for d in per} - {"coincide", "uninformative", "undecided"}
    overall = ("against" if wins & {"against", "labels' geometry", "full-batch"}
               else "prediction" if wins <= {"prediction", "expected-batch"} and wins
               else "mixed" if wins else "undecided")
    return {
        "criterion": (
            "per objective: held-out Procrustes r^2 against the prediction minus that against "
            "the labels' own geometry, minus its mean over label permutations, over all seeds "
            "(Student t, 95%, Holm over the objectives); 'coincide' where the two references "
            "are the same, 'uninformative' where their expected batch losses differ by less "
            "than what training resolves, 'against' where the loss prefers the labels' "
            "geometry or the runs beat the prediction's loss. Inconsistent conditions (X-CLR "
            "mismatched, y-Aware off the sphere): the prediction is the expected-batch optimum "
            "at the trainer's batch size and dimension (dgp.optimum with batch_size and dim), "
            "compared also with the full-batch optimum in d (alternative 'full-batch', the same "
            "held-out statistic); every loss on the same fresh batches, nats per anchor; the "
            "runs beat the prediction only when the median run's excess is below -(the "
            "prediction's 95% half-width + 1.96 paired standard errors); 'uninformative' where "
            "the loss does not pin the prediction's arrangement (near-optimal solutions of "
            "other seeds differ)"
        ),
        "per_objective": per,
        "supports": overall,
    }


#: the names of the two predictions of an inconsistent condition
BATCH_NAMES = ("expected-batch", "full-batch")


def not_pinned(v: dict[str, Any], group: list[dict[str, Any]]) -> dict[str, Any]:
    """A held-out geometry verdict demoted to ``uninformative`` where the loss does not pin the
    prediction's arrangement (:attr:`dgp.BatchOptimum.identifiability`: near-optimal
    solutions of other seeds differ in their pairwise cosines), on any seed's labels. Loss
    verdicts (``against``) stand."""
    free = [r["seed"] for r in group if arrangement_pinned(r) is False]
    out = {**v, "arrangement_pinned_seeds": len(group) - len(free)}
    if free and v["supports"] not in ("against", "coincide", "uninformative"):
        out["supports"] = "uninformative"
        out["why"] = (f"the loss does not pin the predicted arrangement (seeds {free}: "
                      "near-optimal solutions differ in their pairwise cosines), so no "
                      f"geometry can decide; held-out verdict would be {v['supports']}")
    return out


def arrangement_pinned(run: dict[str, Any]) -> bool | None:
    """Whether dgp's identifiability report of the run's batch prediction pins the pairwise
    cosines (what a Procrustes comparison reads: unit rows' Gram); None without a report
    or when no other solution came within the resolution."""
    ident = (run.get("batch_prediction") or {}).get("identifiability") or {}
    pinned = ident.get("pinned") or {}
    if "pairwise cosines" in pinned:
        return bool(pinned["pairwise cosines"])
    return None


def batch_vs_full(group: list[dict[str, Any]]) -> dict[str, Any]:
    """The expected-batch prediction against the full-batch one over a condition's runs
    (:func:`~dgp.torch.experiments.statistics.decide`), ``coincide`` where dgp kept the
    full-batch optimum as its batch prediction in every seed (no stochastic run did better
    beyond noise: the two are one point)."""
    v = decide(group, "full-batch", BATCH_NAMES)
    if all(r["comparisons"]["full-batch"].get("same_point") for r in group):
        v = {**v, "supports": "coincide",
             "why": ("dgp kept the full-batch optimum as the expected-batch prediction in "
                     "every seed (no stochastic run beat it beyond noise): one point")}
    else:
        v = not_pinned(v, group)
        ident = v["identifiability"]
        if v["supports"] == "uninformative" and ident["delta"] < -Z95 * ident["delta_se"]:
            # within what training resolves, but beyond the gap's own noise: say which way
            v["why"] = "; ".join(x for x in (v.get("why"), (
                f"the full-batch point has the lower expected batch loss, by "
                f"{-ident['delta']:.2g} ± {ident['delta_se']:.1g} nats per anchor (beyond its "
                "standard error, within what training resolves): the batch prediction is not "
                "the optimum of the expected batch loss")) if x)
    return {**v, "compared_with": "full-batch"}

