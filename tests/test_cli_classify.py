"""`dgp classify` and `dgp tour`: JSON contract, bad input as one `error:` line with exit 2."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from dgp.cli import main
from dgp.weights import soft_supcon_weights

CONTRACT_FIELDS = {
    "verdict", "attainable", "similarity", "n", "dim", "tau", "rank", "c_interval",
    "entropic_bound", "reason", "certificate",
}


def run(argv, capsys):
    """Run the CLI in-process; argparse usage errors exit through SystemExit."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def test_classify_weights_file_json(tmp_path, capsys):
    W = soft_supcon_weights([0, 0, 1, 1, 2, 2], eps=0.1)
    path = tmp_path / "W.npy"
    np.save(path, W)
    code, out, err = run([
        "classify", str(path), "--similarity", "cosine", "--tau", "0.5", "--dim", "3", "--json"
    ], capsys)
    assert code == 0 and err == ""
    data = json.loads(out)
    assert CONTRACT_FIELDS <= set(data)
    assert data["verdict"] == "realizable" and data["rank"] == 3 and data["n"] == 6
    lo, hi = data["c_interval"]
    assert lo < hi


def test_classify_csv_and_whitespace_text(tmp_path, capsys):
    W = soft_supcon_weights([0, 0, 1, 1], eps=0.5)
    csv, txt = tmp_path / "W.csv", tmp_path / "W.txt"
    np.savetxt(csv, W, delimiter=",")
    np.savetxt(txt, W)
    results = []
    for p in (csv, txt):
        code, out, _ = run(["classify", str(p), "--tau", "0.5", "--dim", "2", "--json"], capsys)
        assert code == 0
        results.append(json.loads(out))
    assert results[0] == results[1]


def test_classify_objective_with_labels(tmp_path, capsys):
    labels = tmp_path / "y.csv"
    labels.write_text("0\n0\n1\n1\n2\n2\n")
    code, out, _ = run([
        "classify", "--objective", "soft-supcon", "--labels", str(labels), "--eps", "0.1",
        "--tau", "0.5", "--dim", "3", "--json",
    ], capsys)
    assert code == 0
    data = json.loads(out)
    assert data["verdict"] == "realizable" and data["objective"] == "soft-supcon"
    code, out, _ = run([
        "classify", "--objective", "supcon", "--labels", str(labels), "--tau", "0.1", "--dim", "3"
    ], capsys)
    assert code == 0 and "inconsistent" in out


class Payload:
    """Unpickling this would create a marker file."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _bad_inputs(tmp_path):
    good = tmp_path / "good.npy"
    np.save(good, np.ones((3, 3)))
    nan = tmp_path / "nan.csv"
    nan.write_text("0,1\nnan,0\n")
    neg = tmp_path / "neg.csv"
    neg.write_text("0,-1\n1,0\n")
    rect = tmp_path / "rect.csv"
    rect.write_text("0,1,1\n1,0,1\n")
    one = tmp_path / "one.csv"
    one.write_text("1\n")
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    garbage = tmp_path / "garbage.npy"
    garbage.write_bytes(b"\x00\x01not a numpy file at all")
    words = tmp_path / "words.csv"
    words.write_text("a,b\nc,d\n")
    pickled = tmp_path / "pickled.npy"
    np.save(pickled, np.array([Payload(str(tmp_path / "PWNED")), 1], dtype=object),
            allow_pickle=True)
    base = ["--tau", "0.5", "--dim", "2"]
    return {
        "nan": ["classify", str(nan), *base],
        "negative": ["classify", str(neg), *base],
        "non-square": ["classify", str(rect), *base],
        "1x1": ["classify", str(one), *base],
        "empty": ["classify", str(empty), *base],
        "garbage": ["classify", str(garbage), *base],
        "words": ["classify", str(words), *base],
        "pickled": ["classify", str(pickled), *base],
        "missing": ["classify", str(tmp_path / "nope.npy"), *base],
        "tau<=0": ["classify", str(good), "--tau", "0", "--dim", "2"],
        "tau<0": ["classify", str(good), "--tau", "-1", "--dim", "2"],
        "dim<=0": ["classify", str(good), "--tau", "0.5", "--dim", "0"],
        "dim-text": ["classify", str(good), "--tau", "0.5", "--dim", "two"],
        "no-input": ["classify", "--tau", "0.5", "--dim", "2"],
        "objective-no-labels": ["classify", "--objective", "supcon", *base],
        "unknown-similarity": ["classify", str(good), "--similarity", "dot", *base],
    }


@pytest.mark.parametrize("case", [
    "nan", "negative", "non-square", "1x1", "empty", "garbage", "words", "pickled", "missing",
    "tau<=0", "tau<0", "dim<=0", "dim-text", "no-input", "objective-no-labels",
    "unknown-similarity",
])
def test_bad_input_is_one_error_line(case, tmp_path, capsys):
    code, out, err = run(_bad_inputs(tmp_path)[case], capsys)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert not (tmp_path / "PWNED").exists()  # the pickled payload never ran


def test_pickled_file_through_the_real_command(tmp_path):
    argv = _bad_inputs(tmp_path)["pickled"]
    proc = subprocess.run([sys.executable, "-m", "dgp", *argv], capture_output=True, text=True,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"}, check=False)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("error: ") and len(proc.stderr.strip().splitlines()) == 1
    assert "pickle" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "PWNED").exists()


def test_tour_runs_and_covers_all_verdicts(capsys):
    code, out, _ = run(["tour"], capsys)
    assert code == 0
    for word in ("realizable", "degenerate", "inconsistent", "Soft SupCon", "X-CLR", "y-Aware"):
        assert word in out
    code, out, _ = run(["tour", "--json"], capsys)
    cases = json.loads(out)["cases"]
    assert {c["verdict"] for c in cases} == {"realizable", "degenerate", "inconsistent"}


def test_large_label_sets_say_why_the_bound_is_missing(tmp_path, capsys):
    t = np.random.default_rng(0).uniform(0, 2 * np.pi, 20_001)
    path = tmp_path / "y.npy"
    np.save(path, np.c_[np.cos(t), np.sin(t)] * 2.0)
    argv = ["classify", "--objective", "y-aware", "--labels", str(path), "--sigma", "1",
            "--tau", "0.25", "--dim", "2"]
    code, out, _ = run(argv, capsys)
    assert code == 0 and "realizable (rank 2)" in out
    assert "bound        not computed" in out and "nan" not in out
    code, out, _ = run([*argv, "--json"], capsys)
    data = json.loads(out)
    assert data["entropic_bound"] is None
    assert "not computed" in data["certificate"]["notes"]["entropic_bound"]


@pytest.mark.parametrize("columns", ["80", "140"])
def test_tour_wraps_to_the_terminal_and_never_truncates(capsys, monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", columns)
    code, out, _ = run(["tour"], capsys)
    assert code == 0
    lines = out.splitlines()
    assert all(line == line.rstrip() for line in lines)  # no trailing spaces
    width = min(120, max(60, int(columns)))
    assert max(len(line) for line in lines) <= width
    assert " ..." not in out  # no shortened explanation
    code, js, _ = run(["tour", "--json"], capsys)
    flat = " ".join(out.split())
    for case in json.loads(js)["cases"]:  # every reason in full, whatever the wrapping
        assert " ".join(case["reason"].split()) in flat
    assert "Words used above:" in out and "end point" in out and "Farkas certificate" in out


def test_save_embedding_and_gram(tmp_path, capsys):
    W = soft_supcon_weights(np.repeat([0, 1, 2], [3, 2, 2]), eps=0.2)
    f = tmp_path / "W.npy"
    np.save(f, W)
    z, g = tmp_path / "z.npy", tmp_path / "g.csv"
    code, out, err = run(["classify", str(f), "--tau", "0.5", "--dim", "3", "--json",
                          "--embedding", "--save-embedding", str(z), "--save-gram", str(g)],
                         capsys)
    assert code == 0 and err == ""
    data = json.loads(out)
    Z = np.load(z, allow_pickle=False)
    assert Z.shape == (7, data["rank"]) and np.allclose(Z, np.array(data["embedding"]))
    G = np.loadtxt(g, delimiter=",")
    assert np.allclose(G, Z @ Z.T) and np.allclose(np.diag(G), 1.0)
    # a degenerate verdict has no unique embedding: a warning, no file, exit 0
    code, _, err = run(["classify", str(f), "--tau", "0.5", "--dim", "7", "--save-embedding",
                        str(tmp_path / "none.npy")], capsys)
    assert code == 0 and err.startswith("warning:") and not (tmp_path / "none.npy").exists()
    code, _, err = run(["classify", str(f), "--tau", "0.5", "--dim", "3", "--save-embedding",
                        str(tmp_path / "z.pkl")], capsys)
    assert code == 2 and err.startswith("error: --save-embedding")
