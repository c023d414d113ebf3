"""``dgp verify``: train CNNs with mini-batches and test the predicted geometry.

Needs the ``torch`` extra; full mode reads MNIST (``mnist`` extra); figures need ``plot``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import textwrap
from typing import Any

from dgp.cli._output import emit_json, jsonable, table

__all__ = ["EXPERIMENTS", "register", "run"]

EXPERIMENTS = (
    "supcon-imbalance",
    "batch-size",
    "soft-supcon-tau",
    "continuous-labels",
    "controls",
)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "verify",
        help="train CNNs and test the predicted geometry (torch extra)",
        description=(
            "Train CNNs with mini-batches (several seeds, held-out images) and test dgp's "
            "predictions against the alternatives they compete with: supcon-imbalance, "
            "batch-size, soft-supcon-tau, continuous-labels, controls, or all. --quick: "
            "scikit-learn digits on CPU; full mode: 5000 MNIST digits (mnist extra), meant for "
            "a GPU."
        ),
    )
    p.add_argument(
        "experiment",
        choices=(*EXPERIMENTS, "all"),
        metavar="EXPERIMENT",
        help=f"one of {', '.join(EXPERIMENTS)}, or all",
    )
    p.add_argument("--quick", action="store_true", help="small CPU run (digits, 3 seeds)")
    p.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--out", metavar="DIR", help="write the JSON reports and figures here")
    p.add_argument("--data", metavar="FILE", help=".npz with X (or images/features) and y")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=run)


def _writable(out: str) -> None:
    """Create ``out`` and check that a file can be written there, before any training."""
    if os.path.exists(out) and not os.path.isdir(out):
        raise ValueError(f"out {out!r} exists and is not a directory")
    try:
        os.makedirs(out, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".dgp-write-test-"):
            pass
    except OSError as exc:
        raise ValueError(f"out {out!r} is not writable ({exc.strerror or exc})") from None


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


#: columns of each experiment's table (summary keys), chosen to fit 80 columns
_COLUMNS = {
    "supcon-imbalance": ("gram_rms_error", "simplex_gram_rms_error", "heldout_gram_rms_error"),
    "batch-size": ("batch_rms_error", "full_rms_error", "loss_excess"),
    "soft-supcon-tau": ("mean_cosine", "gram_rms_error", "simplex_gram_rms_error"),
    "continuous-labels": ("procrustes_r2", "label_procrustes_r2", "knn_r2"),
    "controls": ("heldout_gram_rms_error", "heldout_procrustes_r2", "knn_r2"),
}
_SHORT = {
    "gram_rms_error": "G err",
    "simplex_gram_rms_error": "simplex err",
    "heldout_gram_rms_error": "held-out err",
    "batch_rms_error": "vs batch",
    "full_rms_error": "vs full",
    "loss_excess": "excess",
    "mean_cosine": "mean cos",
    "procrustes_r2": "r2 pred",
    "label_procrustes_r2": "r2 labels",
    "knn_r2": "kNN R2",
    "heldout_procrustes_r2": "held-out r2",
}


def _conv(row: dict[str, Any]) -> str:
    """Converged/seeds; "-" for rows that are not trained (untrained encoder, raw pixels)."""
    if not row["trained"]:
        return "-"
    return f"{row['n_converged']}/{row['n_seeds']}"


def format_report(report: dict[str, Any]) -> str:
    """The summary table of one experiment (mean±sd over converged seeds) and its verdict."""
    name = report["experiment"]
    mode = "quick" if report["quick"] else "full"
    lines = [f"{name} on {report['device']} ({mode}, seeds {report['seeds']})"]
    cols = _COLUMNS[name]
    rows = [
        [r["condition"], _conv(r), *(_fmt(r.get(c)) for c in cols)]
        for r in report["summary"]
    ]
    lines.append(table(rows, ["condition", "conv", *(_SHORT[c] for c in cols)]))
    lines.append(f"supports: {report['supports']['supports']}")
    for k, v in report.get("not_run", {}).items():
        lines.append(textwrap.fill(f"not run: {k} ({v})", width=80, subsequent_indent="  "))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from dgp.torch import require_torch

    require_torch()
    from dgp.torch import data as datasets
    from dgp.torch.experiments import applicable, run_all, run_experiment
    from dgp.torch.training import resolve_device

    if args.seed < 0:
        raise ValueError(f"seed must be >= 0, got {args.seed}")
    resolve_device(args.device)  # fail now, not after the first experiment
    if args.out is not None:
        _writable(args.out)
    data = datasets.load_npz(args.data) if args.data is not None else None
    progress = False if (args.json or args.quiet) else None
    opts = {"quick": args.quick, "seed": args.seed, "device": args.device, "progress": progress}
    if args.experiment == "all":
        results = list(run_all(data=data, **opts))
    else:
        why = applicable(args.experiment, data)
        if why is not None:
            raise ValueError(f"experiment {args.experiment} {why}")
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
            with open(path, "w", encoding="utf-8") as fh:
                json.dump(report, fh, indent=2)
            written += [path, *save_figures(exp, args.out)]
        if not (args.json or args.quiet):
            sys.stderr.write("wrote " + ", ".join(written) + "\n")
    if args.experiment == "all":
        device = reports[0]["device"] if reports else str(resolve_device(args.device))
        combined = {
            "experiment": "all",
            "device": device,
            "quick": bool(args.quick),
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
