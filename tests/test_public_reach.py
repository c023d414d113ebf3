"""Every public module of the API reference, and every name its ``__all__`` lists, is reachable
as documented from a bare ``import dgp`` (``dgp.prototypes.prototype_loss`` raised
AttributeError until something imported the submodule), in a fresh interpreter each time."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def documented_top_modules() -> list[str]:
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    names = {m.split(".")[1] for m in re.findall(r"^::: (dgp\.[a-z_.]+)", text, re.M)}
    return sorted(names)


def test_the_reference_lists_modules():
    assert {"prototypes", "infonce", "solver", "metrics"} <= set(documented_top_modules())


@pytest.mark.slow
def test_every_documented_module_and_name_is_reachable_from_import_dgp():
    names = documented_top_modules()
    if importlib.util.find_spec("torch") is None:  # dgp.torch's names need the extra
        names = [n for n in names if n != "torch"]
    code = (
        "import importlib, dgp\n"
        f"for name in {names!r}:\n"
        "    mod = getattr(dgp, name)\n"
        "    for attr in getattr(importlib.import_module('dgp.' + name), '__all__', []):\n"
        "        getattr(mod, attr)\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]


def test_prototype_loss_without_importing_the_submodule():
    code = ("import dgp\n"
            "print(round(dgp.prototypes.prototype_loss([[1, -1], [-1, 1]], [2, 2], tau=1.0), 6))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "0.958179"  # 4 log(1 + 2 e^-2)


def test_no_public_module_lists_a_name_twice():
    """An ``__all__`` that names something twice is two edits made of one; the reference
    renders each name once."""
    names = [n for n in documented_top_modules() if n != "torch"]
    for name in names:
        listed = list(getattr(importlib.import_module("dgp." + name), "__all__", []))
        twice = sorted({n for n in listed if listed.count(n) > 1})
        assert not twice, f"dgp.{name}.__all__ lists {twice} more than once"
