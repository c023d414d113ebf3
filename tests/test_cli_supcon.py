"""``dgp supcon`` and ``dgp optimum``: JSON contract, human output, LaTeX, bad input (exit 2)."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys

import numpy as np
import pytest

from dgp.cli import main
from dgp.weights import supcon_weights

CONTRACT = ("objective", "sizes", "tau", "eps", "gram", "loss", "method", "kkt_residual")


def run_json(capsys, argv):
    rc = main(argv)
    out = capsys.readouterr()
    assert rc == 0 and out.err == ""
    return json.loads(out.out)


def test_supcon_json_numeric(capsys):
    d = run_json(capsys, ["supcon", "--sizes", "2,5,20", "--tau", "0.1", "--json"])
    assert set(CONTRACT) <= set(d)
    assert d["objective"] == "supcon" and d["sizes"] == [2, 5, 20] and d["eps"] is None
    assert d["method"] == "numeric" and d["kkt_residual"] <= 1e-8
    G = np.array(d["gram"])
    assert G.shape == (3, 3) and G[0, 1] > G[1, 2]


def test_supcon_json_closed_forms_and_first_order(capsys):
    d = run_json(capsys, ["supcon", "--sizes", "4,4,4", "--tau", "0.2", "--json"])
    assert d["method"] == "closed-form" and d["kkt_residual"] is None
    np.testing.assert_allclose(np.array(d["gram"])[0, 1], -0.5)
    d = run_json(capsys, ["supcon", "--sizes", "2,9", "--tau", "0.2", "--eps", "0.3", "--json"])
    assert d["objective"] == "soft-supcon" and d["method"] == "closed-form"
    d = run_json(
        capsys, ["supcon", "--sizes", "2,5,9", "--tau", "0.05", "--method", "first-order", "--json"]
    )
    assert d["method"] == "first-order" and d["kkt_residual"] is None


def test_supcon_human_and_latex(capsys):
    assert main(["supcon", "--sizes", "2,5,20", "--tau", "0.1"]) == 0
    out = capsys.readouterr().out
    assert "prototype Gram" in out and "kkt residual" in out
    assert main(["supcon", "--sizes", "2,5,20", "--tau", "0.1", "--latex"]) == 0
    out = capsys.readouterr().out
    assert r"\tau^*" in out and r"\begin{pmatrix}" in out
    d = run_json(capsys, ["supcon", "--sizes", "2,3", "--tau", "0.1", "--latex", "--json"])
    assert any(r"\tau^*" in item["latex"] for item in d["latex"])


@pytest.mark.parametrize(
    "argv",
    [
        ["supcon", "--sizes", "1,4", "--tau", "0.1"],
        ["supcon", "--sizes", "3,a", "--tau", "0.1"],
        ["supcon", "--sizes", "0,4", "--tau", "0.1"],
        ["supcon", "--sizes", "-3,4", "--tau", "0.1"],
        ["supcon", "--sizes", "3,4.5", "--tau", "0.1"],
        ["supcon", "--sizes", "", "--tau", "0.1"],
        ["supcon", "--sizes", "3", "--tau", "0.1"],
        ["supcon", "--sizes", "3,4", "--tau", "0"],
        ["supcon", "--sizes", "3,4", "--tau", "-1"],
        ["supcon", "--sizes", "3,4", "--tau", "nan"],
        ["supcon", "--sizes", "3,4", "--tau", "x"],
        ["supcon", "--sizes", "3,4", "--tau", "0.1", "--eps", "1"],
        ["supcon", "--sizes", "3,4", "--tau", "0.1", "--eps", "0"],
        ["supcon", "--sizes", "3,4", "--tau", "0.1", "--eps", "0.5", "--method", "first-order"],
        ["supcon", "--sizes", "3,4", "--tau", "0.1", "--method", "magic"],
        ["supcon", "--tau", "0.1"],
    ],
)
def test_supcon_bad_input_exit_2(capsys, argv):
    with pytest.raises(SystemExit) as exc:
        raise SystemExit(main(argv))
    assert exc.value.code == 2
    out = capsys.readouterr()
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), out.err
    assert "Traceback" not in out.err and out.out == ""


def test_supcon_bad_input_subprocess():
    proc = subprocess.run(
        [sys.executable, "-m", "dgp", "supcon", "--sizes", "1,4", "--tau", "0.1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "sizes" in lines[0]
    assert proc.stdout == ""


@pytest.fixture
def supcon_npy(tmp_path):
    path = tmp_path / "w.npy"
    np.save(path, supcon_weights([0, 0, 1, 1, 1]))
    return path


def test_optimum_json_and_human(capsys, supcon_npy, tmp_path):
    d = run_json(capsys, ["optimum", str(supcon_npy), "--tau", "0.5", "--json"])
    assert d["rank"] == 1 and d["unique"] is True and d["n"] == 5
    G = np.array(d["gram"])
    assert G[0, 1] >= 1 - 1e-5 and G[0, 2] <= -1 + 1e-5
    csv = tmp_path / "w.csv"
    np.savetxt(csv, supcon_weights([0, 0, 1, 1, 1]), delimiter=",")
    assert main(["optimum", str(csv), "--tau", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "duality gap" in out and "rank" in out


def test_optimum_bad_files(capsys, tmp_path):
    garbage = tmp_path / "g.csv"
    garbage.write_text("1,2\nfoo,3\n")
    pickled = tmp_path / "p.npy"
    np.save(pickled, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    raw = tmp_path / "raw.npy"
    raw.write_bytes(pickle.dumps([[0, 1], [1, 0]]))
    notsquare = tmp_path / "ns.csv"
    notsquare.write_text("0,1,1\n1,0,1\n")
    for path, tau in [
        (garbage, "0.5"),
        (pickled, "0.5"),
        (raw, "0.5"),
        (notsquare, "0.5"),
        (tmp_path / "missing.npy", "0.5"),
        (tmp_path, "0.5"),
    ]:
        rc = main(["optimum", str(path), "--tau", tau])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and err[0].startswith("error:"), (path, err)
    good = tmp_path / "ok.csv"
    good.write_text("0,1\n1,0\n")
    assert main(["optimum", str(good), "--tau", "-1"]) == 2
    assert capsys.readouterr().err.startswith("error:")
