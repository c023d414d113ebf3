"""The one reading of a spectrum given as distinct eigenvalues with multiplicities
(``dgp.engine.family.repeat_smallest``, ``MultiplicitySpectrum``), shared by the block, grouped
and low-rank engines since issue 39 (each had its own copy)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dgp.engine.family import MultiplicitySpectrum, repeat_smallest
from dgp.engine.groups import GROUPED_MIN_K
from dgp.objectives import classify_objective


@st.composite
def spectra(draw):
    m = draw(st.integers(1, 8))
    # few distinct values, so that ties occur
    vals = np.array(draw(st.lists(st.sampled_from([-2.0, -0.5, 0.0, 0.25, 1.0, 3.0]),
                                  min_size=m, max_size=m)))
    mults = np.array(draw(st.lists(st.integers(0, 5), min_size=m, max_size=m)))
    return vals, mults, np.arange(m, dtype=float)


@given(spectra(), st.integers(-2, 30))
@settings(max_examples=200, deadline=None)
def test_repeat_smallest_is_the_expanded_spectrum_sorted_and_cut(spec, k):
    vals, mults, tags = spec
    # the independent reference: write every eigenvalue out, sort stably, cut at k
    full_vals = np.repeat(vals, mults)
    full_tags = np.repeat(tags, mults)
    order = np.argsort(full_vals, kind="stable")
    want = max(k, 0)
    got_vals, got_tags = repeat_smallest(k, vals, mults, tags)
    np.testing.assert_array_equal(got_vals, full_vals[order][:want])
    np.testing.assert_array_equal(got_tags, full_tags[order][:want])
    assert got_vals.size == min(want, int(mults.sum()))


class _Explicit(MultiplicitySpectrum):
    def __init__(self, vals, mults):
        self.vals, self.mults = vals, mults

    def eigenvalues(self, mu):
        return self.vals + mu, self.mults


@given(spectra(), st.floats(-1, 1), st.floats(-3, 3))
@settings(max_examples=100, deadline=None)
def test_multiplicity_spectrum_reads_what_the_expanded_spectrum_says(spec, mu, x):
    vals, mults, _ = spec
    if mults.sum() == 0:
        return
    full = np.sort(np.repeat(vals + mu, mults))
    s = _Explicit(vals, mults)
    assert s.lam_max(mu) == full[-1]
    assert s.lam_min(mu) == full[0]
    assert s.count_at_most(mu, x) == int((full <= x).sum())
    np.testing.assert_array_equal(s.smallest(mu, 3), full[:3])
    assert s.kth(mu, full.size - 1) == full[-1]


@pytest.mark.parametrize("similarity", ["cosine", "euclidean"])
def test_structured_engines_agree_with_the_dense_spectrum(similarity):
    # blocks (few classes) and grouped (many classes): the spectra the shared base reads give
    # the dense engine's verdict, rank and interval
    for sizes in ([3, 5, 2, 4], [2] * (GROUPED_MIN_K // 2) + [3] * (GROUPED_MIN_K // 2 + 2)):
        y = np.repeat(np.arange(len(sizes)), sizes)
        for tau in (0.2, 1.5):
            s = classify_objective("soft-supcon", y, eps=0.3, tau=tau, dim=3,
                                   similarity=similarity, engine="structured").to_dict()
            d = classify_objective("soft-supcon", y, eps=0.3, tau=tau, dim=3,
                                   similarity=similarity, engine="dense").to_dict()
            assert (s["verdict"], s["rank"]) == (d["verdict"], d["rank"])
            for a, b in zip(s["c_interval"] or [], d["c_interval"] or [], strict=True):
                assert (a is None and b is None) or a == pytest.approx(b, rel=1e-9, abs=1e-9)


@given(st.integers(2, 7), st.floats(0.05, 5.0), st.integers(0, 2**32 - 1))
@settings(max_examples=100, deadline=None)
def test_psd_box_holds_every_psd_member_of_the_family(n, tau, seed):
    # the box every engine uses (psd_box): G(mu) = A + mu (11^T - I) is not PSD at its ends,
    # and phi = lambda_min(G(mu)) is concave, so every PSD member lies strictly inside
    from dgp.engine.family import psd_box

    rng = np.random.default_rng(seed)
    ell = rng.normal(scale=2.0, size=(n, n))
    ell = ell + ell.T
    np.fill_diagonal(ell, 0.0)
    off = ell[~np.eye(n, dtype=bool)]
    lo_mu, hi_mu = psd_box(tau, float(off.min()), float(off.max()))
    A = tau * ell
    np.fill_diagonal(A, 1.0)
    E = np.ones((n, n)) - np.eye(n)
    for mu in (lo_mu, hi_mu):
        assert np.linalg.eigvalsh(A + mu * E)[0] <= -1.0 + 1e-9 * (1 + abs(mu))


@given(st.integers(2, 9), st.floats(0.0, 1.0), st.integers(0, 2**32 - 1))
@settings(max_examples=100, deadline=None)
def test_first_zero_pair_is_the_first_zero_of_the_dense_matrix(n, density, seed):
    # one reading of the first zero weight from sorted positive pairs (sparse input and
    # ZeroPattern.from_pairs), against a scan of the dense matrix
    from dgp.engine._sparse_input import first_zero_pair

    rng = np.random.default_rng(seed)
    M = rng.uniform(size=(n, n)) < density
    np.fill_diagonal(M, False)
    r, c = np.nonzero(M)  # row-major, so the keys are sorted
    zeros = np.argwhere(~M & ~np.eye(n, dtype=bool))
    want = tuple(int(v) for v in zeros[0]) if zeros.size else (0, 0)
    assert first_zero_pair(r.astype(np.int64) * n + c, c, n) == want


_RNG_Y = np.random.default_rng(1).standard_normal((30, 2))


@pytest.mark.parametrize("objective, labels, kw", [
    ("soft-supcon", np.repeat(np.arange(4), [5, 3, 2, 2]), {"tau": 5.0, "eps": 0.05}),  # blocks
    ("soft-supcon", np.repeat(np.arange(GROUPED_MIN_K + 6), 2), {"tau": 5.0, "eps": 0.3}),
    ("y-aware", _RNG_Y, {"tau": 0.5, "sigma": 0.7}),  # low rank
], ids=["blocks", "grouped", "lowrank"])
def test_farkas_certificates_of_structured_engines_agree_with_the_dense_one(objective, labels,
                                                                            kw):
    # every engine gives its two sides of the maximiser; the one template combines them
    # (CosineSpectrum.farkas): the structured and the dense engines must certify alike
    certs = [classify_objective(objective, labels, dim=2, engine=engine, **kw).certificate
             for engine in ("structured", "dense")]
    for cert in certs:
        assert cert.kind == "farkas" and not cert.check()
        assert abs(cert.inner_ones_minus_identity) <= 1e-9
        # <Y, A> is the maximum of the smallest eigenvalue, which is negative: no member is PSD
        assert cert.inner_A < 0
        assert cert.inner_A == pytest.approx(cert.max_min_eigenvalue, rel=1e-6, abs=1e-9)
        assert sum(cert.weights) == pytest.approx(1.0) and min(cert.weights) >= 0
    structured, dense = certs
    assert structured.inner_A == pytest.approx(dense.inner_A, rel=1e-6)
    assert structured.c_at_max == pytest.approx(dense.c_at_max, rel=1e-6, abs=1e-9)
