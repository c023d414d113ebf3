"""``dgp verify``: train small encoders and compare the learned geometry with the prediction.

Needs the ``torch`` extra; figures need the ``plot`` extra.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from dgp.cli._output import emit_json, jsonable, table

__all__ = ["register", "run"]

EXPERIMENTS = ("supcon-imbalance", "continuous-labels")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "verify",
        help="train encoders and compare the learned geometry with the prediction (torch extra)",
        description=(
            "Train small encoders full-batch and compare the learned embeddings with the "
            "predicted optimum: supcon-imbalance (digits, SupCon and Soft SupCon vs "
            "dgp.supcon_prototypes and the simplex) or continuous-labels (blob images, "
            "Euclidean-Euclidean, y-Aware and X-CLR vs their predicted optima)."
        ),
    )
    p.add_argument("experiment", choices=EXPERIMENTS)
    p.add_argument("--quick", action="store_true", help="small CPU run (about a minute)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--out", metavar="DIR", help="write the JSON report (and figures) here")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dgp.torch import require_torch

    require_torch()
    from dgp.torch.experiments import run_experiment

    if args.seed < 0:
        raise ValueError(f"--seed must be >= 0, got {args.seed}")
    if args.out is not None and os.path.exists(args.out) and not os.path.isdir(args.out):
        raise ValueError(f"--out {args.out!r} exists and is not a directory")
    exp = run_experiment(
        args.experiment,
        quick=args.quick,
        seed=args.seed,
        device=args.device,
        progress=None if not args.json else False,
    )
    report = jsonable(exp.report)
    if args.out is not None:
        os.makedirs(args.out, exist_ok=True)
        path = os.path.join(args.out, f"{args.experiment}.json")
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=2)
        from dgp.torch.plots import save_figures

        figures = save_figures(exp, args.out)
        if not args.json:
            sys.stderr.write(f"wrote {path}" + "".join(f", {f}" for f in figures) + "\n")
    if args.json:
        emit_json(report)
        return 0
    cfg = report["config"]
    print(f"{report['experiment']} on {report['device']} ({'quick' if args.quick else 'full'})")
    print(", ".join(f"{k}={v}" for k, v in cfg.items() if k not in ("data",)))
    cols = ["objective", "procrustes_r2", "similarity_r2", "entropic_gap", "predicted_entropic_gap"]
    if report["experiment"] == "supcon-imbalance":
        cols.append("simplex_procrustes_r2")
    else:
        cols.append("verdict")

    def fmt(v: object) -> str:
        if isinstance(v, float):
            return f"{v:.4f}"
        return "n/a" if v is None else str(v)

    print(table([[fmt(r.get(c)) for c in cols] for r in report["runs"]], cols))
    return 0
