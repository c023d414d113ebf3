"""``dgp classify``: the verdict on a weight matrix, or on a named objective built from labels."""

from __future__ import annotations

import argparse
import sys

import numpy as np

from dgp.classification import METHODS, classify, weighting
from dgp.cli._inputs import (
    add_search_arguments,
    add_weights_arguments,
    load_objective_labels,
    load_weighting,
    refuse_label_flags,
    search_kwargs,
)
from dgp.cli._output import (
    FileArg,
    add_json_flag,
    atomic_output,
    print_result,
    quiet,
    save_array,
)
from dgp.display import format_duration
from dgp.errors import InputError
from dgp.infonce import SIMILARITIES
from dgp.io import LABEL_FORMATS
from dgp.objectives import OBJECTIVE_NAMES, classify_objective
from dgp.tolerance import DEFAULT_RTOL

__all__ = ["DESCRIPTION", "HELP", "add_arguments", "run"]

_LABELS_HELP = (
    "labels file for --objective: one column of class labels (integers or names) for "
    "supcon/soft-supcon; an N x p table of floats otherwise (x-clr: label embeddings). "
    f"Formats: {LABEL_FORMATS}".replace("%", "%%")
)


#: ``dgp classify``: its line in ``dgp --help``
HELP = "classify the target geometry of a weighting"

#: ``dgp classify``: what ``dgp classify --help`` says first
DESCRIPTION = (
    "Classify the target geometry of a weight matrix (WEIGHTS) or of a named "
    "objective built from labels (--objective with --labels) as realizable, degenerate or "
    "inconsistent, with a certificate. Exit status 0 whatever the verdict."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_weights_arguments(p)
    p.add_argument("--log-weights", action="store_true",
                   help="WEIGHTS holds log-weights (-inf for a zero weight): narrow kernels keep "
                   "their information instead of underflowing to zero")
    p.add_argument("--objective", choices=OBJECTIVE_NAMES, help="build W from --labels")
    p.add_argument("--labels", metavar="LABELS", type=FileArg("input"), help=_LABELS_HELP)
    p.add_argument("--label-column", metavar="NAME|K",
                   help="the column of LABELS to use: a header name, or a 0-based position "
                   "(default: the only column, or all columns of numbers)")
    p.add_argument("--similarity", choices=SIMILARITIES,
                   help="latent similarity (default: cosine, or the objective's own)")
    p.add_argument("--tau", type=float, required=True, help="temperature > 0")
    p.add_argument("--dim", type=int, required=True, help="embedding dimension >= 1")
    p.add_argument("--sigma", type=float, help="label kernel width > 0 (y-aware, euclid-euclid)")
    p.add_argument("--eps", type=float, help="cross-class weight in (0, 1) (soft-supcon)")
    p.add_argument("--label-tau", type=float, help="label temperature > 0 (x-clr)")
    p.add_argument("--tol", "--rtol", dest="tol", type=float, default=DEFAULT_RTOL,
                   help=f"relative tolerance per sample (default {DEFAULT_RTOL:g}, float64 "
                   "rounding noise; the library's tol; --rtol is its old name)")
    p.add_argument("--method", choices=METHODS, default="spectral", help="default: spectral")
    add_json_flag(p)
    p.add_argument("--embedding", action="store_true",
                   help="include the optimal embedding in --json output")
    p.add_argument("--plot", metavar="FILE", type=FileArg("output", "figure"),
                   help="also save a figure (.png, .pdf or .svg; needs the plot extra)")
    p.add_argument("--save-embedding", metavar="FILE", type=FileArg("output", "array"),
                   help="save the optimal embedding (N x rank) when realizable (.npy or .csv)")
    p.add_argument("--save-gram", metavar="FILE", type=FileArg("output", "array"),
                   help="save the Gram matrix of the optimal embedding (N x N) when realizable")
    p.add_argument("--quiet", action="store_true", help="no notes on stderr")
    p.add_argument("--no-floor", action="store_true",
                   help="skip the loss floor in dimension D of an inconsistent cosine verdict")
    add_search_arguments(p)


def run(args: argparse.Namespace) -> int:
    given = [x for x in (args.weights, args.edges, args.objective) if x is not None]
    if len(given) != 1:
        raise InputError("give one of a WEIGHTS file, --edges FILE, or --objective with "
                         "--labels")
    plot = args.plot  # checked by check_files, with the plot extra, before any work
    saves = {flag: path for flag, path in
             (("--save-embedding", args.save_embedding), ("--save-gram", args.save_gram))
             if path is not None}
    want_embedding = args.embedding or bool(saves)
    if args.objective is None:
        refuse_label_flags(args)
        data = load_weighting(args)
        if isinstance(data, np.ndarray):  # dense: one N^3 reduction (sparse: its graph)
            _note_long(data.shape[0], args)
        kwargs = {"log_weights": data} if args.log_weights else {"W": data}
        similarity = args.similarity or "cosine"
        if plot is not None:  # validated once, for the classification and the figure
            data = weighting(**kwargs, similarity=similarity, floor=not args.no_floor)
            kwargs = {"W": data}
        res = classify(similarity=similarity, tau=args.tau, dim=args.dim, tol=args.tol,
                       method=args.method, floor=not args.no_floor, **search_kwargs(args),
                       **kwargs)
    else:
        data = load_objective_labels(args)
        res = classify_objective(
            args.objective, data, tau=args.tau, dim=args.dim, sigma=args.sigma, eps=args.eps,
            label_tau=args.label_tau, similarity=args.similarity, tol=args.tol,
            method=args.method, embed=want_embedding or plot is not None,
            floor=not args.no_floor, **search_kwargs(args),
        )
    if plot is not None:
        _plot(args, res, data, plot)
    _save(res, saves)
    if not print_result(args, res, embedding=args.embedding) and plot is not None:
        print(f"figure       {plot}")
    return 0


def _note_long(n: int, args: argparse.Namespace) -> None:
    """Say on stderr when a dense classification will take a while (one N^3 reduction)."""
    seconds = (n / 2000.0) ** 3  # about a second per 2000^3 on one core
    if seconds >= 10 and not quiet(args):
        sys.stderr.write(f"note: N = {n}: one dense {n} x {n} tridiagonalisation, about "
                         f"{format_duration(seconds)} on one core...\n")
        sys.stderr.flush()


def _save(res, saves: dict[str, str]) -> None:
    """Write ``--save-embedding`` / ``--save-gram`` (a warning when there is nothing to save)."""
    import warnings

    from dgp.errors import DgpWarning

    for flag, path in saves.items():
        if res.embedding is None:
            warnings.warn(f"{flag} {path}: nothing saved, the verdict is {res.verdict} and there "
                          "is no unique optimal embedding", DgpWarning, stacklevel=2)
            continue
        Z = res.embedding
        save_array(path, Z if flag == "--save-embedding" else Z @ Z.T)


def _plot(args: argparse.Namespace, res, data, path: str) -> None:
    """Save the figure of ``--plot FILE`` (the c family and, when realizable, the target),
    drawn from the result and the validated log-weights (no second classification)."""
    from dgp.engine.target import log_weights
    from dgp.plots import MAX_PLOT_N, classification_figure
    from dgp.weights import objective_log_weights

    if res.n > MAX_PLOT_N:
        raise InputError(f"--plot draws N x N matrices; N = {res.n} is above {MAX_PLOT_N} "
                         "(drop --plot)")
    if args.objective is None:
        weights = data  # the weighting classify was given
    else:  # the objective's log-weights, then the one validator (as classify_objective)
        given = objective_log_weights(args.objective, data, sigma=args.sigma, eps=args.eps,
                                      label_tau=args.label_tau)
        weights = log_weights(log_weights=given)
    with atomic_output(path) as tmp:
        classification_figure(weights, res).savefig(tmp, dpi=100)
