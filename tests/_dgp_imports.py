"""How the architecture tests read dgp's imports (tests/test_architecture.py and
tests/test_import_circles.py): a file's module name and every dgp import in it, relative ones
resolved, at module level, inside functions and under ``TYPE_CHECKING`` alike."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def module_of(path: Path, root: Path = ROOT) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports_of(path: Path, root: Path = ROOT):
    """(line, imported module, names) of every dgp import in ``path``, relative ones resolved."""
    module = module_of(path, root)
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target == "dgp" or target.startswith("dgp."):
                yield node.lineno, target, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "dgp" or a.name.startswith("dgp."):
                    yield node.lineno, a.name, []
