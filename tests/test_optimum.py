"""dgp.optimum (package dgp.optima): the minimiser of a cosine w-InfoNCE, free or in dimension d,
full batch or batched.

Independent references: the certified prototype solver (structured weightings), a generic
exponential-cone program (cvxpy + Clarabel, accurate to about 1e-5 in G at moderate tau), a
Burer–Monteiro minimiser written here with scipy (20 random starts) and losses evaluated from the
definition (dgp.infonce.winfonce_loss on explicit embeddings).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _cvxpy_reference import dense_program
from scipy.optimize import minimize
from scipy.special import logsumexp

from dgp.infonce import entropic_bound, winfonce_loss
from dgp.optima import (
    FREE_MAX_K,
    block_loss_floor,
    loss_floor,
    optimum,
    quotient,
)
from dgp.prototypes import soft_supcon_tau_star, supcon_prototypes
from dgp.weights import gaussian_kernel_weights, soft_supcon_weights, supcon_weights


def labels_of(sizes):
    return np.repeat(np.arange(len(sizes)), sizes)


def loss_of_gram(G, W, tau):
    """The loss of a Gram matrix from the definition, row by row."""
    A = np.array(W, float)
    np.fill_diagonal(A, 0.0)
    total = 0.0
    for i in range(A.shape[0]):
        others = np.arange(A.shape[0]) != i
        s = G[i, others] / tau
        p = A[i, others] / A[i, others].sum()
        total += float(logsumexp(s) - p @ s)
    return total


def bm_reference(W, tau, dim, *, starts, seed):
    """Best of ``starts`` random Burer–Monteiro runs at rank ``dim`` (scipy L-BFGS-B)."""
    A = np.array(W, float)
    np.fill_diagonal(A, 0.0)
    N = A.shape[0]
    P = A / A.sum(axis=1, keepdims=True)
    off = ~np.eye(N, dtype=bool)

    def f(v):
        V = v.reshape(N, dim)
        nrm = np.linalg.norm(V, axis=1, keepdims=True)
        U = V / nrm
        S = U @ U.T / tau
        S[~off] = -np.inf
        lse = logsumexp(S, axis=1)
        Q = np.exp(S - lse[:, None])
        S[~off] = 0.0
        val = float(lse.sum() - np.sum(P * S))
        R = (Q - P) / tau
        gU = (R + R.T) @ U
        gV = (gU - U * np.sum(U * gU, axis=1, keepdims=True)) / nrm
        return val, gV.ravel()

    rng = np.random.default_rng(seed)
    best = math.inf
    for _ in range(starts):
        res = minimize(f, rng.standard_normal(N * dim), jac=True, method="L-BFGS-B",
                       options={"maxiter": 1000, "ftol": 1e-13, "gtol": 1e-9})
        best = min(best, float(res.fun))
    return best


# --------------------------------------------------- structured weightings: agree with supcon


@pytest.mark.parametrize("tau", [0.02, 0.1, 1.0, 10.0])
@pytest.mark.parametrize("sizes", [[2, 3, 2], [5, 2, 3, 2]])
def test_supcon_weighting_agrees_with_prototypes(sizes, tau):
    y = labels_of(sizes)
    opt = optimum(supcon_weights(y), tau=tau)
    proto = supcon_prototypes(sizes, tau=tau, method="numeric")
    np.testing.assert_allclose(opt.gram, proto.gram[np.ix_(y, y)], atol=1e-8)
    assert opt.structure == "quotient" and opt.sizes == tuple(sizes)
    assert opt.rank == proto.rank == len(sizes) - 1
    assert opt.unique is True and proto.unique is True and opt.collapse.collapsed
    assert opt.certified_global and opt.certificate.kkt_residual <= 1e-9
    assert opt.loss == pytest.approx(proto.loss, rel=1e-12)
    assert opt.entropic_bound == pytest.approx(entropic_bound(supcon_weights(y)), rel=1e-12)
    assert opt.loss == pytest.approx(loss_of_gram(opt.gram, supcon_weights(y), tau), rel=1e-9)
    assert 0 <= opt.gap <= 1e-8 * max(1.0, opt.excess_loss) + 1e-12


@pytest.mark.parametrize("tau_factor", [0.3, 0.8, 1.3, 3.0])
@pytest.mark.parametrize("tau_clip", [(0.02, 10.0)])
def test_soft_supcon_weighting_agrees_with_prototypes(tau_factor, tau_clip):
    sizes, eps = [2, 3, 2], 0.2
    tau = float(np.clip(tau_factor * soft_supcon_tau_star(K=3, eps=eps), *tau_clip))
    y = labels_of(sizes)
    opt = optimum(soft_supcon_weights(y, eps=eps), tau=tau)
    proto = supcon_prototypes(sizes, tau=tau, eps=eps)
    np.testing.assert_allclose(opt.gram, proto.gram[np.ix_(y, y)], atol=1e-8)
    assert opt.rank == proto.rank and opt.unique == proto.unique
    below = tau_factor < 1
    assert opt.unique is (not below)  # below tau*: a face G + c(J - I) of minimisers
    assert opt.rank == (3 if below else 2)
    if below:
        assert opt.excess_loss <= 1e-12
        # the face is real: shifting every off-diagonal cosine down keeps the same loss
        W = soft_supcon_weights(y, eps=eps)
        shifted = opt.gram - 0.05 * (np.ones((7, 7)) - np.eye(7))
        assert np.linalg.eigvalsh(shifted)[0] >= 0
        assert loss_of_gram(shifted, W, tau) == pytest.approx(opt.loss, rel=1e-12)


def test_soft_supcon_at_the_extremes_of_the_temperature_range():
    sizes, eps = [3, 2, 4], 0.1
    y = labels_of(sizes)
    for tau in (0.02, 10.0):
        opt = optimum(soft_supcon_weights(y, eps=eps), tau=tau)
        proto = supcon_prototypes(sizes, tau=tau, eps=eps, method="numeric")
        np.testing.assert_allclose(opt.gram, proto.gram[np.ix_(y, y)], atol=1e-8)
        assert opt.unique == proto.unique and opt.rank == proto.rank


# ------------------------------------------------------------------------ dense weightings


def test_dense_weighting_against_the_conic_program():
    rng = np.random.default_rng(3)
    W = rng.uniform(0.1, 1.0, (6, 6))  # non-symmetric weights are accepted
    opt = optimum(W, tau=0.5)
    assert opt.structure == "dense" and opt.certified_global
    ref = dense_program(W, tau=0.5)
    # these weights have a face of minimisers G + c(J - I): compare modulo the shift
    assert opt.unique is False and opt.rank == 5
    off = ~np.eye(6, dtype=bool)
    shift = float(np.mean((ref - opt.gram)[off]))
    assert np.abs(ref - opt.gram - shift * off).max() <= 1e-4
    assert opt.loss <= loss_of_gram(ref, W, 0.5) + 1e-10
    assert opt.loss - loss_of_gram(ref, W, 0.5) >= -1e-6  # the reference is close
    assert np.abs(np.diag(opt.gram) - 1).max() <= 1e-12
    assert np.linalg.eigvalsh(opt.gram)[0] >= -1e-10
    assert opt.loss >= opt.entropic_bound


def test_y_aware_free_optimum_and_its_invariances():
    y = np.random.default_rng(0).standard_normal((12, 2))
    W = gaussian_kernel_weights(y, sigma=0.6)
    tau = 0.2
    opt = optimum(W, tau=tau)
    assert opt.certified_global and opt.certificate.kkt_residual <= 1e-8
    assert opt.loss <= bm_reference(W, tau, 12, starts=2, seed=0) + 1e-8
    perm = np.random.default_rng(1).permutation(12)
    p = optimum(W[np.ix_(perm, perm)], tau=tau)
    np.testing.assert_allclose(p.gram, opt.gram[np.ix_(perm, perm)], atol=1e-6)
    s = optimum(7.5 * W, tau=tau)  # scaling W is the same weighting
    np.testing.assert_allclose(s.gram, opt.gram, atol=1e-9)
    Z = opt.embedding
    assert Z.shape == (12, opt.rank)
    np.testing.assert_allclose(Z @ Z.T, opt.gram, atol=1e-8)
    assert winfonce_loss(Z, W, tau=tau) == pytest.approx(opt.loss, rel=1e-9)
    again = optimum(W, tau=tau)
    np.testing.assert_array_equal(again.gram, opt.gram)


def test_twins_are_found_and_non_collapsing_twins_fall_back_to_dense():
    y = np.array([0, 1, 0, 2, 1, 0])
    W = np.where(y[:, None] == y[None, :], 1.0, 0.2)
    W[3, :] = 0.7  # sample 3 is alone in its class and has its own row
    q = quotient(W)
    assert q.sizes.tolist() == [3, 2, 1] and q.labels.tolist() == [0, 1, 0, 2, 1, 0]
    assert q.weights[0, 0] == 1.0 and q.weights[0, 1] == 0.2 and q.weights[2, 0] == 0.7
    # two twins joined by a tiny weight, pushed apart by their cross weights: no collapse
    W = np.ones((4, 4))
    W[0, 1] = W[1, 0] = 1e-3
    q = quotient(W)
    assert q.sizes.tolist() == [2, 2]
    opt = optimum(W, tau=0.5)
    assert opt.structure == "dense"
    assert opt.gram[0, 1] < 0.5  # samples 0 and 1 do not collapse
    ref = dense_program(W, tau=0.5)
    assert opt.loss <= loss_of_gram(ref, W, 0.5) + 1e-10


def test_two_samples_and_an_interior_optimum_are_not_unique():
    opt = optimum(np.ones((2, 2)), tau=0.5)  # every Gram has loss 0
    assert opt.unique is False
    opt = optimum(np.ones((4, 4)), tau=0.5)  # the bound holds on a segment of cosines
    assert opt.unique is False and opt.excess_loss <= 1e-12


# -------------------------------------------------------------------------- dimension d


@pytest.mark.slow  # twenty rank-d descents: about 4 s a seed
@pytest.mark.parametrize("seed", [0, 1])
def test_rank_d_never_worse_than_20_independent_starts(seed):
    y = np.random.default_rng(seed).standard_normal((10, 3))
    W = gaussian_kernel_weights(y, sigma=0.7)
    tau, d = 0.2, 2
    opt = optimum(W, tau=tau, dim=d, seed=seed)
    assert opt.rank <= d and opt.starts >= 4
    Z = opt.embedding
    assert Z.shape[1] <= d
    assert winfonce_loss(Z, W, tau=tau) == pytest.approx(opt.loss, rel=1e-9)
    ref = bm_reference(W, tau, d, starts=20, seed=100 + seed)
    assert opt.loss <= ref + 1e-7 * abs(ref)
    free = optimum(W, tau=tau)
    assert not opt.certified_global and free.rank > d  # the dual is not PSD below the rank
    assert opt.lower_bound <= free.loss + 1e-9 <= opt.loss + 1e-9
    f = loss_floor(W, tau=tau, dim=d, seed=seed)
    assert f.lower <= ref - opt.entropic_bound + 1e-9 <= f.upper + 1e-7
    assert f.free_rank == free.rank


def test_rank_d_is_certified_global_where_the_dual_is_psd():
    y = labels_of([3, 2, 4])
    W = supcon_weights(y)
    opt = optimum(W, tau=0.3, dim=2)
    assert opt.certified_global and opt.rank == 2 and opt.gap <= 1e-9
    free = optimum(W, tau=0.3)
    np.testing.assert_allclose(opt.gram, free.gram, atol=1e-8)
    low = optimum(W, tau=0.3, dim=1)
    assert not low.certified_global and low.loss > free.loss
    assert low.dual_min_eig < 0 and low.lower_bound <= free.loss + 1e-9
    f = block_loss_floor([3, 2, 4], within=1.0, cross=0.0, tau=0.3, dim=1)
    assert f.upper == pytest.approx(low.excess_loss, rel=1e-6)
    assert f.lower == pytest.approx(free.excess_loss, rel=1e-6)  # the convex optimum bounds it


def test_block_loss_floor_without_an_n_by_n_matrix():
    sizes = [100_000, 50_000, 20]
    # Soft SupCon below tau*: the bound is attained by an equiangular Gram of rank 3 ...
    f = block_loss_floor(sizes, within=1.0, cross=0.05, tau=0.5, dim=3)
    assert f.certified and f.gap <= 1e-8 and f.rank == 3 and f.upper <= 1e-9
    # ... and not in d = 2, where the floor is positive and not proven optimal
    f2 = block_loss_floor(sizes, within=1.0, cross=0.05, tau=0.5, dim=2)
    assert f2.rank == 2 and f2.upper > 1e-6 and not f2.certified and f2.free_rank == 3
    f = block_loss_floor(sizes, within=1.0, cross=0.05, tau=2.0, dim=2)  # above tau*
    assert f.certified and f.rank == 2
    proto = supcon_prototypes(sizes, tau=2.0, eps=0.05)
    assert f.upper == pytest.approx(proto.excess_loss, rel=1e-8)
    small = block_loss_floor([3, 4], within=1.0, cross=[[0, 0.4], [0.4, 0]], tau=0.8, dim=1)
    y = labels_of([3, 4])
    dense = loss_floor(np.where(y[:, None] == y[None, :], 1.0, 0.4), tau=0.8, dim=1)
    assert small.upper == pytest.approx(dense.upper, rel=1e-8, abs=1e-12)
    # unequal within weights: at the bound only one class can sit at cosine 1, so the classes
    # do not collapse; the quotient says so instead of answering for collapsed classes
    with pytest.raises(ValueError, match="collapse"):
        block_loss_floor([3, 4], within=[1.0, 2.0], cross=0.5, tau=0.4, dim=3)
    W = np.where(y[:, None] == y[None, :], 1.0, 0.5)
    W[3:, 3:] = 2.0
    spread = optimum(W, tau=0.4)
    # only the class that spreads is split (the other's collapse proved again by the solve)
    assert spread.sizes == (1, 1, 1, 4) and spread.gram[0, 1] < 1 - 1e-3
    with pytest.raises(ValueError, match="within"):
        block_loss_floor([3, 4], within=0.0, cross=0.5, tau=0.4, dim=2)
    with pytest.raises(ValueError, match="cross"):
        block_loss_floor([3, 4], within=1.0, cross=-1.0, tau=0.4, dim=2)


# ---------------------------------------------------------------------------- mini-batches


def test_batch_expectation_over_every_subset_of_a_dense_weighting():
    y = np.random.default_rng(5).standard_normal((7, 2))
    W = gaussian_kernel_weights(y, sigma=0.5)  # cannot attain its bound: batches move it
    tau, B = 0.5, 4
    opt = optimum(W, tau=tau, batch_size=B, reduction="sum")
    assert opt.batch.exact and opt.batch.compositions == math.comb(7, 4)
    # the expected loss over all 35 subsets, from the definition
    from itertools import combinations

    lam, U = np.linalg.eigh(opt.gram)
    Z = U * np.sqrt(np.clip(lam, 0, None))
    vals = [winfonce_loss(Z[list(s)], W[np.ix_(s, s)], tau=tau) for s in combinations(range(7), B)]
    assert opt.loss == pytest.approx(np.mean(vals), rel=1e-10)
    full = optimum(W, tau=tau)
    assert opt.batch.shift > 1e-3
    np.testing.assert_allclose(opt.batch.full_batch_gram, full.quotient_gram, atol=1e-9)
    whole = optimum(W, tau=tau, batch_size=7, reduction="sum")  # B = N: the full batch
    np.testing.assert_allclose(whole.gram, full.gram, atol=1e-8)


def test_batch_prediction_of_a_supcon_matrix_equals_the_prototype_one():
    sizes, tau, B = [2, 5, 6], 0.2, 5
    y = labels_of(sizes)
    opt = optimum(supcon_weights(y), tau=tau, batch_size=B)
    proto = supcon_prototypes(sizes, tau=tau, batch_size=B, method="numeric")
    np.testing.assert_allclose(opt.gram, proto.gram[np.ix_(y, y)], atol=1e-8)
    assert opt.loss == pytest.approx(proto.loss, rel=1e-10)
    np.testing.assert_allclose(opt.batch.positive_pair_probability,
                               proto.batch.positive_pair_probability, atol=1e-12)


@pytest.mark.slow  # more than about 10 s of CPU on a loaded machine
def test_batch_prediction_of_a_dense_weighting_matches_monte_carlo():
    rng = np.random.default_rng(6)
    W = rng.uniform(0.05, 1.0, (9, 9))
    tau, B = 0.4, 4
    opt = optimum(W, tau=tau, dim=3, batch_size=B, exact_max=10, samples=600, progress=False)
    assert opt.batch.expectation == "stochastic"
    _, hi = opt.batch.interval
    reported_se = (hi - opt.loss) / 1.96
    Z = opt.embedding
    draws = []  # an independent evaluation on other batches, with the library's loss
    for _ in range(3000):
        s = rng.choice(9, B, replace=False)
        draws.append(winfonce_loss(Z[s], W[np.ix_(s, s)], tau=tau) / B)
    se = np.std(draws, ddof=1) / np.sqrt(len(draws))
    assert abs(np.mean(draws) - opt.loss) <= 4 * math.hypot(se, reported_se)


# ------------------------------------------------------------------------ guards and input


def test_resource_guards_say_what_to_use_instead():
    W = gaussian_kernel_weights(np.arange(FREE_MAX_K + 1, dtype=float)[:, None], sigma=50.0)
    with pytest.raises(ValueError, match="dim") as exc:
        optimum(W, tau=0.5)
    assert "W" in str(exc.value)


@pytest.mark.parametrize(
    ("W", "kwargs", "exc", "match"),
    [
        (np.ones((3, 4)), {"tau": 0.5}, ValueError, "W"),
        ([[0, 1], [-1, 0]], {"tau": 0.5}, ValueError, "negative"),
        ([[0, 0], [1, 0]], {"tau": 0.5}, ValueError, "row 0"),
        ([["a", "b"], ["c", "d"]], {"tau": 0.5}, TypeError, "W"),
        (np.ones((3, 3)), {"tau": 0.0}, ValueError, "tau"),
        (np.ones((3, 3)), {"tau": 0.5, "dim": 0}, ValueError, "dim"),
        (np.ones((3, 3)), {"tau": 0.5, "batch_size": 2}, ValueError, "batch_size"),
        (np.ones((3, 3)), {"tau": 0.5, "batch_size": 4}, ValueError, "batch_size"),
        (np.ones((3, 3)), {"tau": 0.5, "batch_size": 3, "sampler": "m-per-class"}, ValueError,
         "sampler"),
        (np.ones((3, 3)), {"tau": 0.5, "reduction": "sum"}, ValueError, "batch_size"),
        (np.ones((3, 3)), {"tau": 0.5, "starts": -1}, ValueError, "starts"),
    ],
)
def test_bad_input(W, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        optimum(W, **kwargs)


def test_display_and_to_dict():
    opt = optimum(supcon_weights(labels_of([2, 3])), tau=0.5)
    d = opt.to_dict()
    for key in ("gram", "loss", "entropic_bound", "gap", "rank", "unique", "labels",
                "certified_global", "lower_bound", "certificate", "collapse"):
        assert key in d
    assert d["unique"] is True and d["rank"] == 1 and np.array(d["gram"]).shape == (5, 5)
    assert "embedding" not in d and len(opt.to_dict(embedding=True)["embedding"]) == 5
    text = str(opt)
    assert "5 samples on 2 points (twins" in text and "optimal Gram" in text
    assert "unique" in text
    assert "<table>" in opt._repr_html_()


def test_dgp_optimum_is_the_function_like_dgp_classify():
    """``dgp.optimum(W, ...)`` is the function (CONTRACT v3) and stays callable after the
    implementing subpackage ``dgp.optima`` is imported; its answer is the subpackage's."""
    import importlib

    import dgp

    importlib.import_module("dgp.optima._api")
    assert callable(dgp.optimum) and callable(dgp.classify)
    W = np.array([[1.0, 0.5, 0.2], [0.5, 1.0, 0.3], [0.2, 0.3, 1.0]])
    assert dgp.optimum(W, tau=0.5).loss == optimum(W, tau=0.5).loss
    assert isinstance(dgp.optimum(W, tau=0.5), dgp.Optimum)


def test_rank_d_certificate_and_short_form():
    """In a dimension below the free optimum's rank the Optimum carries the rank-d solver's
    certificate (a first-order critical point of cosines +-1, the only points in R^1); in
    free dimension, or where the free optimum fits, it is None. The short form is the text
    without the Gram table, and the JSON keeps every other key."""
    from dgp.weights import supcon_weights

    W = supcon_weights([0, 0, 1, 1, 2, 2])
    low = optimum(W, tau=0.5, dim=1)
    assert low.free_rank == 2 and low.rank_d is not None and low.rank_d.dim == 1
    assert low.rank_d.first_order and low.rank_d.gradient_norm <= low.rank_d.first_order_tol
    # the one-dimensional optimum of three collapsed classes: cosines are +-1
    assert np.allclose(np.abs(low.quotient_gram), 1.0, atol=1e-6)
    d = low.to_dict()
    assert d["rank_d"]["kind"] == "rank-d" and d["rank_d"]["dim"] == 1
    for key in ("loss", "lower_bound", "certificate", "identifiability", "convergence"):
        assert key in d
    free, fits = optimum(W, tau=0.5), optimum(W, tau=0.5, dim=3)
    assert free.rank_d is None and fits.rank_d is None and "rank_d" not in free.to_dict()
    text = str(fits)
    assert fits.summary() + "\n  optimal Gram:" in text
    assert "optimal Gram" not in fits.summary() and "critical" not in fits.summary()
    assert "critical" in low.summary()


def test_cli_optimum_prints_the_short_form_then_one_table(cli, tmp_path):
    from dgp.weights import supcon_weights

    np.save(tmp_path / "w.npy", supcon_weights([0, 0, 1, 1, 2, 2]))
    r = cli("optimum", tmp_path / "w.npy", "--tau", "0.5", "--dim", "1")
    assert r.code == 0, r.err
    assert r.out.count("optimal Gram") == 1 and "critical" in r.out
    assert r.out.startswith(optimum(np.load(tmp_path / "w.npy"), tau=0.5, dim=1).summary())


def test_gap_is_named_as_every_result_names_it_and_duality_gap_is_its_deprecated_alias():
    # issue 39: Optimum said duality_gap where LossFloor, the prototypes' to_dict and batch say gap
    W = supcon_weights(labels_of([3, 2, 4]))
    opt = optimum(W, tau=0.3, dim=1)
    d = opt.to_dict()
    assert "duality_gap" not in d
    assert d["gap"] == opt.gap == max(0.0, opt.loss - opt.lower_bound)
    assert opt.gap > 1e-6  # rank 1 is below the free optimum's rank 2: a real gap
    with pytest.warns(DeprecationWarning, match="use Optimum.gap"):
        old = opt.duality_gap
    assert old == opt.gap
    floor = loss_floor(W, tau=0.3, dim=1)
    # the same gap, seen from the floor (excesses over the same entropic bound)
    assert floor.gap == pytest.approx(opt.gap, rel=1e-9, abs=1e-12)


def test_loss_floor_shows_the_same_in_text_and_html():
    """A notebook shows a LossFloor as the terminal does: the interval, the certificate and
    the rank, one row each."""
    f = loss_floor(supcon_weights([0, 0, 1, 1, 2, 2]), tau=0.5, dim=2)
    html_text, text = f._repr_html_(), str(f)
    for word in ("interval", "certified", "rank"):
        assert word in text and f"<th style='text-align:left'>{word}</th>" in html_text
    assert f"{f.lower:.6g}" in text and f"{f.lower:.6g}" in html_text
