"""MkDocs hooks: pages that may not have landed yet, and the CLI reference from ``--help``.

- ``on_config`` drops the nav entries of pages written elsewhere (experiment results, theorem
  list, benchmarks) while their files do not exist, so that ``mkdocs build --strict`` passes
  before and after they land.
- ``on_files`` adds MathJax to the site (``assets/mathjax/``) from the installed
  ``django-static-mathjax`` distribution (a dev dependency that ships MathJax's browser build
  as plain files and needs nothing else), so formulas render with no network, in ``mkdocs
  serve`` and in the built site alike; nothing of MathJax is committed here.
- ``on_page_content`` keeps an inline formula and the punctuation right after it on one line.
- ``on_page_markdown`` replaces ``<!-- cli-help -->`` with the real ``--help`` text of every
  registered ``dgp`` subcommand, so the CLI reference cannot drift from the parser, replaces
  ``<!-- readme-quickstart -->`` with the first fenced block under the README's
  ``## Quickstart`` (the block whose second line .ci/run runs), so the install and test lines
  of the docs are the README's, and drops the ``::: module`` entries of the API reference
  listed in ``OPTIONAL_MODULES`` whose source file has not landed yet.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

#: pages produced by other parts of the project; listed in the nav only once they exist
OPTIONAL_PAGES = {"results.md", "theorems.md", "benchmarks.md"}
CLI_MARKER = "<!-- cli-help -->"
QUICKSTART_MARKER = "<!-- readme-quickstart -->"
#: modules written elsewhere that the API reference documents once their file exists
OPTIONAL_MODULES = {"dgp.prototypes", "dgp.optima", "dgp.symbolic", "dgp.torch.experiments"}
ROOT = Path(__file__).resolve().parents[1]
HELP_COLUMNS = "96"
#: where the site serves MathJax from (mkdocs.yml's extra_javascript points into it)
MATHJAX_DEST = "assets/mathjax"
MATHJAX_DIST = "django-static-mathjax"
#: the parts of MathJax's ``es5`` build that ``tex-mml-chtml.js`` loads in a browser: TeX
#: extensions on demand (autoload), the CHTML fonts, and what the context menu can switch on
#: (accessibility, speech); the other combined builds and the Node adaptors are left out
MATHJAX_PARTS = (
    "tex-mml-chtml.js",
    "input/tex/extensions",
    "input/mml/extensions",
    "output/chtml/fonts/woff-v2",
    "ui",
    "a11y",
    "sre",
)


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


def mathjax_root() -> Path:
    """The ``es5`` folder of the installed MathJax (``django-static-mathjax``).

    Raises
    ------
    mkdocs.exceptions.PluginError
        If the distribution is not installed (``pip install -e ".[dev]"`` installs it).
    """
    try:
        dist = importlib.metadata.distribution(MATHJAX_DIST)
    except importlib.metadata.PackageNotFoundError:
        raise PluginError(
            f"MathJax is missing: the docs serve it from the {MATHJAX_DIST!r} package; "
            'install the dev extra: pip install -e ".[dev]"'
        ) from None
    root = Path(str(dist.locate_file("mathjax/static/mathjax/es5")))
    if not (root / MATHJAX_PARTS[0]).is_file():
        raise PluginError(f"{MATHJAX_DIST} {dist.version} has no {MATHJAX_PARTS[0]} in {root}")
    return root


def mathjax_files() -> list[tuple[str, Path]]:
    """(site path, source file) of every MathJax file the site serves."""
    root = mathjax_root()
    out: list[tuple[str, Path]] = []
    for part in MATHJAX_PARTS:
        src = root / part
        paths = [src] if src.is_file() else sorted(p for p in src.rglob("*") if p.is_file())
        out += [(f"{MATHJAX_DEST}/{p.relative_to(root).as_posix()}", p) for p in paths]
    out.append((f"{MATHJAX_DEST}/LICENSE", root.parent / "LICENSE"))
    return out


def on_files(files: Files, config: Any, **kwargs: Any) -> Files:
    for uri, path in mathjax_files():
        files.append(File.generated(config, uri, abs_src_path=str(path)))
    return files


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


#: an inline formula of pymdownx.arithmatex (its TeX is HTML-escaped: no "<" inside) and the
#: punctuation glued to it
_MATH_PUNCT = re.compile(r'(<span class="arithmatex">[^<]*</span>)([,.;:!?)\]]+)')


def on_page_content(html: str, **kwargs: Any) -> str:
    return _MATH_PUNCT.sub(r'<span class="math-nowrap">\1\2</span>', html)


def readme_quickstart() -> str:
    """The first fenced block under ``## Quickstart`` in README.md, fences included.

    The same block as .ci/run's ``awk`` reads (its second line is CI's test command).

    Raises
    ------
    mkdocs.exceptions.PluginError
        If the README has no such section or block.
    """
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    try:
        start = lines.index("## Quickstart")
        first = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("```"))
        last = next(i for i in range(first + 1, len(lines)) if lines[i].startswith("```"))
    except (ValueError, StopIteration):
        raise PluginError("README.md has no fenced block under '## Quickstart'") from None
    return "\n".join(lines[first : last + 1])


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    if QUICKSTART_MARKER in markdown:
        markdown = markdown.replace(QUICKSTART_MARKER, readme_quickstart())
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_help_markdown())
    if "\n::: " in markdown:
        markdown = _drop_missing_modules(markdown)
    return markdown
