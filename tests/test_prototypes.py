"""Prototype solver of SupCon / Soft SupCon: closed forms, certified solver, first-order formula.

Independent references: analytic losses, the w-InfoNCE loss of an explicit collapsed embedding
(dgp.infonce), a generic exponential-cone program (cvxpy + Clarabel) at moderate tau, the
first-order formula at small tau, and a KKT certificate recomputed here from the unscaled
objective (never the solver's own status).

Stated tolerances: certified vs cvxpy (Clarabel with tolerances 1e-11) at tau in [0.5, 1]:
max |dG| <= 1e-4 (Clarabel's own accuracy; typically 1e-6) and the certified loss is never above
cvxpy's (relative 1e-12); certified vs first order:
max |dG| <= 2 tau^2 for tau in [0.02, 0.1], log-log slope of the error in [1.8, 2.2].
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from dgp.infonce import entropic_bound, winfonce_loss
from dgp.optimum import prototype_program
from dgp.prototypes import (
    first_order_gram,
    kkt_certificate,
    prototype_loss,
    soft_supcon_rho,
    soft_supcon_tau_star,
    supcon_prototypes,
)
from dgp.weights import soft_supcon_weights, supcon_weights

sizes_st = st.lists(st.integers(2, 40), min_size=2, max_size=5)
TIGHT = {"tol_gap_abs": 1e-11, "tol_gap_rel": 1e-11, "tol_feas": 1e-11, "max_iter": 500}


def simplex(K: int) -> np.ndarray:
    G = np.full((K, K), -1.0 / (K - 1))
    np.fill_diagonal(G, 1.0)
    return G


def collapsed_embedding(G: np.ndarray, sizes) -> tuple[np.ndarray, np.ndarray]:
    lam, U = np.linalg.eigh(G)
    M = U * np.sqrt(np.clip(lam, 0.0, None))
    labels = np.repeat(np.arange(len(sizes)), sizes)
    return M[labels], labels


def unscaled_F_grad(G: np.ndarray, sizes, tau: float, eps=None):
    """F and its symmetric gradient, written from the definition (no rescaling)."""
    n = np.asarray(sizes, float)
    X = np.log(n)[None, :] + (G - 1.0) / tau
    np.fill_diagonal(X, np.log(n - 1.0))  # the n_c - 1 positives
    lse = logsumexp(X, axis=1)
    Fv = float(np.sum(n * lse))
    Pm = np.exp(X - lse[:, None])  # softmax weights of each row
    dF = (n[:, None] * Pm) / tau  # d F / d G_cc' (row c)
    np.fill_diagonal(dF, 0.0)
    if eps is not None:
        N = n.sum()
        Z = (n - 1) + eps * (N - n)
        lin = np.outer(n * eps / (tau * Z), n)
        np.fill_diagonal(lin, 0.0)
        Fv += float(np.sum(lin * (1.0 - G)))
        dF -= lin
    return Fv, 0.5 * (dF + dF.T)


def independent_kkt(G: np.ndarray, sizes, tau: float, eps=None) -> dict:
    _, g = unscaled_F_grad(G, sizes, tau, eps)
    y = np.diag(G @ g)
    S = g - np.diag(y)
    scale = np.linalg.norm(g)
    return {
        "min_eig_G": float(np.linalg.eigvalsh(G)[0]),
        "diag": float(np.abs(np.diag(G) - 1).max()),
        "min_eig_S": float(np.linalg.eigvalsh(S)[0]) / scale,
        "GS": float(np.linalg.norm(G @ S)) / scale,
    }


# --------------------------------------------------------------------------------- closed forms


@pytest.mark.parametrize(("K", "n", "tau"), [(2, 3, 0.1), (3, 5, 0.5), (5, 4, 0.05), (10, 2, 2.0)])
def test_balanced_closed_form_and_analytic_loss(K, n, tau):
    res = supcon_prototypes([n] * K, tau=tau)
    assert res.method == "closed-form" and res.kkt_residual is None
    np.testing.assert_allclose(res.gram, simplex(K), atol=1e-15)
    analytic = n * K * math.log((n - 1) + n * (K - 1) * math.exp(-K / ((K - 1) * tau)))
    assert res.loss == pytest.approx(analytic, rel=1e-13)
    Z, labels = collapsed_embedding(res.gram, [n] * K)
    assert winfonce_loss(Z, supcon_weights(labels), tau=tau) == pytest.approx(analytic, rel=1e-10)
    assert res.entropic_bound == pytest.approx(entropic_bound(supcon_weights(labels)), rel=1e-12)
    num = supcon_prototypes([n] * K, tau=tau, method="numeric")
    assert num.method == "numeric" and num.kkt_residual <= 1e-9
    np.testing.assert_allclose(num.gram, simplex(K), atol=1e-8)


@pytest.mark.parametrize("sizes", [[2, 9], [3, 30, 4], [2, 2, 7, 40]])
def test_soft_supcon_realizable_equiangular_any_sizes(sizes):
    eps, K = 0.2, len(sizes)
    tau = 0.6 * soft_supcon_tau_star(K=K, eps=eps)
    res = supcon_prototypes(sizes, tau=tau, eps=eps)
    rho = soft_supcon_rho(tau=tau, eps=eps)
    assert res.method == "closed-form" and res.objective == "soft-supcon"
    off = res.gram[~np.eye(K, dtype=bool)]
    np.testing.assert_allclose(off, rho, atol=1e-15)
    Z, labels = collapsed_embedding(res.gram, sizes)
    W = soft_supcon_weights(labels, eps=eps)
    # attains the entropic bound: loss of an explicit embedding equals sum_i H(p_i)
    assert winfonce_loss(Z, W, tau=tau) == pytest.approx(entropic_bound(W), rel=1e-10)
    assert res.loss == pytest.approx(entropic_bound(W), rel=1e-12) and res.excess_loss == 0.0
    num = supcon_prototypes(sizes, tau=tau, eps=eps, method="numeric")
    assert num.kkt_residual <= 1e-9
    np.testing.assert_allclose(num.gram, res.gram, atol=1e-7)


def test_soft_supcon_tau_star_is_centred_simplex_and_flip():
    eps, sizes = 0.1, [2, 5, 11, 3]
    K = len(sizes)
    ts = soft_supcon_tau_star(K=K, eps=eps)
    assert soft_supcon_rho(tau=ts, eps=eps) == pytest.approx(-1.0 / (K - 1), abs=1e-14)
    at = supcon_prototypes(sizes, tau=ts, eps=eps)
    assert at.method == "closed-form"
    np.testing.assert_allclose(at.gram, simplex(K), atol=1e-12)
    above = supcon_prototypes(sizes, tau=1.3 * ts, eps=eps)
    assert above.method == "numeric" and above.kkt_residual <= 1e-9
    assert above.excess_loss > 0


# ---------------------------------------------------------------------------- certified solver


@settings(max_examples=8, deadline=None)
@given(sizes=sizes_st, tau=st.floats(0.5, 1.0))
def test_certified_agrees_with_cvxpy_moderate_tau(sizes, tau):
    res = supcon_prototypes(sizes, tau=tau, method="numeric")
    ref = prototype_program(sizes, tau=tau, solver_opts=TIGHT)
    assert np.abs(res.gram - ref).max() <= 1e-4
    assert res.loss <= prototype_loss(ref, sizes, tau=tau) + 1e-12 * res.loss
    kkt = independent_kkt(res.gram, sizes, tau)
    assert kkt["min_eig_G"] >= -1e-10 and kkt["diag"] <= 1e-12
    assert kkt["min_eig_S"] >= -1e-8 and kkt["GS"] <= 1e-8


@settings(max_examples=5, deadline=None)
@given(sizes=st.lists(st.integers(2, 30), min_size=3, max_size=4), tau=st.floats(0.3, 1.0))
def test_soft_supcon_unrealizable_agrees_with_cvxpy(sizes, tau):
    eps = 0.05
    tau = max(tau, 1.05 * soft_supcon_tau_star(K=len(sizes), eps=eps))
    res = supcon_prototypes(sizes, tau=tau, eps=eps)
    assert res.method == "numeric" and res.kkt_residual <= 1e-9
    ref = prototype_program(sizes, tau=tau, eps=eps, solver_opts=TIGHT)
    assert np.abs(res.gram - ref).max() <= 1e-4
    assert res.loss <= prototype_loss(ref, sizes, tau=tau, eps=eps) + 1e-12 * res.loss
    kkt = independent_kkt(res.gram, sizes, tau, eps)
    assert kkt["min_eig_S"] >= -1e-8 and kkt["GS"] <= 1e-8


def test_collapsed_loss_matches_winfonce():
    sizes, tau = [2, 3, 6], 0.3
    res = supcon_prototypes(sizes, tau=tau)
    Z, labels = collapsed_embedding(res.gram, sizes)
    assert res.loss == pytest.approx(winfonce_loss(Z, supcon_weights(labels), tau=tau), rel=1e-10)
    eps = 0.01
    soft = supcon_prototypes(sizes, tau=tau, eps=eps)
    Z, labels = collapsed_embedding(soft.gram, sizes)
    W = soft_supcon_weights(labels, eps=eps)
    assert soft.loss == pytest.approx(winfonce_loss(Z, W, tau=tau), rel=1e-10)


def test_k100_tau01_certified_fast_and_independent_certificate():
    rng = np.random.default_rng(0)
    sizes = rng.integers(2, 200, 100)
    t0 = time.perf_counter()
    res = supcon_prototypes(sizes, tau=0.1)
    elapsed = time.perf_counter() - t0
    assert res.method == "numeric" and res.kkt_residual <= 1e-8
    assert elapsed < 5.0
    kkt = independent_kkt(res.gram, sizes, 0.1)
    assert kkt["min_eig_G"] >= -1e-10 and kkt["min_eig_S"] >= -1e-9 and kkt["GS"] <= 1e-9
    assert res.certificate["rank"] == 99


@pytest.mark.parametrize("tau", [0.01, 0.05, 3.0, 10.0])
def test_certified_over_temperature_range(tau):
    sizes = [2, 3, 8, 30, 100]
    res = supcon_prototypes(sizes, tau=tau)
    assert res.kkt_residual <= 1e-9
    assert kkt_certificate(res.gram, sizes, tau=tau)["kkt_residual"] == pytest.approx(
        res.kkt_residual, abs=1e-12
    )
    # the reported excess is the loss above sum n_c log(n_c - 1), computed without cancellation
    assert res.excess_loss > 0 and res.certificate["gap_bound"] <= 1e-6 * res.excess_loss


def test_certificate_rejects_a_wrong_answer():
    sizes, tau = [2, 5, 20], 0.2
    good = supcon_prototypes(sizes, tau=tau).gram
    assert kkt_certificate(good, sizes, tau=tau)["kkt_residual"] <= 1e-9
    assert kkt_certificate(simplex(3), sizes, tau=tau)["kkt_residual"] > 1e-3


# --------------------------------------------------------------------------- first order, tau^2


def test_first_order_error_shrinks_as_tau_squared():
    sizes = [2, 4, 10, 50]
    taus = np.array([0.01, 0.02, 0.04, 0.08])
    errs = []
    for tau in taus:
        G = supcon_prototypes(sizes, tau=tau).gram
        errs.append(np.abs(first_order_gram(sizes, tau=tau) - G).max())
    slope = np.polyfit(np.log(taus), np.log(errs), 1)[0]
    assert 1.8 <= slope <= 2.2, (slope, errs)
    fo = supcon_prototypes(sizes, tau=0.05, method="first-order")
    assert fo.method == "first-order" and fo.kkt_residual is None
    np.testing.assert_array_equal(fo.gram, first_order_gram(sizes, tau=0.05))


@settings(max_examples=10, deadline=None)
@given(sizes=sizes_st, tau=st.floats(0.02, 0.1))
def test_first_order_agrees_at_small_tau(sizes, tau):
    G = supcon_prototypes(sizes, tau=tau, method="numeric").gram
    fo = first_order_gram(sizes, tau=tau)
    err = np.abs(fo - G).max()
    assert err <= 2.0 * tau**2
    # and it improves on the simplex whenever the sizes are unequal
    dev = np.abs(simplex(len(sizes)) - G).max()
    if dev > 1e-6:
        assert err <= 0.5 * dev


# ---------------------------------------------------------------------------------- imbalance


def test_imbalance_breaks_simplex_for_supcon_not_soft():
    sizes, tau = [2, 3, 50, 60], 0.1
    G = supcon_prototypes(sizes, tau=tau).gram
    assert np.abs(G - simplex(4)).max() > 1e-2
    # the two minority classes form the most similar pair, by a wide margin
    iu = np.triu_indices(4, 1)
    off = np.sort(G[iu])
    assert G[0, 1] == off[-1] and off[-1] - off[-2] > 0.1 and G[0, 1] > -1 / 3 + 0.1
    soft = supcon_prototypes(sizes, tau=tau, eps=0.01).gram
    off = soft[iu]
    assert off.max() - off.min() <= 1e-14  # equiangular whatever the sizes


# -------------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"sizes": [1, 4], "tau": 0.1}, ValueError, "sizes"),
        ({"sizes": [0, 4], "tau": 0.1}, ValueError, "sizes"),
        ({"sizes": [2.5, 4], "tau": 0.1}, TypeError, "integers"),
        ({"sizes": [3], "tau": 0.1}, ValueError, "2 classes"),
        ({"sizes": [3, 4], "tau": 0.0}, ValueError, "tau"),
        ({"sizes": [3, 4], "tau": -1.0}, ValueError, "tau"),
        ({"sizes": [3, 4], "tau": 0.1, "eps": 1.0}, ValueError, "eps"),
        ({"sizes": [3, 4], "tau": 0.1, "eps": 0.0}, ValueError, "eps"),
        ({"sizes": [3, 4], "tau": 0.1, "method": "magic"}, ValueError, "method"),
        ({"sizes": [3, 4], "tau": 0.1, "eps": 0.5, "method": "first-order"}, ValueError, "eps"),
    ],
)
def test_bad_input(kwargs, exc, match):
    sizes = kwargs.pop("sizes")
    with pytest.raises(exc, match=match):
        supcon_prototypes(sizes, **kwargs)


def test_to_dict_contract_fields():
    d = supcon_prototypes([2, 3, 4], tau=0.2).to_dict()
    for key in ("objective", "sizes", "tau", "eps", "gram", "loss", "method", "kkt_residual"):
        assert key in d
    assert d["objective"] == "supcon" and d["sizes"] == [2, 3, 4] and d["eps"] is None
