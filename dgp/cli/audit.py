"""``dgp audit MODULE:CALLABLE``: recover and classify the weighting a torch loss optimises.

**This imports and runs the named module**: its top-level code and the loss itself execute,
with your permissions. The audit runs in a child process, so that a loss that never returns is
stopped after ``--timeout`` seconds, its own prints go to stderr (``--json`` keeps stdout one
JSON object), and a crash of the loss does not take dgp with it. The current directory is not
put on the module search path unless asked (``--path .``). Between dgp and that child sits a
small supervisor, a child subreaper on Linux (``prctl(PR_SET_CHILD_SUBREAPER)``): whatever the
audited code starts, daemons that double-fork out of the session included, is reparented to it
and killed (found through ``/proc``) when the audit ends; elsewhere the child's process group is
killed.

The child probes the loss's gradient at several points and fits the w-InfoNCE model of
:mod:`dgp.torch.audit`. Exit status: 0 whatever it finds; 2 for bad input (a malformed
``MODULE:CALLABLE``, a module that does not exist, a bad flag or labels file, a probe that would
not fit in memory); 1 when the loss fails (it raises, recurses, has no gradient, fails to
import, does not return within ``--timeout``, or kills its process) or dgp itself fails.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Any

import numpy as np

from dgp.cli._audit_supervisor import descendants, run_child, supervise
from dgp.cli._audit_worker import UserCodeError, load_callable, split_target, worker
from dgp.cli._output import add_json_flag, emit_json, table
from dgp.constants import MATCH_RTOL
from dgp.errors import InputError

__all__ = [
    "DEFAULT_TIMEOUT",
    "DESCRIPTION",
    "HELP",
    "UserCodeError",
    "add_arguments",
    "descendants",
    "load_callable",
    "run",
    "supervise",
    "worker",
]

#: seconds an audit may take, import of the module included, before it is stopped
DEFAULT_TIMEOUT = 300.0

_WARNING = (
    "dgp audit IMPORTS AND RUNS the named module (its top-level code and the loss), in a child "
    "process stopped after --timeout seconds; audit only code you would run yourself."
)


#: ``dgp audit``: its line in ``dgp --help``
HELP = (
    "recover and classify the weighting a torch loss really optimises (runs the "
    "named code; torch extra)"
)

#: ``dgp audit``: what ``dgp audit --help`` says first
DESCRIPTION = (
    _WARNING + " It calls the loss at several probe embeddings, recovers its anchor "
    "weights and weighting from the gradients, matches them against the registered "
    "objectives, classifies the effective weighting and predicts its geometry. A "
    "class is instantiated with no arguments. Example: "
    "dgp audit pytorch_metric_learning.losses:SupConLoss"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", metavar="MODULE:CALLABLE",
                   help="the loss: a function or an nn.Module instance, or a class")
    p.add_argument("--n", type=int, default=12,
                   help="number of embeddings probed (two-view losses: n/2 samples, 2 views; "
                   "default 12)")
    p.add_argument(
        "--labels", default="auto", metavar="KIND|FILE",
        help="auto (default: continuous, then classes when continuous labels give no "
        "w-InfoNCE, then pairs/none), continuous, classes, pairs (SimCLR's positives), none, "
        "or a .npy/.csv label file (one label per sample)",
    )
    p.add_argument("--call", choices=("auto", "embeddings", "views", "pair"), default="auto",
                   help="how to call the loss: loss(embeddings, labels), loss(features "
                   "[b, 2, d], labels) or loss(z1, z2, labels); default: try them in turn")
    p.add_argument("--tau", type=float,
                   help="temperature (default: the loss's tau or temperature attribute, else "
                   "estimated from the probes; a given one that does not fit is replaced by "
                   "the estimate, with a warning naming both)")
    p.add_argument("--similarity", choices=("auto", "cosine", "euclidean"), default="auto",
                   help="latent similarity (default: detected from the gradient)")
    p.add_argument("--dim", type=int, help="embedding dimension for the verdict (default N)")
    p.add_argument("--match-rtol", type=float, default=MATCH_RTOL,
                   help="relative tolerance of the gradient model and of a match (default "
                   "1e-6; a loss that adds a small constant inside its log, or computes in "
                   "float32, may need a larger one)")
    p.add_argument("--probes", type=int, default=3, help="probe points (default 3)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help=f"stop the audit after this many seconds (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--path", action="append", default=[], metavar="DIR",
                   help="put DIR first on the module search path (repeatable; the current "
                   "directory is searched only when given as --path .)")
    add_json_flag(p)


# --------------------------------------------------------------------------------------------
# the parent


def _check(args: argparse.Namespace) -> None:
    """The command line's own flags; the audit's arguments (``--n``, ``--probes``,
    ``--match-rtol``, the memory) are checked by the child before it imports the module."""
    from dgp.errors import ParameterError

    split_target(args.target)
    if not (math.isfinite(args.timeout) and args.timeout > 0):
        raise ParameterError("timeout", f"must be a positive number of seconds, got "
                             f"{args.timeout:g}")
    for d in args.path:
        if not os.path.isdir(d):
            raise ParameterError("path", f"{d!r} is not a folder")


def _labels(spec: str) -> Any:
    if spec in ("auto", "continuous", "classes", "pairs", "none"):
        return spec
    from dgp.io import load_labels

    return load_labels(spec, name="labels").values.tolist()


def run(args: argparse.Namespace) -> int:
    _check(args)

    labels = _labels(args.labels)
    req = {"target": args.target, "labels": labels, "n": args.n, "tau": args.tau,
           "similarity": args.similarity, "call": args.call, "dim": args.dim,
           "match_rtol": args.match_rtol, "probes": args.probes}
    try:
        result = run_child(req, paths=args.path, timeout=args.timeout)
    except UserCodeError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    if "ok" not in result:
        return _raise(result)
    out = result["ok"]
    if args.json:
        emit_json(out)
        return 0
    print(_text(out))
    return 0


def _raise(result: dict[str, Any]) -> int:
    from dgp.errors import ParameterError, ParameterTypeError, SolverError

    kind = result.get("error")
    if kind == "parameter":
        cls = ParameterTypeError if result.get("type") else ParameterError
        raise cls(result["param"], result["detail"])
    if kind == "input":
        raise InputError(result["message"])
    if kind == "dgp":
        raise SolverError(result["message"])
    sys.stderr.write(f"error: {result.get('message', 'the audit failed')}\n")
    return 1


def _fmt(x: Any) -> str:
    return "-" if x is None else f"{x:.3g}"


def _text(out: dict[str, Any]) -> str:
    lines = [f"audit of {out['callable']}  ({_WARNING.split(' (')[0].lower()})"]
    kv = _rows(out)
    import textwrap

    from dgp.display import format_rows

    lines += format_rows(kv, width=79).splitlines()
    if out["candidates"]:
        rows = [[k["objective"], k["form"],
                 "" if k["value"] is None else f"{k['parameter']}={k['value']:.4g}",
                 _fmt(k["error"])] for k in out["candidates"][:6]]
        lines += ["", table(rows, ["candidate", "form", "fitted", "error"])]
    if out["effective_weights"] is not None and out["n"] <= 16:
        with np.printoptions(precision=3, suppress=True, linewidth=79):
            lines += ["", "effective weighting R (scaled to max 1):",
                      str(np.asarray(out["effective_weights"], dtype=float))]
    for w in out["warnings"]:
        lines += textwrap.wrap("warning: " + w, width=79, subsequent_indent="  ")
    return "\n".join(lines)


def _rows(out: dict[str, Any]) -> list[tuple[str, str]]:
    """The report's rows (label, text): what was called and found, then one row for each
    section the report holds (a section that is ``None`` has no row)."""
    call = {"embeddings": "loss(embeddings, labels)", "views": "loss(features [b, 2, d], labels)",
            "pair": "loss(z1, z2, labels)"}[out["call"]]
    kv = [("called as", f"{call}, N = {out['n']}"),
          ("labels", f"{out['labels']}: {out['labels_note']}"),
          ("temperature", _tau_text(out)),
          ("latent", f"{out['similarity']} ({out['similarity_source']})")]
    model = out["model"]
    if out["identified"]:
        kv.append(("model", f"w-InfoNCE, partition {model['partition']} (residual "
                   f"{model['residual']:.2g} over {out['probes']['count']} probes)"))
    else:
        kv.append(("model", f"not identified (best residual {model['residual']:.2g}, partition "
                   f"{model['partition']})"))
        kv += _section("form", out["named_form"], lambda named: (
            f"{named['form']}: {named['description']} (residual {named['residual']:.2g} at "
            f"tau = {named['tau_estimate']:.6g})"))
    if out["match"] is None and out["identified"]:
        kv.append(("match", "none within --match-rtol"))
    kv += _section("match", out["match"], _match_text)
    kv += _section("anchors", out["anchor_weights"], lambda weights: (
        f"weights {np.min(weights):.4g}..{np.max(weights):.4g} (mean 1); reduction scale "
        f"{out['reduction_scale']:.4g}"))
    kv += _section("verdict", out["classification"], lambda c: (
        f"{c['verdict']} (effective weighting, d = {c['dim']}): {c['reason']}"))
    kv += _section("geometry", out["geometry"], lambda geo: _geometry_text(geo, out))
    kv += _section("vs intended", out["intended"], _intended_text)
    return kv


def _section(label: str, section: Any, say: Any) -> list[tuple[str, str]]:
    """The row ``label`` saying ``say(section)``, or none when the report lacks the section."""
    return [] if section is None else [(label, say(section))]


def _tau_text(out: dict[str, Any]) -> str:
    text = f"{out['tau']:.6g} ({out['tau_source']}"
    if out["tau_given"] is not None and out["tau_source"] == "estimated":
        text += f"; the given {out['tau_given']:g} does not fit"
    return text + f"; estimate {out['tau_estimate']:.6g}, residual {out['tau_residual']:.2g})"


def _match_text(match: dict[str, Any]) -> str:
    par = "" if match["parameter"] is None else f" {match['parameter']}={match['value']:.6g}"
    return (f"{match['objective']}{par}, {match['form']}: {match['form_text']} (error "
            f"{match['error']:.2g})")


def _geometry_text(geo: dict[str, Any], out: dict[str, Any]) -> str:
    G = np.asarray(geo["gram"], dtype=float)
    off = G[~np.eye(len(G), dtype=bool)]
    what = "cosines" if out["similarity"] == "cosine" else "squared distances"
    return f"optimal {what} in [{off.min():.4g}, {off.max():.4g}] ({geo['reason']})"


def _intended_text(inten: dict[str, Any]) -> str:
    par = "".join(f" {k}={v:.4g}" for k, v in inten["params"].items())
    return (f"{inten['objective']}{par} ({inten['note']}): {inten['gap_measure']} "
            f"{inten['max_gap']:.3g}, similarity r^2 {inten['similarity_r2']:.4f}")
