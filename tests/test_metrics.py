"""Tests of dgp.metrics and `dgp metrics`: invariances, rigidity, the entropic gap's zero set."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dgp.cli import main
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


def test_cli_metrics_json(tmp_path, capsys, rng):
    y = rng.standard_normal((8, 2))
    tau, sigma = 0.5, 1.0
    np.save(tmp_path / "z.npy", np.sqrt(tau) / sigma * y + 1.0)
    np.save(tmp_path / "ref.npy", np.sqrt(tau) / sigma * y)
    np.save(tmp_path / "w.npy", gaussian_kernel_weights(y, sigma=sigma))
    rc = main(
        [
            "metrics",
            "--embeddings", str(tmp_path / "z.npy"),
            "--reference", str(tmp_path / "ref.npy"),
            "--weights", str(tmp_path / "w.npy"),
            "--tau", str(tau),
            "--similarity", "euclidean",
            "--json",
        ]
    )  # fmt: skip
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["procrustes_r2"] == pytest.approx(1.0)
    assert out["similarity_r2"] == pytest.approx(1.0)
    assert out["entropic_gap"] == pytest.approx(0.0, abs=1e-9)


def test_cli_metrics_table_and_errors(tmp_path, capsys):
    np.save(tmp_path / "z.npy", np.eye(4))
    np.save(tmp_path / "r.npy", np.eye(3))
    args = ["metrics", "--embeddings", str(tmp_path / "z.npy"), "--reference"]
    assert main([*args, str(tmp_path / "z.npy")]) == 0
    assert "procrustes_r2" in capsys.readouterr().out
    assert main([*args, str(tmp_path / "r.npy")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and err.count("\n") == 1 and "Zref" in err
    assert main([*args, str(tmp_path / "z.npy"), "--weights", str(tmp_path / "z.npy")]) == 2
    assert "--tau" in capsys.readouterr().err
    assert main([*args, str(tmp_path / "missing.npy")]) == 2
    assert "does not exist" in capsys.readouterr().err
