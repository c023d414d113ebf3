"""Tests of dgp.metrics and `dgp metrics`: invariances, rigidity, the entropic gap's zero set,
every magnitude a float holds, dtypes, and agreement with independent references (scipy
Procrustes, numpy correlations, 60-digit KL sums)."""

from __future__ import annotations

import math
import os

import mpmath
import numpy as np
import pytest
import scipy.linalg as sla
import scipy.sparse as sp
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dgp import metrics as dm
from dgp import strategies as ds
from dgp.errors import DgpWarning
from dgp.metrics import entropic_gap, procrustes_r2, similarity_r2
from dgp.weights import gaussian_kernel_weights, supcon_weights


def _rotation(d: int, rng: np.random.Generator) -> np.ndarray:
    Q, R = np.linalg.qr(rng.standard_normal((d, d)))
    return Q * np.sign(np.diag(R))


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


def test_procrustes_invariant_to_rotation_reflection_translation(rng):
    Zref = rng.standard_normal((20, 4))
    Q = _rotation(4, rng)
    Q[:, 0] *= -1.0  # include a reflection
    Z = Zref @ Q + rng.standard_normal(4)
    assert procrustes_r2(Z, Zref) == pytest.approx(1.0, abs=1e-12)
    # symmetric under a joint permutation of the samples
    perm = rng.permutation(20)
    Zn = Zref + 0.3 * rng.standard_normal(Zref.shape)
    assert procrustes_r2(Zn[perm], Zref[perm]) == pytest.approx(procrustes_r2(Zn, Zref))
    # invariant to a rigid motion of the learned embedding
    assert procrustes_r2(Zn @ Q - 2.0, Zref) == pytest.approx(procrustes_r2(Zn, Zref))


def test_procrustes_is_rigid_no_scaling(rng):
    Zref = rng.standard_normal((15, 3))
    for s in (0.5, 0.9, 1.1, 2.0):
        r2 = procrustes_r2(s * Zref, Zref)
        assert r2 < 1.0 - 1e-3
        # exact value: residual (1 - s)^2 ||Zc||^2
        assert r2 == pytest.approx(1.0 - (1.0 - s) ** 2)


def test_procrustes_pads_narrower_input(rng):
    Y = rng.standard_normal((10, 2))
    Z = np.hstack([Y, np.zeros((10, 3))]) @ _rotation(5, rng)
    assert procrustes_r2(Z, Y) == pytest.approx(1.0, abs=1e-12)
    assert procrustes_r2(Y, Z) == pytest.approx(1.0, abs=1e-12)


def test_procrustes_noise_lowers_r2(rng):
    Zref = rng.standard_normal((50, 3))
    r_small = procrustes_r2(Zref + 0.05 * rng.standard_normal(Zref.shape), Zref)
    r_big = procrustes_r2(Zref + 0.5 * rng.standard_normal(Zref.shape), Zref)
    assert 1.0 > r_small > r_big


def test_similarity_r2_invariances(rng):
    Zref = rng.standard_normal((12, 5))
    Q = _rotation(5, rng)
    assert similarity_r2(Zref @ Q, Zref) == pytest.approx(1.0)
    assert similarity_r2(3.0 * Zref @ Q, Zref) == pytest.approx(1.0)  # cosine ignores norms
    assert similarity_r2(Zref @ Q + 1.0, Zref, similarity="euclidean") == pytest.approx(1.0)
    Zn = Zref + 0.4 * rng.standard_normal(Zref.shape)
    perm = rng.permutation(12)
    assert similarity_r2(Zn[perm], Zref[perm]) == pytest.approx(similarity_r2(Zn, Zref))
    assert 0.0 <= similarity_r2(Zn, Zref) < 1.0


def test_similarity_r2_flat_reference():
    simplex = np.eye(4) - 0.25  # centred regular simplex: equal off-diagonal cosines
    assert similarity_r2(simplex, simplex) == 1.0
    assert np.isnan(similarity_r2(np.arange(8.0).reshape(4, 2) + 1.0, simplex))


def test_entropic_gap_zero_at_euclid_euclid_optimum(rng):
    # Euclidean–Euclidean: z = (sqrt(tau)/sigma) y attains the bound, up to rigid motion.
    y = rng.standard_normal((9, 2))
    tau, sigma = 0.3, 0.8
    W = gaussian_kernel_weights(y, sigma=sigma)
    Z = (np.sqrt(tau) / sigma) * y @ _rotation(2, rng) + 5.0
    assert entropic_gap(Z, W, tau=tau, similarity="euclidean") == pytest.approx(0.0, abs=1e-10)
    # anywhere else it is positive: a scaled copy, and noise
    assert entropic_gap(1.2 * Z, W, tau=tau, similarity="euclidean") > 1e-4
    Zn = Z + 0.1 * rng.standard_normal(Z.shape)
    assert entropic_gap(Zn, W, tau=tau, similarity="euclidean") > 1e-4


def test_entropic_gap_zero_at_cosine_optimum():
    # Uniform weights on a regular simplex: every softmax is uniform, q_i = p_i.
    Z = np.eye(5) - 0.2
    W = np.ones((5, 5))
    assert entropic_gap(Z, W, tau=0.5) == pytest.approx(0.0, abs=1e-12)


def test_entropic_gap_positive_when_bound_unattainable(rng):
    # SupCon with a cosine latent has zero weights: the gap is bounded away from zero.
    W = supcon_weights([0, 0, 1, 1, 2, 2])
    Z = rng.standard_normal((6, 3))
    assert entropic_gap(Z, W, tau=0.1) > 0.0


@pytest.mark.parametrize(
    ("Z", "Zref", "match"),
    [
        (np.ones((3, 2)), np.ones((4, 2)), "same number of rows"),
        (np.array([[0.0, np.nan], [1.0, 2.0]]), np.ones((2, 2)), "row 0 of Z"),
        (np.ones((3, 2)), np.array([[1.0, 0], [np.inf, 0], [0, 1]]), "row 1 of Zref"),
        (np.ones((2, 2, 2)), np.ones((2, 2)), "Z must be an N x d"),
        (np.eye(3), np.ones((3, 2)), "Zref has all rows equal"),
    ],
)
def test_procrustes_bad_input(Z, Zref, match):
    with pytest.raises(ValueError, match=match):
        procrustes_r2(Z, Zref)


def test_bad_arguments_named():
    with pytest.raises(ValueError, match="similarity"):
        similarity_r2(np.eye(3), np.eye(3), similarity="dot")
    with pytest.raises(ValueError, match="tau"):
        entropic_gap(np.eye(3), np.ones((3, 3)), tau=0.0)
    with pytest.raises(ValueError, match="Z must be an N x d array with N = 4"):
        entropic_gap(np.eye(3), np.ones((4, 4)), tau=1.0)
    with pytest.raises(ValueError, match="W"):
        entropic_gap(np.eye(3), -np.ones((3, 3)), tau=1.0)
    with pytest.raises(ValueError, match="Z"):
        similarity_r2(np.eye(2), np.eye(2))  # one pair only
    with pytest.raises(TypeError, match="Z"):
        procrustes_r2([["a", "b"], ["c", "d"]], np.eye(2))


def test_cli_metrics_json(tmp_path, cli, rng):
    y = rng.standard_normal((8, 2))
    tau, sigma = 0.5, 1.0
    np.save(tmp_path / "z.npy", np.sqrt(tau) / sigma * y + 1.0)
    np.save(tmp_path / "ref.npy", np.sqrt(tau) / sigma * y)
    np.save(tmp_path / "w.npy", gaussian_kernel_weights(y, sigma=sigma))
    r = cli("metrics", "--embeddings", tmp_path / "z.npy", "--reference", tmp_path / "ref.npy",
            "--weights", tmp_path / "w.npy", "--tau", str(tau), "--similarity", "euclidean",
            "--json")
    assert r.code == 0
    out = r.json
    assert out["procrustes_r2"] == pytest.approx(1.0)
    assert out["similarity_r2"] == pytest.approx(1.0)
    assert out["entropic_gap"] == pytest.approx(0.0, abs=1e-9)


def test_cli_metrics_table_and_errors(tmp_path, cli):
    np.save(tmp_path / "z.npy", np.eye(4))
    np.save(tmp_path / "r.npy", np.eye(3))
    args = ["metrics", "--embeddings", tmp_path / "z.npy", "--reference"]
    r = cli(*args, tmp_path / "z.npy")
    assert r.code == 0 and "procrustes_r2" in r.out
    r = cli(*args, tmp_path / "r.npy")
    assert r.code == 2
    assert r.err.startswith("error:") and r.err.count("\n") == 1 and "Zref" in r.err
    r = cli(*args, tmp_path / "z.npy", "--weights", tmp_path / "z.npy")
    assert r.code == 2 and "--tau" in r.err
    r = cli(*args, tmp_path / "missing.npy")
    assert r.code == 2 and "does not exist" in r.err


# ----------------------------------------------------------------------------------------------
# magnitudes, dtypes and independent references (issue: metrics at large or small magnitudes)
# ----------------------------------------------------------------------------------------------

SIMS = st.sampled_from(["cosine", "euclidean"])
DECADES = st.integers(-300, 300)
MANTISSAS = st.floats(1.0, 9.99)


def _ref_sims(X: np.ndarray, similarity: str) -> np.ndarray:
    """Upper-triangle similarities from their definition (explicit differences)."""
    iu = np.triu_indices(X.shape[0], 1)
    if similarity == "cosine":
        U = X / np.sqrt((X**2).sum(axis=1))[:, None]
        return (U @ U.T)[iu]
    return -((X[:, None, :] - X[None, :, :]) ** 2).sum(axis=2)[iu]


def _ref_similarity_r2(Z, Zref, similarity):
    return float(np.corrcoef(_ref_sims(Z, similarity), _ref_sims(Zref, similarity))[0, 1] ** 2)


def _ref_procrustes(Z, Zref):
    """1 - residual / spread, with the rotation from scipy.linalg.orthogonal_procrustes."""
    A, B = Z - Z.mean(axis=0), Zref - Zref.mean(axis=0)
    w = max(A.shape[1], B.shape[1])
    A = np.hstack([A, np.zeros((A.shape[0], w - A.shape[1]))])
    B = np.hstack([B, np.zeros((B.shape[0], w - B.shape[1]))])
    Q, _ = sla.orthogonal_procrustes(A, B)
    return 1.0 - float(((A @ Q - B) ** 2).sum()) / float((B**2).sum())


def _ref_gap_mp(Z, W, tau, similarity, digits=60) -> float:
    """sum_i KL(p_i || q_i) in 60-digit arithmetic from the exact float inputs."""
    with mpmath.workdps(digits):
        n = len(W)
        Zm = [[mpmath.mpf(float(x)) for x in row] for row in Z]
        tau = mpmath.mpf(float(tau))

        def s(i, j):
            a, b = Zm[i], Zm[j]
            if similarity == "cosine":
                dot = mpmath.fsum(x * y for x, y in zip(a, b, strict=True))
                na = mpmath.sqrt(mpmath.fsum(x * x for x in a))
                nb = mpmath.sqrt(mpmath.fsum(y * y for y in b))
                return dot / (na * nb * tau)
            return -mpmath.fsum((x - y) ** 2 for x, y in zip(a, b, strict=True)) / (2 * tau)

        total = mpmath.mpf(0)
        for i in range(n):
            others = [j for j in range(n) if j != i]
            w = [mpmath.mpf(float(W[i][j])) for j in others]
            mass = mpmath.fsum(w)
            sims = [s(i, j) for j in others]
            top = max(sims)
            lse = top + mpmath.log(mpmath.fsum(mpmath.exp(x - top) for x in sims))
            for wj, sj in zip(w, sims, strict=True):
                if wj > 0:
                    p = wj / mass
                    total += p * (mpmath.log(p) - (sj - lse))
        return float(total)


@settings(max_examples=60)
@given(
    seed=ds.seeds(),
    n=st.integers(3, 8),
    d=st.integers(2, 4),  # d = 1 cosines are all +-1: often equiangular, r² undefined
    similarity=SIMS,
    k1=DECADES,
    k2=DECADES,
    m=MANTISSAS,
)
def test_property_similarity_r2_at_any_magnitude(seed, n, d, similarity, k1, k2, m):
    """similarity r² of (a Z + a t, b Zref) equals the reference on (Z, Zref) for scales a, b
    anywhere in 1e-300..1e300 (and offsets t; Euclidean)."""
    rng = np.random.default_rng(seed)
    Z, Zref = rng.standard_normal((n, d)), rng.standard_normal((n, d + 1))
    expected = _ref_similarity_r2(Z, Zref, similarity)
    a, b = m * 10.0**k1, 10.0**k2
    offset = 0.0 if similarity == "cosine" else 50.0 * rng.standard_normal(d)
    got = similarity_r2(a * (Z + offset), b * Zref, similarity=similarity)
    assert got == pytest.approx(expected, abs=1e-9)
    if similarity == "cosine":  # each row has its own scale
        rows = 10.0 ** rng.integers(-300, 300, size=(n, 1)).astype(float)
        assert similarity_r2(Z * rows, Zref, similarity="cosine") == pytest.approx(
            expected, abs=1e-9
        )


@settings(max_examples=60)
@given(seed=ds.seeds(), n=st.integers(2, 8), d=st.integers(1, 4), k=DECADES, m=MANTISSAS)
def test_property_procrustes_common_scale_and_scale_awareness(seed, n, d, k, m):
    """r²(a Z, a Zref) = r²(Z, Zref) (scipy reference) for any a in 1e-300..1e300; r²(s Z, Zref)
    follows 2 s rho nu - s² rho² exactly as the definition says (scale-aware)."""
    rng = np.random.default_rng(seed)
    Z, Zref = rng.standard_normal((n, d)), rng.standard_normal((n, d))
    expected = _ref_procrustes(Z, Zref)
    a = m * 10.0**k
    assert procrustes_r2(a * Z, a * Zref) == pytest.approx(expected, abs=1e-9)
    A, B = Z - Z.mean(axis=0), Zref - Zref.mean(axis=0)
    rho2 = float((A**2).sum() / (B**2).sum())
    cross = float(np.linalg.svd(A.T @ B, compute_uv=False).sum() / (B**2).sum())  # rho * nu
    for s in (1e-3, 0.5, 3.0, 1e40):
        want = 2.0 * s * cross - s * s * rho2
        assert procrustes_r2(s * Z, Zref) == pytest.approx(want, rel=1e-9, abs=1e-9)


def test_procrustes_tiny_and_huge_data():
    rng = np.random.default_rng(4)
    Y = rng.standard_normal((10, 3))
    Q = _rotation(3, rng)
    for a in (1e-300, 1e-160, 1e155, 1e300):
        assert procrustes_r2(a * (Y @ Q) + a, a * Y) == pytest.approx(1.0, abs=1e-12)
    assert procrustes_r2(1e300 * Y, Y) == -np.inf  # rho^2 ~ 1e600: below every float
    assert procrustes_r2(np.ones((10, 3)), Y) == 0.0  # all rows equal: the mean is the fit
    base = np.full((4, 2), 1e7)
    with pytest.raises(ValueError, match="all rows equal"):  # spread at rounding level
        procrustes_r2(Y[:4, :2], base + np.spacing(1e7) * np.arange(8.0).reshape(4, 2))
    assert np.isfinite(procrustes_r2(Y[:4, :2], base + 1e-3 * Y[:4, :2]))


def test_similarity_r2_flat_at_any_scale():
    simplex = np.eye(4) - 0.25
    for a in (1e-300, 1e300):
        assert similarity_r2(a * simplex, simplex) == 1.0
        assert similarity_r2(a * simplex, simplex, similarity="euclidean") == 1.0


@settings(max_examples=40)
@given(
    W=st.one_of(ds.symmetric_weights(), ds.symmetrizable_weights(), ds.weights_with_zeros()),
    seed=ds.seeds(),
    d=st.integers(1, 3),
    tau=ds.temperatures(0.1, 2.0),
    similarity=SIMS,
    k=st.integers(-300, 300),
)
def test_property_entropic_gap_scales(W, seed, d, tau, similarity, k):
    """gap(Z, a W) = gap(Z, W) for a in 1e-300..1e300; cosine: gap(b Z) = gap(Z); Euclidean:
    gap(b Z, b² tau) = gap(Z, tau); and every value agrees with 60-digit arithmetic."""
    n = W.shape[0]
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, d))
    ref = _ref_gap_mp(Z, W, tau, similarity)
    gap = entropic_gap(Z, W, tau=tau, similarity=similarity)
    tol = 1e-10 * max(1.0, ref)
    assert gap >= 0.0 and gap == pytest.approx(ref, abs=tol)
    a = 10.0**k
    assert entropic_gap(Z, a * W, tau=tau, similarity=similarity) == pytest.approx(ref, abs=tol)
    b = 10.0 ** (k / 2.0)  # b² tau stays in range
    if similarity == "cosine":
        moved = entropic_gap(b * Z, W, tau=tau)
    else:
        moved = entropic_gap(b * Z, W, tau=b * b * tau, similarity="euclidean")
    assert moved == pytest.approx(ref, abs=tol)


@pytest.mark.parametrize("similarity", ["cosine", "euclidean"])
def test_entropic_gap_at_overflowing_and_subnormal_weights(similarity):
    """Row masses of weights near 1e308 overflow and subnormal weights have few digits: the gap
    is still the exact one (60-digit reference on the same float inputs), never NaN."""
    rng = np.random.default_rng(7)
    Z = rng.standard_normal((6, 3))
    U = rng.uniform(0.2, 1.0, size=(6, 6))
    cases = {
        "near 1e308": 1.7e308 * U,
        "subnormal": 5e-324 * rng.integers(1, 50, size=(6, 6)).astype(float),
        "mixed": np.where(rng.random((6, 6)) < 0.5, 1e-310, 1e300) * U,
        "with zeros": 1e308 * U * (rng.random((6, 6)) < 0.6)
        + 1e-320 * np.eye(6, k=1)
        + 1e-320 * np.eye(6, k=-5),
    }
    for label, W in cases.items():
        if label == "with zeros":  # zeros beside 1e-320: dgp says they may be underflowed kernels
            with pytest.warns(DgpWarning, match="underflowed kernel values"):
                gap = entropic_gap(Z, W, tau=0.3, similarity=similarity)
        else:
            gap = entropic_gap(Z, W, tau=0.3, similarity=similarity)
        ref = _ref_gap_mp(Z, W, 0.3, similarity)
        assert np.isfinite(gap), label
        assert gap == pytest.approx(ref, rel=1e-11, abs=1e-11), label


def test_entropic_gap_extreme_temperatures_are_limits_not_nan():
    rng = np.random.default_rng(8)
    Z = rng.standard_normal((5, 2))
    W = np.ones((5, 5))
    for tau in (1e-300, 5e-324):  # softmax rows one-hot: KL = log(4) per row at most, or inf
        gap = entropic_gap(Z, W, tau=tau)
        assert not np.isnan(gap) and gap > 1.0
    hot = entropic_gap(Z, W, tau=1e300)  # every softmax row uniform, as W's: gap 0
    assert hot == pytest.approx(0.0, abs=1e-12)


@settings(max_examples=30)
@given(
    seed=ds.seeds(),
    dtype=st.sampled_from([np.float32, np.float16, np.int8, np.int64, np.uint16, np.bool_]),
    similarity=SIMS,
)
def test_property_dtypes_read_as_their_float64_values(seed, dtype, similarity):
    """Any real dtype gives exactly the metric of the same values in float64."""
    rng = np.random.default_rng(seed)
    Z = (10 * rng.standard_normal((6, 3))).astype(dtype)
    Zref = rng.standard_normal((6, 3))
    Z64 = Z.astype(np.float64)
    # bool/int draws can be degenerate: no direction or no spread to compare
    assume(not (Z64.std(axis=0) == 0).all())
    assume(not (similarity == "cosine" and (Z64 == 0).all(axis=1).any()))
    assert similarity_r2(Z, Zref, similarity=similarity) == similarity_r2(
        Z64, Zref, similarity=similarity
    )
    assert procrustes_r2(Zref, Z) == procrustes_r2(Zref, Z64)
    W = rng.uniform(0.1, 1.0, (6, 6)).astype(np.float32)
    with pytest.warns(DgpWarning, match="W is float32"):
        gap32 = entropic_gap(Zref, W, tau=0.5, similarity=similarity)
    assert gap32 == entropic_gap(Zref, W.astype(np.float64), tau=0.5, similarity=similarity)


@pytest.mark.parametrize(
    ("bad", "kind", "words"),
    [
        (np.eye(3) + 1e-3j, TypeError, "holds complex numbers"),
        (np.array([["2020-01-01"] * 2] * 3, dtype="M8[D]"), TypeError, "dates or times"),
        (np.array([["1", "2"]] * 3), TypeError, "strings"),
        (np.array([[1.0, 2.0]] * 3, dtype=object), TypeError, "dtype object"),
        ([[1.0, 2.0], [3.0]], ValueError, "rectangular"),
    ],
)
def test_non_real_inputs_are_refused_naming_the_argument(bad, kind, words):
    good = np.random.default_rng(0).standard_normal((3, 2))
    with pytest.raises(kind, match=f"^Z .*{words}|^Z {words}"):
        procrustes_r2(bad, good)
    with pytest.raises(kind, match=f"^Zref .*{words}|^Zref {words}"):
        similarity_r2(good, bad)
    with pytest.raises(kind, match=f"^Z .*{words}|^Z {words}"):
        entropic_gap(bad, np.ones((3, 3)), tau=1.0)


def test_complex_weights_are_refused_and_sparse_ones_are_the_dense_weighting():
    Z = np.eye(3)
    with pytest.raises(TypeError, match=r"^W holds complex numbers"):
        entropic_gap(Z, np.ones((3, 3)) + 1000j, tau=1.0)
    W = np.array([[0.0, 2.0, 0.0], [1.0, 0.0, 3.0], [0.5, 0.0, 0.0]])  # asymmetric, zeros
    Z = np.random.default_rng(3).standard_normal((3, 2))
    dense = entropic_gap(Z, W, tau=0.7)
    assert dense > 0
    assert entropic_gap(Z, sp.csr_array(W), tau=0.7) == pytest.approx(dense, rel=1e-13)
    assert entropic_gap(Z, sp.coo_matrix(W), tau=0.7) == pytest.approx(dense, rel=1e-13)
    with pytest.raises(TypeError, match=r"^W holds dates"):
        entropic_gap(Z, np.ones((3, 3), dtype="m8[s]"), tau=1.0)


@pytest.mark.parametrize("similarity", ["cosine", "euclidean"])
def test_blocked_computation_agrees_with_one_block(monkeypatch, similarity):
    """Many small blocks of rows give the values of one block (two computations, one answer)."""
    rng = np.random.default_rng(11)
    Z, Zref = rng.standard_normal((37, 4)), rng.standard_normal((37, 5))
    W = gaussian_kernel_weights(rng.standard_normal((37, 2)), sigma=1.3)
    one = (
        similarity_r2(Z, Zref, similarity=similarity),
        entropic_gap(Z, W, tau=0.4, similarity=similarity),
        dm.pairwise_similarities(Z, similarity=similarity),
    )
    monkeypatch.setattr(dm, "_BLOCK_ENTRIES", 50)  # blocks of one row
    many = (
        similarity_r2(Z, Zref, similarity=similarity),
        entropic_gap(Z, W, tau=0.4, similarity=similarity),
        dm.pairwise_similarities(Z, similarity=similarity),
    )
    assert many[0] == pytest.approx(one[0], abs=1e-13)
    assert many[1] == pytest.approx(one[1], rel=1e-13)
    np.testing.assert_allclose(many[2], one[2], rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(one[2], _ref_sims(Z, similarity), rtol=1e-12, atol=1e-12)
    assert one[0] == pytest.approx(_ref_similarity_r2(Z, Zref, similarity), abs=1e-12)


def test_pairwise_similarities_scale_back_exactly_or_refuse():
    rng = np.random.default_rng(12)
    Z = rng.standard_normal((6, 2))
    base = dm.pairwise_similarities(Z, similarity="euclidean")
    small = dm.pairwise_similarities(np.ldexp(Z, -600), similarity="euclidean")
    np.testing.assert_array_equal(small, np.ldexp(base, -1200))  # powers of two: bit-exact
    with pytest.raises(ValueError, match="exceed the float range"):
        dm.pairwise_similarities(1e200 * Z, similarity="euclidean")
    np.testing.assert_allclose(  # cosines: scale-free (1e200 Z itself is rounded)
        dm.pairwise_similarities(1e200 * Z), dm.pairwise_similarities(Z), rtol=0, atol=4e-16
    )


def test_memory_budget_guards_the_gap(monkeypatch):
    monkeypatch.setenv("DGP_MEMORY_LIMIT", "1M")
    with pytest.raises(ValueError, match="entropic gap of a 400 x 400 weighting"):
        entropic_gap(np.eye(400), np.ones((400, 400)), tau=1.0)


def test_cli_metrics_sparse_weights_and_hostile_files(tmp_path, cli):
    rng = np.random.default_rng(13)
    y = rng.standard_normal((8, 2))
    W = supcon_weights([0, 0, 0, 1, 1, 1, 2, 2])
    np.save(tmp_path / "z.npy", 1e200 * y)  # huge embeddings: the metrics hold
    np.save(tmp_path / "r.npy", y)
    sp.save_npz(tmp_path / "w.npz", sp.csr_array(W))
    base = ["metrics", "--embeddings", tmp_path / "z.npy", "--reference"]
    r = cli(*base, tmp_path / "r.npy", "--weights", tmp_path / "w.npz", "--tau", "0.5", "--json")
    assert r.code == 0
    out = r.json
    assert out["similarity_r2"] == pytest.approx(1.0)
    assert out["entropic_gap"] == pytest.approx(entropic_gap(y, W, tau=0.5), rel=1e-12)
    np.save(tmp_path / "c.npy", y + 1j)
    os.mkfifo(tmp_path / "fifo.npy")
    for path, words in ((tmp_path / "c.npy", "complex"), (tmp_path / "fifo.npy", "FIFO")):
        r = cli(*base, path)
        assert r.code == 2
        err = r.err
        assert err.startswith("error: reference file") or err.startswith("error: reference path")
        assert words in err and err.count("\n") == 1


def test_entropic_gap_is_a_sum_of_kl_terms():
    """The gap equals the row-by-row KL reference and L - H from the loss (two methods)."""
    rng = np.random.default_rng(14)
    Z = rng.standard_normal((7, 3))
    W = supcon_weights([0, 0, 1, 1, 1, 2, 2]) + 0.01
    from dgp.infonce import entropic_bound, winfonce_loss

    gap = entropic_gap(Z, W, tau=0.2)
    assert gap == pytest.approx(winfonce_loss(Z, W, tau=0.2) - entropic_bound(W), rel=1e-12)
    assert gap == pytest.approx(_ref_gap_mp(Z, W, 0.2, "cosine"), rel=1e-13)
    assert math.isfinite(gap)
