r"""Statistics of the experiments (numpy only): convergence of a run from its own loss, paired
comparisons over seeds, identifiability, held-out comparisons against a label-permutation null,
the noise ceiling of a held-out prototype Gram, and the change point of a curve. The held-out
comparisons (shrink distance, prototypes, permutation null, split halves) are the job of
:mod:`~dgp.torch.experiments._heldout`, re-exported here.

Nothing here looks at a prediction to decide whether a run converged, and no run is left out of
a verdict for its distance to the prediction: every comparison is given over all runs and over
the converged ones, and the headline is the one over all runs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dgp.constants import SCALE_FLOOR
from dgp.errors import InputError
from dgp.records import Record
from dgp.torch.experiments._heldout import (
    null_corrected,
    permutation_null,
    prototypes_of,
    shrink_distance,
    shrink_fit,
    split_half,
)

__all__ = [
    "CONFIDENCE",
    "PLATEAU_RTOL",
    "PLATEAU_WINDOW",
    "Z95",
    "Plateau",
    "change_point",
    "compare",
    "critical_t",
    "decide",
    "holm",
    "identifiability",
    "mean_sd",
    "null_corrected",
    "one_sample_verdict",
    "paired_verdict",
    "permutation_null",
    "plateau",
    "prototypes_of",
    "shrink_distance",
    "shrink_fit",
    "split_half",
    "summarise",
]

#: two-sided confidence of every paired verdict (Student's t over seeds)
CONFIDENCE = 0.95
#: the two-sided 95% normal quantile (a run's paired excess over a batch prediction)
Z95 = 1.959963984540054
#: convergence: the last ``PLATEAU_WINDOW`` of the steps against the window before it
PLATEAU_WINDOW = 0.1
#: convergence: a relative decrease of the mean training loss below this counts as stopped
PLATEAU_RTOL = 0.01
#: fewest steps in one window of :func:`plateau` (fewer: not converged, cannot tell)
PLATEAU_MIN_STEPS = 5
#: two held-out distances within this relative difference are a tie of the references
TIE_DISTANCE = 1e-9


# ----------------------------------------------------------------------------------------------
# convergence, from the run's own training loss


@dataclass(frozen=True)
class Plateau(Record):
    """Whether a training loss has stopped decreasing.

    Attributes
    ----------
    converged : bool
        The mean loss of the last window is not lower than that of the window before by more
        than ``PLATEAU_RTOL`` of its size, or by more than twice the standard error of the
        difference of the two means (batch noise); False when there are too few steps.
    relative_decrease : float or None
        ``(mean(before) - mean(last)) / |mean(last)|``.
    decrease_se : float or None
        Standard error of ``mean(before) - mean(last)`` from the batch-to-batch spread.
    window : int
        Steps in each window.
    """

    converged: bool
    relative_decrease: float | None
    decrease_se: float | None
    window: int



def plateau(losses: Sequence[float], *, window: float = PLATEAU_WINDOW,
            rtol: float = PLATEAU_RTOL) -> Plateau:
    """Convergence of a run from its own per-step training losses, and nothing else.

    >>> p = plateau([1.0 / (1 + t) for t in range(200)])
    >>> p.converged, round(p.relative_decrease, 3)
    (False, 0.118)
    >>> plateau([0.5] * 100).converged
    True
    >>> plateau([1.0, 0.5, 0.4]).converged  # too few steps to tell
    False
    """
    x = np.asarray(losses, dtype=float)
    w = round(window * x.size)
    if w < PLATEAU_MIN_STEPS or not np.isfinite(x).all():
        return Plateau(False, None, None, w)
    last, before = x[-w:], x[-2 * w : -w]
    drop = float(before.mean() - last.mean())
    se = float(math.sqrt(last.var(ddof=1) / w + before.var(ddof=1) / w))
    scale = abs(float(last.mean())) or 1.0
    converged = drop <= max(rtol * scale, 2.0 * se)
    return Plateau(bool(converged), drop / scale, se, w)


# ----------------------------------------------------------------------------------------------
# paired comparisons over seeds


def critical_t(n: int, confidence: float = CONFIDENCE) -> float:
    """Two-sided Student-t critical value for the mean of ``n`` paired differences.

    >>> round(critical_t(3), 2), round(critical_t(30), 2)
    (4.3, 2.05)
    """
    from scipy.stats import t

    return float(t.ppf(0.5 + confidence / 2.0, df=max(n - 1, 1)))


def one_sample_verdict(diffs: Sequence[float], names: tuple[str, str]) -> dict[str, Any]:
    """Sign of the mean of per-seed differences (positive favours ``names[0]``), decided when
    it exceeds Student's two-sided critical value (:data:`CONFIDENCE`) times its standard
    error; else ``undecided``. ``p_value`` is the two-sided t-test's (for :func:`holm`)."""
    from scipy.stats import t as student

    d = np.asarray(diffs, dtype=float)
    n = d.size
    if n < 2:
        return {"supports": "undecided", "why": f"{n} run(s); 2 are needed", "n": n,
                "p_value": 1.0}
    mean, se = float(d.mean()), float(d.std(ddof=1) / math.sqrt(n))
    t = critical_t(n)
    p = float(2 * student.sf(abs(mean) / se, df=n - 1)) if se > 0 else (
        1.0 if mean == 0 else 0.0
    )
    if mean > t * se:
        winner = names[0]
    elif mean < -t * se:
        winner = names[1]
    else:
        winner = "undecided"
    return {"supports": winner, "difference": [mean, se], "critical_t": t, "n": n,
            "p_value": p}


def holm(comparisons: Sequence[dict[str, Any]], *, level: float = 1 - CONFIDENCE
         ) -> list[dict[str, Any]]:
    """Holm's step-down correction over the comparisons of one experiment: a held-out verdict
    for either reference stands only where its Holm-adjusted p-value is below ``level``; else
    it becomes ``undecided``. Returns new dicts with ``p_holm`` and ``tests`` (how many were
    corrected together); comparisons without a held-out test are passed through."""
    idx = [k for k, c in enumerate(comparisons) if "heldout" in c]
    ps = [comparisons[k]["heldout"]["all_runs"].get("p_value", 1.0) for k in idx]
    m = len(ps)
    adjusted = [1.0] * m
    running = 0.0
    for rank, j in enumerate(sorted(range(m), key=lambda j: ps[j])):
        running = max(running, min(1.0, (m - rank) * ps[j]))
        adjusted[j] = running
    out = [dict(c) for c in comparisons]
    for j, k in enumerate(idx):
        c = out[k]
        c["p_holm"], c["tests"] = adjusted[j], m
        won = c["heldout"]["all_runs"]["supports"]
        if c["supports"] == won and won not in ("undecided",) and adjusted[j] >= level:
            c["supports"] = "undecided"
            c["why"] = (f"held-out p = {ps[j]:.2g}, Holm-adjusted over {m} comparisons "
                        f"{adjusted[j]:.2g} >= {level:g}")
    return out


def paired_verdict(
    a: Sequence[float], b: Sequence[float], names: tuple[str, str]
) -> dict[str, Any]:
    """Which of two references the runs are closer to: ``a`` and ``b`` are the distances of each
    seed to reference 0 and 1. Decided when the paired mean difference exceeds Student's
    two-sided critical value (:data:`CONFIDENCE`) times its standard error; else ``undecided``.

    >>> paired_verdict([0.1, 0.12, 0.11], [0.3, 0.31, 0.33], ("P", "A"))["supports"]
    'P'
    >>> paired_verdict([0.3, 0.31, 0.33], [0.1, 0.12, 0.11], ("P", "A"))["supports"]
    'A'
    >>> paired_verdict([0.1, 0.3, 0.2], [0.2, 0.2, 0.2], ("P", "A"))["supports"]
    'undecided'
    """
    if len(a) != len(b):
        raise InputError(f"a and b must pair up, got {len(a)} and {len(b)} runs")
    return one_sample_verdict(np.asarray(b, dtype=float) - np.asarray(a, dtype=float), names)


def compare(runs: Sequence[dict[str, Any]], advantage: Callable[[dict[str, Any]], float],
            names: tuple[str, str]) -> dict[str, Any]:
    """The verdict over **all** runs (the headline) and over the converged ones.

    ``advantage(run)`` is the run's advantage of ``names[0]`` over ``names[1]`` (a distance
    to the second minus the distance to the first, or a null-corrected version of it).
    """
    conv = [r for r in runs if r.get("converged")]
    all_v = one_sample_verdict([advantage(r) for r in runs], names)
    conv_v = one_sample_verdict([advantage(r) for r in conv], names)
    return {
        "supports": all_v["supports"],
        "all_runs": all_v,
        "converged_runs": conv_v,
        "not_converged": len(runs) - len(conv),
    }


# ----------------------------------------------------------------------------------------------
# identifiability: can the loss tell the prediction from the alternative?


def identifiability(delta: Sequence[float], delta_se: Sequence[float],
                    final_losses: Sequence[float], learned_excess: Sequence[float],
                    learned_excess_se: Sequence[float] | None = None,
                    prediction_half_width: Sequence[float] | None = None) -> dict[str, Any]:
    r"""Whether a comparison is informative, and which way the loss leans.

    ``delta`` (per run) is :math:`\Delta = \mathbb E_b[L_b(A)] - \mathbb E_b[L_b(P)]` per anchor,
    the alternative's loss excess over the prediction on the trainer's random batches, with its
    sampling standard error ``delta_se``. ``learned_excess`` (per run) is the run's own
    :math:`\mathbb E_b[L_b(Z)] - \mathbb E_b[L_b(P)]` on the same batches (standard errors
    ``learned_excess_se``). What training resolves is the run-to-run spread of the final loss
    (the standard deviation of ``learned_excess``: measured against one reference on the same
    batches, so that the batches' sampling noise cancels), or twice the standard error of
    :math:`\Delta` when larger. The comparison is ``informative`` when
    :math:`|\Delta|` exceeds that resolution; ``loss_prefers`` says which geometry has the lower
    expected batch loss (``alternative``: the prediction is not the lower-loss geometry of the
    two, a failure of the prediction). ``runs_beat_prediction`` is True when the runs' median
    expected batch loss is below the prediction's by more than three standard errors (the
    prediction is not the optimum of what training minimises). ``final_losses`` (each run's
    expected batch loss per anchor) are reported; their spread includes the batches' noise.

    A prediction found on sampled batches (:class:`dgp.BatchOptimum`) carries the 95% interval
    of its own expected loss, measured on batches its optimiser never saw; give its half-width
    per run as ``prediction_half_width``. The runs then beat the prediction only beyond that
    interval: the median run's excess must be below ``-(half_width + Z95 * se)`` (``se`` the
    median paired standard error of the runs' excess), so that neither the prediction's own
    sampling error nor the runs' can make it ``against``.

    >>> identifiability([0.02] * 3, [1e-4] * 3, [1.0, 1.003, 1.0], [1e-3, 2e-3, 1.5e-3]
    ...                 )["informative"]
    True
    >>> identifiability([2e-5] * 3, [1e-6] * 3, [1.0, 1.003, 1.0], [1e-3, 2e-3, 1.5e-3]
    ...                 )["informative"]
    False
    """
    d = np.asarray(delta, dtype=float)
    se = float(np.sqrt(np.mean(np.square(delta_se))) / math.sqrt(max(d.size, 1)))
    final = np.asarray(final_losses, dtype=float)
    ex = np.asarray(learned_excess, dtype=float)
    spread = float(ex.std(ddof=1)) if ex.size > 1 else float("nan")
    resolution = float(np.nanmax([spread, 2.0 * se])) if ex.size else float("nan")
    mean = float(d.mean()) if d.size else float("nan")
    informative = bool(math.isfinite(resolution) and abs(mean) > resolution)
    prefers = None if not informative else ("prediction" if mean > 0 else "alternative")
    ex_se = (float(np.median(learned_excess_se)) if learned_excess_se is not None
             and len(learned_excess_se) else float("nan"))
    median = float(np.median(ex)) if ex.size else float("nan")
    hw = (float(np.median(prediction_half_width)) if prediction_half_width is not None
          and len(prediction_half_width) else None)
    if hw is None:
        beat_by = 3.0 * max(ex_se, SCALE_FLOOR) if math.isfinite(ex_se) else float("nan")
        rule = "median run excess below -3 standard errors"
    else:
        beat_by = hw + Z95 * ex_se if math.isfinite(ex_se) else float("nan")
        rule = ("median run excess below -(the prediction's 95% half-width + 1.96 paired "
                "standard errors)")
    beaten = bool(math.isfinite(beat_by) and median < -beat_by)
    return {
        "delta": mean,
        "delta_se": se,
        "final_loss_spread": spread,
        "final_loss_sd_with_batch_noise": (
            float(final.std(ddof=1)) if final.size > 1 else float("nan")
        ),
        "learned_excess": median,
        "learned_excess_se": ex_se,
        "resolution": resolution,
        "informative": informative,
        "loss_prefers": prefers,
        "runs_beat_prediction": beaten,
        "beat_threshold": beat_by,
        "beat_rule": rule,
        "prediction_half_width": hw,
        "units": "nats per anchor",
    }

#: a held-out verdict for the prediction needs its mean distance to the held-out Gram within
#: this many times the Gram's noise ceiling (else: closer, but far from both: ``neither``)
ABSOLUTE_FIT = 3.0


def decide(runs: Sequence[dict[str, Any]], alternative: str, names: tuple[str, str]
           ) -> dict[str, Any]:
    """One comparison of the prediction with ``alternative`` over a condition's runs.

    Each run carries ``comparisons[alternative]`` (``delta``, ``delta_se``, ``train`` and
    ``heldout`` advantages, see :func:`dgp.torch.experiments.scoring.score_prototypes`),
    ``final_loss``, ``loss_excess`` (with ``loss_excess_se``) and ``heldout_noise``. In order:

    * ``against`` when the runs reach a lower expected batch loss than the prediction, or the
      alternative has the lower loss of the two (:func:`identifiability`): the prediction is
      not the optimum of what training minimises;
    * ``uninformative`` when the loss cannot tell the two geometries apart;
    * ``tie`` when the two references are at the same held-out distance in every run (two
      equiangular levels below the held-out one, up to a common pull: :func:`shrink_fit`);
    * else the held-out verdict over all runs (:func:`compare`), with ``neither`` where the
      prediction wins but stays further from the held-out Gram than :data:`ABSOLUTE_FIT` times
      its noise ceiling.

    Run :func:`holm` over the comparisons of an experiment afterwards.
    """
    comps = [r["comparisons"][alternative] for r in runs]
    ident = identifiability(
        [c["delta"] for c in comps], [c["delta_se"] for c in comps],
        [r["final_loss"] for r in runs], [r["loss_excess"] for r in runs],
        [r.get("loss_excess_se", float("nan")) for r in runs],
        ([r["prediction_half_width"] for r in runs]
         if runs and all(r.get("prediction_half_width") is not None for r in runs) else None),
    )
    heldout = compare(runs, lambda r: r["comparisons"][alternative]["heldout"]["advantage"], names)
    heldout["distance"] = comps[0]["heldout"]["distance"] if comps else None
    heldout["statistic"] = (
        "held-out d(G, alternative) - d(G, prediction) minus its mean over label permutations"
    )
    noise = [r["heldout_noise"] for r in runs if r.get("heldout_noise")]
    heldout["noise_ceiling"] = mean_sd([v["noise_rms"] for v in noise])
    heldout["reliability"] = mean_sd([v["reliability"] for v in noise])
    dp = [c["heldout"]["dist_prediction"] for c in comps if "dist_prediction" in c["heldout"]]
    da = [c["heldout"]["dist_alternative"] for c in comps if "dist_alternative" in c["heldout"]]
    heldout["dist_prediction"] = mean_sd(dp)
    train = compare(runs, lambda r: r["comparisons"][alternative]["train"]["advantage"], names)
    why = None
    if ident["runs_beat_prediction"]:
        supports = "against"
        why = ("the runs reach a lower expected batch loss than the prediction (median excess "
               f"{ident['learned_excess']:.2g} < -{ident['beat_threshold']:.2g} nats/anchor, "
               f"{ident['beat_rule']}): it is not the optimum of what training minimises")
    elif ident["loss_prefers"] == "alternative":
        supports = "against"
        why = "the alternative has the lower expected batch loss of the two"
    elif not ident["informative"]:
        supports = "uninformative"
    elif dp and len(dp) == len(da) and all(
        abs(a - b) <= TIE_DISTANCE * max(a, b, SCALE_FLOOR) for a, b in zip(dp, da, strict=True)
    ):
        supports = "tie"
        why = ("both references are at the same distance from every held-out Gram after a "
               "common pull of the cosines towards 1 (two equiangular levels below the "
               "held-out one): held-out data cannot tell them apart")
    else:
        supports = heldout["supports"]
        nc = heldout["noise_ceiling"]
        if supports == names[0] and nc and dp and float(np.mean(dp)) > ABSOLUTE_FIT * nc[0]:
            supports = "neither"
            why = (f"closer to the prediction than to the alternative, but at "
                   f"{float(np.mean(dp)):.3g} from the held-out Gram, more than "
                   f"{ABSOLUTE_FIT:g} times its noise ceiling {nc[0]:.2g}")
    out = {
        "supports": supports,
        "alternative": alternative,
        "names": list(names),
        "identifiability": ident,
        "heldout": heldout,
        "train": train,
        "near_threshold": _near_threshold(ident, heldout, dp),
    }
    if why:
        out["why"] = why
    return out


#: a decision quantity within this relative distance of its threshold is reported as near it
NEAR = 0.1


def _near_threshold(ident: dict[str, Any], heldout: dict[str, Any], dp: list[float]
                    ) -> list[str]:
    """Which thresholds the comparison was decided within :data:`NEAR` of: the loss gap against
    the resolution, the held-out t statistic against its critical value, the residual against
    :data:`ABSOLUTE_FIT` noise ceilings."""
    def near(value: float, limit: float) -> bool:
        return bool(math.isfinite(value) and math.isfinite(limit) and limit > 0
                    and abs(value - limit) <= NEAR * limit)

    out = []
    if near(abs(ident["delta"]), ident["resolution"]):
        out.append("identifiability")
    v = heldout["all_runs"]
    if "difference" in v and v["difference"][1] > 0:
        if near(abs(v["difference"][0]) / v["difference"][1], v["critical_t"]):
            out.append("held-out t")
    nc = heldout.get("noise_ceiling")
    if nc and dp and near(float(np.mean(dp)), ABSOLUTE_FIT * nc[0]):
        out.append("absolute fit")
    return out


# ----------------------------------------------------------------------------------------------
# change point of a curve (the onset of spread above tau*), with an interval over seeds


#: exponents of the rise after the knot: a square-root onset (a pitchfork: the spread of
#: Soft SupCon's prototypes above tau*) to a linear one
HINGE_POWERS = (0.25, 1 / 3, 0.5, 2 / 3, 1.0)


def _hinge_fit(x: np.ndarray, y: np.ndarray, grid: np.ndarray) -> float:
    """The knot ``x0`` of the least-squares fit ``y = a + b max(0, x - x0)^p`` with ``b >= 0``
    and ``p`` among :data:`HINGE_POWERS` (every knot of ``grid`` and power at once: a simple
    regression per pair, in closed form)."""
    yc = y - y.mean()
    syy = float(yc @ yc)
    base = np.maximum(0.0, x[None, :] - grid[:, None])  # (knots, samples)
    best = np.full(grid.size, syy)
    for p in HINGE_POWERS:
        H = base**p
        Hc = H - H.mean(axis=1, keepdims=True)
        sxx = np.einsum("ij,ij->i", Hc, Hc)
        sxy = Hc @ yc
        with np.errstate(divide="ignore", invalid="ignore"):
            sse = np.where((sxy > 0) & (sxx > 0), syy - sxy**2 / sxx, syy)
        best = np.minimum(best, sse)
    return float(grid[int(np.argmin(best))])


def knot(x: Sequence[float], y: Sequence[float], *, grid_points: int = 401) -> float:
    """The onset of a rise in one curve (:func:`_hinge_fit` over ``grid_points`` knots spanning
    ``x``)."""
    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    return _hinge_fit(xa, ya, np.linspace(xa.min(), xa.max(), grid_points))


def change_point(x_by_seed: Sequence[Sequence[float]], y_by_seed: Sequence[Sequence[float]], *,
                 grid_points: int = 401) -> dict[str, Any]:
    """Onset of a rise: the knot of a hinge fit (:func:`_hinge_fit`) to every seed's curve
    pooled (``value``), the knot of each seed's own curve (``per_seed``) and a Student-t
    interval (:data:`CONFIDENCE`) over the per-seed knots.

    >>> x = [[0.5, 0.75, 1, 1.25, 1.5, 2]] * 3
    >>> y = [[0, 0, 0, 0.1, 0.2, 0.4], [0, 0.01, 0, 0.1, 0.21, 0.4], [0.01, 0, 0, 0.09, 0.2, 0.41]]
    >>> round(change_point(x, y)["value"], 1)
    1.0
    """
    X = [np.asarray(v, dtype=float) for v in x_by_seed]
    Y = [np.asarray(v, dtype=float) for v in y_by_seed]
    allx = np.concatenate(X)
    grid = np.linspace(allx.min(), allx.max(), grid_points)
    value = _hinge_fit(allx, np.concatenate(Y), grid)
    seeds = np.array([_hinge_fit(a, b, grid) for a, b in zip(X, Y, strict=True)])
    if seeds.size > 1:
        half = critical_t(seeds.size) * float(seeds.std(ddof=1)) / math.sqrt(seeds.size)
        mid = float(seeds.mean())
        lo, hi = mid - half, mid + half
    else:
        lo = hi = value
    return {"value": value, "interval": [float(lo), float(hi)],
            "per_seed": [float(s) for s in seeds]}


# ----------------------------------------------------------------------------------------------
# summaries over seeds


def mean_sd(values: Sequence[float | None]) -> list[float] | None:
    v = np.asarray([x for x in values if x is not None], dtype=float)
    if v.size == 0:
        return None
    return [float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0]


def summarise(runs: Sequence[dict[str, Any]], keys: Sequence[str]) -> list[dict[str, Any]]:
    """Mean and standard deviation of ``keys`` over **all** runs of each condition, and the same
    over its converged runs (``converged_only``).

    Each row holds ``condition``, ``n_seeds``, ``trained``, ``n_converged`` and, for each key,
    ``[mean, sd]`` (null when no run has a value). Runs without training (untrained encoder, raw
    pixels: ``converged`` is None) count as converged.
    """
    rows = []
    for cond in dict.fromkeys(r["condition"] for r in runs):
        group = [r for r in runs if r["condition"] == cond]
        conv = [r for r in group if r.get("converged") is not False]
        row: dict[str, Any] = {
            "condition": cond,
            "n_seeds": len(group),
            "trained": any(r.get("converged") is not None for r in group),
            "n_converged": sum(1 for r in group if r.get("converged")),
        }
        for k in keys:
            row[k] = mean_sd([r.get(k) for r in group])
        row["converged_only"] = {k: mean_sd([r.get(k) for r in conv]) for k in keys}
        rows.append(row)
    return rows
