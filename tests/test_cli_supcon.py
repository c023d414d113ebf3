"""``dgp supcon`` and ``dgp optimum``: JSON contract, human output, exports, LaTeX, bad input."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from dgp.weights import gaussian_kernel_weights, supcon_weights

CONTRACT = ("objective", "sizes", "tau", "eps", "gram", "loss", "method", "kkt_residual")


def ok(r):
    """The JSON of a run that exited 0 with nothing on stderr."""
    assert r.code == 0 and r.err == "", r.err
    return r.json


def test_supcon_json_numeric(cli):
    d = ok(cli("supcon", "--sizes", "2,5,20", "--tau", "0.1", "--json"))
    assert set(CONTRACT) <= set(d)
    assert d["objective"] == "supcon" and d["sizes"] == [2, 5, 20] and d["eps"] is None
    assert d["method"] == "numeric" and d["kkt_residual"] <= 1e-8
    G = np.array(d["gram"])
    assert G.shape == (3, 3) and G[0, 1] > G[1, 2]
    assert d["rank"] == 2 and d["unique"] is True and d["certificate"]["strictly_complementary"]


def test_supcon_json_closed_forms_and_first_order(cli):
    d = ok(cli("supcon", "--sizes", "4,4,4", "--tau", "0.2", "--json"))
    assert d["method"] == "closed-form" and d["kkt_residual"] is None
    np.testing.assert_allclose(np.array(d["gram"])[0, 1], -0.5)
    d = ok(cli("supcon", "--sizes", "2,9", "--tau", "0.2", "--eps", "0.3", "--json"))
    assert d["objective"] == "soft-supcon" and d["method"] == "closed-form"
    d = ok(cli("supcon", "--sizes", "5000,500,50", "--tau", "0.1", "--method",
               "first-order", "--json"))
    assert d["method"] == "first-order" and d["kkt_residual"] is None
    a = d["approximation"]
    assert a["psd_defect"] == pytest.approx(0.0068, abs=5e-5) and a["converged"]
    assert np.linalg.eigvalsh(np.array(a["projected_gram"]))[0] >= -1e-12


def test_first_order_text_never_claims_the_bound(cli):
    r = cli("supcon", "--sizes", "5000,500,50", "--tau", "0.001", "--method", "first-order")
    assert r.code == 0
    out = r.out
    assert "approximation" in out and "PSD defect" in out and "<=" in out
    assert " 0 nats" not in out and "e-6" in out  # an excess of about 1e-650, not zero
    r = cli("supcon", "--sizes", "5000,500,50", "--tau", "0.001")
    assert r.code == 0
    out = r.out
    assert "certified" in out and " 0 nats" not in out


def test_supcon_batch_flags(cli):
    d = ok(cli("supcon", "--sizes", "2,5,20", "--tau", "0.2", "--batch-size", "8",
               "--json"))
    b = d["batch"]
    assert b["batch_size"] == 8 and b["sampler"] == "uniform" and b["expectation"] == "exact"
    assert b["shift_from_full_batch"] > 0.01 and len(b["positive_pair_probability"]) == 3
    d = ok(cli("supcon", "--sizes", "6,4,5", "--tau", "0.2", "--batch-size", "6",
               "--sampler", "m-per-class", "--samples-per-class", "2", "--json"))
    np.testing.assert_allclose(np.array(d["gram"])[0, 1], -0.5, atol=1e-12)
    r = cli("supcon", "--sizes", "2,5,20", "--tau", "0.2", "--batch-size", "8", "--reduction",
            "sum")
    assert r.code == 0
    out = r.out
    assert "B = 8" in out and "reduction" in out and "positive pair" in out
    r = cli("supcon", "--sizes", "2,5,20", "--tau", "0.5", "--tolerance", "0.05")
    assert r.code == 0 and "within 0.05" in r.out
    # the same batch size as from Python, and the largest size tried is N
    from dgp.prototypes import batch_size_for_tolerance

    t = batch_size_for_tolerance([2, 5, 20], tau=0.5, tol=0.05)
    assert f"B = {t.batch_size} " in r.out and t.table[-1][0] == 27


@pytest.mark.parametrize("flags", [("--tolerance", "0.05"), ("--latex",)])
def test_json_with_another_question_is_refused_before_work(cli, flags):
    """``--json`` prints one result, the prototypes' ``to_dict()`` exactly: ``--tolerance`` (a
    batch size) and ``--latex`` (formulas as text) print something else, so with ``--json``
    they are refused, naming both flags, with nothing on stdout."""
    r = cli("supcon", "--sizes", "2,5,20", "--tau", "0.5", "--json", *flags)
    assert r.code == 2 and r.out == "" and r.err.count("\n") == 1
    assert r.err.startswith(f"error: {flags[0]} and --json: ")


def test_supcon_human_and_latex(cli):
    r = cli("supcon", "--sizes", "2,5,20", "--tau", "0.1")
    assert r.code == 0
    out = r.out
    assert "prototype Gram" in out and "KKT residual" in out
    assert all(len(line) <= 80 for line in out.splitlines())
    r = cli("supcon", "--sizes", "2,5,20", "--tau", "0.1", "--latex")
    assert r.code == 0
    out = r.out
    assert r"\tau^*" in out and r"\begin{pmatrix}" in out


def test_large_k_is_a_summary_unless_asked(cli):
    sizes = ",".join(["3"] * 600)
    r = cli("supcon", "--sizes", sizes, "--tau", "0.1")
    assert r.code == 0
    out = r.out
    assert len(out.splitlines()) < 20 and "--gram" in out
    d = ok(cli("supcon", "--sizes", sizes, "--tau", "0.1", "--json"))
    assert d["gram"] is None and "--gram" in d["gram_omitted"] and d["equiangular"] < 0
    d = ok(cli("supcon", "--sizes", sizes, "--tau", "0.1", "--json", "--gram"))
    assert np.array(d["gram"]).shape == (600, 600)


def test_many_classes_from_labels_fit_a_terminal(cli, tmp_path):
    """The classes counted from a labels file are listed in full up to a table's size, and
    beyond it as the first and last three, on a line that fits a terminal."""
    labels = tmp_path / "y.csv"
    labels.write_text("\n".join(f"k{c:02d}" for c in range(40) for _ in range(2 + c % 3)) + "\n")
    r = cli("supcon", "--labels", str(labels), "--tau", "0.5")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    k = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("classes "))
    assert "counted from the labels: " in lines[k]
    entry = [lines[k], *(ln for ln in lines[k + 1:k + 4] if ln.startswith("     "))]
    said = " ".join(" ".join(entry).split())
    assert "c0 = k00 (n=2)" in said and "c39 = k39 (n=2)" in said and "... 34 more ..." in said
    assert "k20" not in said and all(len(ln) <= 80 for ln in lines)
    small = tmp_path / "s.csv"
    small.write_text("a\na\nb\nb\nc\nc\nc\n")
    r = cli("supcon", "--labels", str(small), "--tau", "0.5")
    assert "c0 = a (n=2), c1 = b (n=2), c2 = c (n=3)" in " ".join(r.out.split())
    small.write_text("a\na\nb\nb\nc\n")  # a singleton class: said of the labels, not of sizes
    r = cli("supcon", "--labels", str(small), "--tau", "0.5")
    assert r.code == 2 and r.err.count("\n") == 1
    assert r.err.startswith("error: --labels has class 'c' with 1 sample")
    assert "--sizes" not in r.err


@pytest.mark.parametrize("ext", [".npy", ".csv"])
def test_supcon_exports(cli, tmp_path, ext):
    g, e = tmp_path / f"g{ext}", tmp_path / f"e{ext}"
    d = ok(cli("supcon", "--sizes", "2,5,20", "--tau", "0.1", "--json", "--embedding",
               "--save-gram", g, "--save-embedding", e))
    load = np.load if ext == ".npy" else (lambda p: np.loadtxt(p, delimiter=","))
    G, Z = load(g), load(e)
    np.testing.assert_array_equal(G, np.array(d["gram"]))
    np.testing.assert_allclose(Z @ Z.T, G, atol=1e-12)
    np.testing.assert_allclose(np.array(d["embedding"]), Z, atol=1e-15)


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
        ["supcon", "--sizes", "3,4", "--tau", "0.1", "--batch-size", "2"],
        ["supcon", "--sizes", "3,4", "--tau", "0.1", "--batch-size", "9"],
        ["supcon", "--sizes", "3,4", "--tau", "0.1", "--sampler", "class-balanced"],
        ["supcon", "--sizes", "3,4", "--tau", "0.1", "--batch-size", "4", "--sampler",
         "m-per-class"],
        ["supcon", "--sizes", "3,4", "--tau", "0.1", "--save-gram", "g.png"],
        ["supcon", "--sizes", "3,4", "--tau", "0.1", "--save-gram", "/no/such/dir/g.npy"],
        ["supcon", "--sizes", ",".join(["3"] * 4000) + ",4", "--tau", "0.1"],
    ],
)
def test_supcon_bad_input_exit_2(cli, argv):
    r = cli(*argv)
    assert r.code == 2
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), r.err
    assert "Traceback" not in r.err and r.out == ""


def test_supcon_bad_input_subprocess(cli):
    proc = cli.process("supcon", "--sizes", "1,4", "--tau", "0.1", timeout=120)
    assert proc.code == 2
    lines = proc.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "sizes" in lines[0]
    assert proc.out == ""


@pytest.fixture
def supcon_npy(tmp_path):
    path = tmp_path / "w.npy"
    np.save(path, supcon_weights([0, 0, 1, 1, 1]))
    return path


def test_optimum_json_and_human(cli, supcon_npy, tmp_path):
    d = ok(cli("optimum", supcon_npy, "--tau", "0.5", "--json"))
    assert d["rank"] == 1 and d["unique"] is True and d["n"] == 5 and d["certified_global"]
    G = np.array(d["gram"])
    assert G[0, 1] >= 1 - 1e-12 and G[0, 2] <= -1 + 1e-12
    csv = tmp_path / "w.csv"
    np.savetxt(csv, supcon_weights([0, 0, 1, 1, 1]), delimiter=",")
    r = cli("optimum", csv, "--tau", "0.5")
    assert r.code == 0
    out = r.out
    assert "gap to the convex lower bound" in out and "rank" in out and "unique" in out


def test_optimum_dim_batch_and_exports(cli, tmp_path):
    y = np.random.default_rng(0).standard_normal((9, 2))
    path = tmp_path / "w.npy"
    np.save(path, gaussian_kernel_weights(y, sigma=0.5))
    g, e = tmp_path / "g.csv", tmp_path / "e.npy"
    d = ok(cli("optimum", path, "--tau", "0.3", "--dim", "2", "--json",
               "--embedding", "--save-gram", g, "--save-embedding", e))
    assert d["dim"] == 2 and d["rank"] <= 2 and d["lower_bound"] <= d["loss"]
    Z = np.load(e)
    np.testing.assert_allclose(Z @ Z.T, np.loadtxt(g, delimiter=","), atol=1e-12)
    np.testing.assert_allclose(np.array(d["embedding"]), Z, atol=1e-15)
    d = ok(cli("optimum", path, "--tau", "0.3", "--batch-size", "4", "--json"))
    assert d["batch"]["expectation"] == "exact" and d["batch"]["compositions"] == 126


def test_optimum_bad_files_and_guards(cli, tmp_path):
    garbage = tmp_path / "g.csv"
    garbage.write_text("1,2\nfoo,3\n")
    pickled = tmp_path / "p.npy"
    np.save(pickled, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    raw = tmp_path / "raw.npy"
    raw.write_bytes(pickle.dumps([[0, 1], [1, 0]]))
    notsquare = tmp_path / "ns.csv"
    notsquare.write_text("0,1,1\n1,0,1\n")
    big = tmp_path / "big.npy"
    np.save(big, gaussian_kernel_weights(np.arange(600.0)[:, None], sigma=40.0))
    for path, extra in [
        (garbage, []),
        (pickled, []),
        (raw, []),
        (notsquare, []),
        (tmp_path / "missing.npy", []),
        (tmp_path, []),
        (big, []),  # 600 distinct samples: free dimension refused, says to use --dim
        (garbage, ["--save-gram", str(tmp_path / "x.png")]),
    ]:
        r = cli("optimum", path, "--tau", "0.5", *extra)
        err = r.err.strip().splitlines()
        assert r.code == 2 and len(err) == 1 and err[0].startswith("error:"), (path, err)
        if path == big:
            assert "--dim" in err[0]
    good = tmp_path / "ok.csv"
    good.write_text("0,1\n1,0\n")
    r = cli("optimum", good, "--tau", "-1")
    assert r.code == 2 and r.err.startswith("error:")


@pytest.mark.slow  # more than about 10 s of CPU on a loaded machine
def test_supcon_json_identifiability_shrinks_with_tau(cli):
    """`dgp supcon --json` says how far the loss separates the prediction from the simplex: on
    tenfold-imbalanced sizes far less at tau = 0.1 than at 0.5 (the geometry claim is hardly
    testable at the temperature people train with); batched, the full-batch gap too."""
    sizes = "400,250,150,90,40"
    gaps = {}
    for tau in ("0.5", "0.1"):
        rep = ok(cli("supcon", "--sizes", sizes, "--tau", tau, "--json"))
        ident = rep["identifiability"]
        assert ident["units"] == "nats per anchor" and ident["anchors"] == 930
        gaps[tau] = ident["simplex_gap"]
    assert gaps["0.5"] > 1e-2 and gaps["0.1"] < 1e-4 and gaps["0.5"] > 100 * gaps["0.1"]
    rep = ok(cli("supcon", "--sizes", sizes, "--tau", "0.5", "--batch-size", "32",
                 "--json", "--quiet"))
    assert 0 <= rep["identifiability"]["full_batch_gap"] < rep["identifiability"]["simplex_gap"]
    balanced = ok(cli("supcon", "--sizes", "20,20,20", "--tau", "0.1", "--json"))
    assert balanced["identifiability"]["simplex_gap"] == 0.0


@pytest.mark.parametrize("extra", [
    ("--eps", "0.1", "--nonnegative", "--dim", "3"),  # the bound's relaxation: a long value
    ("--dim", "2", "--starts", "3"),
])
@pytest.mark.slow  # more than about 3 s (README test line <= 4 min)
def test_summaries_wrap_to_100_columns_under_their_first_word(cli, extra):
    r = cli("supcon", "--sizes", "50,20,5,3", "--tau", "0.2", *extra)
    assert r.code == 0, r.err
    lines = r.out.split("\n\n")[0].splitlines()
    assert all(len(line) <= 80 for line in lines)
    keys = [ln for ln in lines[1:] if not ln.startswith("   ")]
    col = len(keys[0]) - len(keys[0][2:].split("  ", 1)[1].lstrip()) if keys else 0
    cont = [ln for ln in lines[1:] if ln.startswith("   ")]
    assert cont and all(len(ln) - len(ln.lstrip()) == col for ln in cont)


def test_supcon_text_leads_with_minority_collapse_and_prints_the_gram_once(cli):
    r = cli("supcon", "--sizes", "50,40,30,20,10,8,5,3", "--tau", "0.1", "--batch-size", "16",
            "--sampler", "class-balanced")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[1].split()[:3] == ["minority", "collapse:", "no."]
    flat = " ".join(r.out.split())
    assert "positives anchors with a positive:" in flat and "against uniform batches" in flat
    # the result's own short form: the CLI's Gram table, not the summary's, and only once
    assert "prototype Gram:" not in r.out and r.out.count("prototype Gram (cosines") == 1
    d = ok(cli("supcon", "--sizes", "50,40,30,20,10,8,5,3", "--tau", "0.1", "--json"))
    assert d["minority_collapse"]["collapsed"] is True and d["positive_pairs"] is None


@pytest.mark.slow  # a sampled class-level prediction: about 4 s of CPU
def test_save_gram_interval_writes_what_the_json_reports(cli, tmp_path):
    """Beyond exact enumeration the Gram's per-entry 95% intervals reach a file (.npz: gram,
    lower, upper, confidence), equal to the JSON's ``batch.gram_interval`` and holding the
    Gram; where the Gram has no sampling error nothing is written and stderr says why; any
    other extension is refused before the work."""
    z, g = tmp_path / "gi.npz", tmp_path / "g.npy"
    args = ("supcon", "--sizes", "6,9,30,4", "--tau", "0.2", "--batch-size", "12",
            "--exact-max", "10", "--samples", "200", "--quiet")
    d = ok(cli(*args, "--json", "--gram", "--save-gram-interval", z, "--save-gram", g))
    assert d["batch"]["expectation"] != "exact"
    with np.load(z, allow_pickle=False) as f:
        lo, hi, G, conf = f["lower"], f["upper"], f["gram"], float(f["confidence"])
    np.testing.assert_array_equal(G, np.load(g))
    np.testing.assert_allclose(lo, d["batch"]["gram_interval"][0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(hi, d["batch"]["gram_interval"][1], rtol=0, atol=1e-15)
    assert conf == 0.95 and (lo <= G + 1e-12).all() and (G <= hi + 1e-12).all()
    assert (hi - lo).max() > 0
    exact = tmp_path / "exact.npz"
    r = cli("supcon", "--sizes", "6,9,30,4", "--tau", "0.2", "--save-gram-interval", exact)
    assert r.code == 0 and "no per-entry interval" in r.err and not exact.exists()
    r = cli(*args, "--save-gram-interval", tmp_path / "gi.npy")
    assert r.code == 2 and r.err.startswith("error:") and ".npz" in r.err


def test_batch_flags_without_a_batch_are_refused(cli, supcon_npy):
    """--reduction and --anchors-without-positives mean something for mini-batches only: given
    without --batch-size they are refused (exit 2), never silently ignored."""
    for argv in (("optimum", supcon_npy, "--tau", "0.5", "--reduction", "sum"),
                 ("optimum", supcon_npy, "--tau", "0.5", "--anchors-without-positives", "zero"),
                 ("supcon", "--sizes", "3,3", "--tau", "0.5", "--reduction", "sum")):
        r = cli(*argv)
        assert r.code == 2 and r.err.startswith("error:") and "--batch-size" in r.err, argv
    assert cli("optimum", supcon_npy, "--tau", "0.5", "--batch-size", "3", "--reduction",
               "sum", "--json").code == 0
