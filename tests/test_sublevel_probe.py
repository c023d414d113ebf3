"""The identifiability report's margin and sublevel probe (issue 40 point 5): an invariant is
pinned only when no solution within the loss resolution moves it, and a verdict near the
threshold is undecided."""

from __future__ import annotations

import numpy as np
import pytest

from dgp.solver import BlockFactor, identifiability_report
from dgp.solver._identifiability import PINNED_BAND, PINNED_SPREAD, pinned_verdict
from dgp.solver._sphere_lbfgs import sphere_lbfgs
from dgp.solver._sublevel_probe import factor_loss, sublevel_probe

FLAT = np.array([30, 20, 10, 8, 5, 3])  # imbalanced SupCon in R^3 at tau 0.1: a flat landscape


def _unit(X):
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def supcon_per_anchor(Z, n, tau):
    """SupCon's full-batch loss of collapsed classes per anchor, written out independently:
    each anchor of class c has n_c - 1 positives at cosine 1 and n_c' samples of class c' at
    cosine G_cc'."""
    G = Z @ Z.T
    off = 1.0 - np.eye(len(n))
    den = (n - 1) * np.exp(1.0 / tau) + (np.exp(G / tau) * off) @ n
    return float(np.sum(n * (-1.0 / tau + np.log(den))) / n.sum())


def _local_minimum(n, tau, d, seed=0):
    rng = np.random.default_rng(seed)
    vg = factor_loss(BlockFactor(n, tau, None), _unit(rng.standard_normal((n.size, d))))
    Z, _ = sphere_lbfgs(vg, rng.standard_normal((n.size, d)), maxiter=2000, gtol=1e-12,
                        ftol=1e-16)
    return Z


def _simplex(K, d):
    _, V = np.linalg.eigh(np.eye(K) - 1.0 / K)
    Z = np.hstack([V[:, 1:], np.zeros((K, d - K + 1))])
    return _unit(Z)


def test_the_margin_decides_only_clearly():
    low, high = PINNED_SPREAD / PINNED_BAND, PINNED_SPREAD * PINNED_BAND
    assert pinned_verdict(0.99 * low) is True and pinned_verdict(1.01 * high) is False
    assert pinned_verdict(PINNED_SPREAD) is None
    # two solutions whose largest cosine change lies in the band: undecided, not pinned
    rng = np.random.default_rng(3)
    Z = _unit(rng.standard_normal((10, 5)))
    moved = Z.copy()
    moved[0] = _unit((Z[0] + 0.05 * rng.standard_normal(5))[None])[0]
    gap = np.abs(moved @ moved.T - Z @ Z.T).max()
    rep = identifiability_report([Z, moved], [0.0, 0.0], 0, seed=0, resolution=1e-3)
    assert rep.spread["cosine_max"] == pytest.approx(gap)
    assert (low < gap <= high) == (rep.pinned["pairwise cosines"] is None)
    assert low < gap <= high  # the construction lands in the band
    assert rep.identifiable is False and rep.statement.startswith(
        ("undecided", "not identifiable"))
    assert "near the threshold" in rep.statement and "not probed" in rep.statement


def test_the_mean_norm_is_the_weighted_mean_of_the_rows():
    rng = np.random.default_rng(1)
    Z0, Z1 = _unit(rng.standard_normal((6, 3))), _unit(rng.standard_normal((6, 3)))
    w = FLAT.astype(float)
    rep = identifiability_report([Z0, Z1], [0.0, 0.0], 0, seed=0, resolution=1e-3,
                                 row_weights=w)
    ref = abs(np.linalg.norm(w @ Z1) - np.linalg.norm(w @ Z0)) / w.sum()
    assert rep.spread["mean_norm"] == pytest.approx(ref, rel=1e-12)


def test_a_flat_landscape_is_not_reported_pinned_once_probed():
    """Local minima of imbalanced SupCon at tau 0.1 agree with each other, yet solutions within
    5e-4 nats per anchor move the spectrum and the mean: the probe finds them, and each witness
    is within the resolution by an independent loss."""
    tau, res = 0.1, 5e-4
    Z = _local_minimum(FLAT, tau, 3)
    vg = factor_loss(BlockFactor(FLAT, tau, None), Z)
    found = sublevel_probe(vg, Z, resolution=res, row_weights=FLAT,
                           invariants=("pairwise cosines", "spectrum", "mean_norm"))
    base = supcon_per_anchor(Z, FLAT, tau)
    for inv, W in found.witnesses.items():
        excess = supcon_per_anchor(W, FLAT, tau) - base
        assert excess <= res * (1 + 1e-6), inv
        assert excess == pytest.approx(found.excess[inv], abs=1e-9)
        assert np.allclose(np.linalg.norm(W, axis=1), 1.0)
    # the witnesses move what they say, by the report's measures
    W = found.witnesses["spectrum"]
    lam = np.linalg.eigvalsh(W.T @ W / 6)[::-1]
    lam0 = np.linalg.eigvalsh(Z.T @ Z / 6)[::-1]
    assert found.moves["spectrum"] == pytest.approx(np.abs(lam - lam0).max() / lam0[0])
    W = found.witnesses["mean_norm"]
    m = abs(np.linalg.norm(FLAT @ W) - np.linalg.norm(FLAT @ Z)) / FLAT.sum()
    assert found.moves["mean_norm"] == pytest.approx(m)
    rep = identifiability_report([Z], [base], 0, seed=0, resolution=res, probe=vg,
                                 row_weights=FLAT)
    assert rep.pinned["spectrum"] is False and rep.pinned["mean_norm"] is False
    assert rep.identifiable is False and set(rep.probed) == {
        "pairwise cosines", "spectrum", "mean_norm"}
    assert rep.statement.startswith("not identifiable") and "probe" in rep.statement
    assert rep.spread["loss"] <= res


def _permuted(perm, n, Z, tau, res):
    vg = factor_loss(BlockFactor(n[perm], tau, None), Z[perm])
    return identifiability_report([Z[perm]], [0.0], 0, seed=0, resolution=res, probe=vg,
                                  row_weights=n[perm])


@pytest.mark.slow  # about 4 s: four probes
def test_a_strongly_pinned_simplex_stays_pinned_and_classes_permute():
    """Balanced classes at tau 1 in R^3: the simplex is the unique optimum up to rotation, with
    curvature enough that within 1e-5 nats per anchor no invariant moves by 0.01; within 5e-4
    the cosines move by about 0.06: undecided, as sqrt(50) times as far. Permuting the
    classes changes no verdict."""
    n, tau = np.full(4, 20), 1.0
    Z = _simplex(4, 3)
    tight = _permuted(np.arange(4), n, Z, tau, 1e-5)
    assert tight.identifiable is True and all(v is True for v in tight.pinned.values())
    assert tight.statement.startswith("identifiable: pinned: pairwise cosines")
    assert tight.spread["cosine_max"] < 0.02 and tight.spread["cosine_max"] > 0
    loose = _permuted(np.arange(4), n, Z, tau, 5e-4)
    # a quadratic well: the move grows as the square root of the resolution
    assert loose.spread["cosine_max"] == pytest.approx(
        tight.spread["cosine_max"] * np.sqrt(50), rel=0.25)
    assert loose.identifiable is False and loose.pinned["mean_norm"] is True
    for perm in ([3, 0, 2, 1], [1, 2, 3, 0]):
        other = _permuted(np.array(perm), n, Z, tau, 1e-5)
        assert other.pinned == tight.pinned
        assert other.spread["spectrum"] == pytest.approx(tight.spread["spectrum"], rel=0.05)


@pytest.mark.slow  # about 2.5 s: two probes
def test_permuting_imbalanced_classes_changes_no_verdict():
    tau, res = 0.1, 5e-4
    Z = _local_minimum(FLAT, tau, 3)
    a = _permuted(np.arange(6), FLAT, Z, tau, res)
    b = _permuted(np.array([5, 2, 0, 4, 1, 3]), FLAT, Z, tau, res)
    assert a.pinned == b.pinned and a.identifiable == b.identifiable
    for key in ("spectrum", "mean_norm"):
        assert b.spread[key] == pytest.approx(a.spread[key], rel=0.05)


def test_at_small_tau_even_the_unique_simplex_leaves_its_cosines_free():
    """The simplex is the unique optimum of balanced SupCon, but at tau 0.1 the loss barely
    feels the arrangement: a cosine moves by more than 0.1 within 5e-4 nats per anchor."""
    n, tau = np.full(5, 20), 0.1
    Z = _simplex(5, 4)
    vg = factor_loss(BlockFactor(n, tau, None), Z)
    rep = identifiability_report([Z], [0.0], 0, seed=0, resolution=5e-4, probe=vg,
                                 row_weights=n)
    assert rep.pinned["pairwise cosines"] is False
    W = sublevel_probe(vg, Z, resolution=5e-4, invariants=("pairwise cosines",), row_weights=n)
    cos = W.witnesses["pairwise cosines"]
    assert supcon_per_anchor(cos, n, tau) - supcon_per_anchor(Z, n, tau) <= 5e-4 * (1 + 1e-6)


def test_the_factor_loss_is_the_loss_per_anchor_on_either_factor_objective():
    """The probe's loss through a row problem (what the general optimum solves) and through the
    class-block factor agree with the written-out SupCon loss, as differences per anchor."""
    from dgp.solver import RowProblem
    from dgp.solver._program import block_problem

    tau = 0.3
    rng = np.random.default_rng(5)
    Z0, Z1 = _unit(rng.standard_normal((6, 3))), _unit(rng.standard_normal((6, 3)))
    ref = supcon_per_anchor(Z1, FLAT, tau) - supcon_per_anchor(Z0, FLAT, tau)
    prob = block_problem(FLAT, np.eye(6), tau=tau)  # positives: the own class only
    assert isinstance(prob, RowProblem)
    for obj in (prob.on_factor(), BlockFactor(FLAT, tau, None)):
        vg = factor_loss(obj, Z0)
        value, grad = vg(Z1)
        assert value == pytest.approx(ref, rel=1e-9, abs=1e-12)
        # the gradient is that of the value on the spheres: a central difference along a
        # random tangent direction
        V = rng.standard_normal(Z1.shape)
        V -= np.sum(V * Z1, axis=1, keepdims=True) * Z1
        h = 1e-6
        fd = (vg(_unit(Z1 + h * V))[0] - vg(_unit(Z1 - h * V))[0]) / (2 * h)
        assert np.sum(grad * V) == pytest.approx(fd, rel=1e-5)


@pytest.mark.slow  # two rank-4 searches of 8 classes (about 3-6 s)
def test_optimum_and_supcon_prototypes_say_the_same_of_what_the_loss_pins():
    """dgp.optimum in R^dim probes the sublevel set as supcon_prototypes does (the same
    solver, the same loss, the same witnesses): the flat imbalanced example is free in its
    spectrum and mean norm through both entry points."""
    import dgp

    sizes = [50, 40, 30, 20, 10, 8, 5, 3]
    opt = dgp.optimum(dgp.Problem(objective="supcon", sizes=sizes), tau=0.1, dim=4,
                      progress=False)
    pro = dgp.supcon_prototypes(sizes, tau=0.1, dim=4, progress=False)
    assert abs(opt.loss - pro.loss) <= 1e-9 * abs(pro.loss)
    for ident in (opt.identifiability, pro.identifiability):
        assert set(ident.probed) >= {"spectrum", "mean_norm"}
        assert ident.pinned["spectrum"] is False and ident.pinned["mean_norm"] is False
