"""Griffe extension: turn the reST bits of dgp's numpy-style docstrings into Markdown.

The docstrings are written for Python's ``help()`` and Sphinx conventions (``:math:`x```,
``.. math::`` blocks, ``:func:`name```); mkdocstrings renders Markdown, so before rendering we
rewrite math for pymdownx.arithmatex (``$...$`` and ``$$...$$``) and cross-reference roles as
inline code, and re-indent the continuation of reST list items (indented to the item's text)
to Markdown's four spaces, so that a math block or a second paragraph inside an item stays in
the item: with two spaces Python-Markdown ends the list, and an indented ``$$`` block is then
left as raw text that MathJax never sees.

Once the package is loaded it also:

- shows real default values in signatures and parameter tables: a default written as a name or
  an expression (``rtol=DEFAULT_RTOL``, ``64 * 2 ** 20``) is replaced by the value the imported
  function really has (``rtol=1e-09``), so a reader need not look the constant up;
- documents each name once: a name a module imports from another module that the API
  reference documents (``docs/api.md``'s ``::: module`` lines) is left to that module's page,
  so ``dgp.classification`` does not repeat ``dgp.result.Classification``.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path
from typing import Any

import griffe

_MATH_ROLE = re.compile(r":math:`([^`]+)`")
_XREF_ROLE = re.compile(r":(?:py:)?(?:func|class|mod|meth|attr|data|exc|obj|const):`[~!]?([^`]+)`")
_MATH_LINE = re.compile(r"^(?P<indent>[ \t]*)\.\. math::[ \t]*(?P<rest>.*)$")
_BULLET = re.compile(r"^(?P<indent> *)(?:[*+-]|\d+[.)]) +(?=\S)")
_API_PAGE = Path(__file__).with_name("api.md")
#: the longest default value written out in a signature; a longer repr keeps the source text
MAX_DEFAULT_REPR = 60


def rst_to_markdown(text: str) -> str:
    """Rewrite ``.. math::`` blocks, ``:math:`` and cross-reference roles as Markdown."""
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        m = _MATH_LINE.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        indent = m.group("indent")
        body = [m.group("rest")] if m.group("rest").strip() else []
        i += 1
        # the block: blank lines and lines indented deeper than the directive
        while i < len(lines) and (not lines[i].strip() or _depth(lines[i]) > len(indent)):
            body.append(lines[i].strip())
            i += 1
        while body and not body[-1]:
            body.pop()
        while body and not body[0]:
            body.pop(0)
        out += ["", f"{indent}$$", *(f"{indent}{b}" for b in body), f"{indent}$$", ""]
    text = "\n".join(_markdown_list_indent(out))
    text = _MATH_ROLE.sub(lambda mm: f"${mm.group(1)}$", text)
    return _XREF_ROLE.sub(lambda mm: f"`{mm.group(1)}`", text)


def _depth(line: str) -> int:
    return len(line) - len(line.lstrip())


def _markdown_list_indent(lines: list[str]) -> list[str]:
    """Indent what belongs to a list item (nested lists too) four spaces past its marker.

    A line belongs to the innermost open item whose text column it reaches (reST's rule); a
    non-blank line left of it closes the item.
    """
    out: list[str] = []
    items: list[tuple[int, int]] = []  # (text column in the input, its column in the output)
    for line in lines:
        if not line.strip():
            out.append("")
            continue
        depth = _depth(line)
        while items and depth < items[-1][0]:
            items.pop()
        new = items[-1][1] + depth - items[-1][0] if items else depth
        line = " " * new + line.lstrip()
        m = _BULLET.match(line)
        if m:
            items.append((depth + m.end() - new, new + 4))
        out.append(line)
    return out


def signature_defaults(obj: Any) -> None:
    """Show the signature's default of each documented parameter, ``required`` where none.

    numpydoc lists choices in braces with the default first (``method : {"spectral", "sdp"}``),
    and griffe reads the first choice as the default, also for a required parameter
    (``objective : {"supcon", ...}`` would read as ``objective="supcon"``). The signature is
    the truth: a parameter the signature has takes its default from there.
    """
    if obj.docstring is None or obj.kind.value not in ("function", "class"):
        return
    try:
        signature = {p.name: p for p in obj.parameters}
    except (AttributeError, KeyError):  # no __init__ known: nothing to compare with
        return
    for section in obj.docstring.parsed:
        if section.kind.value != "parameters":
            continue
        for param in section.value:
            if param.name in signature:
                param.value = signature[param.name].default


def documented_modules(api_page: Path = _API_PAGE) -> set[str]:
    """The modules the API reference documents: the ``::: module`` lines of ``docs/api.md``."""
    return set(re.findall(r"^::: ([\w.]+)\s*$", api_page.read_text(encoding="utf-8"), re.M))


def _is_literal(text: str) -> bool:
    try:
        ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    return True


def _runtime(obj: Any) -> Any | None:
    """The imported object griffe's ``obj`` describes; None where it cannot be imported (an
    optional extra missing) or is not there at run time."""
    module = obj.module.path
    try:
        value: Any = importlib.import_module(module)
    except ImportError:
        return None
    for name in obj.path[len(module) + 1 :].split(".") if obj.path != module else []:
        value = getattr(value, name, None)
        if value is None:
            return None
    return value


def runtime_defaults(obj: Any) -> None:
    """Write the real value of each default that the source gives as a name or expression.

    Only short reprs replace the source text (a long one would be less readable than the
    name); values that the source already writes as literals are left alone.
    """
    if obj.kind.value not in ("function", "class"):
        return
    if obj.kind.value == "class":
        _runtime_field_defaults(obj)
    try:
        params = list(obj.parameters)
    except (AttributeError, KeyError):  # a class without a known __init__
        return
    todo = [p for p in params if p.default is not None and not _is_literal(str(p.default))]
    if not todo:
        return
    runtime = _runtime(obj)
    if runtime is None or not callable(runtime):
        return
    try:
        signature = inspect.signature(runtime)
    except (TypeError, ValueError):  # a builtin without a signature
        return
    for param in todo:
        real = signature.parameters.get(param.name)
        if real is None or real.default is inspect.Parameter.empty:
            continue
        text = _short_repr(real.default)
        if text is not None:
            param.default = text


def _short_repr(value: Any) -> str | None:
    text = repr(value)
    return text if len(text) <= MAX_DEFAULT_REPR and not text.startswith("<") else None


def _runtime_field_defaults(cls: Any) -> None:
    """The class attributes of a class (a dataclass's field defaults, from which its
    ``__init__`` signature is made) with their real values where the source names a constant."""
    todo = [
        m
        for m in cls.members.values()
        if not m.is_alias
        and m.kind.value == "attribute"
        and m.value is not None
        and not _is_literal(str(m.value))
    ]
    if not todo:
        return
    runtime = _runtime(cls)
    if not isinstance(runtime, type):
        return
    for member in todo:
        if member.name in vars(runtime):
            text = _short_repr(vars(runtime)[member.name])
            if text is not None:
                member.value = text


def hide_documented_aliases(pkg: Any, documented: set[str]) -> None:
    """Leave each imported name to the page of the module that defines it, when the API
    reference documents that module: one entry per name."""
    for obj in _walk(pkg):
        if obj.kind.value != "module":
            continue
        for member in obj.members.values():
            if not member.is_alias:
                continue
            home, _, name = member.target_path.rpartition(".")
            if home != obj.path and home in documented and not name.startswith("_"):
                member.public = False


def _walk(obj: Any) -> Any:
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member)


class RstToMarkdown(griffe.Extension):
    """Apply :func:`rst_to_markdown` to every docstring griffe loads, and, once a package is
    loaded, :func:`runtime_defaults` and :func:`signature_defaults` to every function and class
    in it and :func:`hide_documented_aliases` to its modules."""

    def on_instance(self, *, obj: Any, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = rst_to_markdown(obj.docstring.value)

    def on_package(self, *, pkg: Any, **kwargs: Any) -> None:
        for obj in _walk(pkg):
            runtime_defaults(obj)
            signature_defaults(obj)
        hide_documented_aliases(pkg, documented_modules())
