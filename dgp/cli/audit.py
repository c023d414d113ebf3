"""``dgp audit MODULE:CALLABLE``: recover and classify the weighting a torch loss optimises.

One autograd call at orthonormal embeddings (every softmax uniform) gives the symmetric part
``p + p^T`` of the loss's target distribution, which is all the loss depends on; the audit matches
it against the known objectives (catching the column-normalisation slip of public y-Aware code)
and classifies it. Needs the ``torch`` extra.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

import numpy as np

from dgp.cli._output import emit_json, table

__all__ = ["load_callable", "register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "audit",
        help="recover and classify the weighting a torch loss really optimises (torch extra)",
        description=(
            "Import loss(embeddings, labels) from MODULE:CALLABLE (a class is instantiated with "
            "no arguments), call it once at orthonormal embeddings, recover p + p^T from the "
            "gradient, match it against the known objectives and classify it. Example: "
            "dgp audit dgp.torch.audit_examples:y_aware_loss_public"
        ),
    )
    p.add_argument("target", metavar="MODULE:CALLABLE")
    p.add_argument("--n", type=int, default=12, help="number of samples (default 12)")
    p.add_argument(
        "--labels",
        default="continuous",
        metavar="KIND|FILE",
        help="continuous (default), classes, or a .npy/.csv label file",
    )
    p.add_argument("--tau", type=float, help="temperature (default: the loss's tau attribute)")
    p.add_argument("--similarity", choices=("auto", "cosine", "euclidean"), default="auto")
    p.add_argument("--dim", type=int, help="embedding dimension for the verdict (default N)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def load_callable(target: str):
    """Import ``MODULE:CALLABLE`` (the current directory is searched first).

    Raises
    ------
    ValueError
        If ``target`` is malformed, the module cannot be imported or lacks the attribute, or the
        attribute is not callable.
    """
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"target must look like MODULE:CALLABLE, got {target!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        if getattr(exc, "name", None) == "torch":
            raise
        raise ValueError(f"cannot import module {module_name!r}: {exc}") from None
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if isinstance(obj, type):
        obj = obj()
    if not callable(obj):
        raise ValueError(f"{target!r} is not callable")
    return obj


def run(args: argparse.Namespace) -> int:
    from dgp.torch import require_torch

    require_torch()
    from dgp.torch.audit import LABEL_KINDS, audit_loss, default_labels

    if args.n < 4:
        raise ValueError(f"--n must be >= 4, got {args.n}")
    if args.labels in LABEL_KINDS:
        labels = default_labels(args.labels, args.n)
    else:
        from dgp.io import load_array

        labels = load_array(args.labels, name="labels")
    loss_fn = load_callable(args.target)
    report = audit_loss(
        loss_fn,
        labels=labels,
        tau=args.tau,
        similarity=args.similarity,
        dim=args.dim,
        name=args.target,
    )
    out = report.to_dict()
    if args.json:
        emit_json(out)
        return 0
    print(
        f"audit of {args.target}: N = {report.n}, tau = {report.tau:g} ({report.tau_source}), "
        f"similarity {report.similarity}, reduction scale {report.reduction_scale:.4g}"
    )
    rows = [
        [
            c["objective"],
            c["use"],
            "" if c["value"] is None else f"{c['parameter']}={c['value']:.6g}",
            f"{c['error']:.3g}",
        ]
        for c in report.candidates
    ]
    print(table(rows, ["candidate", "weights used", "fitted", "rel. error of p+p^T"]))
    print(f"match: {report.match['objective'] if report.match else 'none'}")
    if report.classification is not None:
        c = report.classification
        print(f"verdict: {c['verdict']} ({c['classified']}): {c['reason']}")
    for w in report.warnings:
        print(f"warning: {w}")
    with np.printoptions(precision=3, suppress=True, linewidth=100):
        print("recovered p + p^T:")
        print(report.symmetric_part)
    return 0
