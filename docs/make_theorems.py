"""Write docs/theorems.md from the theorem modules of ``dgp.proofs`` (their ``THEOREM`` records
and docstrings), so that the page lists exactly the theorems ``dgp prove`` runs.

Usage: ``python docs/make_theorems.py`` (write) or ``python docs/make_theorems.py --check``
(exit 1 when the page is out of date).
"""

from __future__ import annotations

import argparse
import pathlib
import re
import sys

PAGE = pathlib.Path(__file__).resolve().parent / "theorems.md"

INTRO = """\
# Theorems

Every mathematical claim dgp relies on is an executable check in `proofs/` (installed as
`dgp.proofs`; one module per theorem, shipped with the package). Run them all with `dgp prove`
(`--json` for `{"theorems": [{"id", "statement", "status", "method", "examples"}]}`; exit 0 when
every theorem is verified, 1 when one fails, 2 on bad arguments), or with pytest:
`pytest proofs`. This page is written from the modules by `python docs/make_theorems.py`.

How the checks are built:

- **symbolic** (`test_symbolic_*`): sympy derivations of the identities behind the theorem.
- **property** (`test_property_*`): hypothesis property tests, at least 100 examples each,
  derandomized (a fixed, reproducible example set). They compare the package's closed forms,
  spectra and verdicts with *independent* reference computations in `proofs/_reference.py` and
  the modules themselves: losses and entropies evaluated row by row from their definitions,
  targets built entry by entry, dense `numpy.linalg.eigvalsh` of explicitly built matrices,
  bisection for admissible intervals, least-squares cycle potentials over all pairs,
  independent Burer–Monteiro solvers, brute-force minimisation over free embeddings,
  `scipy.linalg.orthogonal_procrustes`. No proof asserts a value computed by the code path it
  checks.
- The inputs come from the public strategies of `dgp.strategies` (symmetric, symmetrizable,
  cycle-breaking and zero-weight matrices; balanced, long-tailed and size-2 class sizes; labels
  on spheres of any centre and radius and off them; temperatures at and near each critical
  value). Use them to property-test your own weightings.
"""


def rst_to_markdown(text: str) -> str:
    """The reST of a theorem docstring as Markdown with MathJax delimiters."""
    out: list[str] = []
    lines = text.strip("\n").splitlines()
    k = 0
    while k < len(lines):
        line = lines[k]
        if line.strip() == ".. math::":
            k += 1
            body = []
            while k < len(lines) and (not lines[k].strip() or lines[k].startswith(" ")):
                body.append(lines[k].strip())
                k += 1
            out += ["", "$$", *(b for b in body if b), "$$", ""]
            continue
        line = re.sub(r":math:`([^`]*)`", r"$\1$", line)
        line = re.sub(r":(?:func|class|mod|meth|data):`~?([^`]*)`", r"`\1`", line)
        line = line.replace("``", "`")
        out.append(line)
        k += 1
    text = "\n".join(out)
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def page() -> str:
    from dgp.proofs import checks, discover

    mods = discover()
    parts = [INTRO, "| # | id | method | checks |", "|---|----|--------|--------|"]
    for k, m in enumerate(mods, start=1):
        parts.append(f"| {k} | `{m.THEOREM.id}` | {m.THEOREM.method} | {len(checks(m))} |")
    parts.append("")
    for k, m in enumerate(mods, start=1):
        thm = m.THEOREM
        names = ", ".join(f"`{name}`" for name, _ in checks(m))
        parts += [
            f"## {k}. `{thm.id}`",
            "",
            f"*Statement.* {thm.statement}",
            "",
            f"*Method:* {thm.method}; checks: {names}. Module `{m.__name__}`.",
            "",
            rst_to_markdown(m.__doc__ or ""),
        ]
    return "\n".join(parts).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--check", action="store_true", help="exit 1 if the page is out of date")
    args = p.parse_args(argv)
    text = page()
    if args.check:
        current = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
        if current != text:
            print(f"{PAGE} is out of date: run python docs/make_theorems.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
