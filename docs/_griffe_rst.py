"""Griffe extension: turn the reST bits of dgp's numpy-style docstrings into Markdown.

The docstrings are written for Python's ``help()`` and Sphinx conventions (``:math:`x```,
``.. math::`` blocks, ``:func:`name```); mkdocstrings renders Markdown, so before rendering we
rewrite math for pymdownx.arithmatex (``$...$`` and ``$$...$$``) and cross-reference roles as
inline code, and re-indent the continuation of reST list items (indented to the item's text)
to Markdown's four spaces, so that a math block or a second paragraph inside an item stays in
the item: with two spaces Python-Markdown ends the list, and an indented ``$$`` block is then
left as raw text that MathJax never sees.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_MATH_ROLE = re.compile(r":math:`([^`]+)`")
_XREF_ROLE = re.compile(r":(?:py:)?(?:func|class|mod|meth|attr|data|exc|obj|const):`[~!]?([^`]+)`")
_MATH_LINE = re.compile(r"^(?P<indent>[ \t]*)\.\. math::[ \t]*(?P<rest>.*)$")
_BULLET = re.compile(r"^(?P<indent> *)(?:[*+-]|\d+[.)]) +(?=\S)")


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


def _walk(obj: Any) -> Any:
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member)


class RstToMarkdown(griffe.Extension):
    """Apply :func:`rst_to_markdown` to every docstring griffe loads, and, once a package is
    loaded, :func:`signature_defaults` to every function and class in it."""

    def on_instance(self, *, obj: Any, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = rst_to_markdown(obj.docstring.value)

    def on_package(self, *, pkg: Any, **kwargs: Any) -> None:
        for obj in _walk(pkg):
            signature_defaults(obj)
