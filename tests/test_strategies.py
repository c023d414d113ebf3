"""The public hypothesis strategies produce what they promise (checked independently)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dgp import strategies as ds


def _valid(W):
    n = W.shape[0]
    off = ~np.eye(n, dtype=bool)
    return (np.diag(W) == 0).all() and (W[off] >= 0).all() and (W.sum(axis=1) > 0).all()


def _max_triangle_log_ratio(W):
    n = W.shape[0]
    best = 0.0
    for a in range(n):
        for b in range(n):
            for c in range(n):
                if len({a, b, c}) == 3:
                    r = math.log(W[a, b] * W[b, c] * W[c, a]) - math.log(
                        W[b, a] * W[c, b] * W[a, c]
                    )
                    best = max(best, abs(r))
    return best


@settings(max_examples=50)
@given(ds.symmetric_weights())
def test_symmetric(W):
    assert _valid(W) and np.array_equal(W, W.T)
    assert (W[~np.eye(W.shape[0], dtype=bool)] > 0).all()


@settings(max_examples=50)
@given(ds.symmetrizable_weights())
def test_symmetrizable_passes_every_triangle(W):
    assert _valid(W)
    assert _max_triangle_log_ratio(W) <= 1e-9


@settings(max_examples=50)
@given(ds.cycle_breaking_weights(min_log_ratio=0.2))
def test_cycle_breaking_breaks_a_triangle(W):
    assert _valid(W)
    assert _max_triangle_log_ratio(W) >= 0.2 - 1e-9


@settings(max_examples=50)
@given(st.one_of(ds.weights_with_zeros(), ds.weights_with_zeros(symmetric=False)))
def test_with_zeros(W):
    n = W.shape[0]
    assert _valid(W)
    assert (W[~np.eye(n, dtype=bool)] == 0).any()


@settings(max_examples=50)
@given(ds.block_weights())
def test_block_weights(case):
    W, labels = case
    same = labels[:, None] == labels[None, :]
    assert _valid(W) and (W[~same] == 0).all()
    assert (W[same & ~np.eye(labels.size, dtype=bool)] > 0).all()


@settings(max_examples=50)
@given(ds.balanced_sizes())
def test_balanced(sizes):
    assert len(sizes) >= 2 and len(set(sizes)) == 1 and min(sizes) >= 2


@settings(max_examples=50)
@given(ds.long_tailed_sizes())
def test_long_tailed(sizes):
    assert len(sizes) >= 2 and min(sizes) >= 2 and len(set(sizes)) > 1


@settings(max_examples=50)
@given(ds.sizes_with_near_singletons())
def test_near_singletons(sizes):
    assert 2 in sizes and min(sizes) >= 2


@settings(max_examples=50)
@given(ds.class_labels())
def test_class_labels(case):
    labels, sizes = case
    assert sorted(np.bincount(labels).tolist()) == sorted(sizes)


@settings(max_examples=50)
@given(ds.sphere_labels(), st.booleans())
def test_sphere_labels(sph, _):
    dist = np.linalg.norm(sph.labels - sph.centre, axis=1)
    assert np.allclose(dist, sph.radius, rtol=1e-9)
    assert np.allclose(np.linalg.norm(sph.directions, axis=1), 1.0)


@settings(max_examples=50)
@given(ds.sphere_labels(n=st.integers(2, 9), dim=st.integers(1, 3), centred=True))
def test_centred_sphere_labels(sph):
    assert np.allclose(sph.directions.sum(axis=0), 0.0, atol=1e-9)
    assert np.allclose(np.linalg.norm(sph.labels - sph.centre, axis=1), sph.radius)


@settings(max_examples=50)
@given(ds.off_sphere_labels())
def test_off_sphere_labels(Y):
    sq = (Y**2).sum(axis=1)
    A = np.c_[Y, np.ones(len(Y))]
    resid = sq - A @ np.linalg.lstsq(A, sq, rcond=None)[0]
    assert np.linalg.norm(resid) >= 1e-2 * np.linalg.norm(sq) * (1 - 1e-9)


@settings(max_examples=50)
@given(ds.temperatures_near(0.7))
def test_temperatures_near(tau):
    rel = tau / 0.7 - 1
    assert tau == 0.7 or 1e-3 * (1 - 1e-9) <= abs(rel) <= 0.05 * (1 + 1e-9)


def test_temperatures_near_rejects_bad_critical():
    with pytest.raises(ValueError, match="critical"):
        ds.temperatures_near(-1.0)


@settings(max_examples=50)
@given(ds.soft_supcon_near_critical())
def test_soft_supcon_critical(case):
    K, eps = len(case.params["sizes"]), case.params["eps"]
    assert math.isclose(case.tau_critical, K / ((K - 1) * -math.log(eps)), rel_tol=1e-12)
    assert math.isclose(case.tau, case.tau_critical * (1 + case.delta), rel_tol=1e-12)


@settings(max_examples=50)
@given(ds.y_aware_near_critical())
def test_y_aware_critical(case):
    sph = case.params["sphere"]
    assert math.isclose(case.tau_critical * sph.radius**2, case.params["sigma"] ** 2, rel_tol=1e-9)


@settings(max_examples=50)
@given(ds.xclr_near_critical())
def test_xclr_critical(case):
    assert case.tau_critical == case.params["label_tau"]
    U = case.params["labels"] / np.linalg.norm(case.params["labels"], axis=1, keepdims=True)
    assert np.allclose(U, case.params["directions"])
