"""dgp.symbolic: the formulas checked exactly (sympy) and against the numeric implementation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp

from dgp import symbolic as S
from dgp.prototypes import first_order_gram, prototype_loss, soft_supcon_tau_star, supcon_prototypes


def test_tau_star_is_free_of_sizes_and_gives_the_simplex():
    ts = S.soft_supcon_tau_star()
    assert ts.free_symbols == {S.K, S.eps}
    assert sp.simplify(S.soft_supcon_rho().subs(S.tau, ts) - S.balanced_simplex_cosine()) == 0
    assert float(ts.subs({S.K: 4, S.eps: 0.3})) == pytest.approx(
        soft_supcon_tau_star(K=4, eps=0.3), rel=1e-14
    )


@pytest.mark.parametrize(("tau", "expected"), [(0.5, True), (1.0, False)])
def test_feasibility_condition_is_tau_below_tau_star(tau, expected):
    vals = {S.K: 3, S.eps: 0.2, S.tau: tau}  # tau* = 0.932
    assert bool(S.soft_supcon_condition().subs(vals)) is expected
    assert (tau <= soft_supcon_tau_star(K=3, eps=0.2)) is expected


def test_balanced_loss_matches_numeric_closed_form():
    expr = S.balanced_loss()
    # exponent written as -K/((K-1) tau) equals (simplex - 1)/tau
    assert sp.simplify(-S.K / ((S.K - 1) * S.tau) - (S.balanced_simplex_cosine() - 1) / S.tau) == 0
    for K, n, tau in [(3, 4, 0.2), (5, 2, 1.0)]:
        val = float(expr.subs({S.K: K, S.n: n, S.tau: tau}))
        assert val == pytest.approx(supcon_prototypes([n] * K, tau=tau).loss, rel=1e-13)


def test_first_order_gram_matches_numeric():
    G = S.first_order_gram(3)
    sizes, tau = [2, 7, 30], 0.05
    subs = dict(zip(S.size_symbols(3), sizes, strict=True)) | {S.tau: tau}
    num = np.array(G.subs(subs).evalf(), dtype=float)
    np.testing.assert_allclose(num, first_order_gram(sizes, tau=tau), atol=1e-14)
    # pair weight: derivative of the two rows' logs at x = 0 (the small-tau expansion)
    n1, n2, x = sp.symbols("n1 n2 x", positive=True)
    f = n1 * sp.log((n1 - 1) + n2 * x) + n2 * sp.log((n2 - 1) + n1 * x)
    assert sp.simplify(sp.diff(f, x).subs(x, 0) - S.pair_weight(n1, n2)) == 0


def test_kkt_balanced_simplex_exact():
    """Balanced SupCon, K = 3, symbolic n and tau: the simplex satisfies the KKT system exactly
    with y = diag(G grad F); S = g J with g > 0, so S is PSD and G S = 0."""
    k = 3
    sysk = S.kkt_system(k)
    ns = S.size_symbols(k)
    subs = {s: S.n for s in ns}
    subs |= {sysk.gram[a, b]: sp.Rational(-1, 2) for a in range(k) for b in range(a + 1, k)}
    G = sysk.gram.subs(subs)
    g = sp.simplify(sysk.gradient.subs(subs))
    y = [sp.simplify((G * g)[c, c]) for c in range(k)]
    Sm = sp.simplify(sysk.dual.subs(subs).subs(dict(zip(sysk.multipliers, y, strict=True))))
    off = Sm[0, 1]
    assert sp.simplify(Sm - off * sp.ones(k, k)) == sp.zeros(k, k)
    assert sp.simplify(G * Sm) == sp.zeros(k, k)
    assert off.subs({S.n: 3, S.tau: sp.Rational(1, 2)}).evalf() > 0


def test_kkt_soft_supcon_equiangular_stationary_any_sizes():
    """Soft SupCon, K = 3, symbolic sizes: the gradient vanishes at G_cd = 1 + tau log eps, so
    with y = 0 the KKT system holds wherever that G is PSD (rho >= -1/(K-1))."""
    k = 3
    sysk = S.kkt_system(k, soft=True)
    rho = S.soft_supcon_rho()
    subs = {sysk.gram[a, b]: rho for a in range(k) for b in range(a + 1, k)}
    g = sysk.gradient.subs(subs)
    assert sp.simplify(g) == sp.zeros(k, k)


def test_prototype_objective_matches_numeric():
    for soft in (False, True):
        F = S.prototype_objective(3, soft=soft)
        sizes, tau, eps = [2, 5, 9], 0.4, 0.1
        G = np.array([[1, -0.3, -0.6], [-0.3, 1, -0.2], [-0.6, -0.2, 1]])
        subs = dict(zip(S.size_symbols(3), sizes, strict=True)) | {S.tau: tau, S.eps: eps}
        subs |= {sp.Symbol(f"G_{a + 1}{b + 1}", real=True): G[a, b] for a in range(3)
                 for b in range(a + 1, 3)}
        val = float(F.subs(subs))
        ref = prototype_loss(G, sizes, tau=tau, eps=eps if soft else None)
        assert val == pytest.approx(ref, rel=1e-12)


def test_latex_lines():
    lines = S.latex_lines(3)
    text = "\n".join(t for _, t in lines)
    assert r"\tau^*" in text and r"\omega_{cd}" in text and "y_{1}" in text
    assert all(isinstance(t, str) and isinstance(s, str) for t, s in S.latex_lines())
    with pytest.raises(ValueError, match="k must"):
        S.first_order_gram(1)
    assert math.isfinite(float(S.balanced_simplex_cosine().subs(S.K, 4)))
