"""``dgp supcon``: the optimal class-prototype Gram of SupCon or Soft SupCon, full batch or for
mini-batches."""

from __future__ import annotations

import argparse
import textwrap

import numpy as np

from dgp.cli._inputs import (
    add_reduction_arguments,
    batch_group,
    class_sizes,
    read_labels,
    reduction_kwargs,
)
from dgp.cli._output import (
    MAX_TABLE,
    FileArg,
    add_gram_outputs,
    add_json_flag,
    atomic_output,
    emit_json,
    quiet,
    save_arrays,
    save_gram_interval,
    table,
)
from dgp.constants import EXACT_MAX_DEFAULT
from dgp.display import SUMMARY_WIDTH, entry_cells
from dgp.errors import InputError
from dgp.problem import Problem
from dgp.prototypes import (
    METHODS,
    SAMPLERS,
    batch_size_for_tolerance,
    supcon_prototypes,
)
from dgp.prototypes._summary import gram_cells

__all__ = ["DESCRIPTION", "HELP", "add_arguments", "run"]

_MAX_SYMBOLIC = 3  # largest K whose symbolic first-order Gram and KKT matrix are printed


#: ``dgp supcon``: its line in ``dgp --help``
HELP = "optimal class prototypes of SupCon / Soft SupCon (full batch or mini-batches)"

#: ``dgp supcon``: what ``dgp supcon --help`` says first
DESCRIPTION = (
    "Optimal class-prototype Gram of SupCon (or Soft SupCon with --eps) for the "
    "given class sizes: a closed form where one is exact, else a certified solver with a "
    "KKT residual. With --batch-size, the prediction for mini-batch training: the minimiser "
    "of the expected batch loss of the sampler."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sizes", help="class sizes n1,n2,...,nK (each >= 2; with --batch-size or "
                   "--eps a class may have 1)")
    p.add_argument("--labels", metavar="LABELS", type=FileArg("input"),
                   help="count the class sizes from a labels file instead (.npy, .csv, .txt: "
                   "integers or class names, one per sample); the result names its classes "
                   "(JSON: classes)")
    p.add_argument("--label-column", metavar="NAME|K",
                   help="the column of --labels to use: a header name, or a 0-based position")
    p.add_argument("--tau", type=float, required=True, help="temperature > 0")
    p.add_argument("--eps", type=float, help="Soft SupCon cross-class weight in (0, 1)")
    p.add_argument("--method", choices=METHODS, default="auto",
                   help="auto (default), numeric, or first-order (an O(tau^2) approximation)")
    d = p.add_argument_group("fixed dimension")
    d.add_argument("--dim", type=int, metavar="D",
                   help="prototypes on the unit sphere of R^D, any number of classes (K > D + 1 "
                   "included): rank-D Burer-Monteiro from many seeded starts, first- and "
                   "second-order certificates and a lower bound")
    d.add_argument("--nonnegative", action="store_true",
                   help="ReLU head: non-negative prototypes (the orthogonal frame, certified, "
                   "when D >= K; else seeded descents with a certified lower bound)")
    d.add_argument("--starts", type=int,
                   help="random candidates of the rank-D solve (default: the one rank-d "
                   "solver's budget, 8 up to K * D = 400, else the free optimum's factor alone; "
                   "a larger budget is never worse; seeded by --seed)")
    b = batch_group(p)
    b.add_argument("--sampler", choices=SAMPLERS, default="uniform", help="default: uniform")
    b.add_argument("--samples-per-class", type=int, metavar="M", help="m of --sampler m-per-class")
    add_reduction_arguments(b)
    b.add_argument("--samples", type=int, default=2000,
                   help="batches drawn when the expectation is not exact (default 2000)")
    b.add_argument("--exact-max", type=int, default=EXACT_MAX_DEFAULT,
                   help="enumerate every class composition up to this many (default "
                   f"{EXACT_MAX_DEFAULT}, certified); beyond, batches are drawn")
    b.add_argument("--seed", type=int, default=0, help="seed of the drawn batches (default 0)")
    b.add_argument("--tolerance", type=float, metavar="TOL",
                   help="also find the batch size from which the full-batch prediction is "
                   "within TOL (max |G_B - G_full|) for this sampler (text only: --json prints "
                   "the prototypes alone)")
    o = p.add_argument_group("output")
    add_json_flag(o)
    o.add_argument("--gram", action="store_true",
                   help="print the whole Gram (and keep it in --json for any K)")
    o.add_argument("--embedding", action="store_true", help="--json also holds the prototypes")
    add_gram_outputs(o, gram="the Gram to FILE",
                     embedding="the prototype vectors (K x rank) to FILE")
    o.add_argument("--save-prototypes", metavar="FILE", type=FileArg("output", "array"),
                   help="write fixed targets to FILE: K x D unit rows (K x rank without --dim) "
                   "in a canonical orientation (class 0 on the first axis, class 1 in the first "
                   "plane, ...; with --nonnegative the non-negative factor as found, since a "
                   "rotation would leave the orthant), rows in class order")
    o.add_argument("--latex", action="store_true",
                   help="print the symbolic formulas in LaTeX instead (not with --json)")
    o.add_argument(
        "--plot", metavar="FILE", type=FileArg("output", "figure"),
        help="also save the prototype geometry (needs the plot extra)"
    )


def _latex_pairs(K: int) -> list[tuple[str, str]]:
    from dgp import symbolic

    return symbolic.latex_lines(K if K <= _MAX_SYMBOLIC else None)


def _latex_matrix(G: np.ndarray, interval: tuple[np.ndarray, np.ndarray] | None = None) -> str:
    """The Gram in LaTeX; with its entries' 95% ``interval`` (sampled batches), each entry
    ``v \\pm h`` with its half-width (:func:`dgp.display.entry_cells`)."""
    rows = [" & ".join(cells) for cells in entry_cells(G, interval, 6, latex=True)]
    return r"G = \begin{pmatrix}" + r" \\ ".join(rows) + r"\end{pmatrix}"


def _gram_table(res) -> str:
    """The Gram as a table; where it comes from sampled batches, each entry ± the half-width of
    its 95% interval over independent runs (:func:`dgp.prototypes._summary.gram_cells`)."""
    head = ["", *[f"c{c}(n={s})" for c, s in enumerate(res.sizes)]]
    cells = gram_cells(res, digits=6)
    rows = [[head[c + 1], *cells[c]] for c in range(len(res.sizes))]
    return table(rows, head)


def _problem(args: argparse.Namespace):
    """The class sizes of ``--sizes`` (or the refusal of both ``--sizes`` and ``--labels``, or
    neither), or the :class:`dgp.Problem` of ``--labels``, whose class labels the result keeps
    (``classes``): what ``dgp.supcon_prototypes`` is given from Python for the same call."""
    if args.labels is None or args.sizes is not None:
        return class_sizes(args)
    objective = "supcon" if args.eps is None else "soft-supcon"
    # with --batch-size a batch problem, which takes a singleton class
    return Problem(objective=objective, labels=read_labels(args, "class"),
                   batch_size=args.batch_size,
                   **({} if args.eps is None else {"eps": args.eps}))


def _one_result(args: argparse.Namespace) -> None:
    """``--json`` prints one result, exactly its ``to_dict()``: the flags that ask for
    something else on stdout are refused with it, before any work.

    Raises
    ------
    InputError
        For ``--json`` with ``--latex`` (formulas as text) or ``--tolerance`` (another
        question: a batch size, not the prototypes).
    """
    if not args.json:
        return
    if args.latex:
        raise InputError("--latex and --json: --json prints the prototypes' record alone and "
                         "--latex prints formulas as text; drop one")
    if args.tolerance is not None:
        raise InputError("--tolerance and --json: --json prints the prototypes' record alone, "
                         "and --tolerance asks another question (a batch size); drop --json "
                         "to print both as text, or, for the batch size's own record, call "
                         "dgp.prototypes.batch_size_for_tolerance from Python")


def run(args: argparse.Namespace) -> int:
    _one_result(args)
    problem = _problem(args)
    reduce = reduction_kwargs(args, batched=args.batch_size is not None
                              or args.tolerance is not None)
    batch = {}
    if args.batch_size is not None:
        batch = {
            "batch_size": args.batch_size, "sampler": args.sampler,
            "samples_per_class": args.samples_per_class, **reduce,
            "samples": args.samples, "exact_max": args.exact_max,
            "progress": not quiet(args),
        }
    elif (args.samples_per_class is not None or args.sampler != "uniform") and (
            args.tolerance is None):
        raise InputError("--sampler and --samples-per-class apply to mini-batches: add "
                         "--batch-size B or --tolerance TOL")
    if args.dim is None and args.starts is not None and not args.nonnegative:
        raise InputError("--starts applies to a fixed dimension or --nonnegative: add --dim D")
    fixed = {} if args.dim is None else {"dim": args.dim}
    if args.dim is not None and not batch:  # batch carries it already
        fixed["progress"] = not quiet(args)
    if args.dim is not None or batch:
        fixed["seed"] = args.seed
    if args.starts is not None:
        fixed["starts"] = args.starts
    if args.nonnegative:
        fixed["nonnegative"] = True
    res = supcon_prototypes(problem, tau=args.tau, eps=args.eps, method=args.method, **batch,
                            **fixed)
    within = None
    if args.tolerance is not None:
        within = batch_size_for_tolerance(
            res.sizes, tau=args.tau, tol=args.tolerance, eps=args.eps, sampler=args.sampler,
            samples_per_class=args.samples_per_class, **reduce, seed=args.seed,
        )
    saved = (("gram", args.save_gram), ("embedding", args.save_embedding),
             ("prototypes", args.save_prototypes))
    save_arrays(res, saved)
    saved += (("gram interval", save_gram_interval(args.save_gram_interval, res)),)
    if args.plot is not None:
        _plot(res, args.plot)
    K = len(res.sizes)
    if args.json:  # exactly the result's to_dict(), as from Python (CONTRACT v4)
        emit_json(res.to_dict(gram=True if args.gram else None, embedding=args.embedding))
        return 0
    if args.latex:
        for title, text in _latex_pairs(K):
            print(f"% {title}\n{text}\n")
        if K <= MAX_TABLE or args.gram:
            interval = None if res.batch is None else res.batch.gram_interval
            # the caption note of every printed Gram (Prototypes.gram_note), in LaTeX's words
            note = res.gram_note().strip()[1:-1].replace("±", "\\pm")
            print(f"% computed prototype Gram ({res.method}{'; ' + note if note else ''})\n"
                  f"{_latex_matrix(res.gram, interval)}")
        return 0
    print(res.summary(gram=False))
    if K <= MAX_TABLE or args.gram:
        label = "first-order Gram (as derived)" if res.method == "first-order" else (
            "prototype Gram (cosines between class prototypes)")
        print("\n" + textwrap.fill(f"{label}{res.gram_note()}:", width=SUMMARY_WIDTH,
                                   break_on_hyphens=False))
        print(_gram_table(res))
    else:
        print("\nuse --gram to print the whole Gram, or --save-gram FILE to write it")
    if within is not None:
        found = ("none decided up to the largest size tried" if within.batch_size is None
                 else f"B = {within.batch_size}")
        print(f"\nbatch size from which the full-batch prediction is within {within.tol:g}: "
              f"{found} ({args.sampler} batches)")
        if "undecided" in within.statement:
            print(textwrap.fill(within.statement, width=SUMMARY_WIDTH))
        rows = [[str(b), f"{sh:.3g}", "-" if se is None else f"{se:.2g}", v]
                for b, sh, se, v in within.table]
        print(table(rows, ["B", "max |G_B - G_full|", "sampling error", "verdict"]))
    for name, path in (*saved, ("figure", args.plot)):
        if path is not None:
            print(f"wrote {name} to {path}")
    return 0


def _plot(res, path: str) -> None:
    """Save the prototype geometry of ``--plot FILE``, against the regular simplex."""
    from dgp.plots import prototype_geometry

    K = len(res.sizes)
    simplex = np.full((K, K), -1.0 / (K - 1))
    np.fill_diagonal(simplex, 1.0)
    title = f"{res.objective} prototypes, tau = {res.tau:g} ({res.method})"
    fig = prototype_geometry(
        res.gram, sizes=res.sizes, title=title, reference=simplex, reference_label="simplex"
    )
    with atomic_output(path) as tmp:
        fig.savefig(tmp, dpi=100)
