"""``dgp metrics``: compare learned embeddings with a reference (Procrustes r², similarity r²,
and the entropic gap when a weighting is given)."""

from __future__ import annotations

import argparse

from dgp.cli._inputs import WEIGHTS_HELP
from dgp.cli._output import FileArg, add_json_flag, emit_json, table
from dgp.errors import InputError

__all__ = ["DESCRIPTION", "HELP", "add_arguments", "run"]


#: ``dgp metrics``: its line in ``dgp --help``
HELP = "compare learned embeddings with a reference embedding"

#: ``dgp metrics``: what ``dgp metrics --help`` says first
DESCRIPTION = (
    "Procrustes r² (rigid, no scaling) and similarity r² of embeddings Z against a "
    "reference ZREF; with --weights and --tau also the entropic gap L(Z) - Σ H(p_i)."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--embeddings", required=True, metavar="Z", type=FileArg("input"),
        help="N x d array (.npy, .npz, .csv, .txt)"
    )
    p.add_argument(
        "--reference", required=True, metavar="ZREF", type=FileArg("input"),
        help="N x d' array (.npy, .npz, .csv, .txt)"
    )
    p.add_argument(
        "--weights", metavar="W", type=FileArg("input"),
        help=f"weighting for the entropic gap: {WEIGHTS_HELP}".replace("%", "%%")
    )
    p.add_argument("--directed", action="store_true",
                   help="--weights is an edge list whose 'i j' weighs j in the row of i only")
    p.add_argument("--tau", type=float, help="temperature (needed with --weights)")
    p.add_argument(
        "--similarity", default="cosine", choices=("cosine", "euclidean"), help="default: cosine"
    )
    add_json_flag(p)


def run(args: argparse.Namespace) -> int:
    from dgp import metrics
    from dgp.cli._inputs import read_weights
    from dgp.io import load_array

    if args.weights is not None and args.tau is None:
        raise InputError("--weights needs --tau (the temperature of the loss)")
    if args.tau is not None and args.weights is None:
        raise InputError("--tau is only used with --weights (the entropic gap needs a weighting)")
    Z = load_array(args.embeddings, name="embeddings")
    Zref = load_array(args.reference, name="reference")
    W = None
    if args.weights is not None:  # dense, sparse or a graph: validated by entropic_gap
        W = read_weights(args.weights, name="weights", directed=args.directed)
    elif args.directed:
        raise InputError("--directed applies to an edge list given to --weights")
    out: dict[str, object] = {
        "n": int(Z.shape[0]),
        "similarity": args.similarity,
        "procrustes_r2": metrics.procrustes_r2(Z, Zref),
        "similarity_r2": (
            metrics.similarity_r2(Z, Zref, similarity=args.similarity) if Z.shape[0] >= 3 else None
        ),
        "entropic_gap": None,
        "tau": args.tau,
    }
    if W is not None:
        out["entropic_gap"] = metrics.entropic_gap(Z, W, tau=args.tau, similarity=args.similarity)
    if args.json:
        emit_json(out)
        return 0
    rows = [
        ["procrustes_r2", f"{out['procrustes_r2']:.6f}"],
        ["similarity_r2", "n/a" if out["similarity_r2"] is None else f"{out['similarity_r2']:.6f}"],
    ]
    if out["entropic_gap"] is not None:
        rows.append(["entropic_gap (nats)", f"{out['entropic_gap']:.6g}"])
    print(table(rows, ["metric", "value"]))
    return 0
