"""``dgp classify``: the verdict on a weight matrix, or on a named objective built from labels."""

from __future__ import annotations

import argparse

import numpy as np

from dgp.classification import METHODS, classify
from dgp.cli._output import emit_json
from dgp.infonce import SIMILARITIES
from dgp.io import load_array
from dgp.objectives import OBJECTIVE_NAMES, classify_objective

__all__ = ["register", "render"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "classify",
        help="classify the target geometry of a weighting",
        description="Classify the target geometry of a weight matrix (WEIGHTS) or of a named "
        "objective built from labels (--objective with --labels) as realizable, degenerate or "
        "inconsistent, with a certificate.",
    )
    p.add_argument("weights", nargs="?", metavar="WEIGHTS", help="N x N matrix (.npy/.csv/.txt)")
    p.add_argument("--objective", choices=OBJECTIVE_NAMES, help="build W from labels")
    p.add_argument("--labels", metavar="LABELS", help="labels file for --objective")
    p.add_argument("--similarity", choices=SIMILARITIES, help="default: cosine (objective's own)")
    p.add_argument("--tau", type=float, required=True, help="temperature > 0")
    p.add_argument("--dim", type=int, required=True, help="embedding dimension >= 1")
    p.add_argument("--sigma", type=float, help="label kernel width (y-aware, euclid-euclid)")
    p.add_argument("--eps", type=float, help="cross-class weight in (0, 1) (soft-supcon)")
    p.add_argument("--label-tau", type=float, help="label temperature (x-clr)")
    p.add_argument("--rtol", type=float, default=1e-8, help="relative tolerance (default 1e-8)")
    p.add_argument("--method", choices=METHODS, default="spectral", help="default: spectral")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--plot", metavar="FILE", help="also save a figure (needs the plot extra)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if (args.weights is None) == (args.objective is None):
        raise ValueError("give either a WEIGHTS file or --objective with --labels, not both")
    if getattr(args, "plot", None) is not None:
        from dgp.plots import require_matplotlib

        require_matplotlib()  # fail before any work when the plot extra is missing
    if args.objective is None:
        for flag in ("labels", "sigma", "eps", "label_tau"):
            if getattr(args, flag) is not None:
                raise ValueError(f"--{flag.replace('_', '-')} needs --objective")
        W = load_array(args.weights, name="WEIGHTS")
        res = classify(
            W,
            similarity=args.similarity or "cosine",
            tau=args.tau,
            dim=args.dim,
            rtol=args.rtol,
            method=args.method,
        )
    else:
        if args.labels is None:
            raise ValueError(f"--objective {args.objective} needs --labels LABELS")
        labels = load_array(args.labels, name="LABELS")
        res = classify_objective(
            args.objective,
            labels,
            tau=args.tau,
            dim=args.dim,
            sigma=args.sigma,
            eps=args.eps,
            label_tau=args.label_tau,
            similarity=args.similarity,
            rtol=args.rtol,
            method=args.method,
        )
    if getattr(args, "plot", None) is not None:
        _plot(args, res, W if args.objective is None else labels)
    if args.json:
        emit_json(res.to_dict())
    else:
        print(render(res))
        if getattr(args, "plot", None) is not None:
            print(f"figure       {args.plot}")
    return 0


def _plot(args: argparse.Namespace, res, data) -> None:
    """Save the figure of ``--plot FILE`` (the c family and, when realizable, the target)."""
    from dgp.plots import MAX_PLOT_N, classification_figure
    from dgp.weights import column_normalised_y_aware_weights, objective_weights

    if args.objective is None:
        W = data
    elif res.n > MAX_PLOT_N:
        raise ValueError(
            f"--plot draws N x N matrices; N = {res.n} is above {MAX_PLOT_N} (drop --plot)"
        )
    elif args.objective == "y-aware-colnorm":
        W = column_normalised_y_aware_weights(data, sigma=args.sigma)
    else:
        W = objective_weights(
            args.objective, data, sigma=args.sigma, eps=args.eps, label_tau=args.label_tau
        )
    if res.embedding is None and res.verdict == "realizable" and W.shape[0] <= MAX_PLOT_N:
        from dgp.classification import classify

        res = classify(W, similarity=res.similarity, tau=res.tau, dim=res.dim, rtol=res.rtol)
    classification_figure(W, res).savefig(args.plot, dpi=100)


def render(res) -> str:
    """A short human-readable report of a :class:`dgp.Classification`."""

    def num(x):
        return "unbounded" if x is None else f"{x:.6g}"

    lines = [
        f"verdict      {res.verdict}" + (f" (rank {res.rank})" if res.rank is not None else ""),
        f"reason       {res.reason}",
        f"weighting    N = {res.n}"
        + (f", objective {res.objective}" if res.objective else "")
        + f", {res.similarity} similarity, tau = {res.tau:g}, dim = {res.dim}",
        (
            f"bound        sum_i H(p_i) = {res.entropic_bound:.6g} nats"
            + ("" if res.attainable else " (not attained)")
            if np.isfinite(res.entropic_bound)
            else f"bound        {res.certificate.get('entropic_bound', 'not computed')}"
        ),
    ]
    if res.c_interval is not None:
        lo, hi = res.c_interval
        lines.append(f"c interval   [{num(lo)}, {num(hi)}]  (s*_ij = log w_ij + c)")
    lines.append(
        f"certificate  {res.certificate.get('kind', '?')}; method {res.method}, rtol {res.rtol:g}"
    )
    return "\n".join(lines)
