"""The KKT certificate of an equiangular (closed-form) prototype Gram from its structure
(dgp.prototypes._equiangular_kkt, issue 39): the same numbers as the dense certificate of
dgp.solver.row_certificate wherever both run, at any K without a K x K array, and a wrong
closed form is not certified."""

from __future__ import annotations

import math
import time
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dgp
from dgp.prototypes import equiangular_gram, kkt_certificate, soft_supcon_tau_star
from dgp.prototypes._equiangular_kkt import equiangular_certificate

RESIDUALS = ("kkt_residual", "primal_residual", "dual_residual", "complementarity_residual",
             "min_eig_gram", "max_eig_gram", "min_eig_dual")
DISCRETE = ("rank", "dual_rank", "strictly_complementary", "certified")


def _dense(n, tau, eps, rho):
    return kkt_certificate(equiangular_gram(len(n), rho), n, tau=tau, eps=eps)


def _agree(n, tau, eps, rho, *, discrete=True):
    """Both certificates of the equiangular Gram ``rho``; every residual equal to 1e-10."""
    n = np.asarray(n)
    fast, dense = equiangular_certificate(n, tau, eps, rho), _dense(n, tau, eps, rho)
    for name in RESIDUALS:
        assert abs(getattr(fast, name) - getattr(dense, name)) <= 1e-10, name
    assert fast.gradient_scale == pytest.approx(dense.gradient_scale, rel=1e-10)
    assert fast.log_scale == pytest.approx(dense.log_scale, rel=1e-12, abs=1e-12)
    scale = max(1.0, float(np.max(np.abs(dense.multipliers))))
    np.testing.assert_allclose(fast.multipliers, dense.multipliers, rtol=0, atol=1e-10 * scale)
    # the gap bound in nats: to rounding of the loss (N anchors)
    assert abs(fast.gap_bound - dense.gap_bound) <= 1e-10 * n.sum()
    if discrete:
        for name in DISCRETE:
            assert getattr(fast, name) == getattr(dense, name), name
    assert fast.kind == dense.kind == "kkt" and fast.statement == dense.statement
    return fast, dense


def _closed_forms(K: int, rng: np.random.Generator):
    """(sizes, tau, eps, rho) of each closed form of K classes."""
    simplex = -1.0 / (K - 1)
    n0 = int(rng.integers(2, 9))
    eps = 0.2
    star = soft_supcon_tau_star(K=K, eps=eps)
    mixed = rng.integers(2, 40, K)  # any sizes: Soft SupCon's equiangular optimum
    yield np.full(K, n0), 0.1, None, simplex               # balanced SupCon
    yield np.full(K, n0), 1.0, None, simplex
    yield np.full(K, n0), 2.0 * star, eps, simplex         # balanced Soft SupCon above tau*
    yield mixed, 0.5 * star, eps, 1.0 + 0.5 * star * math.log(eps)  # realizable
    yield mixed, star, eps, simplex                        # at tau*


@pytest.mark.parametrize("K", [3, 20, 57, 120, 200])
def test_it_agrees_with_the_dense_certificate_on_every_closed_form(K):
    rng = np.random.default_rng(K)
    for n, tau, eps, rho in _closed_forms(K, rng):
        fast, _ = _agree(n, tau, eps, rho)
        assert fast.certified, (K, tau, eps)


def test_it_agrees_off_the_optimum_too():
    """Away from a closed form the residuals are large and still the same numbers: the
    structure is exact, not a shortcut that reads zero at the optimum."""
    rng = np.random.default_rng(7)
    for K in (4, 31, 150):
        mixed = rng.integers(2, 30, K)
        for n, tau, eps, rho in [(np.full(K, 6), 0.3, None, -1.0 / (K - 1) + 0.05),
                                 (mixed, 0.2, None, 0.1),          # imbalanced SupCon
                                 (mixed, 0.7, 0.4, -0.5 / (K - 1)),
                                 (np.full(K, 3), 0.2, 0.3, 0.4)]:
            fast, dense = _agree(n, tau, eps, rho, discrete=False)
            assert not fast.certified and not dense.certified
            assert fast.kkt_residual > 1e-4


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(2, 12), min_size=2, max_size=9),
       tau=st.floats(0.02, 3.0), eps=st.one_of(st.none(), st.floats(0.01, 0.99)),
       where=st.floats(0.0, 0.999))
def test_it_agrees_at_any_equiangular_gram(sizes, tau, eps, where):
    K = len(sizes)
    rho = -1.0 / (K - 1) + where * (1.0 + 1.0 / (K - 1))  # the feasible segment
    _agree(sizes, tau, eps, rho, discrete=False)


@pytest.mark.parametrize("K", [1000, 5000])
def test_many_classes_are_certified_fast_without_a_k_by_k_array(K):
    rng = np.random.default_rng(K)
    for n, tau, eps, rho in _closed_forms(K, rng):
        tracemalloc.start()
        t0 = time.perf_counter()
        cert = equiangular_certificate(n, tau, eps, rho)
        took = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert cert.certified and cert.kkt_residual < 1e-12, (tau, eps)
        assert took < 0.5, took
        assert peak < 0.05 * 8 * K * K  # one K x K array of floats would be 8 K^2 bytes
        assert cert.rank == (K if rho > -1.0 / (K - 1) else K - 1)
        assert len(cert.multipliers) == K


@pytest.mark.parametrize("K", [40, 1000, 5000])
def test_a_wrong_closed_form_is_not_certified(K):
    simplex = -1.0 / (K - 1)
    eps, tau = 0.2, 0.3
    rho = 1.0 + tau * math.log(eps)
    # the residuals are relative to the gradient's scale, which grows with K, and the
    # acceptance rule has a floor (DEFAULT_POLICY.accept_floor): the cosine moves by 1e-3
    # (the simplex) and 1e-2 (Soft SupCon's rho, whose residual is second order in it)
    cases = [(np.full(K, 5), 0.1, None, simplex + 1e-3),     # a slightly wider simplex
             (np.full(K, 5), 0.1, None, simplex - 1e-3),     # not PSD
             (np.arange(K) % 7 + 2, tau, eps, rho + 1e-2),   # off the realizable cosine
             (np.arange(K) % 7 + 2, tau, eps, rho - 1e-2)]
    for n, t, e, r in cases:
        cert = equiangular_certificate(n, t, e, r)
        assert not cert.certified and cert.kkt_residual > 1e-5, (t, e, r - simplex)
        if K <= 200:
            assert not _dense(n, t, e, r).certified


def test_closed_form_prototypes_carry_it_at_any_size():
    for K in (12, 300):
        p = dgp.supcon_prototypes([4] * K, tau=0.2)
        assert p.method == "closed-form" and p.certificate.certified
        block = p.to_dict(gram=False)["certificate"]
        assert block["kind"] == "kkt" and block["certified"] is True
    small = dgp.supcon_prototypes([4] * 12, tau=0.2)
    dense = kkt_certificate(small.gram, small.sizes, tau=0.2)
    assert abs(small.certificate.kkt_residual - dense.kkt_residual) <= 1e-10
    soft = dgp.supcon_prototypes(list(range(2, 402)), tau=0.05, eps=0.3, identifiability=False)
    assert soft.method == "closed-form" and soft.certificate.certified


@pytest.mark.parametrize("tau", [1e-300, 1e-6, 1e9])
def test_extreme_temperatures_agree_without_overflow(tau):
    """The gradient carries 1/tau: at tau = 1e-300 its coefficients are near the largest
    float, and the structured sums must not square them (the dense certificate's norms scale)."""
    eps = 0.3
    # (Soft SupCon's rho = 1 + tau log eps is 1.0 in floats at tau = 1e-300: no closed form)
    soft = ([([2, 9, 4], eps, 1.0 + tau * math.log(eps))] if 1e-300 < tau < 1 else
            [([4] * 6, eps, -0.2)] if tau > 1 else [])
    with np.errstate(all="ignore"):  # as dgp.solver.validated_tau outside the validated range
        for n, e, rho in [([5, 3], None, -1.0), ([4] * 6, None, -0.2), *soft]:
            fast = equiangular_certificate(np.asarray(n), tau, e, rho)
            assert fast.certified and math.isfinite(fast.gradient_scale), (n, e)
            if math.isfinite(_dense(n, tau, e, rho).gradient_scale):
                _agree(n, tau, e, rho)  # (the dense norms overflow to inf at tau = 1e-300)
