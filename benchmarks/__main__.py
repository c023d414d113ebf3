"""Run every benchmark module and write ``docs/benchmarks.md``.

Usage: ``python -m benchmarks [--quick] [--json] [--only NAME ...] [--no-write]``. With
``--only``, only those sections of ``docs/benchmarks.md`` are rewritten (each saying so, with
its own machine line); the rest of the page stays as it was measured.
Exit status 3 when a benchmark misses its target (an exception exits 1), so that CI can tell a
slow, noisy run from a broken benchmark.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib
import json
import os
import platform
import sys
import time

import numpy as np
import scipy

MODULES = ("classify", "structured", "prototypes", "optimum", "rank_d", "zeros", "torch_loss",
           "phase", "batch")
DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs",
                   "benchmarks.md")


def _machine() -> dict:
    import dgp

    info = {
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "dgp": dgp.__version__,
    }
    if hasattr(os, "getloadavg"):  # other work on the machine slows every row
        info["load average (1 min)"] = f"{os.getloadavg()[0]:.2f}"
    try:
        import cvxpy

        info["cvxpy"] = cvxpy.__version__
    except ImportError:  # pragma: no cover - cvxpy is a dependency
        pass
    try:
        import torch

        info["torch"] = torch.__version__
    except ImportError:
        info["torch"] = "not installed"
    return info


def _fmt(x) -> str:
    if isinstance(x, bool):
        return "yes" if x else "NO"
    if isinstance(x, float):
        return f"{x:.3g}"
    return str(x)


def _markdown(machine: dict, results: dict[str, list[dict]], quick: bool, seconds: float) -> str:
    lines = [
        "# Benchmarks",
        "",
        "Written by `python -m benchmarks" + (" --quick" if quick else "") + "`; do not edit by "
        "hand. Each row is a ratio against a named baseline measured in the same process "
        "(these machines are noisy, absolute times are not comparable across runs).",
        "",
        "Machine: " + _machine_line(machine) + ".",
        f"Total time: {seconds:.0f} s.",
        "",
    ]
    for module, rows in results.items():
        lines += _section(module, rows)
    return "\n".join(lines)


def _machine_line(machine: dict) -> str:
    return ", ".join(f"{k} {v}" for k, v in machine.items())


def _merged(old: str, machine: dict, results: dict[str, list[dict]], quick: bool,
            seconds: float) -> str:
    """``old`` (the page) with the sections of ``results`` replaced (or added, in the order of
    MODULES), each saying that it was regenerated alone and on what machine; the other sections
    and the page's machine line are kept as they were measured."""
    head, *parts = old.split("\n## ")
    sections = {part.split("\n", 1)[0].strip(): "## " + part.rstrip("\n") + "\n"
                for part in parts}
    command = "python -m benchmarks" + (" --quick" if quick else "") + " --only " + " ".join(
        results)
    for module, rows in results.items():
        note = (f"Regenerated alone by `{command}` ({seconds:.0f} s), apart from the rest of "
                f"this page. Machine: {_machine_line(machine)}.")
        sections[module] = "\n".join(_section(module, rows, note=note))
    order = [m for m in MODULES if m in sections] + [m for m in sections if m not in MODULES]
    return head.rstrip("\n") + "\n\n" + "\n".join(sections[m] for m in order)


def _section(module: str, rows: list[dict], note: str | None = None) -> list[str]:
    lines = [f"## {module}", ""]
    if note:
        lines += [note, ""]
    lines += ["| benchmark | baseline | ratio | target | ok |", "|---|---|---|---|---|"]
    for r in rows:
        ratio = _fmt(r.get("ratio"))
        if "ratio_meaning" in r:
            ratio += f" ({r['ratio_meaning']})"
        lines.append(
            f"| {r['name']} | {r.get('baseline', '')} | {ratio} | {r.get('target', '')} | "
            f"{_fmt(r.get('ok', ''))} |"
        )
    for r in rows:
        if "table" in r:
            keys = list(r["table"][0])
            lines += ["", f"{r['name']}:", "", "| " + " | ".join(keys) + " |",
                      "|" + "---|" * len(keys)]
            for row in r["table"]:
                lines.append("| " + " | ".join(_fmt(row[k]) for k in keys) + " |")
    lines.append("")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    p.add_argument("--quick", action="store_true", help="small sizes (CI)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--only", nargs="+", choices=MODULES, help="run only these modules")
    p.add_argument("--no-write", action="store_true", help="do not write docs/benchmarks.md")
    args = p.parse_args(argv)
    start = time.perf_counter()
    results: dict[str, list[dict]] = {}
    for name in args.only or MODULES:
        try:
            module = importlib.import_module(f"benchmarks.{name}")
        except ImportError as exc:  # e.g. torch missing for torch_loss
            results[name] = [{"name": name, "baseline": "", "ratio": None,
                              "target": f"skipped: {exc}", "ok": True}]
            continue
        if not args.json:
            print(f"running {name} ...", file=sys.stderr, flush=True)
        results[name] = module.run(args.quick)
    seconds = time.perf_counter() - start
    machine = _machine()
    if not args.no_write:
        os.makedirs(os.path.dirname(DOC), exist_ok=True)
        page = _markdown(machine, results, args.quick, seconds)
        if args.only and os.path.exists(DOC):  # replace only the sections that were run
            with open(DOC, encoding="utf-8") as fh:
                page = _merged(fh.read(), machine, results, args.quick, seconds)
        with open(DOC, "w", encoding="utf-8") as fh:
            fh.write(page)
    failed = [r["name"] for rows in results.values() for r in rows if r.get("ok") is False]
    if args.json:
        json.dump({"machine": machine, "quick": args.quick, "seconds": seconds,
                   "results": results, "failed": failed}, sys.stdout, indent=2, default=float)
        print()
    else:
        print(_markdown(machine, results, args.quick, seconds))
        if failed:
            print("missed targets: " + "; ".join(failed), file=sys.stderr)
    return 3 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
