"""MkDocs hooks: pages that may not have landed yet, and the CLI reference from ``--help``.

- ``on_config`` drops the nav entries of pages written elsewhere (experiment results, theorem
  list, benchmarks) while their files do not exist, so that ``mkdocs build --strict`` passes
  before and after they land.
- ``on_files`` adds MathJax to the site (``assets/mathjax/``) from the installed
  ``django-static-mathjax`` distribution (a dev dependency that ships MathJax's browser build
  as plain files and needs nothing else), so formulas render with no network, in ``mkdocs
  serve`` and in the built site alike; nothing of MathJax is committed here.
- the API reference is one page per module: ``docs/api.md`` lists the modules (``::: module``
  lines, with their mkdocstrings options, under ``##`` section headings); ``on_files``
  generates a page ``api/<module>.md`` for each, ``on_config`` lists them in the nav under
  those sections, and ``on_page_markdown`` turns the lines of ``api.md`` itself into links with
  each module's one-line summary, so the index page stays short and every module has a page
  of its own.
- ``on_page_content`` keeps an inline formula and the punctuation right after it on one line,
  and short inline code in a table cell on one line (``--want simplex`` is not split after its
  dashes).
- ``on_post_build`` rewrites the TeX of the search index (``search/search_index.json``) as
  plain text (``\\(s_{ij} = \\log w_{ij} + c\\)`` becomes ``s_ij = log w_ij + c``), so search
  previews show readable formulas instead of TeX source; the pages keep their TeX for MathJax.
- ``on_page_markdown`` replaces ``<!-- cli-help -->`` with the real ``--help`` text of every
  registered ``dgp`` subcommand, so the CLI reference cannot drift from the parser, replaces
  ``<!-- readme-quickstart -->`` with the first fenced block under the README's
  ``## Quickstart`` (the block whose second line .ci/run runs), so the install and test lines
  of the docs are the README's, and drops the ``::: module`` entries of the API reference
  listed in ``OPTIONAL_MODULES`` whose source file has not landed yet.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import re
import textwrap
import unicodedata
from pathlib import Path
from typing import Any, NamedTuple

import yaml
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
#: the API reference's index page, and the folder of its generated per-module pages
API_PAGE = "api.md"
API_DIR = "api"
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
        docs_dir = Path(config["docs_dir"])
        config["nav"] = _api_nav(_prune(config["nav"], docs_dir), docs_dir)
    return config


class ApiEntry(NamedTuple):
    """One ``::: module`` entry of ``docs/api.md``."""

    module: str
    section: str  # the ``##`` heading above it
    options: dict[str, Any]  # its mkdocstrings options (the indented ``options:`` block)

    @property
    def uri(self) -> str:
        """The generated page, relative to the docs folder."""
        return f"{API_DIR}/{self.module}.md"


_DIRECTIVE = re.compile(r"^::: ([\w.]+)\s*$")


def api_entries(markdown: str) -> list[ApiEntry]:
    """The modules ``docs/api.md`` lists, in order, skipping those not landed yet."""
    out: list[ApiEntry] = []
    section = ""
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if line.startswith("## "):
            section = line[3:].strip()
        m = _DIRECTIVE.match(line)
        if not m:
            continue
        block = []
        while i < len(lines) and (lines[i].startswith(" ") or not lines[i].strip()):
            block.append(lines[i])
            i += 1
        parsed = yaml.safe_load(textwrap.dedent("\n".join(block))) if "".join(block).strip() else {}
        if m.group(1) in OPTIONAL_MODULES and not module_present(m.group(1)):
            continue
        out.append(ApiEntry(m.group(1), section, dict((parsed or {}).get("options") or {})))
    return out


def _read_api_entries(docs_dir: Path) -> list[ApiEntry]:
    path = docs_dir / API_PAGE
    return api_entries(path.read_text(encoding="utf-8")) if path.exists() else []


def _api_nav(items: list[Any], docs_dir: Path) -> list[Any]:
    """Replace the nav's ``api.md`` entry by a section: the index, then one sub-section per
    ``##`` heading of api.md with a page per module."""
    entries = _read_api_entries(docs_dir)
    out: list[Any] = []
    for item in items:
        if isinstance(item, dict):
            ((title, value),) = item.items()
            if isinstance(value, list):
                out.append({title: _api_nav(value, docs_dir)})
                continue
            if value == API_PAGE and entries:
                sections: dict[str, list[Any]] = {}
                for e in entries:
                    sections.setdefault(e.section or title, []).append({e.module: e.uri})
                out.append(
                    {title: [{"Overview": API_PAGE}, *({k: v} for k, v in sections.items())]}
                )
                continue
        out.append(item)
    return out


def api_page_markdown(entry: ApiEntry) -> str:
    """The generated page of one module: its heading, then mkdocstrings' ``:::`` block."""
    options = {"show_root_heading": False, **entry.options}
    block = textwrap.indent(yaml.safe_dump({"options": options}, sort_keys=False), "    ")
    return f"# `{entry.module}`\n\n::: {entry.module}\n{block}"


def _griffe_rst() -> Any:
    """docs/_griffe_rst.py (the reST-to-Markdown rewriting of the API pages' docstrings)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "_dgp_docs_griffe_rst", ROOT / "docs" / "_griffe_rst.py"
    )
    if spec is None or spec.loader is None:
        raise PluginError("docs/_griffe_rst.py cannot be loaded")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def module_summary(name: str) -> str:
    """The first paragraph of a module's docstring, read from its source (nothing is imported)
    and rewritten from reST to Markdown as on its page."""
    base = ROOT.joinpath(*name.split("."))
    path = base / "__init__.py" if (base / "__init__.py").exists() else base.with_suffix(".py")
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    first = doc.strip().split("\n\n")[0].replace("\n", " ")
    return _griffe_rst().rst_to_markdown(first) if first else ""


def api_index_markdown(markdown: str) -> str:
    """api.md as the index: each ``::: module`` block becomes a link to its page."""
    entries = {e.module: e for e in api_entries(markdown)}
    lines: list[str] = []
    skipping = False
    for line in markdown.splitlines():
        m = _DIRECTIVE.match(line)
        if m:
            skipping = True
            entry = entries.get(m.group(1))
            if entry is not None:
                summary = module_summary(entry.module)
                link = f"- [`{entry.module}`]({entry.uri})"
                lines.append(f"{link}: {summary}" if summary else link)
            continue
        if skipping and (line.startswith(" ") or not line.strip()):
            continue
        if skipping:
            lines.append("")
        skipping = False
        lines.append(line)
    return "\n".join(lines) + "\n"


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
    for entry in _read_api_entries(Path(config["docs_dir"])):
        files.append(File.generated(config, entry.uri, content=api_page_markdown(entry)))
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


#: inline code in a table cell up to this many characters is kept on one line (a flag such as
#: ``--objective`` is not split after its dashes); longer code still wraps at spaces
TABLE_CODE_NOWRAP_CHARS = 40
_TABLE = re.compile(r"<table>.*?</table>", re.S)
_SHORT_CODE = re.compile(rf"<code>([^<]{{1,{TABLE_CODE_NOWRAP_CHARS}}})</code>")


def _table_code_nowrap(table: re.Match[str]) -> str:
    return _SHORT_CODE.sub(r'<code class="table-nowrap">\1</code>', table.group(0))


def on_page_content(html: str, **kwargs: Any) -> str:
    html = _MATH_PUNCT.sub(r'<span class="math-nowrap">\1\2</span>', html)
    return _TABLE.sub(_table_code_nowrap, html)


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


def on_page_markdown(markdown: str, page: Any = None, **kwargs: Any) -> str:
    if page is not None and page.file.src_uri == API_PAGE:
        return api_index_markdown(markdown)
    if QUICKSTART_MARKER in markdown:
        markdown = markdown.replace(QUICKSTART_MARKER, readme_quickstart())
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_help_markdown())
    if "\n::: " in markdown:
        markdown = _drop_missing_modules(markdown)
    return markdown


# ---------------------------------------------------------------------------------------------
# search previews: formulas as text

#: TeX commands with a symbol of their own (Greek letters are looked up by name)
TEX_SYMBOLS = {
    "sum": "Σ", "prod": "Π", "ne": "≠", "neq": "≠", "le": "≤", "leq": "≤", "ge": "≥",
    "geq": "≥", "approx": "≈", "sim": "~", "infty": "∞", "in": "∈", "notin": "∉",
    "subseteq": "⊆", "cap": "∩", "cup": "∪", "to": "→", "mapsto": "↦", "rightarrow": "→",
    "Rightarrow": "⇒", "iff": "⇔", "nabla": "∇", "partial": "∂", "cdot": "·", "cdots": "⋯",
    "ldots": "…", "dots": "…", "times": "×", "pm": "±", "mp": "∓", "succeq": "⪰", "preceq": "⪯",
    "langle": "⟨", "rangle": "⟩", "lVert": "‖", "rVert": "‖", "|": "‖", "Vert": "‖",
    "lvert": "|", "rvert": "|", "ell": "ℓ", "perp": "⊥", "top": "ᵀ", "circ": "∘", "emptyset": "∅",
    "forall": "∀", "exists": "∃", "lfloor": "⌊", "rfloor": "⌋", "lceil": "⌈", "rceil": "⌉",
    "sqrt": "√", "mid": "|", "colon": ":", "setminus": "∖", "propto": "∝", "equiv": "≡",
    "varepsilon": "ε", "epsilon": "ε", "varphi": "φ", "vartheta": "θ",
    "{": "{", "}": "}", "%": "%", "&": "&", "#": "#", "_": "_",
}  # fmt: skip
#: commands that only style or space their argument: dropped, the argument kept
TEX_DROPPED = {
    "mathrm", "mathbf", "mathit", "mathsf", "mathtt", "mathcal", "text", "textrm", "textbf",
    "textit", "operatorname", "hat", "widehat", "tilde", "widetilde", "bar", "overline",
    "vec", "boldsymbol", "bm", "left", "right", "big", "Big", "bigg", "Bigg", "bigl", "bigr",
    "Bigl", "Bigr", "displaystyle", "tfrac", "dfrac", "frac", "quad", "qquad", "mathbb",
    "underbrace", "overbrace", "limits", "nolimits", "tag", "label", "begin", "end",
}  # fmt: skip
_TEX_MATH = re.compile(r"\\\((.*?)\\\)|\\\[(.*?)\\\]", re.S)
_TEX_CMD = re.compile(r"\\([A-Za-z]+|[^A-Za-z\s])")
_TEX_BLACKBOARD = {"R": "ℝ", "N": "ℕ", "Z": "ℤ", "Q": "ℚ", "C": "ℂ", "E": "𝔼", "P": "ℙ", "1": "𝟙"}


def _tex_command(m: re.Match[str]) -> str:
    name = m.group(1)
    if name in TEX_SYMBOLS:
        return TEX_SYMBOLS[name]
    if name in (",", ";", ":", "!", " "):
        return " "
    if name in TEX_DROPPED:
        return " " if name in ("quad", "qquad") else ""
    if name.isalpha():
        unicode_name = name.upper().replace("LAMBDA", "LAMDA")  # Unicode's spelling
        for case in ("SMALL", "CAPITAL"):
            try:
                letter = unicodedata.lookup(f"GREEK {case} LETTER {unicode_name}")
            except KeyError:
                continue
            if (case == "SMALL") == name[0].islower():
                return letter
    return f" {name} "  # \\log, \\exp, \\max, \\min, \\det ... read as words


def tex_to_text(tex: str) -> str:
    """A readable plain-text rendering of a TeX formula, for search previews (not typesetting).

    Greek letters and common symbols become Unicode characters, style commands are dropped,
    ``\\frac{a}{b}`` reads ``a/b``, and braces go: ``\\langle \\hat z_i, z_j\\rangle/\\tau``
    becomes ``⟨z_i, z_j⟩/τ``.
    """
    text = re.sub(
        r"\\mathbb\s*\{?\s*([A-Z1])\s*\}?",
        lambda m: _TEX_BLACKBOARD.get(m.group(1), m.group(1)),
        tex,
    )
    text = re.sub(
        r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}",
        lambda m: f"{_grouped(m.group(1))}/{_grouped(m.group(2))}",
        text,
    )
    script = re.compile(r"([_^])\{([^{}]*)\}")
    while script.search(text):  # innermost first: e^{s_{ik}} -> e^{s_ik} -> e^s_ik
        text = script.sub(lambda m: m.group(1) + _grouped(m.group(2)), text)
    text = _TEX_CMD.sub(_tex_command, text)
    text = text.replace("{", "").replace("}", "").replace("&amp;", " ").replace("~", " ")
    text = " ".join(text.split())
    return re.sub(r"([(⟨‖]) | ([)⟩‖,])", lambda m: m.group(1) or m.group(2), text)


def _grouped(tex: str) -> str:
    """A sub/superscript or fraction part, in parentheses unless it is one symbol or word."""
    tex = tex.strip()
    return tex if re.fullmatch(r"\\?\w+", tex) else f"({tex})"


def search_text(html: str) -> str:
    """Every ``\\(...\\)`` and ``\\[...\\]`` formula of a search-index entry as plain text."""
    return _TEX_MATH.sub(
        lambda m: tex_to_text(m.group(1) if m.group(1) is not None else m.group(2)), html
    )


def on_post_build(config: Any, **kwargs: Any) -> None:
    path = Path(config["site_dir"]) / "search" / "search_index.json"
    if not path.exists():
        return
    index = json.loads(path.read_text(encoding="utf-8"))
    for doc in index.get("docs", []):
        for key in ("title", "text"):
            if key in doc:
                doc[key] = search_text(doc[key])
    path.write_text(json.dumps(index, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
