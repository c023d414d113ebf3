"""``dgp optimum``: the true minimiser of a cosine w-InfoNCE loss, free or in R^D, full batch or
for mini-batches."""

from __future__ import annotations

import argparse
import textwrap
from typing import TYPE_CHECKING

from dgp.cli._inputs import (
    add_objective_arguments,
    add_reduction_arguments,
    add_weights_arguments,
    batch_group,
    load_objective_labels,
    load_weighting,
    reduction_kwargs,
    refuse_label_flags,
)
from dgp.cli._output import (
    MAX_TABLE,
    add_gram_outputs,
    add_json_flag,
    print_result,
    quiet,
    save_arrays,
    save_gram_interval,
    table,
)
from dgp.constants import EXACT_MAX_DEFAULT
from dgp.display import SUMMARY_WIDTH, entry_cells
from dgp.errors import InputError
from dgp.objectives import OBJECTIVE_NAMES, OBJECTIVES

if TYPE_CHECKING:
    import numpy as np

__all__ = ["DESCRIPTION", "HELP", "add_arguments", "run"]

#: ``dgp optimum``: its line in ``dgp --help``
HELP = "true minimiser of a cosine w-InfoNCE (free dimension or R^D)"

#: ``dgp optimum``: what ``dgp optimum --help`` says first
DESCRIPTION = (
    "Minimise the cosine w-InfoNCE loss of the weight matrix WEIGHTS over unit "
    "embeddings (WEIGHTS may be sparse, e.g. a saved k-NN graph, or an edge list; the program "
    "is dense, N x N): the loss and its certified gap, the rank of the optimum, whether it is "
    "unique, and an embedding. Samples with identical rows and columns are merged first. "
    "With --dim D the best embedding in R^D (certified globally optimal when its dual "
    "matrix is PSD, else with its gap to the convex lower bound); with --batch-size B the "
    "prediction for uniform mini-batches: exact over every composition when few, else "
    "optimised on fresh batches and reported on others (a 95% interval, a lower bound "
    "at 95% confidence, the full-batch optimum on the same batches, what the loss pins; "
    "progress on stderr). --objective with --labels builds the weighting from labels, read "
    "one batch at a time beyond exact enumeration."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_weights_arguments(p)
    add_objective_arguments(p, tuple(n for n in OBJECTIVE_NAMES
                                     if OBJECTIVES[n].similarity == "cosine"))
    p.add_argument("--tau", type=float, required=True, help="temperature > 0")
    p.add_argument("--dim", type=int, metavar="D", help="embedding dimension (default: free)")
    p.add_argument("--starts", type=int,
                   help="random candidates of the rank-D search with --dim (default: the one "
                   "rank-d solver's budget, 8 up to N * D = 400, else the given start alone; a "
                   "larger budget is never worse)")
    b = batch_group(p)
    b.add_argument("--sampler", choices=("uniform", "class-balanced"),
                   help="uniform: B distinct samples (default); class-balanced (--objective "
                   "with class labels): each draw a class uniformly, then a sample of it")
    add_reduction_arguments(b)
    b.add_argument("--samples", type=int, default=2000,
                   help="beyond exact enumeration: at least this many held-out batches "
                   "estimate the expected loss (default 2000; more until its 95%% interval "
                   "is at most 0.002 wide on each side)")
    b.add_argument("--exact-max", type=int, default=EXACT_MAX_DEFAULT,
                   help="enumerate every batch composition up to this many (default "
                   f"{EXACT_MAX_DEFAULT}); "
                   "beyond, the expected-batch optimum is found on fresh batches (needs --dim)")
    b.add_argument("--seed", type=int, default=0, help="seed of random starts and batches")
    o = p.add_argument_group("output")
    add_json_flag(o)
    o.add_argument("--gram", action="store_true", help="print the Gram (and keep it in --json)")
    o.add_argument("--embedding", action="store_true",
                   help="print the embedding (one unit row per sample; with --json: the JSON "
                   "holds it)")
    add_gram_outputs(o, gram="the N x N Gram", embedding="the N x rank embedding")


def run(args: argparse.Namespace) -> int:
    from dgp.optima import optimum

    if args.objective is None:
        refuse_label_flags(args)
        # dense, sparse (a k-NN graph) or a graph: validated by optimum
        W = load_weighting(args)
    else:
        if args.weights is not None or args.edges is not None:
            raise InputError("give a WEIGHTS file, --edges FILE or --objective with --labels, "
                             "not two of them")
        from dgp.problem import Problem

        labels = load_objective_labels(args)
        params = {k: getattr(args, k) for k in ("sigma", "eps", "label_tau")
                  if getattr(args, k) is not None}
        # with --batch-size a batch problem, which takes a class of one sample (SupCon)
        W = Problem(objective=args.objective, labels=labels, batch_size=args.batch_size,
                    **params)
    batch = {} if args.sampler is None else {"sampler": args.sampler}
    reduce = reduction_kwargs(args, batched=args.batch_size is not None)
    if args.batch_size is not None:
        batch = {"batch_size": args.batch_size, **reduce,
                 "samples": args.samples, "exact_max": args.exact_max, **batch}
    res = optimum(W, tau=args.tau, dim=args.dim, starts=args.starts, seed=args.seed,
                  progress=not quiet(args), **batch)
    saved = (("gram", args.save_gram), ("embedding", args.save_embedding))
    # the embedding one row per sample, also where twin samples share a row of the solve
    save_arrays(res, (("gram", args.save_gram), ("sample_embedding", args.save_embedding)))
    saved += (("gram interval", save_gram_interval(args.save_gram_interval, res)),)
    if print_result(args, res, gram=True if args.gram else None, embedding=args.embedding):
        return 0
    if res.n <= MAX_TABLE or args.gram:
        head = ["", *[str(j) for j in range(res.n)]]
        rows = [[str(i), *cells] for i, cells in enumerate(_gram_cells(res))]
        print("\n" + _gram_caption(res))
        print(table(rows, head))
    else:
        print("\nuse --gram to print the Gram" + ("" if args.embedding else
              ", --embedding for the embedding") + ", or --save-gram/--save-embedding FILE to "
              "write them")
    if args.embedding:
        print("\n" + _embedding_table(res.embedding))
    for name, path in saved:
        if path is not None:
            print(f"wrote {name} to {path}")
    return 0


def _embedding_table(Z: np.ndarray) -> str:
    """``--embedding`` without ``--json``: the embedding's rows (those of the printed Gram: the
    points solved, twin samples sharing one) where they fit a terminal (at most
    :data:`MAX_TABLE` rows and columns), else how to write them."""
    n, r = Z.shape
    if n > MAX_TABLE or r > MAX_TABLE:
        return (f"the embedding ({n} x {r}) is too large to print: --save-embedding FILE "
                "writes it (one row per sample), --json --embedding holds it")
    # rounded first, so that no cell prints as -0.0000
    rows = [[str(i), *(f"{round(float(v), 4) + 0.0:+.4f}" for v in Z[i])] for i in range(n)]
    caption = textwrap.fill(f"embedding ({n} x {r}: one unit row per row of the Gram; any "
                            "rotation or reflection of it has the same loss; --save-embedding "
                            "writes one row per sample):", width=SUMMARY_WIDTH,
                            break_on_hyphens=False)
    return caption + "\n" + table(rows, ["", *(f"z{k}" for k in range(r))])


def _gram_cells(res) -> list[list[str]]:
    """The printed Gram's cells: where it comes from sampled batches, each entry with the
    half-width of its 95% interval over the independent runs (``+0.1234±0.0056``), so no
    sampled entry is printed without its error; exact entries as they are."""
    estimate = getattr(res, "batch", None)
    if getattr(estimate, "expectation", None) != "stochastic":
        return entry_cells(res.gram)
    return entry_cells(res.gram, res.gram_spread()[1])


def _gram_caption(res) -> str:
    """The caption of the printed Gram: where it comes from sampled batches, what its entries
    are worth (one near-optimal solution; how far the others' cosines move, from the result's
    identifiability report), so no sampled entry is printed as if it were exact."""
    estimate = getattr(res, "batch", None)
    if getattr(estimate, "expectation", None) != "stochastic":
        return "optimal Gram:"
    ident = getattr(res, "identifiability", None)
    spread = None if ident is None else ident.spread.get("cosine_max")
    moved = ("no other solution was compared" if spread is None or ident.solutions < 2
             else f"among {ident.solutions} near-optimal solutions (this one included) its "
             f"entries move by up to {spread:.2g}")
    error = (f"each entry ± the half-width of its 95% interval over {len(res.runs)} "
             "independent runs" if len(res.runs) > 1 else
             "no interval: fewer than two runs ended near it (see 'Gram entries')")
    return textwrap.fill(f"Gram of the returned embedding (found on sampled batches; {error}; "
                         f"{moved}; see 'identifiable'):", width=SUMMARY_WIDTH,
                         break_on_hyphens=False)

