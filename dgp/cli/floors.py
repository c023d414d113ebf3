"""``dgp floors``: the optimal, collapsed and random-embedding losses of a batch, per anchor in
the conventions of pytorch-metric-learning and of the SupContrast reference."""

from __future__ import annotations

import argparse

from dgp.cli._inputs import add_design_arguments, design_kwargs
from dgp.cli._output import add_json_flag, print_result
from dgp.design import SUPCONTRAST_BASE_TEMPERATURE, loss_floors

__all__ = ["DESCRIPTION", "HELP", "add_arguments", "run"]


#: ``dgp floors``: its line in ``dgp --help``
HELP = "loss floors: the optimal, collapsed and random losses of a batch"

#: ``dgp floors``: what ``dgp floors --help`` says first
DESCRIPTION = (
    "Reference values for reading a training curve: the optimal loss (the "
    "floor), the loss with every embedding at one point (collapse) and the expected loss of "
    "random unit embeddings (needs --dim), summed over anchors, per anchor as "
    "pytorch-metric-learning's SupConLoss reports it, and as the SupContrast reference "
    "reports it (times tau / base temperature). --sizes counts the rows of one batch (with "
    "several views per sample, each view is a row)."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_design_arguments(p, tau_required=True, seed_help="seed of the Monte Carlo draws and "
                         "of a rank-D search's random starts (default 0)")
    p.add_argument("--base-temperature", type=float, default=SUPCONTRAST_BASE_TEMPERATURE,
                   help="SupContrast's base_temperature (default "
                   f"{SUPCONTRAST_BASE_TEMPERATURE:g})")
    p.add_argument("--samples", type=int,
                   help="Monte Carlo draws of the random embedding (default: about 4e6 / N)")
    add_json_flag(p)


def run(args: argparse.Namespace) -> int:
    res = loss_floors(
        **design_kwargs(args), base_temperature=args.base_temperature, samples=args.samples,
    )
    print_result(args, res)
    return 0
