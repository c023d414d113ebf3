"""Twin classes that do not collapse are split alone (U14: Soft SupCon with singletons through
dgp.optimum): the singletons of a Soft SupCon weighting are twins (each has weight eps to every
other sample) but do not collapse, so the quotient's lifted certificate fails. Only their
samples become their own points; the other classes stay merged, their collapse proved again by
the solve. The answer is the N x N problem's (the twin quotient switched off), to 1e-9, and no
descent over free embeddings goes below it."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize as so
from hypothesis import given, settings
from hypothesis import strategies as st

import dgp
from dgp.geometry import embedding_from_gram
from dgp.infonce import winfonce_loss
from dgp.optima._reductions import TwinQuotient
from dgp.optima._structure import quotient, split_classes
from dgp.weights import soft_supcon_weights, supcon_weights

LABELS = np.array([0, 0, 0, 1, 1, 1, 2, 3])  # two Soft SupCon singletons: twins that spread


def _without_twin_quotient(monkeypatch):
    monkeypatch.setattr(TwinQuotient, "applies", lambda self, problem: False)


def _descent_floor(W, tau, dim, starts=6, seed=0):
    """The lowest loss of L-BFGS descents over free unit embeddings (independent of dgp's
    solvers: the loss of dgp.infonce on normalised rows, numeric gradients)."""
    N = W.shape[0]
    rng = np.random.default_rng(seed)

    def f(x):
        Z = x.reshape(N, dim)
        Z = Z / np.linalg.norm(Z, axis=1, keepdims=True)
        return winfonce_loss(Z, W, tau=tau)

    return min(so.minimize(f, rng.standard_normal(N * dim), method="L-BFGS-B",
                           options={"maxiter": 3000, "gtol": 1e-10}).fun for _ in range(starts))


def test_split_classes_keeps_the_weights_of_each_samples_class():
    W = soft_supcon_weights(LABELS, eps=0.1)
    q = quotient(W)
    assert q.sizes.tolist() == [3, 3, 2]  # the two singletons are twins
    s = split_classes(q, (2,))
    assert s.sizes.tolist() == [3, 3, 1, 1] and s.labels.tolist() == [0, 0, 0, 1, 1, 1, 2, 3]
    # every pair of distinct points carries the weight of its samples' pair in W
    for a in range(s.K):
        for b in range(s.K):
            if a != b:
                assert s.weights[a, b] == W[s.representatives[a], s.representatives[b]]
    assert s.weights[2, 2] == s.weights[3, 3] == 0.0  # a class of one sample: unused
    # splitting nothing changes nothing; splitting all gives the samples
    assert split_classes(q, ()).labels.tolist() == q.labels.tolist()
    assert split_classes(q, (0, 1, 2)).sizes.tolist() == [1] * 8


@pytest.mark.parametrize("tau", [0.1, 0.5])
def test_only_the_spreading_class_is_split_and_the_answer_is_the_samples(tau, monkeypatch,
                                                                         capsys):
    W = soft_supcon_weights(LABELS, eps=0.1)
    got = dgp.optimum(W, tau=tau)
    err = capsys.readouterr().err
    assert "1 of 3 twin classes does not collapse" in err and "(4 points)" in err
    assert got.sizes == (3, 3, 1, 1) and got.certified_global
    _without_twin_quotient(monkeypatch)
    ref = dgp.optimum(W, tau=tau, progress=False)
    assert ref.sizes == (1,) * 8 and ref.certified_global
    assert got.loss == pytest.approx(ref.loss, rel=1e-9, abs=1e-9)
    # the optimum is a face here (Soft SupCon attains the entropic bound on a family): the
    # Grams may differ, each optimal, and neither is called unique
    assert got.unique is False and "face of minimisers" in got.uniqueness
    assert winfonce_loss(embedding_from_gram(got.gram), W, tau=tau) == pytest.approx(
        got.loss, rel=1e-12)
    # no descent over free embeddings goes below it, and one reaches it
    floor = _descent_floor(W, tau, dim=4, starts=2)
    assert floor >= got.loss - 1e-7 and floor <= got.loss + 1e-4


def test_the_split_is_invariant_under_a_permutation_of_the_samples():
    W = soft_supcon_weights(LABELS, eps=0.1)
    perm = np.random.default_rng(4).permutation(LABELS.size)
    a = dgp.optimum(W, tau=0.2, progress=False)
    b = dgp.optimum(W[np.ix_(perm, perm)], tau=0.2, progress=False)
    assert b.loss == pytest.approx(a.loss, rel=1e-10)
    np.testing.assert_allclose(b.gram, a.gram[np.ix_(perm, perm)], atol=1e-6)


def test_exact_batches_split_the_same_class():
    """Over every batch composition (exact), the partial split answers as the samples do."""
    W = soft_supcon_weights(LABELS, eps=0.1)
    got = dgp.optimum(W, tau=0.3, batch_size=4, progress=False)
    assert got.sizes == (3, 3, 1, 1) and got.batch.exact


def test_exact_batches_split_answer_is_the_samples(monkeypatch):
    W = soft_supcon_weights(LABELS, eps=0.1)
    got = dgp.optimum(W, tau=0.3, batch_size=4, progress=False)
    _without_twin_quotient(monkeypatch)
    ref = dgp.optimum(W, tau=0.3, batch_size=4, progress=False)
    assert ref.sizes == (1,) * 8 and ref.batch.exact
    assert got.loss == pytest.approx(ref.loss, rel=1e-9, abs=1e-9)


def test_classes_that_collapse_are_never_split(capsys):
    """SupCon's classes collapse: nothing is split and nothing is said."""
    got = dgp.optimum(supcon_weights([0, 0, 0, 1, 1, 2, 2]), tau=0.3)
    assert got.sizes == (3, 2, 2) and "do not collapse" not in capsys.readouterr().err


# REF8: samples 1-3 are twins that spread; the collapse was decided on the solver's
# certificate read beside a gradient at another scale, which called the class collapsed and
# returned its collapsed point with a "lower bound" above the true optimum
SPREAD_W = np.array([[0.0, 0.655, 0.655, 0.655, 0.47], [0.655, 0.0, 0.576, 0.576, 0.875],
                     [0.655, 0.576, 0.0, 0.576, 0.875], [0.655, 0.576, 0.576, 0.0, 0.875],
                     [0.47, 0.875, 0.875, 0.875, 0.0]])


@pytest.mark.parametrize("dim", [None, pytest.param(2, marks=pytest.mark.slow)])  # d=2: ~3 s
def test_a_spreading_twin_class_is_never_reported_collapsed(dim, monkeypatch):
    got = dgp.optimum(SPREAD_W, tau=0.1, dim=dim, progress=False)
    floor = _descent_floor(SPREAD_W, 0.1, dim=dim or 5, starts=2)
    # the lower bound is a bound: no embedding goes below it
    assert got.lower_bound <= floor + 1e-7
    assert got.loss <= floor + 1e-6  # and the answer is as good as free descent finds
    _without_twin_quotient(monkeypatch)
    ref = dgp.optimum(SPREAD_W, tau=0.1, dim=dim, progress=False)
    assert got.loss == pytest.approx(ref.loss, rel=1e-8)
    if dim is None:
        assert got.certified_global and got.loss == pytest.approx(floor, abs=1e-6)


@pytest.mark.slow  # a stochastic expected-batch optimum of 40 labels: about 6 s
def test_the_labels_path_splits_what_does_not_collapse_instead_of_an_internal_error():
    """REF8: the full-batch optimum of a labels problem (the batch path's comparison) raised
    NoCollapse out of dgp.optimum ("internal error ... please report it")."""
    y = np.repeat(np.arange(20), 2).astype(float)
    P = dgp.Problem(objective="y-aware-colnorm", labels=y, sigma=100.0, tau=0.5, batch_size=8)
    r = dgp.optimum(P, dim=3, samples=100, replicates=1, progress=False)
    assert isinstance(r, dgp.BatchOptimum) and np.isfinite(r.loss)
    assert r.batch.lower_bound <= r.loss


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 4), st.integers(0, 2**31 - 1), st.sampled_from([0.05, 0.1, 0.3, 1.0]))
def test_a_returned_quotient_always_collapses(K, seed, tau):
    """Random class-structured weightings (REF8 found 47 of 4466 with the stale certificate):
    whatever dgp.optimum merges, its lifted certificate says collapsed, and the loss is that
    of the samples' problem."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 5, size=K)
    if sizes.sum() < 3:
        return
    Wg = rng.uniform(0, 1, (K, K))
    Wg = (Wg + Wg.T) / 2
    g = np.repeat(np.arange(K), sizes)
    W = Wg[np.ix_(g, g)]
    np.fill_diagonal(W, 0.0)
    got = dgp.optimum(W, tau=tau, progress=False)
    if got.structure == "quotient":
        assert got.collapse.collapsed
    assert got.lower_bound <= got.loss + 1e-12
