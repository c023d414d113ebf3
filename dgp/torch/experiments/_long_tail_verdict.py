r"""The verdict of ``dgp verify long-tail-targets`` (:mod:`dgp.torch.experiments.long_tail`)
from its run records, and the section of ``docs/results.md`` written from its report: the
decision rule (:data:`RULE`), paired by seed, Holm-corrected, with the identifiability of the
two target configurations and the permuted-label control. No torch here: a report can be judged
and written without training."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dgp.torch.experiments.statistics import critical_t, holm, one_sample_verdict

__all__ = ["CONDITIONS", "CONTROLS", "RULE", "long_tail_verdict", "results_markdown"]

#: the three trained conditions (dgp's targets first: every comparison is against it)
CONDITIONS = ("dgp targets", "TSC targets", "SupCon")
#: the control: both target conditions on permuted training labels
CONTROLS = ("dgp targets, permuted labels", "TSC targets, permuted labels")

#: the decision rule, stated before any number (docs/results.md repeats it)
RULE = (
    "Decision rule (stated before the numbers): dgp's targets win over an alternative (TSC "
    "targets; plain SupCon) when the paired 95% Student-t interval over seeds of the held-out "
    "balanced-accuracy difference (dgp targets minus the alternative, paired by seed) lies "
    "above 0 after Holm's correction over the two comparisons; the alternative wins ('against') "
    "when it lies below 0; otherwise 'undecided', or 'uninformative' where the two target "
    "configurations' SupCon loss gap is within what training resolves. Tail accuracy is "
    "secondary and decides nothing. Control: the same dgp-vs-TSC comparison on permuted training "
    "labels must not come out for dgp's targets."
)


# ----------------------------------------------------------------------------------------------
# the verdict


def _interval(values: list[float]) -> dict[str, Any]:
    v = np.asarray(values, dtype=float)
    n = v.size
    mean = float(v.mean()) if n else math.nan
    if n < 2:
        return {"mean": mean, "interval": None, "n": n}
    half = critical_t(n) * float(v.std(ddof=1)) / math.sqrt(n)
    return {"mean": mean, "interval": [mean - half, mean + half], "n": n}


def _paired(runs: list[dict[str, Any]], a: str, b: str, key: str,
            names: tuple[str, str]) -> dict[str, Any]:
    """``key`` of condition ``a`` minus that of ``b``, paired by seed (seeds present in both)."""
    va = {r["seed"]: r for r in runs if r["condition"] == a}
    vb = {r["seed"]: r for r in runs if r["condition"] == b}
    common = sorted(set(va) & set(vb))
    diffs = [va[s][key] - vb[s][key] for s in common]
    v = one_sample_verdict(diffs, names)
    if "difference" in v:
        mean, se = v["difference"]
        v["interval"] = [mean - v["critical_t"] * se, mean + v["critical_t"] * se]
    v["per_seed"] = diffs
    conv = [s for s in common if va[s].get("converged") and vb[s].get("converged")]
    cv = one_sample_verdict([va[s][key] - vb[s][key] for s in conv], names)
    return {"supports": v["supports"], "all_runs": v, "converged_runs": cv,
            "not_converged": len(common) - len(conv)}


def long_tail_verdict(runs: list[dict[str, Any]], identifiability: dict[str, Any]
                      ) -> dict[str, Any]:
    """The verdicts of :data:`RULE` from the run records (``condition``, ``seed``,
    ``balanced_accuracy``, ``tail_accuracy``, ``supcon_loss``, ``converged``) and the
    identifiability of the two target configurations (``delta``: the TSC configuration's SupCon
    loss minus dgp's, per anchor)."""
    ident = dict(identifiability)
    spreads = [float(np.std([r["supcon_loss"] for r in runs if r["condition"] == c], ddof=1))
               for c in CONDITIONS[:2]
               if sum(r["condition"] == c for r in runs) > 1]
    ident["resolution"] = max(spreads) if spreads else math.nan
    ident["informative"] = bool(spreads) and abs(ident["delta"]) > ident["resolution"]
    ident["loss_prefers"] = "dgp targets" if ident["delta"] > 0 else "TSC targets"
    comparisons = []
    for alt in CONDITIONS[1:]:
        names = (CONDITIONS[0], alt)
        comparisons.append({
            "comparison": f"{CONDITIONS[0]} vs {alt}",
            "alternative": alt,
            "heldout": _paired(runs, CONDITIONS[0], alt, "balanced_accuracy", names),
            "tail": _paired(runs, CONDITIONS[0], alt, "tail_accuracy", names),
        })
        comparisons[-1]["supports"] = comparisons[-1]["heldout"]["supports"]
    comparisons = holm(comparisons)
    for c in comparisons:
        if c["supports"] == c["alternative"]:
            c["verdict"] = "against"
        elif c["supports"] == CONDITIONS[0]:
            c["verdict"] = CONDITIONS[0]
        else:
            c["verdict"] = "undecided"
    main = comparisons[0]
    main["identifiability"] = ident
    if main["verdict"] == "undecided" and not ident["informative"]:
        main["verdict"] = "uninformative"
    control = _paired(runs, CONTROLS[0], CONTROLS[1], "balanced_accuracy", CONDITIONS[:2])
    falsifiable = control["supports"] != CONDITIONS[0]
    head = main["verdict"]
    out: dict[str, Any] = {
        "rule": RULE,
        "criterion": RULE,
        "per_condition": {
            cond: {k: _interval([r[k] for r in runs if r["condition"] == cond])
                   for k in ("balanced_accuracy", "tail_accuracy")}
            for cond in dict.fromkeys(r["condition"] for r in runs)
        },
        "comparisons": comparisons,
        "identifiability": ident,
        "control": {
            "condition": f"{CONTROLS[0]} vs {CONTROLS[1]}",
            "inputs": "permuted training labels (class sizes kept): nothing carries over to "
                      "the held-out labels",
            "heldout": control,
            "supports": control["supports"],
            "falsifiable": falsifiable,
        },
        "supports": head,
    }
    if not falsifiable and head == CONDITIONS[0]:
        out["supports"] = "undecided"
        out["why"] = "the permuted-label control came out for dgp's targets"
    return out


# ----------------------------------------------------------------------------------------------
# the results page


def _pm(m: dict[str, Any]) -> str:
    ci = m.get("interval")
    return f"{m['mean']:.3f}" + (f" ({ci[0]:.3f} to {ci[1]:.3f})" if ci else "")


def _diff(v: dict[str, Any]) -> str:
    if "interval" not in v:
        return f"no interval ({v.get('why', 'fewer than 2 seeds')})"
    lo, hi = v["interval"]
    return f"{v['difference'][0]:+.3f} (95% {lo:+.3f} to {hi:+.3f}, p = {v['p_value']:.2g})"


def results_markdown(report: dict[str, Any]) -> str:
    """The section of ``docs/results.md`` for one ``long-tail-targets`` report (its JSON): the
    decision rule first, then the setting, the accuracies with their 95% intervals over seeds,
    the paired comparisons, the identifiability and the control, every number from the report.
    """
    sup, cfg = report["supports"], report["config"]
    setting = cfg["setting"]
    tail = ", ".join(f"class {c} ({n} images)" for c, n in
                     zip(cfg["tail_classes"], cfg["tail_sizes"], strict=True))
    conv = {r["condition"]: f"{r['n_converged']}/{r['n_seeds']}" for r in report["summary"]}
    lines = [
        f"**{sup['rule']}**",
        "",
        f"Data: {cfg['data']}, training sizes {cfg['sizes']} (ratio {cfg['ratio']:g}, "
        f"{cfg['profile']}), {cfg['heldout_per_class']} held-out images per class (balanced); "
        f"tail: {tail}. Encoder: {cfg['encoder']}; {setting['steps']} Adam steps of uniform "
        f"batches of {setting['batch_size']}, lr {setting['lr']:g}, tau = {cfg['tau']:g}, "
        f"d = {cfg['dim']}; seeds {report['seeds']} (each its own images, initialisation and "
        f"batches, shared by the conditions: paired). Targets: dgp, "
        f"{cfg['targets']['dgp targets']}; TSC, {cfg['targets']['TSC targets']}; "
        f"{cfg['targets']['rotation']}. Probe: {cfg['probe']}. Device {report['device']}.",
        "",
        "| condition | conv | held-out balanced accuracy (95%) | tail accuracy (95%) |",
        "|---|---|---|---|",
    ]
    for cond, per in sup["per_condition"].items():
        lines.append(f"| {cond} | {conv.get(cond, '-')} | {_pm(per['balanced_accuracy'])} | "
                     f"{_pm(per['tail_accuracy'])} |")
    lines.append("")
    for c in sup["comparisons"]:
        lines.append(f"- {c['comparison']}: **{c['verdict']}**; balanced-accuracy difference "
                     f"{_diff(c['heldout']['all_runs'])}, Holm-adjusted p = "
                     f"{c.get('p_holm', 1.0):.2g}; tail accuracy (secondary) "
                     f"{_diff(c['tail']['all_runs'])}.")
    i = sup["identifiability"]
    lines.append(
        f"- Identifiability: the TSC configuration's SupCon loss minus dgp's, each class "
        f"collapsed on its target, is {i['delta']:.2g} nats per anchor (dgp's solver: "
        f"{i['solver_simplex_gap']:.2g}) against a resolution of {i['resolution']:.2g} (the "
        f"seed-to-seed spread of the runs' own SupCon loss): "
        + ("the loss can tell the two target sets apart."
           if i["informative"] else "the loss cannot tell the two target sets apart."))
    ctrl = sup["control"]
    lines.append(f"- Control ({ctrl['condition']}, {ctrl['inputs']}): {ctrl['supports']}, "
                 f"difference {_diff(ctrl['heldout']['all_runs'])}; "
                 + ("it does not confirm." if ctrl["falsifiable"]
                    else "**it confirms: no evidence.**"))
    lines += ["", f"**Supports: {sup['supports']}.**"
              + (f" ({sup['why']})" if sup.get("why") else "")]
    return "\n".join(lines)
