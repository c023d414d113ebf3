"""Griffe extension: turn the reST bits of dgp's numpy-style docstrings into Markdown.

The docstrings are written for Python's ``help()`` and Sphinx conventions (``:math:`x```,
``.. math::`` blocks, ``:func:`name```); mkdocstrings renders Markdown, so before rendering we
rewrite math for pymdownx.arithmatex (``$...$`` and ``$$...$$``) and cross-reference roles as
inline code.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_MATH_ROLE = re.compile(r":math:`([^`]+)`")
_XREF_ROLE = re.compile(r":(?:py:)?(?:func|class|mod|meth|attr|data|exc|obj|const):`[~!]?([^`]+)`")
_MATH_LINE = re.compile(r"^(?P<indent>[ \t]*)\.\. math::[ \t]*(?P<rest>.*)$")


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
    text = "\n".join(out)
    text = _MATH_ROLE.sub(lambda mm: f"${mm.group(1)}$", text)
    return _XREF_ROLE.sub(lambda mm: f"`{mm.group(1)}`", text)


def _depth(line: str) -> int:
    return len(line) - len(line.lstrip())


class RstToMarkdown(griffe.Extension):
    """Apply :func:`rst_to_markdown` to every docstring griffe loads."""

    def on_instance(self, *, obj: Any, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = rst_to_markdown(obj.docstring.value)
