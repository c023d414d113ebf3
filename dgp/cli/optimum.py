"""``dgp optimum``: the true minimiser of a cosine w-InfoNCE loss (convex program)."""

from __future__ import annotations

import argparse

from dgp.cli._output import emit_json, table
from dgp.io import load_array

__all__ = ["register", "run"]

_MAX_TABLE = 12


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "optimum",
        help="true minimiser of a cosine w-InfoNCE (convex program)",
        description="Solve min L(G) over Gram matrices (G PSD, unit diagonal) for the weight "
        "matrix WEIGHTS: the loss, its duality gap, the rank of the optimum, an embedding and "
        "whether the optimum is unique.",
    )
    p.add_argument("weights", metavar="WEIGHTS", help="N x N matrix (.npy/.csv/.txt)")
    p.add_argument("--tau", type=float, required=True, help="temperature > 0")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from dgp.optimum import optimum

    W = load_array(args.weights, name="WEIGHTS")
    res = optimum(W, tau=args.tau)
    if args.json:
        emit_json(res.to_dict())
        return 0
    print(f"samples       N = {res.n}, tau = {res.tau:g}")
    print(f"loss          {res.loss:.10g} nats (entropic bound {res.entropic_bound:.10g}, "
          f"excess {res.loss - res.entropic_bound:.4g})")
    print(f"duality gap   {res.duality_gap:.3g} nats (bound on loss - min, from the duals)")
    print(f"rank          {res.rank} (eigenvalues > {res.rank_rtol:g} * largest)")
    width = res.face[1] - res.face[0]
    print(f"unique        {'yes' if res.unique else 'no'} (optimal face G + c(J - I), "
          f"c in [{res.face[0]:.3g}, {res.face[1]:.3g}], width {width:.3g})")
    if res.n <= _MAX_TABLE:
        head = ["", *[str(j) for j in range(res.n)]]
        rows = [[str(i), *(f"{v:+.4f}" for v in res.gram[i])] for i in range(res.n)]
        print("\noptimal Gram:")
        print(table(rows, head))
    else:
        print("use --json for the Gram matrix and the embedding")
    return 0
