"""``dgp prove``: run every theorem of :mod:`dgp.proofs` and report each one's status.

Exit status: 0 when every theorem is verified, 1 when one fails (a failed proof is a defect of
the package, not bad input), 2 on bad arguments. Hypothesis runs derandomized (a fixed,
reproducible set of examples), without an example database, at least 100 examples per property.
"""

from __future__ import annotations

import argparse
import sys

from dgp.cli._output import add_json_flag, emit_json, quiet, table

__all__ = ["DESCRIPTION", "HELP", "add_arguments", "run"]


#: ``dgp prove``: its line in ``dgp --help``
HELP = "run every theorem as an executable check (sympy + hypothesis)"

#: ``dgp prove``: what ``dgp prove --help`` says first
DESCRIPTION = (
    "Run the theorems of dgp.proofs: sympy derivations and hypothesis property tests "
    "(derandomized, >= 100 examples each) against independent reference computations. "
    "Exit 0 if all are verified, 1 if one fails."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--only",
        action="append",
        metavar="ID",
        help="run only this theorem id (repeatable; see the table for ids)",
    )
    add_json_flag(p)
    p.add_argument("--quiet", action="store_true",
                   help="no progress lines on stderr (--json is quiet too)")


def _load_profile() -> None:
    from hypothesis import settings

    # the 100 examples are explicit: the module docstring and --help promise them, whatever
    # profile was loaded before; no health check is suppressed (without a deadline hypothesis
    # allows 30 s of input generation, and no proof filters out most of its inputs)
    settings.register_profile(
        "dgp-prove",
        derandomize=True,
        database=None,
        deadline=None,
        max_examples=100,
        print_blob=False,
    )
    settings.load_profile("dgp-prove")


def run(args: argparse.Namespace) -> int:
    _load_profile()  # before the proof modules are imported: their settings inherit it
    from dgp.proofs import run_theorems

    def progress(k: int, total: int, r) -> None:
        sys.stderr.write(f"[{k}/{total}] {r.id}: {r.status} ({r.seconds:.1f} s)\n")
        sys.stderr.flush()

    results = run_theorems(only=args.only, progress=None if quiet(args) else progress)
    if args.json:
        emit_json({"theorems": [r.to_dict() for r in results]})
    else:
        rows = [[r.id, r.status, r.method, str(r.examples), f"{r.seconds:.1f}"] for r in results]
        print(table(rows, ["theorem", "status", "method", "examples", "seconds"]))
        n_ok = sum(r.status == "verified" for r in results)
        print(f"\n{n_ok}/{len(results)} theorems verified")
        for r in results:
            for f in r.failures:
                print(f"FAILED {r.id}: {f}", file=sys.stderr)
    return 0 if all(r.status == "verified" for r in results) else 1
