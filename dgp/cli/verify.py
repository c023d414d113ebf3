"""``dgp verify``: train CNNs with mini-batches and test the predicted geometry.

Needs the ``torch`` extra; full mode reads MNIST (``mnist`` extra); figures need ``plot``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from typing import Any

from dgp.cli._output import FileArg, add_json_flag, atomic_output, emit_json, jsonable, quiet, table
from dgp.errors import InputError

__all__ = ["DESCRIPTION", "EXPERIMENTS", "HELP", "add_arguments", "run"]

EXPERIMENTS = (
    "supcon-imbalance",
    "batch-size",
    "soft-supcon-tau",
    "continuous-labels",
    "controls",
    "sample-batch",
    "long-tail-targets",
)


#: ``dgp verify``: its line in ``dgp --help``
HELP = "train CNNs and test the predicted geometry (torch extra)"

#: ``dgp verify``: what ``dgp verify --help`` says first
DESCRIPTION = (
    "Train CNNs with mini-batches (several seeds, held-out images) and test dgp's "
    "predictions against the alternatives they compete with: supcon-imbalance, "
    "batch-size, soft-supcon-tau, continuous-labels, controls, sample-batch, "
    "long-tail-targets, or all (every one but long-tail-targets). --quick: "
    "scikit-learn digits on CPU; full mode: 5000 MNIST digits (mnist extra), meant for "
    "a GPU. long-tail-targets (mnist extra) reads MNIST in every mode and is sized for "
    "a CPU: about 10 minutes by default, under a minute with --quick."
)

#: ``dgp verify``: what ``dgp verify --help`` says last
EPILOG = (
    "Verdicts, per comparison of a prediction with its alternative: the winner's name "
    "(decided on held-out images over all seeds, Student t 95%, Holm over the "
    "experiment's comparisons); undecided; uninformative (the two geometries' expected "
    "batch losses differ by less than what training resolves: no geometry is evidence "
    "for either); against (the alternative has the lower loss, or the runs beat the "
    "prediction's loss); neither (the prediction wins but stays more than 3 noise "
    "ceilings from the held-out Gram); tie (held-out data cannot tell two equiangular "
    "levels apart: see the level on training images); boundary (tau*: both regimes "
    "meet); coincide (the prediction is the alternative). docs/results.md explains "
    "each rule and shows the published runs."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "experiment",
        choices=(*EXPERIMENTS, "all"),
        metavar="EXPERIMENT",
        help=f"one of {', '.join(EXPERIMENTS)}, or all (all but long-tail-targets)",
    )
    p.add_argument("--quick", action="store_true",
                   help="small CPU run (digits, 3 seeds); the same as --mode quick")
    p.add_argument(
        "--mode", choices=("quick", "mnist-cpu", "full"), default=None,
        help="quick: 8x8 digits on CPU (minutes); mnist-cpu: 28x28 MNIST on CPU, five seeds "
             "(supcon-imbalance about 8 min, the three class experiments about 26 min of one "
             "core); full: MNIST, larger CNN, meant for a GPU (the default without --quick)",
    )
    p.add_argument(
        "--taus", metavar="M1,M2,...", type=_multiples, default=None,
        help="soft-supcon-tau: the multiples of tau* to train (default "
             "0.5,0.75,0.9,1,1.1,1.25,1.5,2)",
    )
    p.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--out", metavar="DIR", type=FileArg("output", "folder"),
                   help="write the JSON reports and figures here")
    p.add_argument("--data", metavar="FILE", type=FileArg("input"),
                   help=".npz with X (or images/features) and y")
    add_json_flag(p)
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def _multiples(text: str) -> tuple[float, ...]:
    """``--taus``: at least three positive, finite multiples of tau*."""
    import math

    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated multiples of tau*, e.g. 0.5,1,1.5; got {text!r}"
        ) from None
    if len(set(values)) < 3 or not all(math.isfinite(v) and v > 0 for v in values):
        raise argparse.ArgumentTypeError(
            f"give at least three distinct positive multiples of tau*, got {text!r}"
        )
    return values


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, list) and len(v) == 2:
        if v[0] != 0 and abs(v[0]) < 0.01:  # loss excesses: nats per anchor, often 1e-4
            return f"{v[0]:.1e}±{v[1]:.0e}"
        return f"{v[0]:.3f}±{v[1]:.3f}"
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


#: columns of each experiment's table (summary keys, mean±sd over all seeds), to fit 80 columns
_COLUMNS = {
    "supcon-imbalance": ("heldout_gram_rms_error", "heldout_simplex_gram_rms_error",
                         "gram_rms_error"),
    "batch-size": ("heldout_batch_rms_error", "heldout_full_rms_error", "loss_excess"),
    "soft-supcon-tau": ("heldout_mean_cosine", "heldout_cosine_spread", "gram_rms_error"),
    "continuous-labels": ("heldout_procrustes_r2", "heldout_label_procrustes_r2", "knn_r2"),
    "controls": ("heldout_gram_rms_error", "heldout_procrustes_r2", "knn_r2"),
    "sample-batch": ("heldout_procrustes_r2", "heldout_full_batch_procrustes_r2",
                     "loss_excess"),
    "long-tail-targets": ("balanced_accuracy", "tail_accuracy", "supcon_loss"),
}
_SHORT = {
    "gram_rms_error": "train err",
    "heldout_gram_rms_error": "held err",
    "heldout_simplex_gram_rms_error": "held simplex",
    "heldout_batch_rms_error": "held vs batch",
    "heldout_full_rms_error": "held vs full",
    "loss_excess": "excess",
    "heldout_mean_cosine": "held cos",
    "heldout_cosine_spread": "held spread",
    "heldout_procrustes_r2": "held r2 pred",
    "heldout_label_procrustes_r2": "held r2 lab",
    "knn_r2": "kNN R2",
    "heldout_full_batch_procrustes_r2": "held r2 full",
    "balanced_accuracy": "held bal acc",
    "tail_accuracy": "held tail acc",
    "supcon_loss": "SupCon loss",
}


#: what the short column names mean (mean ± sd over all seeds)
_LEGEND = {
    "supcon-imbalance": "held err / held simplex: RMS distance of the held-out prototype Gram to "
                        "the prediction / to the simplex; train err: to the prediction, on "
                        "training images.",
    "batch-size": "held vs batch / held vs full: RMS distance of the held-out prototype Gram to "
                  "the expected-batch / full-batch prediction; excess: the runs' expected batch "
                  "loss above the prediction's (nats/anchor).",
    "soft-supcon-tau": "held cos / held spread: mean and spread of the held-out prototype "
                       "cosines; train err: RMS distance to the prediction on training images.",
    "continuous-labels": "held r2 pred / held r2 lab: held-out Procrustes r2 against the "
                         "prediction / the labels' own geometry; kNN R2: of the held-out label.",
    "controls": "held err: RMS distance of the held-out prototype Gram to the prediction; held "
                "r2: held-out Procrustes r2 against it; kNN R2: of the held-out label.",
    "sample-batch": "held r2 pred / held r2 full: held-out Procrustes r2 against the "
                    "expected-batch / full-batch prediction; excess: the runs' expected batch "
                    "loss above the prediction's (nats/anchor, fresh batches).",
    "long-tail-targets": "held bal acc / held tail acc: held-out balanced accuracy / accuracy "
                         "on the tail classes of the nearest-class-mean probe fitted on the "
                         "training embeddings; SupCon loss: the runs' SupCon loss per anchor "
                         "on their training set (nats).",
}


def _conv(row: dict[str, Any]) -> str:
    """Converged/seeds; "-" for rows that are not trained (untrained encoder, raw pixels)."""
    if not row["trained"]:
        return "-"
    return f"{row['n_converged']}/{row['n_seeds']}"


def _nats(v: float | None) -> str:
    return "-" if v is None or v != v else f"{v:.1e}"


def _comparison(label: str, c: dict[str, Any]) -> str:
    """One comparison: its verdict, the held-out advantage and the identifiability."""
    if "identifiability" not in c:
        return f"{label}: {c['supports']}" + (f" ({c['why']})" if c.get("why") else "")
    ident = c["identifiability"]
    gap = (f"loss gap {_nats(ident['delta'])} vs resolution {_nats(ident['resolution'])} "
           "nats/anchor")
    if c["supports"] == "tie":
        lvl = c.get("train_level", {}).get("supports")
        level = f"; level on training images: {lvl}" if lvl else ""
        return f"{label}: tie on held-out data ({gap}{level})"
    diff = c["heldout"]["all_runs"].get("difference")
    adv = f"held-out advantage {diff[0]:.3g}±{diff[1]:.2g}, " if diff else ""
    near = c.get("near_threshold")
    return (
        f"{label}: {c['supports']} ({adv}{gap})"
        + (f", near its threshold ({', '.join(near)})" if near else "")
    )


def _imbalance_lines(sup: dict[str, Any]) -> list[str]:
    lines = [_comparison(f"{c['condition']} vs simplex", c) for c in sup["comparisons"]]
    ctrl = sup["control"]
    lines.append(_comparison("control (noise inputs)", ctrl)
                 + (" - passes: it does not confirm" if ctrl["falsifiable"]
                    else "  <- the control confirms: no evidence"))
    return lines


def _tau_lines(sup: dict[str, Any]) -> list[str]:
    est = sup["tau_star_estimate"]
    lo, hi = est["interval"]
    lines = []
    if est.get("located", True):
        cal = est.get("predicted_by_estimator")
        inside = "contains" if est["contains_prediction"] else "excludes"
        lines.append(
            f"tau* located at {est['value']:.3g} (95% interval {lo:.3g}-{hi:.3g}); "
            f"predicted {est['predicted']:.3g}, {cal:.3g} by the same fit on the predicted "
            f"curve: the interval {inside} it"
        )
    else:
        lines.append(f"tau* not located: {est['why']}")
    return lines + [_comparison(f"{c['tau_over_tau_star']:g} tau* vs simplex", c)
                    for c in sup["per_tau"]]


def _controls_lines(sup: dict[str, Any]) -> list[str]:
    return [f"{setting} images vs controls: "
            + ", ".join(f"{k}: {v['supports']}" for k, v in per.items())
            for setting, per in sup.items() if isinstance(per, dict)]


def _interval_text(d: dict[str, Any]) -> str:
    v = d["all_runs"]
    if "interval" not in v:
        return f"{v['supports']} ({v.get('why', 'no interval')})"
    lo, hi = v["interval"]
    return f"{v['difference'][0]:+.3f} (95% {lo:+.3f} to {hi:+.3f}, n = {v['n']})"


def _long_tail_lines(sup: dict[str, Any]) -> list[str]:
    lines = []
    for cond, per in sup["per_condition"].items():
        parts = []
        for key, label in (("balanced_accuracy", "balanced"), ("tail_accuracy", "tail")):
            m = per[key]
            ci = m["interval"]
            parts.append(f"{label} {m['mean']:.3f}" + (
                f" (95% {ci[0]:.3f}-{ci[1]:.3f})" if ci else ""))
        lines.append(f"{cond}: held-out accuracy " + ", ".join(parts))
    for c in sup["comparisons"]:
        line = (f"{c['comparison']}: {c['verdict']}; balanced-accuracy difference "
                f"{_interval_text(c['heldout'])}, Holm p {c.get('p_holm', 1.0):.2g}; tail "
                f"(secondary) {_interval_text(c['tail'])}")
        if "identifiability" in c:
            i = c["identifiability"]
            line += (f"; targets' SupCon loss gap {_nats(i['delta'])} vs resolution "
                     f"{_nats(i['resolution'])} nats/anchor")
        lines.append(line)
    ctrl = sup["control"]
    lines.append(f"control ({ctrl['condition']}): {ctrl['supports']}, difference "
                 f"{_interval_text(ctrl['heldout'])}"
                 + (" - passes: it does not confirm" if ctrl["falsifiable"]
                    else "  <- the control confirms: no evidence"))
    return lines


#: the verdict lines of each experiment, from its ``supports``
_VERDICT_LINES = {
    "supcon-imbalance": _imbalance_lines,
    "batch-size": lambda sup: [
        _comparison(f"B={c['batch_size']} expected vs full batch", c)
        for c in sup["per_batch_size"]],
    "soft-supcon-tau": _tau_lines,
    "continuous-labels": lambda sup: [
        _comparison(f"{c['condition']} vs {c.get('compared_with', 'labels')}", c)
        for c in sup["per_objective"]],
    "controls": _controls_lines,
    "sample-batch": lambda sup: [
        _comparison(f"{c['condition']}: expected vs full batch", c)
        for c in sup["per_condition"]],
    "long-tail-targets": _long_tail_lines,
}


def verdict_lines(report: dict[str, Any]) -> list[str]:
    """The comparisons of one experiment, one line each."""
    lines = _VERDICT_LINES[report["experiment"]](report["supports"])
    return [textwrap.fill(x, width=80, subsequent_indent="  ") for x in lines]


def format_report(report: dict[str, Any]) -> str:
    """The summary table of one experiment (mean±sd over all seeds) and its verdicts."""
    name = report["experiment"]
    mode = report.get("mode", "quick" if report["quick"] else "full")
    lines = [f"{name} on {report['device']} ({mode}, seeds {report['seeds']})"]
    if "rule" in report["supports"]:  # a decision rule is stated before any number
        lines.append(textwrap.fill(report["supports"]["rule"], width=80))
    cols = _COLUMNS[name]
    rows = [
        [r["condition"], _conv(r), *(_fmt(r.get(c)) for c in cols)]
        for r in report["summary"]
    ]
    lines.append(table(rows, ["condition", "conv", *(_SHORT[c] for c in cols)]))
    lines.append(textwrap.fill(_LEGEND[name], width=80))
    if "criterion" in report["supports"]:
        lines.extend(verdict_lines(report))
    lines.append(textwrap.fill(
        f"supports: {report['supports']['supports']}"
        + (f" ({report['supports']['why']})" if report["supports"].get("why") else ""),
        width=80, subsequent_indent="  "))
    for k, v in report.get("not_run", {}).items():
        lines.append(textwrap.fill(f"not run: {k} ({v})", width=80, subsequent_indent="  "))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from dgp.torch import require_torch

    require_torch()
    from dgp.torch import data as datasets
    from dgp.torch.experiments import OPTIONS, applicable, run_all, run_experiment
    from dgp.torch.training import resolve_device

    if args.seed < 0:
        raise InputError(f"seed must be >= 0, got {args.seed}")
    resolve_device(args.device)  # fail now, not after the first experiment
    if args.quick and args.mode not in (None, "quick"):
        raise InputError(f"--quick and --mode {args.mode} contradict each other; give one")
    if args.taus is not None and args.experiment not in (OPTIONS["taus"], "all"):
        raise InputError(f"--taus applies to {OPTIONS['taus']}, not to {args.experiment}")
    from dgp.torch.experiments import MODES

    mode = "quick" if args.quick else (args.mode or "full")
    data = datasets.load_npz(args.data) if args.data is not None else None
    progress = False if quiet(args) else None
    opts = {"quick": mode == "quick", "seed": args.seed, "device": args.device,
            "progress": progress, "budget": MODES[mode], "taus": args.taus}
    if args.experiment == "all":
        results = list(run_all(data=data, **opts))
    else:
        why = applicable(args.experiment, data)
        if why is not None:
            raise InputError(f"experiment {args.experiment} {why}")
        results = [(args.experiment, run_experiment(args.experiment, data=data, **opts))]
    reports = [jsonable(exp.report) for _, exp in results if not isinstance(exp, str)]
    skipped = {name: exp for name, exp in results if isinstance(exp, str)}
    if args.out is not None:
        from dgp.torch.plots import save_figures

        written = []
        for (name, exp), report in zip(
            [(n, e) for n, e in results if not isinstance(e, str)], reports, strict=True
        ):
            path = os.path.join(args.out, f"{name}.json")
            with atomic_output(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
                json.dump(report, fh, indent=2)
            written += [path, *save_figures(exp, args.out)]
        if not quiet(args):
            sys.stderr.write("wrote " + ", ".join(written) + "\n")
    if args.experiment == "all":
        device = reports[0]["device"] if reports else str(resolve_device(args.device))
        combined = {
            "experiment": "all",
            "device": device,
            "quick": mode == "quick",
            "mode": mode,
            "experiments": reports,
            "skipped": skipped,
            "runs": [{"experiment": r["experiment"], **run} for r in reports for run in r["runs"]],
            "supports": {r["experiment"]: r["supports"]["supports"] for r in reports},
        }
    else:
        combined = reports[0]
    if args.json:
        emit_json(combined)
        return 0
    for report in reports:
        print(format_report(report))
        print()
    for name, why in skipped.items():
        print(textwrap.fill(f"{name}: not run ({why})", width=80, subsequent_indent="  "))
    return 0
