"""Regenerate the audit table of docs/audit.md (between its two marker lines).

    python docs/make_audit_table.py          # rewrite the table in docs/audit.md
    python docs/make_audit_table.py --check  # exit 1 if the page differs from a fresh run

Needs the torch extra and, for the released implementations, the `audit` test extra; a row
whose package is absent says so instead of being dropped.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

PAGE = pathlib.Path(__file__).with_name("audit.md")
# the dgp of this checkout, not another one installed in the environment
sys.path.insert(0, str(PAGE.resolve().parent.parent))
START, END = "<!-- audit-table:start -->", "<!-- audit-table:end -->"


def table() -> str:
    from dgp.torch.audit_examples import (
        CASES,
        TABLE_HEADER,
        CaseUnavailable,
        run_case,
        table_row,
        unavailable_row,
    )

    rows = [TABLE_HEADER]
    for case in CASES:
        try:
            rows.append(table_row(case, run_case(case)))
        except CaseUnavailable as exc:
            rows.append(unavailable_row(case, str(exc)))
        print(f"  {case.name}", file=sys.stderr)
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    args = parser.parse_args()
    text = PAGE.read_text(encoding="utf-8")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{START}\n{table()}\n{END}{tail}"
    if args.check:
        return 0 if new == text else 1
    PAGE.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
