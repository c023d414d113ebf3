"""Prototype solver of SupCon / Soft SupCon: closed forms, certified solver, first-order formula.

Independent references: analytic losses, the w-InfoNCE loss of an explicit collapsed embedding
(dgp.infonce), a generic exponential-cone program (cvxpy + Clarabel, tests/_cvxpy_reference.py) at
moderate tau, the first-order formula at small tau, and a KKT certificate recomputed here from the
unscaled objective (never the solver's own status).

Stated tolerances: certified vs cvxpy (Clarabel with tolerances 1e-11) at tau in [0.5, 1]:
max |dG| <= 1e-4 (Clarabel's own accuracy; typically 1e-6) and the certified loss is never above
cvxpy's (relative 1e-12); certified vs first order: max |dG| <= 2 tau^2 for sizes <= 40 and tau in
[0.02, 0.1], <= 6 tau^2 for sizes up to 100 down to tau = 0.001, log-log slope of the error in
[1.8, 2.2].
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _cvxpy_reference import nearest_correlation, prototype_program
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from dgp.infonce import entropic_bound, winfonce_loss
from dgp.prototypes import (
    GRAM_JSON_MAX_K,
    KKTCertificate,
    first_order_gram,
    kkt_certificate,
    nearest_elliptope,
    prototype_loss,
    soft_supcon_rho,
    soft_supcon_tau_star,
    supcon_prototypes,
)
from dgp.weights import soft_supcon_weights, supcon_weights

sizes_st = st.lists(st.integers(2, 40), min_size=2, max_size=5)


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
    assert res.method == "closed-form" and res.kkt_residual is None and res.unique
    np.testing.assert_allclose(res.gram, simplex(K), atol=1e-15)
    analytic = n * K * math.log((n - 1) + n * (K - 1) * math.exp(-K / ((K - 1) * tau)))
    assert res.loss == pytest.approx(analytic, rel=1e-13)
    excess = n * K * math.log1p(n * (K - 1) * math.exp(-K / ((K - 1) * tau)) / (n - 1))
    assert res.excess_loss == pytest.approx(excess, rel=1e-12)
    assert res.log_excess_loss == pytest.approx(math.log(excess), rel=1e-12)
    Z, labels = collapsed_embedding(res.gram, [n] * K)
    assert winfonce_loss(Z, supcon_weights(labels), tau=tau) == pytest.approx(analytic, rel=1e-10)
    assert res.entropic_bound == pytest.approx(entropic_bound(supcon_weights(labels)), rel=1e-12)
    num = supcon_prototypes([n] * K, tau=tau, method="numeric")
    assert num.method == "numeric" and num.kkt_residual <= 1e-9
    np.testing.assert_allclose(num.gram, simplex(K), atol=1e-8)
    assert num.rank == K - 1 and num.unique is True


def test_balanced_closed_form_needs_no_k_by_k_matrix():
    # K = 20000 balanced classes: a closed form, no 3 GB Gram built unless asked for
    res = supcon_prototypes([3] * 20000, tau=0.1)
    assert res.matrix is None and res.equiangular == pytest.approx(-1 / 19999)
    d = res.to_dict()
    assert d["gram"] is None and "gram=True" in d["gram_omitted"] and d["equiangular"] < 0
    assert res.excess_loss > 0 and math.isfinite(res.loss)


def test_large_imbalanced_k_is_refused_with_advice():
    with pytest.raises(ValueError, match="first-order") as exc:
        supcon_prototypes([3] * 20000 + [4], tau=0.1)
    assert "sizes" in str(exc.value)
    with pytest.raises(ValueError, match="fit"):
        supcon_prototypes([3] * 20000 + [4], tau=0.1, method="first-order")


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
    assert res.unique is False  # a face of minimisers G + c(J - I) below tau*
    num = supcon_prototypes(sizes, tau=tau, eps=eps, method="numeric")
    assert num.kkt_residual <= 1e-9 and num.unique is False and num.collapse.collapsed
    np.testing.assert_allclose(num.gram, res.gram, atol=1e-7)


@pytest.mark.parametrize(("K", "n", "eps", "f"), [(3, 4, 0.1, 1.5), (5, 7, 0.01, 3.0),
                                                   (4, 2, 0.5, 1.01)])
def test_balanced_soft_supcon_above_tau_star_is_the_simplex(K, n, eps, f):
    tau = f * soft_supcon_tau_star(K=K, eps=eps)
    closed = supcon_prototypes([n] * K, tau=tau, eps=eps)
    assert closed.method == "closed-form" and closed.equiangular == pytest.approx(-1 / (K - 1))
    numeric = supcon_prototypes([n] * K, tau=tau, eps=eps, method="numeric")
    assert numeric.kkt_residual <= 1e-9 and numeric.unique and closed.unique
    np.testing.assert_allclose(closed.gram, numeric.gram, atol=1e-7)
    assert closed.loss == pytest.approx(numeric.loss, rel=1e-12)
    Z, labels = collapsed_embedding(closed.gram, [n] * K)
    W = soft_supcon_weights(labels, eps=eps)
    assert closed.loss == pytest.approx(winfonce_loss(Z, W, tau=tau), rel=1e-12)
    assert closed.excess_loss > 0


def test_soft_supcon_tau_star_is_centred_simplex_and_flip():
    eps, sizes = 0.1, [2, 5, 11, 3]
    K = len(sizes)
    ts = soft_supcon_tau_star(K=K, eps=eps)
    assert soft_supcon_rho(tau=ts, eps=eps) == pytest.approx(-1.0 / (K - 1), abs=1e-14)
    at = supcon_prototypes(sizes, tau=ts, eps=eps)
    assert at.method == "closed-form" and at.rank == K - 1
    np.testing.assert_allclose(at.gram, simplex(K), atol=1e-12)
    above = supcon_prototypes(sizes, tau=1.3 * ts, eps=eps)
    assert above.method == "numeric" and above.kkt_residual <= 1e-9
    assert above.excess_loss > 0 and above.unique is True and above.collapse.collapsed


# ---------------------------------------------------------------------------- certified solver


@settings(max_examples=6)
@given(sizes=sizes_st, tau=st.floats(0.5, 1.0))
def test_certified_agrees_with_cvxpy_moderate_tau(sizes, tau):
    res = supcon_prototypes(sizes, tau=tau, method="numeric")
    ref = prototype_program(sizes, tau=tau)
    assert np.abs(res.gram - ref).max() <= 1e-4
    assert res.loss <= prototype_loss(ref, sizes, tau=tau) + 1e-12 * res.loss
    kkt = independent_kkt(res.gram, sizes, tau)
    assert kkt["min_eig_G"] >= -1e-10 and kkt["diag"] <= 1e-12
    assert kkt["min_eig_S"] >= -1e-8 and kkt["GS"] <= 1e-8


@settings(max_examples=4)
@given(sizes=st.lists(st.integers(2, 30), min_size=3, max_size=4), tau=st.floats(0.3, 1.0))
def test_soft_supcon_unrealizable_agrees_with_cvxpy(sizes, tau):
    eps = 0.05
    tau = max(tau, 1.05 * soft_supcon_tau_star(K=len(sizes), eps=eps))
    res = supcon_prototypes(sizes, tau=tau, eps=eps, method="numeric")
    assert res.method == "numeric" and res.kkt_residual <= 1e-9
    ref = prototype_program(sizes, tau=tau, eps=eps)
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


def test_k100_tau01_certified_and_independent_certificate():
    rng = np.random.default_rng(0)
    sizes = rng.integers(2, 200, 100)
    res = supcon_prototypes(sizes, tau=0.1)
    assert res.method == "numeric" and res.kkt_residual <= 1e-8
    kkt = independent_kkt(res.gram, sizes, 0.1)
    assert kkt["min_eig_G"] >= -1e-10 and kkt["min_eig_S"] >= -1e-9 and kkt["GS"] <= 1e-9
    assert res.rank == 99 and res.certificate.strictly_complementary and res.unique


@pytest.mark.parametrize("tau", [0.001, 0.003, 0.01, 0.05, 3.0, 10.0])
def test_certified_over_temperature_range(tau):
    sizes = [2, 3, 8, 30, 100]
    res = supcon_prototypes(sizes, tau=tau)
    assert res.kkt_residual <= 1e-9
    assert kkt_certificate(res.gram, sizes, tau=tau).kkt_residual == pytest.approx(
        res.kkt_residual, abs=1e-12
    )
    # the excess above sum n_c log(n_c - 1) is positive and exact in log space, even where it
    # underflows (about 1e-650 at tau = 0.001): never reported as "attains the bound"
    assert res.log_excess_loss > -math.inf and res.log_excess_loss < math.log(res.loss)
    assert res.certificate.log_gap_bound <= res.log_excess_loss + math.log(1e-6)
    if tau <= 0.1:  # the first-order formula is O(tau^2) away (about 5 tau^2 for these sizes)
        assert np.abs(res.gram - first_order_gram(sizes, tau=tau)).max() <= 6 * tau**2
    if tau >= 0.05:
        assert res.excess_loss > 0


def test_small_tau_excess_matches_leading_term():
    # F - sum n log(n-1) = sum_{c<c'} w_cc' e^{(G_cc'-1)/tau} (1 + O(e^{-kappa/tau})): compare in
    # log space at tau = 0.002, where every term is about 1e-326
    sizes, tau = [3, 7, 20], 0.002
    res = supcon_prototypes(sizes, tau=tau)
    n = np.asarray(sizes, float)
    G = res.gram
    logs = [
        math.log(n[a] * n[b] * (1 / (n[a] - 1) + 1 / (n[b] - 1))) + (G[a, b] - 1) / tau
        for a in range(3)
        for b in range(a + 1, 3)
    ]
    leading = float(logsumexp(logs))
    assert res.log_excess_loss == pytest.approx(leading, abs=1e-9)


def test_certificate_rejects_a_wrong_answer():
    sizes, tau = [2, 5, 20], 0.2
    good = supcon_prototypes(sizes, tau=tau).gram
    cert = kkt_certificate(good, sizes, tau=tau)
    assert isinstance(cert, KKTCertificate) and cert.kkt_residual <= 1e-9
    assert kkt_certificate(simplex(3), sizes, tau=tau).kkt_residual > 1e-3


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
    assert fo.method == "first-order" and fo.kkt_residual is None and fo.unique is None
    np.testing.assert_array_equal(fo.gram, first_order_gram(sizes, tau=0.05))


@settings(max_examples=8)
@given(sizes=sizes_st, tau=st.floats(0.02, 0.1))
def test_first_order_agrees_at_small_tau(sizes, tau):
    G = supcon_prototypes(sizes, tau=tau, method="numeric").gram
    fo = first_order_gram(sizes, tau=tau)
    err = np.abs(fo - G).max()
    assert err <= 2.0 * tau**2
    dev = np.abs(simplex(len(sizes)) - G).max()
    if dev > 1e-6:  # and it improves on the simplex whenever the sizes are unequal
        assert err <= 0.5 * dev


@pytest.mark.parametrize("tau", [0.1, 0.001])
def test_first_order_is_an_approximation_with_its_psd_defect(tau):
    sizes = [5000, 500, 50]
    fo = supcon_prototypes(sizes, tau=tau, method="first-order")
    a = fo.approximation
    lam = float(np.linalg.eigvalsh(fo.gram)[0])
    assert a.min_eigenvalue == pytest.approx(lam, abs=1e-15) and lam < 0
    assert a.psd_defect == pytest.approx(-lam)
    if tau == 0.1:
        assert a.psd_defect == pytest.approx(0.0068, abs=5e-5)
    P = a.projected_gram
    assert np.linalg.eigvalsh(P)[0] >= -1e-12 and np.abs(np.diag(P) - 1).max() <= 1e-12
    # the nearest point of the elliptope, against an independent conic program
    assert a.converged
    np.testing.assert_allclose(P, nearest_correlation(fo.gram), atol=1e-6)
    # loss and excess are those of a feasible point: upper bounds on the certified optimum
    opt = supcon_prototypes(sizes, tau=tau)
    assert fo.loss >= opt.loss - 1e-12 * opt.loss
    assert fo.log_excess_loss >= opt.log_excess_loss - 1e-9
    assert fo.loss == pytest.approx(prototype_loss(P, sizes, tau=tau), rel=1e-14)
    text = str(fo)
    assert "approximation" in text and "PSD defect" in text and "<=" in text
    assert "0 nats" not in text


def test_nearest_elliptope_is_identity_on_the_elliptope():
    G = supcon_prototypes([2, 5, 20], tau=0.3).gram
    P, ok, _ = nearest_elliptope(G)
    assert ok and np.abs(P - G).max() <= 1e-9
    with pytest.raises(ValueError, match="A"):
        nearest_elliptope(np.ones((2, 3)))


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


def test_permutation_of_classes_permutes_the_gram():
    sizes, tau = np.array([2, 7, 3, 15]), 0.2
    perm = np.array([2, 0, 3, 1])
    G = supcon_prototypes(sizes, tau=tau).gram
    Gp = supcon_prototypes(sizes[perm], tau=tau).gram
    np.testing.assert_allclose(Gp, G[np.ix_(perm, perm)], atol=1e-9)


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
        ({"sizes": [3, 4], "tau": 0.1, "sampler": "class-balanced"}, ValueError, "batch_size"),
        ({"sizes": [3, 4], "tau": 0.1, "reduction": "sum"}, ValueError, "batch_size"),
        ({"sizes": [3, 4], "tau": 0.1, "batch_size": 2}, ValueError, "batch_size"),
        ({"sizes": [3, 4], "tau": 0.1, "batch_size": 8}, ValueError, "batch_size"),
        ({"sizes": [3, 4], "tau": 0.1, "batch_size": 4, "method": "first-order"}, ValueError,
         "method"),
        ({"sizes": [3, 4], "tau": 0.1, "batch_size": 4, "sampler": "m-per-class"}, ValueError,
         "samples_per_class"),
        ({"sizes": [3, 4], "tau": 0.1, "batch_size": 4, "sampler": "m-per-class",
          "samples_per_class": 3}, ValueError, "samples_per_class"),
        ({"sizes": [3, 4], "tau": 0.1, "batch_size": 4, "samples_per_class": 2}, ValueError,
         "samples_per_class"),
        ({"sizes": [3, 4], "tau": 0.1, "batch_size": 4, "reduction": "max"}, ValueError,
         "reduction"),
        ({"sizes": [3, 4], "tau": 0.1, "batch_size": 4, "samples": 0}, ValueError, "samples"),
    ],
)
def test_bad_input(kwargs, exc, match):
    sizes = kwargs.pop("sizes")
    with pytest.raises(exc, match=match):
        supcon_prototypes(sizes, **kwargs)


def test_to_dict_contract_fields_and_display():
    res = supcon_prototypes([2, 3, 4], tau=0.2)
    d = res.to_dict()
    for key in ("objective", "sizes", "tau", "eps", "gram", "loss", "method", "kkt_residual"):
        assert key in d
    assert d["objective"] == "supcon" and d["sizes"] == [2, 3, 4] and d["eps"] is None
    assert np.array_equal(np.array(d["gram"]), res.gram)
    assert d["certificate"]["kkt_residual"] == res.kkt_residual and d["rank"] == 2
    emb = np.array(res.to_dict(embedding=True)["embedding"])
    np.testing.assert_allclose(emb @ emb.T, res.gram, atol=1e-12)
    text = str(res)
    assert "K = 3" in text and "certified" in text and "prototype Gram" in text
    assert all(len(line) <= 80 for line in text.splitlines())
    html = res._repr_html_()
    assert html.startswith("<div>") and "<table>" in html and "c2 (n=4)" in html
    big = supcon_prototypes([3] * (GRAM_JSON_MAX_K + 1), tau=0.5)
    assert big.to_dict()["gram"] is None
    assert len(big.to_dict(gram=True)["gram"]) == GRAM_JSON_MAX_K + 1
    assert "prototype Gram" not in str(big)  # no 501 x 501 table in a summary


def test_time_guard_refuses_by_the_budget_only(monkeypatch):
    """The time guard refuses what its estimate puts above DGP_TIME_BUDGET_S, naming sizes
    and the variable; a small problem passes the same small budget (the estimate is 40 K^3
    flops at 1e9/s: K = 400 is 2.6 s, K = 100 is 0.04 s)."""
    monkeypatch.setenv("DGP_TIME_BUDGET_S", "1")
    with pytest.raises(ValueError, match=r"sizes is too large: .*DGP_TIME_BUDGET_S"):
        supcon_prototypes(2 + np.arange(400) % 7, tau=0.1)  # imbalanced: the solver
    assert supcon_prototypes(2 + np.arange(100) % 7, tau=0.1).kkt_residual <= 1e-8


@pytest.mark.parametrize(("sizes", "tau"), [([5, 3, 2], 1e-3), ([20, 10, 5, 2], 1e-3),
                                            ([20, 10, 5, 2], 1e-5)])
def test_small_temperatures_are_certified_and_beat_the_first_order_formula(sizes, tau):
    """At small tau the excess is about exp(-1.5/tau) (far below any float) and a step of a
    cosine by more than ~700 tau overflows the scaled objective: the line searches back off
    such steps instead of failing. The certified minimiser is no worse than the small-tau
    formula's Gram (a feasible point), and the two differ at second order in tau."""
    exact = supcon_prototypes(sizes, tau=tau)
    approx = supcon_prototypes(sizes, tau=tau, method="first-order")
    assert exact.kkt_residual is not None and exact.kkt_residual < 1e-8
    assert exact.log_excess_loss <= approx.log_excess_loss + 1e-12 * abs(approx.log_excess_loss)
    assert np.abs(exact.gram - approx.gram).max() <= 10 * tau**2


def test_identifiability_false_changes_nothing_else():
    """``identifiability=False`` (what a phase map asks) leaves that field None and every
    other field as computed with it."""
    cases = [([30, 10, 5], {"eps": 0.3, "tau": 0.2}), ([30, 10, 5], {"tau": 0.3}),
             ([30, 10, 5], {"eps": 0.05, "tau": 1.0}),
             ([10, 10, 10], {"tau": 0.3}),               # closed form: balanced SupCon
             ([10, 10, 10], {"eps": 0.05, "tau": 1.0}),  # closed form: simplex past tau*
             ([30, 10, 5], {"eps": 0.5, "tau": 0.2}),    # closed form: realizable rho
             ([7, 3], {"tau": 0.4})]                     # closed form: two classes
    for sizes, kw in cases:
        a = supcon_prototypes(sizes, **kw)
        b = supcon_prototypes(sizes, identifiability=False, **kw)
        assert b.identifiability is None and a.identifiability is not None
        da, db = a.to_dict(), b.to_dict()
        da.pop("identifiability"), db.pop("identifiability", None)
        assert da == db
    with pytest.raises(TypeError, match="identifiability"):
        supcon_prototypes([3, 3], tau=0.5, identifiability="no")


@pytest.mark.parametrize(("sizes", "tau", "eps"), [
    ([3, 3, 3], 0.5, None),        # regular simplex, balanced SupCon
    ([7, 2], 0.3, None),           # antipodal: SupCon with two classes, any sizes
    ([4, 4, 4, 4], 1.0, 0.05),     # balanced Soft SupCon above tau*: the simplex
    ([2, 5, 3], 0.5, 0.6),         # equiangular rho = 1 + tau log eps, attains the bound
])
def test_closed_forms_carry_the_kkt_certificate_of_their_gram(sizes, tau, eps):
    """A closed form states its certificate: the KKT conditions of its Gram, checked from the
    numbers (never from the formula's name), in the library and the JSON; the same check on a
    Gram moved off the formula fails, so it can."""
    from dgp.prototypes import kkt_certificate

    p = supcon_prototypes(sizes, tau=tau, eps=eps)
    assert p.method == "closed-form" and p.certificate is not None
    cert = p.certificate
    assert cert.certified and cert.kkt_residual < 1e-10
    d = p.to_dict()["certificate"]
    assert d["kind"] == "kkt" and d["certified"] is True
    K = len(sizes)
    off = np.clip(p.gram + 0.05 * (1 - np.eye(K)), -1, 1)  # feasible, off the optimum
    assert not kkt_certificate(off, sizes, tau=tau, eps=eps).certified


def test_first_order_prototypes_carry_the_kkt_certificate_of_their_projected_gram():
    """Not a solution: the KKT certificate of the projected first-order Gram says so (not
    certified), and how far off it is shrinks with tau as the expansion's error does; the
    certified solver's own Gram is certified at the same sizes."""
    residuals = []
    for tau in (0.2, 0.1, 0.05):
        p = supcon_prototypes([5, 3, 2], tau=tau, method="first-order")
        c = p.to_dict()["certificate"]
        assert c["kind"] == "kkt" and c["statement"] and c["certified"] is False
        residuals.append(c["kkt_residual"])
        assert supcon_prototypes([5, 3, 2], tau=tau).to_dict()["certificate"]["certified"]
    assert residuals[0] > residuals[1] > residuals[2] > 0
