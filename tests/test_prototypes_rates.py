"""Per-class positive-pair rates (dgp.prototypes.positive_pair_rates): exact formulas against an
enumeration of every batch and against Monte Carlo of the samplers the predictions use."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dgp.errors import ParameterError
from dgp.prototypes import positive_pair_rates
from dgp.solver import BatchSpec, ClassBatches


def _anchor_rate_mc(sizes, spec, batches, seed):
    """Monte Carlo of the solver's own class-level sampler: among the anchors of class k drawn
    in ``batches`` batches, the share with another sample of k in their batch (ratio estimator,
    with its batch-level standard error)."""
    rng = np.random.default_rng(seed)
    src = ClassBatches(np.asarray(sizes), spec)
    K = len(sizes)
    c = np.zeros((batches, K))
    for b in range(batches):
        idx, counts = src.draw(rng)
        c[b, idx] = counts
    hit = c * (c >= 2)
    rate = hit.sum(0) / c.sum(0)
    se = (hit - rate * c).std(0, ddof=1) / (c.mean(0) * np.sqrt(batches))
    return rate, se, (c >= 2).mean(0), c.mean(0)


def test_uniform_rates_equal_an_enumeration_of_every_batch():
    sizes, B = [3, 2, 4, 2], 4
    labels = np.repeat(np.arange(4), sizes)
    hits, anchors, pairs = np.zeros(4), np.zeros(4), np.zeros(4)
    subsets = list(itertools.combinations(range(labels.size), B))
    for sub in subsets:
        c = np.bincount(labels[list(sub)], minlength=4)
        hits += c * (c >= 2)
        anchors += c
        pairs += c >= 2
    r = positive_pair_rates(sizes, batch_size=B)
    np.testing.assert_allclose(r.anchor_rate, hits / anchors, rtol=1e-12)
    np.testing.assert_allclose(r.batch_rate, pairs / len(subsets), rtol=1e-12)
    np.testing.assert_allclose(r.anchors_per_batch, anchors / len(subsets), rtol=1e-12)
    assert r.uniform is None


@pytest.mark.parametrize("sampler, m", [("uniform", None), ("class-balanced", None),
                                        ("m-per-class", 4)])
def test_rates_match_monte_carlo_of_the_sampler(sampler, m):
    sizes = [round(500 * 0.01 ** (k / 19)) for k in range(20)]  # long-tailed, 500 to 5
    spec = BatchSpec(64, sampler, m, "mean", "drop")
    r = positive_pair_rates(sizes, batch_size=64, sampler=sampler, samples_per_class=m)
    rate, se, pair, per = _anchor_rate_mc(sizes, spec, 20_000, seed=7)
    assert np.all(np.abs(r.anchor_rate - rate) <= 5 * se + 1e-5)  # 1e-5: an SE of 0 at p ~ 1
    batch_se = np.sqrt(r.batch_rate * (1 - r.batch_rate) / 20_000)
    assert np.all(np.abs(r.batch_rate - pair) <= 5 * batch_se + 1e-5)
    np.testing.assert_allclose(r.anchors_per_batch, per, rtol=0.05)


def test_class_balanced_lifts_the_tail_and_says_so_against_uniform():
    sizes = [round(500 * 0.01 ** (k / 99)) for k in range(100)]  # CIFAR-100-LT
    bal = positive_pair_rates(sizes, batch_size=256, sampler="class-balanced")
    uni = bal.uniform
    assert uni is not None and uni.sampler == "uniform" and uni.batch_size == 256
    # the multinomial formula by hand, and the tail's uniform rate by the hypergeometric ratio
    assert bal.anchor_rate[0] == pytest.approx(1 - 0.99 ** 255, rel=1e-12)
    N, n = sum(sizes), sizes[-1]
    none = np.prod([(N - 256 - j) / (N - 1 - j) for j in range(n - 1)])
    assert uni.anchor_rate[-1] == pytest.approx(1 - none, rel=1e-10)
    assert bal.anchor_rate[-1] > 0.9 > 0.2 > uni.anchor_rate[-1]
    assert uni.anchor_rate[0] > bal.anchor_rate[0]  # the head loses a little
    assert "uniform" in bal.summary()
    assert set(bal.to_dict()) >= {"anchor_rate", "batch_rate", "anchors_per_batch", "uniform"}


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(2, 60), min_size=2, max_size=8), st.integers(3, 40))
def test_uniform_anchor_rate_grows_with_the_class_and_the_batch(sizes, B):
    B = min(B, sum(sizes))
    r = positive_pair_rates(sizes, batch_size=B)
    order = np.argsort(sizes, kind="stable")
    assert np.all(np.diff(r.anchor_rate[order]) >= -1e-12)
    assert np.all((r.anchor_rate >= 0) & (r.anchor_rate <= 1))
    if B < sum(sizes):
        bigger = positive_pair_rates(sizes, batch_size=B + 1)
        assert np.all(bigger.anchor_rate >= r.anchor_rate - 1e-12)
    else:  # the whole data set: every anchor has its class's other samples
        np.testing.assert_allclose(r.anchor_rate, 1.0)


def test_bad_arguments_name_themselves():
    with pytest.raises(ParameterError, match="batch_size"):
        positive_pair_rates([5, 5], batch_size=1)
    with pytest.raises(ParameterError, match="samples_per_class"):
        positive_pair_rates([5, 5, 5], batch_size=4, sampler="m-per-class")
