"""Every Gram entry that comes from sampled batches carries its 95% interval (issue 40): the
standard error of a reported entry is the standard deviation of that entry over the
independent runs (the prediction is one run, not their mean), the interval the ``t`` quantile
times it; exact paths say their entries are exact. Checked against a recomputation from the
runs themselves, against the exact optimum of an enumerable problem forced onto the
stochastic path, and through JSON."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import t as student_t

import dgp
from dgp.solver._gram_spread import entry_spread, gram_spread

SIZES, TAU, B = [6, 9, 30, 4], 0.2, 12


def _unit_rows(rng, n, d):
    Z = rng.standard_normal((n, d))
    return Z / np.linalg.norm(Z, axis=1, keepdims=True)


def _by_hand(G, grams):
    """Each entry's standard deviation over the runs and its t interval, one entry at a time."""
    R, K = len(grams), G.shape[0]
    se = np.zeros((K, K))
    for a in range(K):
        for b in range(K):
            v = [g[a, b] for g in grams]
            m = sum(v) / R
            se[a, b] = 0.0 if a == b else (sum((x - m) ** 2 for x in v) / (R - 1)) ** 0.5
    q = student_t.ppf(0.975, R - 1)
    return se, np.clip(G - q * se, -1, 1), np.clip(G + q * se, -1, 1)


def test_gram_spread_is_each_entrys_standard_deviation_over_the_runs():
    rng = np.random.default_rng(0)
    runs = [_unit_rows(rng, 7, 3) for _ in range(4)]
    grams = [Z @ Z.T for Z in runs]
    G = grams[1]  # the reported Gram is one of the runs
    se, (lo, hi) = gram_spread(G, iter(grams), runs=4)
    want_se, want_lo, want_hi = _by_hand(G, grams)
    np.testing.assert_allclose(se, want_se, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(lo, want_lo, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(hi, want_hi, rtol=1e-12, atol=1e-15)
    assert (np.diag(hi) == np.diag(lo)).all()  # unit rows: the diagonal is exact
    # the sample-level form, a few entries from the embeddings, agrees with the matrix form
    i, j = np.array([0, 2, 5, 3]), np.array([1, 2, 6, 0])
    value, se_ij, lo_ij, hi_ij = entry_spread(runs[1], runs, i, j)
    np.testing.assert_allclose(value, G[i, j], rtol=1e-12)
    np.testing.assert_allclose(se_ij, se[i, j], rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(lo_ij, lo[i, j], rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(hi_ij, hi[i, j], rtol=1e-10, atol=1e-15)
    # one Gram alone (a closed form): no spread, an interval of width 0
    se1, (lo1, hi1) = gram_spread(G, [G])
    assert not se1.any()
    np.testing.assert_allclose(lo1, G, rtol=0, atol=1e-15)  # cosines clipped to [-1, 1]
    np.testing.assert_allclose(hi1, G, rtol=0, atol=1e-15)
    with pytest.raises(dgp.InvalidParameterError, match="j"):
        entry_spread(runs[0], runs, [0], [7])


def test_one_run_interval_covers_and_narrows_with_more_runs():
    """The construction itself, on runs with a known mean: one run's entry +- t s (s over all
    runs, that one included) holds the mean at least 95% of the time (Gaussian noise:
    conservative, 96-99%), while the runs' mean +- t s / sqrt(R) would be the interval of a
    number never reported; more runs give narrower intervals."""
    rng = np.random.default_rng(1)
    K, sigma = 120, 0.02
    iu = np.triu_indices(K, 1)
    mu = np.clip(0.3 * rng.standard_normal((K, K)), -0.9, 0.9)
    mu = (mu + mu.T) / 2
    np.fill_diagonal(mu, 1.0)
    widths = []
    for R in (3, 6, 12):
        grams = []
        for _ in range(R):
            noise = sigma * rng.standard_normal((K, K))
            g = mu + (noise + noise.T) / np.sqrt(2)
            np.fill_diagonal(g, 1.0)
            grams.append(g)
        _, (lo, hi) = gram_spread(grams[0], grams, runs=R)
        cover = np.mean((lo[iu] <= mu[iu]) & (mu[iu] <= hi[iu]))
        assert 0.95 <= cover <= 0.995, (R, cover)
        widths.append(float(np.mean((hi - lo)[iu])))
    assert widths[0] > widths[1] > widths[2]


@pytest.fixture(scope="module")
def sampled_prototypes():
    """The class-level stochastic prototypes of an enumerable problem forced beyond
    enumeration, with the solver's result captured (its runs)."""
    import dgp.prototypes._sampled as sampled

    captured = []
    original = sampled.batch_optimum

    def spy(*args, **kwargs):
        captured.append(original(*args, **kwargs))
        return captured[-1]

    sampled.batch_optimum = spy
    try:
        p = dgp.supcon_prototypes(SIZES, tau=TAU, batch_size=B, method="numeric", exact_max=10,
                                  samples=200, progress=False)
    finally:
        sampled.batch_optimum = original
    return p, captured[0]


@pytest.mark.slow  # a stochastic class-level prediction: about 7 s
def test_class_level_entries_carry_the_runs_spread(sampled_prototypes):
    p, res = sampled_prototypes
    assert p.method == "stochastic" and not p.batch.exact
    grams = [Z @ Z.T for Z in res.runs]
    want_se, want_lo, want_hi = _by_hand(p.gram, grams)
    b = p.batch
    np.testing.assert_allclose(b.gram_entry_se, want_se, rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(b.gram_interval[0], want_lo, rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(b.gram_interval[1], want_hi, rtol=1e-9, atol=1e-14)
    assert b.gram_se == pytest.approx(want_se.max(), rel=1e-12)
    assert b.replicates == len(res.runs) - 1 and "t quantile" in b.gram_error
    # every reported cosine carries its interval: the JSON summary's extremes, the text's table
    d = json.loads(json.dumps(p.to_dict()))
    gs = d["gram_summary"]
    for key in ("min", "max"):
        i, j = gs[f"{key}_pair"]
        assert gs[f"{key}_cosine_interval"] == [b.gram_interval[0][i, j], b.gram_interval[1][i, j]]
        lo, hi = gs[f"{key}_cosine_interval"]
        assert lo <= gs[f"{key}_cosine"] <= hi
    np.testing.assert_array_equal(np.array(d["batch"]["gram_entry_se"]), b.gram_entry_se)
    np.testing.assert_array_equal(np.array(d["batch"]["gram_interval"][0]), b.gram_interval[0])
    assert d["batch"]["gram_error"] == b.gram_error
    assert d["batch"]["moved_beyond_interval"] == b.moved_beyond_interval
    G_full, (lo, hi) = b.full_batch_gram, b.gram_interval
    iu = np.triu_indices(len(SIZES), 1)
    assert b.moved_beyond_interval == int(np.sum((G_full[iu] < lo[iu]) | (G_full[iu] > hi[iu])))
    text = str(p)
    half = (hi - lo) / 2
    assert f"{p.gram[0, 3]:+.4f}±{half[0, 3]:.4f}" in text
    assert "±" in p._repr_html_()


@pytest.mark.slow  # three stochastic predictions and an exact one: about 20 s
def test_exact_optimum_lies_in_the_intervals_of_a_forced_stochastic_path():
    """Sizes [6, 9, 30, 4], B = 12: 270 compositions, solved exactly, then forced onto fresh
    batches (exact_max = 10) from three seeds: the exact expected-batch optimum's off-diagonal
    entries lie in their 95% intervals in at least 15 of 18 (measured: 18 of 18 here; 47 of 48
    over eight seeds with four runs each)."""
    exact = dgp.supcon_prototypes(SIZES, tau=TAU, batch_size=B, method="numeric")
    assert exact.batch.exact and exact.batch.gram_entry_se is None
    iu = np.triu_indices(len(SIZES), 1)
    inside = 0
    for seed in range(3):
        sto = dgp.supcon_prototypes(SIZES, tau=TAU, batch_size=B, method="numeric",
                                    exact_max=10, samples=200, seed=seed, progress=False)
        lo, hi = sto.batch.gram_interval
        inside += int(np.sum((lo[iu] <= exact.gram[iu]) & (exact.gram[iu] <= hi[iu])))
    assert inside >= 15, inside


@pytest.mark.slow  # two stochastic predictions: about 15 s
def test_more_replicates_give_narrower_intervals():
    iu = np.triu_indices(len(SIZES), 1)
    widths = []
    for replicates in (2, 6):
        p = dgp.supcon_prototypes(SIZES, tau=TAU, batch_size=B, method="numeric", exact_max=10,
                                  samples=200, replicates=replicates, progress=False)
        assert p.batch.replicates == replicates
        lo, hi = p.batch.gram_interval
        widths.append(float(np.mean((hi - lo)[iu])))
    assert widths[1] < widths[0], widths


def test_exact_paths_say_their_entries_are_exact():
    p = dgp.supcon_prototypes(SIZES, tau=TAU, batch_size=B, method="numeric")
    b = p.batch
    assert b.exact and b.gram_entry_se is None and b.gram_interval is None
    assert b.gram_error.startswith("exact") and b.moved_beyond_interval is None
    d = json.loads(json.dumps(p.to_dict()))
    assert d["batch"]["gram_error"].startswith("exact") and "gram_entry_se" not in d["batch"]
    assert "min_cosine_interval" not in d["gram_summary"] and "±" not in str(p)
    assert "(exact: every composition enumerated)" in " ".join(str(p).split())
    # the closed form on sampled compositions: no sample moves it
    c = dgp.supcon_prototypes([5, 5, 5, 5, 5], tau=0.3, batch_size=10, exact_max=3,
                              samples=60)
    assert c.method == "closed-form" and not c.batch.exact
    assert c.batch.gram_error.startswith("a closed form")


@pytest.fixture(scope="module")
def sample_level():
    rng = np.random.default_rng(1)
    y = rng.standard_normal((24, 2))
    W = np.exp(-((y[:, None] - y[None]) ** 2).sum(-1) / 2)
    return dgp.optimum(W, tau=0.5, dim=3, batch_size=6, samples=200, exact_max=100,
                       progress=False)


@pytest.mark.slow  # a sample-level stochastic optimum: about 17 s
def test_sample_level_entries_from_the_runs(sample_level):
    res = sample_level
    assert isinstance(res, dgp.solver.BatchOptimum) and res.batch.expectation == "stochastic"
    R = len(res.runs)
    assert R >= 2
    i, j = np.array([0, 3, 7, 11, 4]), np.array([1, 3, 20, 2, 23])
    vals = np.array([[float(Z[a] @ Z[b]) for a, b in zip(i, j, strict=True)] for Z in res.runs])
    want = vals.std(axis=0, ddof=1)
    want[i == j] = 0.0
    np.testing.assert_allclose(res.gram_entry_se(i, j), want, rtol=1e-9, atol=1e-14)
    lo, hi = res.gram_interval(i, j)
    G = res.gram
    q = student_t.ppf(0.975, R - 1)
    np.testing.assert_allclose(lo, np.clip(G[i, j] - q * want, -1, 1), rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(hi, np.clip(G[i, j] + q * want, -1, 1), rtol=1e-9, atol=1e-14)
    # JSON: every entry's interval and standard error with the Gram, the same numbers
    d = json.loads(json.dumps(res.to_dict(gram=True)))
    assert d["gram_runs"] == R and "t quantile" in d["gram_error"]
    np.testing.assert_allclose(np.array(d["gram_entry_se"])[i, j], want, rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(np.array(d["gram_interval"][0])[i, j], lo, rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(np.array(d["gram_interval"][1])[i, j], hi, rtol=1e-9, atol=1e-14)
    short = res.to_dict()
    assert "gram_entry_se" not in short and short["gram_error"] == d["gram_error"]
    _, (lo_all, hi_all) = res.gram_spread()
    widest = float(np.max((hi_all - lo_all)[np.triu_indices(res.n, 1)]) / 2)
    assert f"widest {widest:.2g}" in " ".join(str(res).split())


def test_closed_form_on_sampled_compositions_says_one_thing():
    """D6: the simplex on sampled compositions is certified by its proof for the expectation;
    the KKT certificate of the sampled compositions (not certified: the closed form is not
    fitted to them) says it is of the sample, and convergence says which is which."""
    c = dgp.supcon_prototypes([5, 5, 5, 5, 5], tau=0.3, batch_size=10, exact_max=3,
                              samples=60)
    assert c.method == "closed-form" and not c.batch.exact
    d = json.loads(json.dumps(c.to_dict()))
    cert, conv = d["certificate"], d["convergence"]
    assert cert["kind"] == "kkt" and cert["certified"] is False  # the sample's own KKT
    assert cert["scope"] == "sampled compositions" and "not of the expectation" in \
        cert["statement"]
    assert conv["certified"] is True and "expected batch loss over every composition" in \
        conv["certifies"] and "sampled compositions" in conv["certifies"]
    assert "not by the sampled compositions" in " ".join(str(c).split())
    # the exact expectation: one certificate, no scope to say
    e = dgp.supcon_prototypes([5, 5, 5, 5, 5], tau=0.3, batch_size=10)
    assert e.batch.exact and "scope" not in e.to_dict()["certificate"]
    assert e.convergence.certified


@pytest.mark.slow  # a stochastic run with its held-out evaluation, twice (about 10 s)
def test_dgp_optimum_prints_and_keeps_each_sampled_entrys_interval(cli, tmp_path):
    """``dgp optimum`` on sampled batches: the printed Gram gives every off-diagonal entry with
    the half-width of its interval, the same numbers as ``--json --gram``'s
    ``gram_interval`` and as ``--save-gram-interval``'s file (the printed run is the one that
    saves it: one solve fewer than a third run, the same three outputs compared)."""
    labels = tmp_path / "labels.npy"
    np.save(labels, np.repeat(np.arange(4), [6, 5, 4, 3]))
    args = ("optimum", "--objective", "supcon", "--labels", labels, "--tau", "0.3", "--dim",
            "2", "--batch-size", "8", "--sampler", "class-balanced", "--exact-max", "10",
            "--quiet")
    z = tmp_path / "gi.npz"
    run = cli(*args, "--save-gram-interval", z)
    assert run.code == 0, run.err
    d = json.loads(cli(*args, "--json", "--gram").out)
    G, (lo, hi) = np.array(d["gram"]), (np.array(v) for v in d["gram_interval"])
    assert d["gram_runs"] >= 2 and np.array(d["gram_entry_se"]).max() > 0
    table = run.out.split("):\n", 1)[1]
    for a, b in ((0, 1), (1, 3)):
        assert f"{G[a, b]:+.4f}±{(hi[a, b] - lo[a, b]) / 2:.4f}" in table
    assert "± the half-width of its 95% interval" in " ".join(run.out.split())
    # --save-gram-interval writes the same intervals (it warned and wrote nothing before)
    assert "no per-entry interval" not in run.err
    with np.load(z, allow_pickle=False) as f:
        np.testing.assert_allclose(f["lower"], lo, rtol=0, atol=1e-12)
        np.testing.assert_allclose(f["upper"], hi, rtol=0, atol=1e-12)
        np.testing.assert_allclose(f["gram"], G, rtol=0, atol=1e-12)


@pytest.mark.slow  # three stochastic class-level predictions: about 20 s
def test_dgp_supcon_prints_each_sampled_entry_with_its_interval(cli):
    args = ("supcon", "--sizes", ",".join(map(str, SIZES)), "--tau", str(TAU), "--batch-size",
            str(B), "--exact-max", "10", "--samples", "200", "--quiet")
    d = json.loads(cli(*args, "--json").out)
    G, (lo, hi) = np.array(d["gram"]), (np.array(v) for v in d["batch"]["gram_interval"])
    half = (hi - lo) / 2
    text, latex = cli(*args).out, cli(*args, "--latex").out
    for a, b in ((0, 3), (1, 2)):
        assert f"{G[a, b]:+.6f}±{half[a, b]:.6f}" in text
        assert f"{G[a, b]:.6f} \\pm {half[a, b]:.6f}" in latex
    assert "± the half-width of its 95% interval" in " ".join(text.split())
    # the LaTeX caption is the same note (Prototypes.gram_note), in LaTeX's words
    assert "\\pm the half-width of its 95% interval" in latex


@pytest.mark.parametrize("bad", [1.5, True, "a", [0.0, 1.0]])
def test_an_entry_index_that_is_not_an_integer_is_refused_by_name(bad):
    """A float, a bool or a string would read as another entry (1.5 and True as row 1): the
    index is refused, naming it, as an out-of-range one is."""
    from dgp.errors import ParameterError
    from dgp.solver._gram_spread import entry_spread

    rng = np.random.default_rng(0)
    runs = [Z / np.linalg.norm(Z, axis=1, keepdims=True)
            for Z in rng.standard_normal((3, 5, 2))]
    value, se, lo, hi = entry_spread(runs[0], runs, [1, 2], 0)
    assert value.shape == se.shape == (2,) and (lo <= value).all() and (value <= hi).all()
    with pytest.raises(ParameterError, match=r"^i "):
        entry_spread(runs[0], runs, bad, 0)
    with pytest.raises(ParameterError, match=r"^j "):
        entry_spread(runs[0], runs, 0, bad)
