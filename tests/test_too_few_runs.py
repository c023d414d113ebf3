"""Fewer than two runs measure no spread, decided in one place
(:func:`dgp.solver._gram_spread.unmeasured_se`): a sampled run's entries carry ``nan`` (not
measured) whether read as a whole Gram or entry by entry; one exact Gram carries 0."""

from __future__ import annotations

import numpy as np

from dgp.solver._gram_spread import entry_spread, gram_spread, unmeasured_se


def _unit_rows(rng, n, d):
    Z = rng.standard_normal((n, d))
    return Z / np.linalg.norm(Z, axis=1, keepdims=True)


def test_one_sampled_run_is_not_measured_in_both_forms():
    rng = np.random.default_rng(5)
    Z = _unit_rows(rng, 6, 3)
    G = Z @ Z.T
    se, (lo, hi) = gram_spread(G, [G], runs=1, sampled=True)
    assert np.isnan(se).all() and np.isnan(lo).all() and np.isnan(hi).all()
    i, j = np.array([0, 1, 4]), np.array([2, 1, 5])
    value, se_ij, lo_ij, hi_ij = entry_spread(Z, [Z], i, j)
    np.testing.assert_allclose(value, G[i, j], rtol=1e-12)
    assert np.isnan(se_ij).all() and np.isnan(lo_ij).all() and np.isnan(hi_ij).all()
    # no run at all: the same
    assert np.isnan(gram_spread(G, [], sampled=True)[0]).all()
    assert np.isnan(entry_spread(Z, [], i, j)[1]).all()


def test_one_exact_gram_has_no_error_and_two_runs_measure_one():
    rng = np.random.default_rng(6)
    Z1, Z2 = _unit_rows(rng, 5, 2), _unit_rows(rng, 5, 2)
    G = Z1 @ Z1.T
    se, (lo, hi) = gram_spread(G, [G])
    assert not se.any() and np.array_equal(lo, np.clip(G, -1, 1))
    assert np.array_equal(hi, np.clip(G, -1, 1))
    assert unmeasured_se((2, 3), sampled=False).shape == (2, 3)
    # two runs: the spread is measured whichever kind, and the same both ways
    a = gram_spread(G, [G, Z2 @ Z2.T], runs=2)[0]
    b = gram_spread(G, [G, Z2 @ Z2.T], runs=2, sampled=True)[0]
    assert np.isfinite(a).all() and np.array_equal(a, b)
    off = ~np.eye(5, dtype=bool)
    np.testing.assert_allclose(a[off], np.abs((G - Z2 @ Z2.T)[off]) / np.sqrt(2), rtol=1e-12)
