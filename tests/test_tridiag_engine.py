"""The tridiagonal machinery of the dense engine against independent references: Sturm counts
against sorted eigenvalues of the dense tridiagonal, the reflectors applied without copies
against the explicit orthogonal factor, the concave search against a fine grid, the fused
log-weights and entropies against their separate computations, the off-diagonal range against
a mask; the direct LAPACK bisection against scipy's eigh_tridiagonal, bit for bit."""

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings
from hypothesis import strategies as st

from dgp.engine.dense import DenseCosineSpectrum
from dgp.engine.family import argmax_concave
from dgp.engine.target import LogTarget, log_weights, offdiag_range, row_entropies
from dgp.engine.tridiag import (
    Tridiagonal,
    tridiagonal_count_below,
    tridiagonal_eigh,
    tridiagonal_eigvals,
)
from dgp.tolerance import Margin


def _dense(d: np.ndarray, e: np.ndarray) -> np.ndarray:
    return np.diag(d) + np.diag(e, 1) + np.diag(e, -1)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 40), seed=st.integers(0, 2**32 - 1), clustered=st.booleans())
def test_sturm_count_matches_sorted_eigenvalues(n, seed, clustered):
    rng = np.random.default_rng(seed)
    d = rng.standard_normal(n)
    e = rng.standard_normal(n - 1)
    if clustered:  # exact ties and zero couplings: a split matrix with repeated eigenvalues
        d = np.round(d)
        e[rng.random(n - 1) < 0.5] = 0.0
    lam = np.linalg.eigvalsh(_dense(d, e))
    gaps = np.abs(lam[:, None] - lam[None, :])
    scale = 1.0 + np.abs(lam).max()
    for x in np.concatenate([rng.uniform(lam[0] - 1, lam[-1] + 1, 5), [lam[0] - 2]]):
        if np.abs(lam - x).min() < 1e-9 * scale:  # an eigenvalue at x: the count is rounding
            continue
        assert tridiagonal_count_below(d, e, x) == int((lam < x).sum()), (x, gaps.min())


def test_sturm_count_at_scale():
    rng = np.random.default_rng(7)
    n = 2000
    d, e = rng.standard_normal(n), rng.standard_normal(n - 1)
    # the reference by MRRR (LAPACK dstemr), not bisection: independent of the LDL pivots, and
    # O(n^2) where the dense eigvalsh of the same matrix took most of this test's 10 s
    lam = scipy.linalg.eigvalsh_tridiagonal(d, e, lapack_driver="stemr")
    for k in (0, 1, 17, 1000, n - 1):
        x = 0.5 * (lam[k] + lam[k + 1]) if k < n - 1 else lam[-1] + 1.0
        assert tridiagonal_count_below(d, e, x) == k + 1


@pytest.mark.parametrize("n", [2, 3, 65, 130, 300])
def test_apply_q_is_the_orthogonal_factor(n):
    rng = np.random.default_rng(n)
    M = rng.standard_normal((n, n))
    M = M + M.T
    M0 = M.copy()
    tri = Tridiagonal(M)
    c_before = tri._c.copy() if n > 1 else None
    Q = tri.apply_q(np.eye(n))
    assert np.allclose(Q.T @ Q, np.eye(n), atol=1e-12)
    assert np.allclose(Q[:, 0], np.eye(n)[:, 0])  # e_1 is fixed
    assert np.allclose(Q.T @ M0 @ Q, _dense(tri.d, tri.e), atol=1e-10 * n)
    if c_before is not None:
        assert np.array_equal(tri._c, c_before)
    # a block of a few columns gives the same as the full factor
    Y = rng.standard_normal((n, 3))
    assert np.allclose(tri.apply_q(Y), Q @ Y, atol=1e-12 * n)


def _planted_target(n: int, p: int, seed: int) -> tuple[LogTarget, float]:
    z = np.random.default_rng(seed).standard_normal((n, p))
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    ell = (z @ z.T) / 0.5
    np.fill_diagonal(ell, 0.0)
    off = ell[~np.eye(n, dtype=bool)]
    margin = Margin("test", 0.0, 1.0, False)
    return LogTarget(ell, np.zeros(n), True, None, 0.0, margin, float(off.min()),
                     float(off.max())), 0.5


@pytest.mark.parametrize("n,p,seed", [(60, 3, 0), (200, 5, 1), (400, 2, 2)])
def test_dense_cosine_spectrum_against_eigvalsh(n, p, seed):
    """The family member G(mu) = I + tau ell + mu (11^T - I): its eigenvalues, counts and
    slopes from the tridiagonal form (remembered across questions) against the dense matrix."""
    tgt, tau = _planted_target(n, p, seed)
    ell = tgt.ell.copy()
    spec = DenseCosineSpectrum(tgt, tau)
    for mu in (-0.3, 0.1, 0.999, 0.1):  # 0.1 twice: the second answers are remembered
        G = tau * ell + mu * (np.ones((n, n)) - np.eye(n))
        np.fill_diagonal(G, 1.0)
        lam, X = np.linalg.eigh(G)
        atol = 1e-10 * (1.0 + np.abs(lam).max())
        assert np.allclose(spec.smallest(mu, 4), lam[:4], atol=atol)
        assert abs(spec.lam_max(mu) - lam[-1]) <= atol
        assert abs(spec.kth(mu, 2) - lam[2]) <= atol
        value, slope = spec.lam_min_slope(mu)
        assert abs(value - lam[0]) <= atol
        if lam[1] - lam[0] > 1e-6:  # a simple eigenvalue: its slope is (1^T x)^2 - 1
            assert abs(slope - (X[:, 0].sum() ** 2 - 1.0)) <= 1e-6 * n
        k = int(np.argmax(np.diff(lam)))  # between two well-separated eigenvalues
        assert spec.count_at_most(mu, 0.5 * (lam[k] + lam[k + 1])) == k + 1
        assert spec.count_at_most(mu, lam[0] - 1.0) == 0
    # answers handed out are copies: changing one does not change the next
    first = spec.smallest(0.1, 4)
    first[:] = 0.0
    assert not np.array_equal(spec.smallest(0.1, 4), first)


def _phi(d: np.ndarray, e: np.ndarray, n: int, mu: float) -> float:
    dd = d - mu
    dd[0] = d[0] + mu * (n - 1)
    return float(tridiagonal_eigvals(dd, e, 0, 0)[0])


@pytest.mark.parametrize("n,p,seed", [(80, 3, 3), (300, 5, 4), (1000, 5, 1)])
def test_concave_search_finds_the_kink(n, p, seed):
    """A planted weighting's lambda_min(G(mu)) peaks at a kink (N - p eigenvalues vanish
    together): the search lands on it, no worse than a fine grid, in few evaluations."""
    tgt, tau = _planted_target(n, p, seed)
    spec = DenseCosineSpectrum(tgt, tau)
    a, b = spec.box()
    calls = []

    def f(mu):
        calls.append(mu)
        return spec.lam_min_slope(mu)

    mu_star = argmax_concave(f, a, b, 1e-2 * 4 * np.finfo(float).eps * n)
    grid = np.linspace(a, b, 401)
    values = [_phi(spec.d0, spec.e, n, m) for m in grid]
    k = int(np.argmax(values))
    fine = np.linspace(grid[max(k - 1, 0)], grid[min(k + 1, grid.size - 1)], 401)
    best = max(_phi(spec.d0, spec.e, n, m) for m in fine)
    assert spec.lam_min(mu_star) >= best - 1e-9
    assert abs(spec.lam_min(mu_star)) <= 1e-9 * n  # the planted Gram: the maximum is zero
    assert len(calls) <= 12


@pytest.mark.parametrize("n,p,seed", [(300, 5, 4), (1000, 5, 1)])
def test_scaled_search_stops_at_the_resolution_of_its_values(n, p, seed):
    """With the spectrum's norm floor as scale (as cosine_family runs it) the search stops once
    the bound is within gap * scale of its best value, which at the kink is the rounding level
    of the eigenvalues: no more calls than the unscaled search, and still within that gap of a
    fine grid's maximum."""
    tgt, tau = _planted_target(n, p, seed)
    spec = DenseCosineSpectrum(tgt, tau)
    a, b = spec.box()
    gap = 1e-2 * 4 * np.finfo(float).eps * n
    runs = {}
    for scaled in (False, True):
        calls = []

        def f(mu, calls=calls):
            calls.append(mu)
            return spec.lam_min_slope(mu)

        mu = argmax_concave(f, a, b, gap, spec.norm_floor if scaled else None)
        runs[scaled] = (mu, len(calls))
    mu, used = runs[True]
    assert used <= runs[False][1]
    grid = np.linspace(a, b, 401)
    k = int(np.argmax([_phi(spec.d0, spec.e, n, m) for m in grid]))
    fine = np.linspace(grid[max(k - 1, 0)], grid[min(k + 1, grid.size - 1)], 401)
    best = max(_phi(spec.d0, spec.e, n, m) for m in fine)
    assert spec.lam_min(mu) >= best - gap * spec.norm_floor(mu) - 1e-12 * n


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 40), seed=st.integers(0, 2**32 - 1),
       mu=st.floats(-3.0, 3.0, allow_nan=False))
def test_norm_floor_is_below_the_spectral_norm(n, seed, mu):
    """The search's scale never exceeds the spectral norm of G(mu) (a dense eigvalsh)."""
    rng = np.random.default_rng(seed)
    L = rng.standard_normal((n, n))
    L = L + L.T
    np.fill_diagonal(L, 0.0)
    tau = 0.5
    G = tau * L + mu * (np.ones((n, n)) - np.eye(n))
    np.fill_diagonal(G, 1.0)
    norm = float(np.abs(np.linalg.eigvalsh(G)).max())
    off = L[~np.eye(n, dtype=bool)] if n > 1 else np.zeros(1)
    target = LogTarget(L, np.zeros(n), True, None, 0.0, Margin("test", 0.0, 1.0, False),
                       float(off.min()), float(off.max()))
    spec = DenseCosineSpectrum(target, tau)  # reduces L in place
    assert 1.0 <= spec.norm_floor(mu) <= norm * (1 + 1e-12)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 30), seed=st.integers(0, 2**32 - 1))
def test_offdiag_range_matches_a_mask(n, seed):
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((n, n))
    np.fill_diagonal(M, rng.choice([-1e300, 0.0, 1e300]))
    M0 = M.copy()
    off = ~np.eye(n, dtype=bool)
    assert offdiag_range(M) == (float(M[off].min()), float(M[off].max()))
    assert np.array_equal(M, M0)  # the diagonal set aside is restored


@pytest.mark.parametrize("n,seed", [(2, 0), (7, 1), (300, 2), (1100, 3)])
def test_fused_entropies_match_row_entropies(n, seed):
    """The row entropies found while validating equal those computed from the log-weights,
    and the log-weights themselves are those of the separate logarithm pass."""
    rng = np.random.default_rng(seed)
    W = np.exp(3.0 * rng.standard_normal((n, n)))
    W = W + W.T
    lw = log_weights(W)
    assert lw.entropies is not None
    assert np.allclose(lw.entropies, row_entropies(lw.L), rtol=1e-13, atol=1e-13)
    ref = np.log(W / W[~np.eye(n, dtype=bool)].max())
    np.fill_diagonal(ref, -np.inf)
    assert np.array_equal(lw.L, ref)
    # with a zero weight the entropies are left to row_entropies (the mask it needs)
    if n > 2:
        W[0, 1] = 0.0
        assert log_weights(W).entropies is None


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 120), seed=st.integers(0, 2**32 - 1),
       kind=st.sampled_from(["random", "clustered", "split", "graded"]), data=st.data())
def test_direct_bisection_is_scipys_eigh_tridiagonal_bit_for_bit(n, seed, kind, data):
    """tridiagonal_eigvals / tridiagonal_eigh call dstebz and dstein themselves: the same
    numbers as scipy.linalg.eigh_tridiagonal(select="i"), for values and for vectors, and
    eigenpairs of the dense tridiagonal."""
    import scipy.linalg as sla

    rng = np.random.default_rng(seed)
    d = rng.standard_normal(n)
    e = rng.standard_normal(n - 1)
    if kind == "clustered":  # a planted rank: many equal eigenvalues, as at an end point
        d = np.round(d)
        e = np.where(rng.random(n - 1) < 0.7, 1e-14 * e, e)
    elif kind == "split":
        e[rng.random(n - 1) < 0.5] = 0.0
    elif kind == "graded":
        d = d * 10.0 ** rng.integers(-8, 8, n)
    lo = data.draw(st.integers(0, n - 1))
    hi = data.draw(st.integers(lo, min(n - 1, lo + 9)))
    try:
        ref = sla.eigvalsh_tridiagonal(d, e, select="i", select_range=(lo, hi))
        ref_w, ref_v = sla.eigh_tridiagonal(d, e, select="i", select_range=(lo, hi))
    except np.linalg.LinAlgError:  # stebz gave up: ours answers with the full solver
        ref = sla.eigvalsh_tridiagonal(d, e)[lo : hi + 1]
        ref_w, ref_v = sla.eigh_tridiagonal(d, e)
        ref_w, ref_v = ref_w[lo : hi + 1], ref_v[:, lo : hi + 1]
    w = tridiagonal_eigvals(d, e, lo, hi)
    lam, V = tridiagonal_eigh(d, e, lo, hi)
    assert np.array_equal(w.view(np.int64), ref.view(np.int64))
    assert np.array_equal(lam.view(np.int64), ref_w.view(np.int64))
    assert np.array_equal(V.view(np.int64), ref_v.view(np.int64))
    T = _dense(d, e)
    scale = 1.0 + np.abs(T).max()
    np.testing.assert_allclose(w, np.linalg.eigvalsh(T)[lo : hi + 1], atol=1e-10 * scale)
    np.testing.assert_allclose(T @ V, V * lam, atol=1e-8 * scale)


def test_direct_bisection_rejects_non_finite_input_as_scipy_does():
    d = np.array([1.0, np.nan, 2.0])
    with pytest.raises(ValueError, match="infs or NaNs"):
        tridiagonal_eigvals(d, np.zeros(2), 0, 0)
    with pytest.raises(ValueError, match="infs or NaNs"):
        tridiagonal_eigh(np.ones(3), np.array([0.0, np.inf]), 0, 1)
