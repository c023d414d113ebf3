"""MkDocs hooks: pages that may not have landed yet, and the CLI reference from ``--help``.

- ``on_config`` drops the nav entries of pages written elsewhere (experiment results, theorem
  list, benchmarks) while their files do not exist, so that ``mkdocs build --strict`` passes
  before and after they land.
- ``on_page_markdown`` replaces ``<!-- cli-help -->`` with the real ``--help`` text of every
  registered ``dgp`` subcommand, so the CLI reference cannot drift from the parser, and drops
  the ``::: module`` entries of the API reference listed in ``OPTIONAL_MODULES`` whose source
  file has not landed yet.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

#: pages produced by other parts of the project; listed in the nav only once they exist
OPTIONAL_PAGES = {"results.md", "theorems.md", "benchmarks.md"}
CLI_MARKER = "<!-- cli-help -->"
#: modules written elsewhere that the API reference documents once their file exists
OPTIONAL_MODULES = {"dgp.prototypes", "dgp.optimum", "dgp.symbolic", "dgp.torch.experiments"}
ROOT = Path(__file__).resolve().parents[1]
HELP_COLUMNS = "96"


def _prune(items: list[Any], docs_dir: Path) -> list[Any]:
    kept = []
    for item in items:
        if isinstance(item, dict):
            ((title, value),) = item.items()
            if isinstance(value, list):
                value = _prune(value, docs_dir)
                if value:
                    kept.append({title: value})
                continue
            if value in OPTIONAL_PAGES and not (docs_dir / value).exists():
                continue
        elif isinstance(item, str) and item in OPTIONAL_PAGES and not (docs_dir / item).exists():
            continue
        kept.append(item)
    return kept


def on_config(config: Any, **kwargs: Any) -> Any:
    if config.get("nav"):
        config["nav"] = _prune(config["nav"], Path(config["docs_dir"]))
    return config


def cli_help_markdown() -> str:
    """Markdown with the ``--help`` of ``dgp`` and of each subcommand, in registration order."""
    import argparse

    from dgp.cli import build_parser

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_COLUMNS
    try:
        parser = build_parser()
        parts = ["### `dgp`", "", "```text", parser.format_help().rstrip(), "```", ""]
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        for name, p in sub.choices.items():
            parts += [f"### `dgp {name}`", "", "```text", p.format_help().rstrip(), "```", ""]
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    return "\n".join(parts)


def module_present(name: str) -> bool:
    """Whether the source of ``dgp.x.y`` exists (``dgp/x/y.py`` or ``dgp/x/y/__init__.py``)."""
    base = ROOT.joinpath(*name.split("."))
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists()


def _drop_missing_modules(markdown: str) -> str:
    lines = []
    for line in markdown.splitlines():
        name = line[4:].strip() if line.startswith("::: ") else ""
        if name in OPTIONAL_MODULES and not module_present(name):
            continue
        lines.append(line)
    return "\n".join(lines) + "\n"


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_help_markdown())
    if "\n::: " in markdown:
        markdown = _drop_missing_modules(markdown)
    return markdown
