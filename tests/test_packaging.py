"""The distribution ships every package: pyproject lists them all (proofs/ as dgp.proofs)."""

from __future__ import annotations

import pathlib

import pytest

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_every_package_is_listed():
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]
    listed = set(conf["setuptools"]["packages"])
    found = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for p in (ROOT / "dgp").rglob("__init__.py")
        if "__pycache__" not in p.parts
    }
    assert found | {"dgp.proofs"} == listed
    assert conf["setuptools"]["package-dir"] == {"dgp.proofs": "proofs"}
    assert (ROOT / "proofs" / "__init__.py").exists() and not (ROOT / "dgp" / "proofs").exists()


def test_proofs_import_as_dgp_proofs():
    import dgp.proofs

    assert pathlib.Path(dgp.proofs.__file__).resolve().parent == ROOT / "proofs"
    assert len(dgp.proofs.discover()) >= 17
