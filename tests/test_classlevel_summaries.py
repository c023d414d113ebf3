"""Summaries of class-level batch predictions say what the loss pins and nothing more.

Where independent runs within the loss resolution disagree on the cosines, no cosine, no tail
pair's cosine and no per-pair movement from the full batch is presented as a finding (text,
HTML); the loss, its interval, the bound and the full-batch loss gap with its interval are.
Numbers averaged over sampled compositions carry intervals that an independent, larger sample
confirms. Every result in a fixed dimension or with batches says what the loss pins (CONTRACT
v4: ``pinned``, ``spread``, ``resolution``, ``identifiable``).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import dgp
from dgp.prototypes import minority_collapse

SIZES = [40, 30, 20, 12, 8, 6, 5, 4, 3, 2]
LONG = [max(2, round(100 * 0.05 ** (k / 15))) for k in range(16)]


@pytest.fixture(scope="module")
def sampled():
    """A prediction beyond exact enumeration (optimised on fresh batches, three runs)."""
    return dgp.supcon_prototypes(SIZES, tau=0.1, batch_size=16, progress=False, exact_max=10,
                                 samples=200)


@pytest.mark.slow
def test_free_cosines_are_not_presented_as_findings(sampled):
    p = sampled
    ident = p.identifiability
    assert ident.pinned["pairwise cosines"] is False  # the runs disagree: the premise
    for text in (str(p), p._repr_html_()):
        assert "moved" not in text and "cosines moved" not in text
        assert "not pinned by the loss" in text
        assert not re.search(r"tail classes \d+,\d+ .* at cosine", text)
        flat = " ".join(text.split())  # the summary wraps its lines at 80 columns
        assert "95% interval [" in flat and "lower bound" in flat  # what is pinned is there
    lines = dict(p._summary_pairs())
    assert "min +" not in lines["cosines"] and "max +" not in lines["cosines"]
    # the full-batch comparison is by the loss, with its interval and the same numbers
    fb = lines["full batch"]
    assert f"{ident.full_batch_gap:+.2g}" in fb and "±" in fb
    assert p.minority_collapse.collapsed is None
    d = p.to_dict()["identifiability"]
    assert d["identifiable"] is False and d["pinned"]["pairwise cosines"] is False


@pytest.mark.slow
def test_the_reported_full_batch_gap_is_paired_on_held_out_batches(sampled):
    """The full-batch gap and its standard error re-measured on other fresh batches agree
    within their combined noise (they are not in-sample numbers)."""
    from dgp.solver import BatchSpec, ClassBatches, ClassBlockWeights, evaluate, factor

    p = sampled
    n = np.array(SIZES)
    spec = BatchSpec(16, "uniform", None, "mean", "drop")
    Zp = p.embedding / np.linalg.norm(p.embedding, axis=1, keepdims=True)
    X = factor(p.batch.full_batch_gram, Zp.shape[1])
    Zf = (X / np.linalg.norm(X, axis=0)).T
    est = evaluate([Zp, Zf], ClassBlockWeights(n.size), ClassBatches(n, spec), spec, tau=0.1,
                   seed=123, stream=11, min_batches=20_000, max_batches=20_000)
    diff = est[1].values - est[0].values
    se = diff.std(ddof=1) / np.sqrt(diff.size)
    ident = p.identifiability
    assert abs(diff.mean() - ident.full_batch_gap) <= 4 * np.hypot(se, ident.full_batch_gap_se)


def test_minority_verdict_with_free_cosines():
    """Free cosines: no verdict and no pair shown, unless every run puts a tail pair above the
    head beyond their spread (a finding the runs agree on)."""
    rng = np.random.default_rng(0)
    K, sizes = 8, [50, 40, 30, 20, 6, 5, 4, 3]
    base = np.full((K, K), -1.0 / (K - 1))
    np.fill_diagonal(base, 1.0)
    noisy = np.array([base + 0.02 * (lambda A: A + A.T)(rng.standard_normal((K, K)))
                      for _ in range(3)])
    for G in noisy:
        np.fill_diagonal(G, 1.0)
    free = minority_collapse(noisy[0], sizes, runs=noisy, pinned=False)
    assert free.collapsed is None
    assert len(free.summary_pairs()) == 1 and "cosine" not in free.summary_pairs()[0][1][-40:]
    merged = noisy.copy()
    merged[:, 6, 7] = merged[:, 7, 6] = 0.9 + 0.001 * np.arange(3)  # every run agrees
    found = minority_collapse(merged[0], sizes, runs=merged, pinned=False)
    assert found.collapsed is True and found.pair == (6, 7)
    assert minority_collapse(merged[0], sizes, runs=merged).collapsed is True


def test_sampled_composition_excess_has_an_interval_a_larger_sample_confirms():
    small = dgp.supcon_prototypes(LONG, tau=0.1, batch_size=32, sampler="class-balanced",
                                  exact_max=10, samples=300, progress=False)
    large = dgp.supcon_prototypes(LONG, tau=0.1, batch_size=32, sampler="class-balanced",
                                  exact_max=10, samples=3000, seed=7, progress=False)
    assert small.batch.excess_se > 0 and large.batch.excess_se < small.batch.excess_se
    z = abs(small.excess_loss - large.excess_loss) / np.hypot(small.batch.excess_se,
                                                             large.batch.excess_se)
    assert z < 4
    line = dict(small._summary_pairs())["excess"]
    assert "±" in line and "300 sampled compositions" in line and "gap to optimum" not in line
    assert small.to_dict()["batch"]["excess_se"] == small.batch.excess_se


@pytest.mark.parametrize("kw", [{"dim": 8}, {"dim": 2, "starts": 2}, {"batch_size": 8},
                                pytest.param({"batch_size": 8, "dim": 2, "starts": 2},
                                             marks=pytest.mark.slow),
                                {"dim": 3, "sizes": [5, 5, 5, 5]}])
def test_every_fixed_dimension_or_batch_result_says_what_the_loss_pins(kw):
    kw = dict(kw)
    sizes = kw.pop("sizes", [10, 6, 4, 3, 2])
    p = dgp.supcon_prototypes(sizes, tau=0.2, progress=False, **kw)
    d = p.to_dict()["identifiability"]
    assert isinstance(d["pinned"], dict) and isinstance(d["spread"], dict)
    assert isinstance(d["identifiable"], bool) and d["resolution"] > 0
    assert d["statement"]
    if d["identifiable"]:  # a claim: then some evidence backs it
        unique_optimum = p.unique and p.convergence.certified
        agreeing_runs = d["spread"].get("cosine_max", np.inf) <= 0.05
        assert unique_optimum or agreeing_runs


def test_full_batch_free_dimension_is_left_as_it_was():
    p = dgp.supcon_prototypes([10, 6, 4, 3, 2], tau=0.2)
    assert p.identifiability.pinned is None  # no dimension, no batches: nothing added


@pytest.mark.parametrize("sampler", [pytest.param("class-balanced", marks=pytest.mark.slow),
                                     "m-per-class"])
def test_a_sampler_that_treats_classes_alike_in_too_small_a_dimension(sampler):
    """The regular simplex needs K - 1 dimensions: in fewer, the prediction is no simplex and
    its Gram fits the dimension (it was returned as the rank-(K-1) simplex)."""
    kw = {"samples_per_class": 2} if sampler == "m-per-class" else {}
    p = dgp.supcon_prototypes([9, 7, 5, 4, 3, 2], tau=0.3, dim=3, batch_size=8,
                              sampler=sampler, progress=False, starts=2, **kw)
    assert p.method != "closed-form"
    assert np.linalg.eigvalsh(p.gram)[:-3].max() <= 1e-8  # rank <= 3
    q = dgp.supcon_prototypes([9, 7, 5, 4, 3, 2], tau=0.3, dim=5, batch_size=8,
                              sampler=sampler, progress=False, **kw)
    assert q.method == "closed-form"  # the simplex fits in R^5


def test_identifiability_has_text_and_html_of_its_summary():
    """A notebook shows the identifiability report as its summary (it showed the dataclass)."""
    import dgp

    ident = dgp.supcon_prototypes([20, 12, 8, 5, 3, 2], tau=0.2, batch_size=8).identifiability
    text = str(ident)
    assert text.startswith("Identifiability\n") and "pinned" in text
    assert all(len(line) <= 80 for line in text.splitlines())
    html = ident._repr_html_()
    assert html.startswith("<div><strong>Identifiability</strong>") and "pinned" in html
