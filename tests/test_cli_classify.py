"""`dgp classify` and `dgp tour`: JSON contract, bad input as one `error:` line with exit 2."""

import numpy as np
import pytest

from dgp.weights import soft_supcon_weights

CONTRACT_FIELDS = {
    "verdict", "attainable", "similarity", "n", "dim", "tau", "rank", "c_interval",
    "entropic_bound", "reason", "certificate",
}


def test_classify_weights_file_json(tmp_path, cli):
    W = soft_supcon_weights([0, 0, 1, 1, 2, 2], eps=0.1)
    path = tmp_path / "W.npy"
    np.save(path, W)
    r = cli("classify", path, "--similarity", "cosine", "--tau", "0.5", "--dim", "3", "--json")
    assert r.code == 0 and r.err == ""
    data = r.json
    assert CONTRACT_FIELDS <= set(data)
    assert data["verdict"] == "realizable" and data["rank"] == 3 and data["n"] == 6
    lo, hi = data["c_interval"]
    assert lo < hi


def test_classify_csv_and_whitespace_text(tmp_path, cli):
    W = soft_supcon_weights([0, 0, 1, 1], eps=0.5)
    csv, txt = tmp_path / "W.csv", tmp_path / "W.txt"
    np.savetxt(csv, W, delimiter=",")
    np.savetxt(txt, W)
    results = []
    for p in (csv, txt):
        r = cli("classify", p, "--tau", "0.5", "--dim", "2", "--json")
        assert r.code == 0
        results.append(r.json)
    assert results[0] == results[1]


def test_classify_objective_with_labels(tmp_path, cli):
    labels = tmp_path / "y.csv"
    labels.write_text("0\n0\n1\n1\n2\n2\n")
    r = cli("classify", "--objective", "soft-supcon", "--labels", labels, "--eps", "0.1",
            "--tau", "0.5", "--dim", "3", "--json")
    assert r.code == 0
    data = r.json
    assert data["verdict"] == "realizable" and data["objective"] == "soft-supcon"
    r = cli("classify", "--objective", "supcon", "--labels", labels, "--tau", "0.1", "--dim", "3")
    assert r.code == 0 and "inconsistent" in r.out


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
def test_bad_input_is_one_error_line(case, tmp_path, cli):
    r = cli(*_bad_inputs(tmp_path)[case])
    assert r.code == 2 and r.out == ""
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.err
    assert not (tmp_path / "PWNED").exists()  # the pickled payload never ran


def test_pickled_file_through_the_real_command(tmp_path, cli):
    argv = _bad_inputs(tmp_path)["pickled"]
    proc = cli.process(*argv, env={"PYTHONWARNINGS": "ignore"})
    assert proc.code == 2 and proc.out == ""
    assert proc.err.startswith("error: ") and len(proc.err.strip().splitlines()) == 1
    assert "pickle" in proc.err and "Traceback" not in proc.err
    assert not (tmp_path / "PWNED").exists()


def test_tour_runs_and_covers_all_verdicts(cli):
    r = cli("tour")
    assert r.code == 0
    for word in ("realizable", "degenerate", "inconsistent", "Soft SupCon", "X-CLR", "y-Aware"):
        assert word in r.out
    cases = cli("tour", "--json").json["cases"]
    assert {c["verdict"] for c in cases} == {"realizable", "degenerate", "inconsistent"}


def test_large_label_sets_say_why_the_bound_is_missing(tmp_path, cli):
    t = np.random.default_rng(0).uniform(0, 2 * np.pi, 20_001)
    path = tmp_path / "y.npy"
    np.save(path, np.c_[np.cos(t), np.sin(t)] * 2.0)
    argv = ["classify", "--objective", "y-aware", "--labels", str(path), "--sigma", "1",
            "--tau", "0.25", "--dim", "2"]
    r = cli(*argv)
    assert r.code == 0 and "realizable (rank 2)" in r.out
    assert "bound        not computed" in r.out and "nan" not in r.out
    data = cli(*argv, "--json").json
    assert data["entropic_bound"] is None
    assert "not computed" in data["certificate"]["notes"]["entropic_bound"]


@pytest.mark.parametrize("columns", ["80", "140"])
def test_tour_wraps_to_the_terminal_and_never_truncates(cli, monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", columns)
    r = cli("tour")
    assert r.code == 0
    out = r.out
    lines = out.splitlines()
    assert all(line == line.rstrip() for line in lines)  # no trailing spaces
    width = min(120, max(60, int(columns)))
    assert max(len(line) for line in lines) <= width
    assert " ..." not in out  # no shortened explanation
    flat = " ".join(out.split())
    for case in cli("tour", "--json").json["cases"]:  # every reason in full, whatever the wrapping
        assert " ".join(case["reason"].split()) in flat
    assert "Words used above:" in out and "end point" in out
    # the glossary defines only the words the tour uses
    body, _, glossary = out.partition("Words used above:")
    glossary = glossary.partition("\nNext:")[0]
    from dgp.cli.tour import GLOSSARY

    for key, _ in GLOSSARY:
        defined = any(line.startswith("  " + key + " ") for line in glossary.splitlines())
        assert defined == (key in " ".join(body.split())), key
    assert "Farkas certificate" not in glossary and "cap " not in glossary


def test_save_embedding_and_gram(tmp_path, cli):
    W = soft_supcon_weights(np.repeat([0, 1, 2], [3, 2, 2]), eps=0.2)
    f = tmp_path / "W.npy"
    np.save(f, W)
    z, g = tmp_path / "z.npy", tmp_path / "g.csv"
    r = cli("classify", f, "--tau", "0.5", "--dim", "3", "--json", "--embedding",
            "--save-embedding", z, "--save-gram", g)
    assert r.code == 0 and r.err == ""
    data = r.json
    Z = np.load(z, allow_pickle=False)
    assert Z.shape == (7, data["rank"]) and np.allclose(Z, np.array(data["embedding"]))
    G = np.loadtxt(g, delimiter=",")
    assert np.allclose(G, Z @ Z.T) and np.allclose(np.diag(G), 1.0)
    # a degenerate verdict has no unique embedding: a warning, no file, exit 0
    r = cli("classify", f, "--tau", "0.5", "--dim", "7", "--save-embedding",
            tmp_path / "none.npy")
    assert r.code == 0 and r.err.startswith("warning:") and not (tmp_path / "none.npy").exists()
    r = cli("classify", f, "--tau", "0.5", "--dim", "3", "--save-embedding", tmp_path / "z.pkl")
    assert r.code == 2 and r.err.startswith("error: --save-embedding")
