"""`dgp prove`: JSON shape, exit status, example counts, and failure reporting."""

import json
import textwrap

import pytest

from dgp.proofs import checks, discover, run_theorems
from dgp.proofs._theorem import METHODS

# `dgp prove` runs in a child process (cli.process): it loads its own hypothesis profile,
# which must not leak into this test session


@pytest.fixture(scope="module")
def entropic_bound_json(cli):
    """`dgp prove --only entropic-bound --json`, run once for the tests that read it (each
    `dgp prove` is a child that imports every theorem, ~3 s or more: those tests are slow)."""
    return cli.process("prove", "--only", "entropic-bound", "--json")


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


@pytest.mark.slow
def test_prove_json_one_theorem(entropic_bound_json):
    out = entropic_bound_json
    assert out.code == 0, out.err
    data = out.json
    assert list(data) == ["theorems"]
    (thm,) = data["theorems"]
    assert list(thm) == ["id", "statement", "status", "method", "examples"]
    assert thm["id"] == "entropic-bound" and thm["status"] == "verified"
    assert thm["method"] == "both" and thm["examples"] >= 100


@pytest.mark.slow
def test_prove_table_and_unknown_id(cli):
    out = cli.process("prove", "--only", "metrics-invariances")
    assert out.code == 0, out.err
    assert "metrics-invariances" in out.out and "verified" in out.out
    assert "1/1" in out.out
    bad = cli.process("prove", "--only", "no-such-theorem")
    assert bad.code == 2 and bad.out == ""
    assert bad.err.startswith("error:") and "no-such-theorem" in bad.err
    assert len(bad.err.strip().splitlines()) == 1


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
def test_bad_arguments_exit_2(argv, cli):
    r = cli(*argv)  # refused by the parser, before any profile is loaded
    assert r.code == 2
    assert r.err.startswith("error:")


@pytest.mark.slow
def test_prove_progress_on_stderr_kept_with_json_silenced_by_quiet(cli, entropic_bound_json):
    """Progress goes to stderr; --json leaves it there (stdout is the object's alone) and
    --quiet silences it."""
    proc = cli.process("prove", "--only", "entropic-bound")
    assert proc.code == 0
    assert proc.err.startswith("[1/1] entropic-bound: verified")
    proc = entropic_bound_json
    assert proc.code == 0 and proc.err.startswith("[1/1] entropic-bound: verified")
    json.loads(proc.out)
    proc = cli.process("prove", "--only", "entropic-bound", "--json", "--quiet")
    assert proc.code == 0 and proc.err == ""
