"""``dgp recommend``: inverse design questions (which tau, eps or dim), with certificates."""

from __future__ import annotations

import argparse

from dgp.cli._inputs import add_design_arguments, design_kwargs
from dgp.cli._output import add_json_flag, print_result
from dgp.design import recommend
from dgp.errors import InputError

__all__ = ["DESCRIPTION", "HELP", "add_arguments", "run"]


def _floats(text: str, flag: str, count: int | None = None) -> list[float]:
    sep = ":" if ":" in text else ","
    try:
        values = [float(v) for v in text.split(sep)]
    except ValueError:
        raise InputError(f"{flag} {text!r}: expected numbers such as 0.01:10") from None
    if count is not None and len(values) != count:
        raise InputError(f"{flag} {text!r}: expected {count} numbers such as 0.01:10")
    return values


def _ints(text: str, flag: str) -> list[int]:
    try:
        return [int(v) for v in text.split(",")]
    except ValueError:
        raise InputError(f"{flag} {text!r}: expected class codes such as 2,3,4") from None


#: ``dgp recommend``: its line in ``dgp --help``
HELP = "which tau / eps / dim gives the geometry you want"

#: ``dgp recommend``: what ``dgp recommend --help`` says first
DESCRIPTION = (
    "Inverse questions, each answered by a scan and a bisection on the engine's "
    "verdicts, with a certificate (the verdicts or cosines on both sides of the answer, and "
    "the closed form where one exists). --want realizable: the largest tau at which the "
    "weighting stays realizable in --dim. --want simplex: the tau (given --eps) or the eps "
    "(given --tau) at which Soft SupCon's target is the centred regular simplex. --want "
    "'minority-cosine<=X': the largest tau keeping every minority-pair prototype cosine "
    "<= X (supcon, soft-supcon). --want min-dim: the smallest dimension attaining the bound "
    "(given --tau)."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_design_arguments(p)
    p.add_argument("--want", required=True, metavar="WANT",
                   help="realizable, simplex, minority-cosine<=X or min-dim")
    p.add_argument("--minority", metavar="c1,c2,...",
                   help="minority-cosine: the minority classes, as codes 0..K-1 in sorted label "
                   "order (default: every class smaller than the largest)")
    p.add_argument("--search", metavar="LO:HI",
                   help="range scanned for the parameter (default: tau 1e-4:1e4, minority-cosine "
                   "0.01:10)")
    p.add_argument("--points", type=int, default=61,
                   help="scan points before the bisection (default 61)")
    add_json_flag(p)


def run(args: argparse.Namespace) -> int:
    res = recommend(
        **design_kwargs(args), want=args.want,
        minority=None if args.minority is None else _ints(args.minority, "--minority"),
        search=None if args.search is None else tuple(_floats(args.search, "--search", 2)),
        points=args.points,
    )
    from dgp.cli._words import cli_words, command_flags

    # --json: exactly the result's dict (its hints in the library's keyword words); the text
    # says the library's keyword hints as flags
    flags = command_flags(args)
    print_result(args, res, words=lambda text: cli_words(text, flags))
    return 0
