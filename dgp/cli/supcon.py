"""``dgp supcon``: the optimal class-prototype Gram of SupCon or Soft SupCon."""

from __future__ import annotations

import argparse

import numpy as np

from dgp.cli._output import emit_json, table
from dgp.prototypes import METHODS, supcon_prototypes

__all__ = ["parse_sizes", "register", "run"]

_MAX_TABLE = 12  # largest K printed as a full table (JSON always holds the full Gram)
_MAX_SYMBOLIC = 3  # largest K whose symbolic first-order Gram and KKT matrix are printed


def parse_sizes(text: str) -> list[int]:
    """Parse ``--sizes n1,n2,...`` into integers.

    Raises
    ------
    ValueError
        If an item is empty, not an integer, or the list is empty.
    """
    items = [s.strip() for s in str(text).split(",")]
    out = []
    for k, item in enumerate(items):
        try:
            out.append(int(item))
        except ValueError:
            raise ValueError(
                f"--sizes must be comma-separated integers such as 10,5,2; item {k} is "
                f"{item!r} in {text!r}"
            ) from None
    return out


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "supcon",
        help="optimal class prototypes of SupCon / Soft SupCon",
        description="Optimal class-prototype Gram of SupCon (or Soft SupCon with --eps) for the "
        "given class sizes: a closed form where one is exact, else a certified solver with a "
        "KKT residual.",
    )
    p.add_argument("--sizes", required=True, help="class sizes n1,n2,...,nK (each >= 2)")
    p.add_argument("--tau", type=float, required=True, help="temperature > 0")
    p.add_argument("--eps", type=float, help="Soft SupCon cross-class weight in (0, 1)")
    p.add_argument("--method", choices=METHODS, default="auto", help="default: auto")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--latex", action="store_true", help="print the symbolic formulas in LaTeX")
    p.add_argument(
        "--plot", metavar="FILE", help="also save the prototype geometry (needs the plot extra)"
    )
    p.set_defaults(func=run)


def _latex_pairs(K: int) -> list[tuple[str, str]]:
    from dgp import symbolic

    return symbolic.latex_lines(K if K <= _MAX_SYMBOLIC else None)


def _latex_matrix(G: np.ndarray) -> str:
    rows = [" & ".join(f"{v:.6f}" for v in row) for row in G]
    return r"G = \begin{pmatrix}" + r" \\ ".join(rows) + r"\end{pmatrix}"


def run(args: argparse.Namespace) -> int:
    sizes = parse_sizes(args.sizes)
    if args.plot is not None:
        from dgp.plots import require_matplotlib

        require_matplotlib()  # fail before any work when the plot extra is missing
    res = supcon_prototypes(sizes, tau=args.tau, eps=args.eps, method=args.method)
    if args.plot is not None:
        _plot(res, args.plot)
    K = len(res.sizes)
    latex = _latex_pairs(K) if args.latex else None
    if args.json:
        out = res.to_dict()
        if latex is not None:
            out["latex"] = [{"title": t, "latex": s} for t, s in latex]
        emit_json(out)
        return 0
    if latex is not None:
        for title, text in latex:
            print(f"% {title}\n{text}\n")
        if K <= _MAX_TABLE:
            print(f"% computed prototype Gram ({res.method})\n{_latex_matrix(res.gram)}")
        return 0
    kkt = "n/a (closed form)" if res.kkt_residual is None else f"{res.kkt_residual:.2e}"
    print(f"objective     {res.objective}")
    print(f"classes       K = {K}, sizes {list(res.sizes)}, N = {sum(res.sizes)}")
    print(f"tau           {res.tau:g}" + ("" if res.eps is None else f"   eps {res.eps:g}"))
    print(f"method        {res.method}")
    print(f"loss          {res.loss:.10g} nats (summed over N anchors)")
    print(f"excess loss   {res.excess_loss:.6g} nats above the entropic bound "
          f"{res.entropic_bound:.10g}")
    print(f"kkt residual  {kkt}")
    if res.method == "numeric" and res.certificate is not None:
        print(f"gap bound     {res.certificate['gap_bound']:.3g} nats (certified suboptimality)")
    G = res.gram
    if K <= _MAX_TABLE:
        head = ["", *[f"c{c + 1}(n={s})" for c, s in enumerate(res.sizes)]]
        rows = [[head[c + 1], *(f"{v:+.6f}" for v in G[c])] for c in range(K)]
        print("\nprototype Gram (cosines between class prototypes):")
        print(table(rows, head))
    else:
        iu = np.triu_indices(K, 1)
        off = G[iu]
        hi, lo = int(np.argmax(off)), int(np.argmin(off))
        print(f"\noff-diagonal cosines: min {off.min():+.6f} (classes {iu[0][lo] + 1},"
              f"{iu[1][lo] + 1}), max {off.max():+.6f} (classes {iu[0][hi] + 1},{iu[1][hi] + 1}),"
              f" simplex {-1.0 / (K - 1):+.6f}; use --json for the full Gram")
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
    fig.savefig(path, dpi=100)
