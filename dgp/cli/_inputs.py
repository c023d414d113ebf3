"""The weighting a command reads: one set of arguments and one loader for every command that
takes W (``classify``, ``optimum``, ``phase``, ``recommend``, ``floors``, ``metrics --weights``).

A weighting is a WEIGHTS file (an ``N x N`` matrix: ``.npy``, ``.npz`` of :func:`numpy.savez` or
of :func:`scipy.sparse.save_npz`, e.g. a saved :func:`sklearn.neighbors.kneighbors_graph`, or
text) or an edge list (``--edges FILE``, or a WEIGHTS file named ``*.edges``/``*.edgelist``).
The files are only read here; what a weighting may hold is decided by the library's one
validator (:func:`dgp.engine.target.log_weights`), which every command hands the data to.
"""

from __future__ import annotations

import argparse
import os

from dgp.cli._output import FileArg
from dgp.errors import InputError
from dgp.io import LABEL_FORMATS, WEIGHT_FORMATS, load_edge_list, load_labels, load_weights

__all__ = ["EDGE_SUFFIXES", "WEIGHTS_HELP", "add_objective_arguments", "add_weights_arguments",
           "is_edge_list", "label_column", "load_objective_labels", "load_weighting",
           "read_weights", "refuse_label_flags"]

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


def read_weights(path: object, *, name: str, directed: bool = False):
    """The weighting in ``path``: a networkx graph for an edge list (by its suffix), else the
    matrix of :func:`dgp.io.load_weights` (dense, or ``scipy.sparse``)."""
    if is_edge_list(path):
        return load_edge_list(path, directed=directed, name=name)
    return load_weights(path, name=name)


def load_weighting(args: argparse.Namespace, *, required: bool = True):
    """The weighting of WEIGHTS or ``--edges`` (``None`` when neither is given and it is not
    ``required``).

    Raises
    ------
    InputError
        If both or (when ``required``) neither are given, or ``--directed`` is given without an
        edge list.
    """
    if args.weights is not None and args.edges is not None:
        raise InputError("give a WEIGHTS file or --edges FILE, not both")
    if args.edges is not None:
        return load_edge_list(args.edges, directed=args.directed, name="--edges")
    if args.weights is None:
        if required:
            raise InputError("give a WEIGHTS file (an N x N matrix) or --edges FILE (an edge "
                             "list)")
        if args.directed:
            raise InputError("--directed applies to an edge list (--edges FILE)")
        return None
    if args.directed and not is_edge_list(args.weights):
        raise InputError("--directed applies to an edge list (--edges FILE); a WEIGHTS matrix "
                         "says its own direction (row i holds the weights of anchor i)")
    return read_weights(args.weights, name="WEIGHTS", directed=args.directed)


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


def load_objective_labels(args: argparse.Namespace, kind: str):
    """The labels of ``--labels`` for an objective whose labels are of ``kind`` (``"class"``
    or ``"continuous"``).

    Raises
    ------
    InputError
        If ``--labels`` is missing.
    """
    if args.labels is None:
        raise InputError(f"--objective {args.objective} needs --labels LABELS")
    return load_labels(args.labels, name="LABELS", column=label_column(args.label_column),
                       kind=kind).labels
