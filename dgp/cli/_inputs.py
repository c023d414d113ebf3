"""What a command reads: one set of arguments and one loader for every command that takes a
weighting W (``classify``, ``optimum``, ``phase``, ``recommend``, ``floors``, ``metrics
--weights``), the labels of ``--objective`` and the class sizes of ``--sizes``.

A weighting is a WEIGHTS file (an ``N x N`` matrix: ``.npy``, ``.npz`` of :func:`numpy.savez` or
of :func:`scipy.sparse.save_npz`, e.g. a saved :func:`sklearn.neighbors.kneighbors_graph`, or
text) or an edge list (``--edges FILE``, or a WEIGHTS file named ``*.edges``/``*.edgelist``).
The files are only read here; what a weighting may hold is decided by the library's one
validator (:func:`dgp.engine.target.log_weights`), which every command hands the data to. Each
loader makes its checks of the command line first and then reads its file with one call of
:mod:`dgp.io`, so that a command walks down: command line, these loaders, the readers.
"""

from __future__ import annotations

import argparse
import os

from dgp.cli._output import FileArg
from dgp.errors import InputError
from dgp.infonce import SIMILARITIES
from dgp.io import LABEL_FORMATS, WEIGHT_FORMATS, load_edge_list, load_labels, load_weights
from dgp.objectives import OBJECTIVE_NAMES, OBJECTIVES
from dgp.prototypes import NO_POSITIVE, REDUCTIONS
from dgp.tolerance import DEFAULT_RTOL

__all__ = [
    "EDGE_SUFFIXES",
    "WEIGHTS_HELP",
    "add_design_arguments",
    "add_input_arguments",
    "add_objective_arguments",
    "add_parameter_arguments",
    "add_reduction_arguments",
    "add_search_arguments",
    "add_weights_arguments",
    "batch_group",
    "class_sizes",
    "design_kwargs",
    "input_kwargs",
    "is_edge_list",
    "label_column",
    "load_objective_labels",
    "load_weighting",
    "parse_sizes",
    "read_labels",
    "read_weights",
    "refuse_label_flags",
    "search_kwargs",
]

#: WEIGHTS files with these suffixes are edge lists
EDGE_SUFFIXES = (".edges", ".edgelist")

#: the help of a WEIGHTS argument
WEIGHTS_HELP = (WEIGHT_FORMATS + "; or an edge list named *.edges/*.edgelist (see --edges)")


def add_weights_arguments(p: argparse.ArgumentParser, *, help_prefix: str = "") -> None:
    """WEIGHTS (a matrix file; optional for argparse, since ``--edges`` may stand for it:
    :func:`load_weighting` says when neither is given), ``--edges FILE`` and ``--directed``."""
    p.add_argument("weights", nargs="?", metavar="WEIGHTS", type=FileArg("input"),
                   help=(help_prefix + WEIGHTS_HELP).replace("%", "%%"))
    p.add_argument("--edges", metavar="FILE", type=FileArg("input"),
                   help="a weighted graph instead of WEIGHTS: an edge list, one 'i j' or 'i j "
                   "weight' per line (missing weight: 1; missing edges are zero weights); "
                   "WEIGHTS ending in .edges or .edgelist is read the same way")
    p.add_argument("--directed", action="store_true",
                   help="with an edge list: 'i j' weighs j in the row of i only (an asymmetric "
                   "weighting)")


def is_edge_list(path: object) -> bool:
    """Whether a WEIGHTS path names an edge list (by its suffix; ``None`` is not one)."""
    if path is None:
        return False
    return str(os.fspath(path)).lower().endswith(EDGE_SUFFIXES)


def read_weights(path: object, *, name: str, directed: bool = False,
                 edge_list: bool | None = None):
    """The weighting in ``path``: a networkx graph for an edge list (``edge_list``, by default
    told by the suffix), else the matrix of :func:`dgp.io.load_weights` (dense, or
    ``scipy.sparse``)."""
    if is_edge_list(path) if edge_list is None else edge_list:
        return load_edge_list(path, directed=directed, name=name)
    return load_weights(path, name=name)


def load_weighting(args: argparse.Namespace, *, required: bool = True):
    """The weighting of WEIGHTS or ``--edges`` (``None`` when neither is given and it is not
    ``required``).

    Raises
    ------
    InputError
        If both or (when ``required``) neither are given, ``--directed`` is given without an
        edge list, or ``--log-weights`` (where the command has it) with one.
    """
    if args.weights is not None and args.edges is not None:
        raise InputError("give a WEIGHTS file or --edges FILE, not both")
    edges = args.edges is not None or is_edge_list(args.weights)
    if getattr(args, "log_weights", False) and edges:
        raise InputError("--log-weights applies to a WEIGHTS matrix; an edge list holds "
                         "weights")
    if args.weights is None and args.edges is None:
        if required:
            raise InputError("give a WEIGHTS file (an N x N matrix) or --edges FILE (an edge "
                             "list)")
        if args.directed:
            raise InputError("--directed applies to an edge list (--edges FILE)")
        return None
    if args.directed and not edges:
        raise InputError("--directed applies to an edge list (--edges FILE); a WEIGHTS matrix "
                         "says its own direction (row i holds the weights of anchor i)")
    path, name = (args.weights, "WEIGHTS") if args.edges is None else (args.edges, "--edges")
    return read_weights(path, name=name, directed=args.directed, edge_list=edges)


def add_objective_arguments(p: argparse.ArgumentParser, names: tuple[str, ...]) -> None:
    """``--objective`` (one of ``names``) with ``--labels``, ``--label-column`` and the
    objectives' parameters ``--sigma``, ``--eps``, ``--label-tau``."""
    p.add_argument("--objective", choices=names, help="build the weighting from --labels")
    p.add_argument("--labels", metavar="LABELS", type=FileArg("input"),
                   help="labels file for --objective: one column of class labels for the class "
                   "objectives, an N x p table of floats otherwise (x-clr: label embeddings). "
                   f"Formats: {LABEL_FORMATS}".replace("%", "%%"))
    p.add_argument("--label-column", metavar="NAME|K",
                   help="the column of LABELS to use: a header name, or a 0-based position")
    p.add_argument("--sigma", type=float, help="label kernel width > 0 (y-aware, euclid-euclid)")
    p.add_argument("--eps", type=float, help="cross-class weight in (0, 1) (soft-supcon)")
    p.add_argument("--label-tau", type=float, help="label temperature > 0 (x-clr)")


def refuse_label_flags(args: argparse.Namespace) -> None:
    """Without ``--objective``, the flags that build a weighting from labels are refused.

    Raises
    ------
    InputError
        Naming the first such flag given.
    """
    for flag in ("labels", "label_column", "sigma", "eps", "label_tau"):
        if getattr(args, flag) is not None:
            raise InputError(f"--{flag.replace('_', '-')} needs --objective (it builds the "
                             "weighting from labels)")


def label_column(text: str | None) -> str | int | None:
    """``--label-column``: a header name, or a 0-based position (as ``load_labels``)."""
    if text is None or not text.lstrip("-").isdigit():
        return text
    return int(text)


def read_labels(args: argparse.Namespace, kind: str):
    """The labels of ``--labels`` (its ``--label-column`` where the command has one) for an
    objective whose labels are of ``kind`` (``"class"`` or ``"continuous"``); class names are
    kept, for the messages and the JSON to say them."""
    column = label_column(getattr(args, "label_column", None))
    return load_labels(args.labels, name="LABELS", column=column, kind=kind).labels


def load_objective_labels(args: argparse.Namespace):
    """The labels of ``--objective`` with ``--labels``, after the checks of that input:
    ``--directed`` (an edge list's flag) and, where the command has it, ``--log-weights`` (a
    WEIGHTS file's) are refused, ``--labels`` is required, and the objective's parameters are
    checked (cheap) before the file is read.

    Raises
    ------
    InputError
        If ``--labels`` is missing, or a WEIGHTS-only flag is given.
    """
    if args.directed:
        raise InputError("--directed applies to an edge list (--edges FILE)")
    if args.labels is None:
        raise InputError(f"--objective {args.objective} needs --labels LABELS")
    if getattr(args, "log_weights", False):
        raise InputError("--log-weights applies to a WEIGHTS file, not to --objective")
    rec = OBJECTIVES[args.objective]
    rec.check_params(sigma=args.sigma, eps=args.eps, label_tau=args.label_tau)
    return read_labels(args, rec.labels)


def parse_sizes(text: str) -> list[int]:
    """Parse ``--sizes n1,n2,...`` into integers.

    Raises
    ------
    InputError
        If an item is empty or not an integer.
    """
    items = [s.strip() for s in str(text).split(",")]
    out = []
    for k, item in enumerate(items):
        try:
            out.append(int(item))
        except ValueError:
            raise InputError(
                f"--sizes must be comma-separated integers such as 10,5,2; item {k} is "
                f"{item!r} in {text!r}"
            ) from None
    return out


def class_sizes(args: argparse.Namespace) -> list[int]:
    """The class sizes of ``--sizes``, for ``dgp supcon`` (which reads ``--labels`` as a
    :class:`dgp.Problem` of them).

    Raises
    ------
    InputError
        If neither or both of ``--sizes`` and ``--labels`` are given, or ``--label-column``
        without ``--labels``.
    """
    if (args.sizes is None) == (args.labels is None):
        raise InputError("give the class sizes either as --sizes n1,n2,... or as --labels FILE "
                         "(one label per sample), not both" if args.sizes is not None else
                         "give the class sizes: --sizes n1,n2,... or --labels FILE")
    if args.label_column is not None:
        raise InputError("--label-column chooses a column of --labels FILE; add --labels")
    return parse_sizes(args.sizes)


def add_input_arguments(p: argparse.ArgumentParser) -> None:
    """The input of the design commands (``phase``, ``recommend``, ``floors``): WEIGHTS,
    ``--objective``, ``--labels``, ``--sizes``, ``--similarity`` and ``--tol``."""
    add_weights_arguments(p, help_prefix="a weighting instead of --objective: ")
    p.add_argument("--objective", choices=OBJECTIVE_NAMES, help="build W from --labels/--sizes")
    p.add_argument("--labels", metavar="LABELS", type=FileArg("input"),
                   help="labels file for --objective: " + LABEL_FORMATS.replace("%", "%%"))
    p.add_argument("--sizes", metavar="n1,n2,...",
                   help="class sizes instead of --labels (supcon, soft-supcon)")
    p.add_argument("--similarity", choices=SIMILARITIES,
                   help="latent similarity (default: the objective's own, cosine for WEIGHTS)")
    p.add_argument("--tol", "--rtol", dest="tol", type=float, default=DEFAULT_RTOL,
                   help=f"relative tolerance of every classification (default {DEFAULT_RTOL:g}; "
                   "the library's tol; --rtol is its old name)")


def add_parameter_arguments(p: argparse.ArgumentParser, *, tau_required: bool = False) -> None:
    """``--tau``, ``--dim``, ``--eps``, ``--sigma``, ``--label-tau``."""
    p.add_argument("--tau", type=float, required=tau_required, help="temperature > 0")
    p.add_argument("--dim", type=int, help="embedding dimension >= 1")
    p.add_argument("--eps", type=float, help="cross-class weight in (0, 1) (soft-supcon)")
    p.add_argument("--sigma", type=float, help="label kernel width > 0 (y-aware, euclid-euclid)")
    p.add_argument("--label-tau", type=float, help="label temperature > 0 (x-clr)")


def add_search_arguments(p: argparse.ArgumentParser, *, seed_help: str | None = None) -> None:
    """``--starts`` and ``--seed`` of the rank-``dim`` search a command runs where it needs a
    fixed-dimension optimum (``classify``'s loss floor, ``phase``'s cells, ``recommend``,
    ``floors``): the library's ``starts`` and ``seed`` (:func:`search_kwargs`); unset, the one
    rank-d solver's defaults. ``seed_help``: what ``--seed`` also seeds, where it seeds more."""
    p.add_argument("--starts", type=int,
                   help="random starts of a rank-D search with --dim (default: the one rank-d "
                   "solver's budget; a larger budget is never worse)")
    p.add_argument("--seed", type=int,
                   help=seed_help or "seed of those random starts (default 0)")


def add_design_arguments(p: argparse.ArgumentParser, *, tau_required: bool = False,
                         seed_help: str | None = None) -> None:
    """Every flag the design commands (``phase``, ``recommend``, ``floors``) share: their input
    (:func:`add_input_arguments`), parameters (:func:`add_parameter_arguments`) and search
    (:func:`add_search_arguments`); the library's keywords are :func:`design_kwargs`."""
    add_input_arguments(p)
    add_parameter_arguments(p, tau_required=tau_required)
    add_search_arguments(p, seed_help=seed_help)


def design_kwargs(args: argparse.Namespace) -> dict:
    """The library's keywords of :func:`add_design_arguments`: the input (``W``, or
    ``objective`` with ``labels``/``sizes``, ``similarity``, ``tol``), ``tau``, ``dim``,
    ``eps``, ``sigma``, ``label_tau``, ``starts`` and ``seed``."""
    return {**input_kwargs(args), "tau": args.tau, "dim": args.dim, "eps": args.eps,
            "sigma": args.sigma, "label_tau": args.label_tau, **search_kwargs(args)}


def search_kwargs(args: argparse.Namespace) -> dict:
    """The library's ``starts`` and ``seed`` of :func:`add_search_arguments` (``None``: the
    default; the library checks them and names the flag's keyword)."""
    return {"starts": args.starts, "seed": args.seed}


def batch_group(p: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    """The group ``mini-batches`` of a command that predicts for mini-batch training
    (``optimum``, ``supcon``), opened by ``--batch-size``; the command adds its sampler, then
    :func:`add_reduction_arguments`, then its own flags."""
    b = p.add_argument_group("mini-batches")
    b.add_argument("--batch-size", type=int, metavar="B", help="predict for batches of B samples")
    return b


def add_reduction_arguments(b: argparse._ArgumentGroup) -> None:
    """``--reduction`` and ``--anchors-without-positives``: how a batch's loss combines its
    anchors, the same flags with the same meaning in every command of :func:`batch_group`."""
    b.add_argument("--reduction", choices=REDUCTIONS,
                   help="how a batch combines its anchors (default: mean)")
    b.add_argument("--anchors-without-positives", choices=NO_POSITIVE,
                   help="with mean: drop them (pytorch-metric-learning, default) or count them "
                   "as zeros (SupContrast)")


def reduction_kwargs(args: argparse.Namespace, *, batched: bool) -> dict[str, str]:
    """``reduction`` and ``anchors_without_positives`` of :func:`add_reduction_arguments`
    (``mean`` and ``drop`` where not given).

    Raises
    ------
    InputError
        If one is given to a command that predicts for no mini-batch (it would be ignored).
    """
    if not batched and (args.reduction is not None or args.anchors_without_positives is not None):
        raise InputError("--reduction and --anchors-without-positives apply to mini-batches: "
                         "add --batch-size B")
    return {"reduction": args.reduction or "mean",
            "anchors_without_positives": args.anchors_without_positives or "drop"}


def input_kwargs(args: argparse.Namespace) -> dict:
    """The library's input arguments of :func:`add_input_arguments` (``W``, or ``objective``
    with ``labels``/``sizes``), with ``similarity`` and ``tol``.

    Raises
    ------
    InputError
        If not exactly one of a weighting and ``--objective`` is given, or a flag of the other
        input is.
    """
    if (args.weights is None and args.edges is None) == (args.objective is None):
        raise InputError("give either a WEIGHTS file (or --edges FILE) or --objective with "
                         "--labels (or --sizes), not both")
    out: dict = {"similarity": args.similarity, "tol": args.tol}
    if args.objective is None:
        for flag in ("labels", "sizes"):
            if getattr(args, flag) is not None:
                raise InputError(f"--{flag} needs --objective (it builds the weighting)")
        out["W"] = load_weighting(args)
        return out
    if args.directed:
        raise InputError("--directed applies to an edge list (--edges FILE)")
    out["objective"] = args.objective
    if args.sizes is not None:
        out["sizes"] = parse_sizes(args.sizes)
    if args.labels is not None:
        out["labels"] = read_labels(args, OBJECTIVES[args.objective].labels)
    return out
