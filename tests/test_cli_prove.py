"""`dgp prove`: JSON shape, exit status, example counts, and failure reporting."""

import json
import subprocess
import sys
import textwrap

import pytest

from dgp.cli import main
from dgp.proofs import checks, discover, run_theorems
from dgp.proofs._theorem import METHODS


def _dgp(*args):
    # a subprocess: `dgp prove` loads its own hypothesis profile, which must not leak here
    return subprocess.run(
        [sys.executable, "-m", "dgp", *args], capture_output=True, text=True, check=False
    )


def test_every_module_has_consistent_metadata():
    mods = discover()
    assert len(mods) >= 12
    ids = [m.THEOREM.id for m in mods]
    assert len(set(ids)) == len(ids)
    for m in mods:
        thm = m.THEOREM
        assert thm.method in METHODS and thm.statement and m.__doc__
        names = [n for n, _ in checks(m)]
        sym = any(n.startswith("test_symbolic_") for n in names)
        prop = any(n.startswith("test_property_") for n in names)
        expected = {(True, True): "both", (True, False): "symbolic", (False, True): "property"}
        assert expected[(sym, prop)] == thm.method, m.__name__


def test_prove_json_one_theorem():
    out = _dgp("prove", "--only", "entropic-bound", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert list(data) == ["theorems"]
    (thm,) = data["theorems"]
    assert list(thm) == ["id", "statement", "status", "method", "examples"]
    assert thm["id"] == "entropic-bound" and thm["status"] == "verified"
    assert thm["method"] == "both" and thm["examples"] >= 100


def test_prove_table_and_unknown_id():
    out = _dgp("prove", "--only", "metrics-invariances")
    assert out.returncode == 0, out.stderr
    assert "metrics-invariances" in out.stdout and "verified" in out.stdout
    assert "1/1" in out.stdout
    bad = _dgp("prove", "--only", "no-such-theorem")
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.startswith("error:") and "no-such-theorem" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


def test_failed_theorem_is_reported(tmp_path, monkeypatch):
    """A theorem whose check fails is 'failed', the others still run; examples are counted."""
    pkg = tmp_path / "fakeproofs"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "t01_fake.py").write_text(
        textwrap.dedent(
            """
            from hypothesis import given, settings, strategies as st
            from dgp.proofs._theorem import Theorem
            THEOREM = Theorem(id="fake", statement="x*x >= x for x >= 1", method="property")

            @settings(max_examples=120, database=None, derandomize=True)
            @given(st.integers(1, 10**6))
            def test_property_square(x):
                assert x * x >= x

            @settings(max_examples=50, database=None, derandomize=True)
            @given(st.integers(0, 10))
            def test_property_false(x):
                assert x < 5
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    mod = importlib.import_module("fakeproofs.t01_fake")
    (res,) = run_theorems([mod])
    assert res.status == "failed" and res.id == "fake"
    assert res.examples >= 120
    assert any("test_property_false" in f for f in res.failures)


@pytest.mark.parametrize("argv", [["prove", "--bogus"]])
def test_bad_arguments_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert capsys.readouterr().err.startswith("error:")


def test_prove_progress_on_stderr_quiet_with_json():
    proc = subprocess.run([sys.executable, "-m", "dgp", "prove", "--only", "entropic-bound"],
                          capture_output=True, text=True)
    assert proc.returncode == 0
    assert proc.stderr.startswith("[1/1] entropic-bound: verified")
    proc = subprocess.run([sys.executable, "-m", "dgp", "prove", "--only", "entropic-bound",
                           "--json"], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == ""
