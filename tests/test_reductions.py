"""Reductions own their inverse (dgp.optima._reductions): apply then invert is exact, the chain
inverts in reverse, and dgp.optimum's full-batch path through the chain gives today's numbers."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dgp.engine.target import check_weights
from dgp.infonce import winfonce_loss
from dgp.optima import optimum, quotient, trivial_quotient
from dgp.optima._api import _solve
from dgp.optima._batch_paths import batch_spec, start_budget
from dgp.optima._reductions import (
    Chain,
    LogWeightShift,
    PointSolution,
    Reduction,
    TwinQuotient,
    choose_reductions,
    samples_problem,
)
from dgp.optima._structure import split_single_class
from dgp.solver import block_problem, single_threaded
from dgp.weights import supcon_weights


def _planted(labels, seed, scale=1.0):
    """A weighting whose samples of one label are twins (class-level weights drawn at random,
    positive off the diagonal of the samples)."""
    rng = np.random.default_rng(seed)
    labels = np.asarray(labels)
    K = labels.max() + 1
    C = rng.uniform(0.1, 2.0, size=(K, K))
    W = scale * C[np.ix_(labels, labels)]
    np.fill_diagonal(W, 0.0)
    return W


def _embedding(G):
    vals, vecs = np.linalg.eigh((G + G.T) / 2)
    return vecs * np.sqrt(np.clip(vals, 0.0, None))


def _gram_of(rng, K, d=3):
    X = rng.normal(size=(K, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X @ X.T


labels_st = st.lists(st.integers(0, 3), min_size=2, max_size=9)


@settings(max_examples=40, deadline=None)
@given(labels=labels_st, seed=st.integers(0, 2**16), log4_scale=st.integers(-30, 30),
       tau=st.sampled_from([0.2, 0.5, 1.0]))
def test_round_trip_any_gram_has_the_same_loss(labels, seed, log4_scale, tau):
    """For ANY unit Gram of the reduced points, the lifted embedding's loss on the original W
    (dgp.infonce, sample by sample) equals the reduced problem's loss plus the shift's constant:
    the reduction is exact, not just at the optimum."""
    W = _planted(labels, seed, scale=4.0 ** log4_scale * 1.7)
    problem = samples_problem(W)
    chain = choose_reductions(problem)
    reduced, inverse = chain.apply(problem)
    assert reduced.K <= len(set(labels)) or reduced.K == 2  # twins merged (or the split)
    G = _gram_of(np.random.default_rng(seed), reduced.K)
    red_loss = block_problem(reduced.sizes, reduced.weights, tau=tau).loss(G)[0]
    lifted = chain.invert(PointSolution.of_points(G, red_loss), inverse)
    assert lifted.labels.shape == (W.shape[0],)
    assert np.array_equal(lifted.labels, reduced.labels)
    direct = winfonce_loss(_embedding(lifted.lifted_gram()), W, tau=tau)
    assert lifted.loss == pytest.approx(direct, rel=1e-9, abs=1e-9)


@settings(max_examples=15, deadline=None)
@given(labels=st.lists(st.integers(0, 2), min_size=3, max_size=7), seed=st.integers(0, 999))
def test_round_trip_of_the_reduced_optimum_is_the_optimum(labels, seed):
    """The exact optimum of the reduced problem, lifted, has the loss dgp.infonce computes on
    the original weighting, and that loss is not beaten by the optimum of the N x N problem
    solved without the twin quotient (two methods agreeing)."""
    W = _planted(labels, seed)
    opt = optimum(W, tau=0.5)
    Z = _embedding(opt.quotient_gram[np.ix_(opt.labels, opt.labels)])
    assert opt.loss == pytest.approx(winfonce_loss(Z, W, tau=0.5), rel=1e-9, abs=1e-9)
    q = samples_problem(W)
    full = _solve(q, tau=0.5, dim=None, spec=None, samples=2, replicates=0, seed=0,
                  exact_max=1, starts=1, tol=1e-10)
    assert opt.loss <= full["loss"] + 1e-7
    if opt.certified_global:
        assert opt.loss == pytest.approx(full["loss"], rel=1e-7, abs=1e-7)


def test_canonical_shift_is_exact_and_its_loss_constant_holds():
    W = _planted([0, 1, 1, 2, 0], 3, scale=3.0e7)
    p = samples_problem(W)
    shift = LogWeightShift()
    assert shift.applies(p) and isinstance(shift, Reduction)
    red, data = shift.apply(p)
    assert 1.0 <= red.weights.max() < 4.0
    assert np.array_equal(np.ldexp(red.weights, 2 * data.power), W)  # bit-for-bit inverse
    assert data.shift == pytest.approx(math.log(W.max()) - math.log(red.weights.max()))
    # the engine's inverse of the shift maps the canonical log-weights back to the user's
    pos = W > 0
    assert np.allclose(data.to_user_log_weights(np.log(red.weights[pos])), np.log(W[pos]))
    assert not shift.applies(red)  # canonical already
    # weights whose division would underflow a positive weight: not applied
    tiny = W.copy()
    tiny[0, 1] = 1e-300
    tiny[1, 0] = 1e300
    assert not shift.applies(samples_problem(tiny))


@pytest.mark.parametrize("power", [-9, 5, 13])
def test_optimum_is_invariant_under_scaling_the_weights(power):
    """The optimum of c W is that of W: exactly for c a power of 4 (the canonical shift
    reduces both to one problem), to solver precision otherwise."""
    W = _planted([0, 0, 1, 2, 2, 3], 11)
    a = optimum(W, tau=0.3)
    b = optimum(4.0**power * W, tau=0.3)
    assert b.loss == a.loss and np.array_equal(b.quotient_gram, a.quotient_gram)
    c = optimum(3.0 * 4.0**power * W, tau=0.3)
    assert c.loss == pytest.approx(a.loss, rel=1e-9)
    assert np.allclose(c.quotient_gram, a.quotient_gram, atol=1e-6)


def test_twin_quotient_lifts_by_repeating_each_class_point():
    W = supcon_weights([0, 1, 0, 1, 1])
    p = samples_problem(W)
    red, data = TwinQuotient().apply(p)
    assert red.sizes.tolist() == [2, 3] and red.labels.tolist() == [0, 1, 0, 1, 1]
    G = np.array([[1.0, -0.5], [-0.5, 1.0]])
    lifted = TwinQuotient().invert(PointSolution.of_points(G, 1.0), data)
    L = lifted.lifted_gram()
    assert L.shape == (5, 5) and L[0, 2] == 1.0 and L[0, 1] == -0.5 and L[1, 4] == 1.0


def test_single_twin_class_is_split_only_for_the_full_batch_solve():
    W = np.ones((4, 4)) - np.eye(4)
    p = samples_problem(W)
    red, _ = choose_reductions(p).apply(p)
    assert red.sizes.tolist() == [1, 3] and red.labels.tolist() == [0, 1, 1, 1]
    red_b, _ = choose_reductions(p, batched=True).apply(p)
    assert red_b.sizes.tolist() == [4]


def test_chain_inverts_in_reverse_order():
    order = []

    class Spy:
        def __init__(self, name):
            self.name = name

        def applies(self, problem):
            return True

        def apply(self, problem):
            order.append(("apply", self.name))
            return problem, self.name

        def invert(self, solution, data):
            assert data == self.name
            order.append(("invert", self.name))
            return solution

    chain = Chain((Spy("a"), Spy("b"), Spy("c")))
    p = samples_problem(np.ones((2, 2)) - np.eye(2))
    _, inv = chain.apply(p)
    chain.invert(PointSolution.of_points(np.eye(2), 0.0), inv)
    assert order == [("apply", "a"), ("apply", "b"), ("apply", "c"),
                     ("invert", "c"), ("invert", "b"), ("invert", "a")]
    assert len(chain.without(Spy).reductions) == 0


def _old_path(A, tau, **kw):
    """Today's (pre-chain) full-batch path, step by step: the twin quotient, the split of one
    class, the solve on the unshifted weights."""
    q = quotient(check_weights(A))
    if q.K == 1:
        q = split_single_class(q)
    with single_threaded():
        out = _solve(q, tau=tau, spec=None, samples=2, replicates=0, exact_max=1, tol=1e-10,
                     **kw)
    return q, out


CASES = {
    "twins": (supcon_weights([0, 0, 1, 1, 1, 2, 2]), {}),
    "no twins": (_planted(list(range(6)), 5), {}),
    "class-structured": (supcon_weights([0, 0, 0, 1, 1, 2, 2, 2, 2]) + 0.1 * (1 - np.eye(9)),
                         {}),
    "sparse cycle": (np.roll(np.eye(7), 1, axis=1) + np.roll(np.eye(7), -1, axis=1), {}),
    "one class": (np.ones((4, 4)) - np.eye(4), {}),
    "scaled": (1e6 * _planted([0, 1, 1, 2, 3], 2), {}),
    "dim 2": (4.0**7 * supcon_weights([0, 0, 1, 1, 2, 2, 3, 3, 3]), {"dim": 2, "seed": 1}),
}


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=pytest.mark.slow) if "dim" in name else name
    for name in sorted(CASES)])  # the rank-d search of "dim 2": about 2 s
def test_optimum_through_the_chain_equals_the_old_path(name):
    """Loss, Gram, labels and certificate of dgp.optimum equal today's path computed directly
    (twins, no twins, class structure, sparse, one class, scaled weights, a fixed dimension)."""
    A, kw = CASES[name]
    dim = kw.get("dim")
    q, out = _old_path(A, 0.4, dim=dim, seed=kw.get("seed", 0),
                       starts=start_budget(None, quotient(A).K, dim))
    opt = optimum(A, tau=0.4, tol=1e-10, **kw)
    assert opt.loss == out["loss"]
    assert np.array_equal(opt.quotient_gram, out["gram"])
    assert np.array_equal(opt.labels, q.labels)
    assert opt.lower_bound == out["lower"]
    assert opt.certificate.dual_residual == out["cert"].dual_residual
    assert opt.collapse.collapsed == out["lift"].collapsed
    assert opt.certified_global == out["certified_global"]


@settings(max_examples=10, deadline=None)
@given(labels=st.lists(st.integers(0, 2), min_size=3, max_size=7), seed=st.integers(0, 999))
def test_reduction_commutes_with_permuting_samples(labels, seed):
    """Permuting the samples permutes the reduced problem's labels and the lifted Gram, and
    keeps the class sizes (as a multiset) and the loss."""
    W = _planted(labels, seed)
    perm = np.random.default_rng(seed).permutation(W.shape[0])
    Wp = W[np.ix_(perm, perm)]
    a, b = optimum(W, tau=0.5), optimum(Wp, tau=0.5)
    assert sorted(a.sizes) == sorted(b.sizes)
    assert b.loss == pytest.approx(a.loss, rel=1e-9, abs=1e-12)
    Ga = a.quotient_gram[np.ix_(a.labels, a.labels)][np.ix_(perm, perm)]
    Gb = b.quotient_gram[np.ix_(b.labels, b.labels)]
    if a.unique:
        assert np.allclose(Ga, Gb, atol=1e-6)
    # the twin classes: i ~ j in Wp iff perm i ~ perm j in W (batched: without the split of a
    # single class, which singles out its first sample and so is not equivariant)
    pa, _ = choose_reductions(samples_problem(W), batched=True).apply(samples_problem(W))
    pb, _ = choose_reductions(samples_problem(Wp), batched=True).apply(samples_problem(Wp))
    same_a = pa.labels[:, None] == pa.labels[None, :]
    same_b = pb.labels[:, None] == pb.labels[None, :]
    assert np.array_equal(same_a[np.ix_(perm, perm)], same_b)


def test_batched_single_class_through_the_chain_equals_the_split():
    """A batched solve of one twin class: the chooser's split equals today's split of the
    quotient (loss, Gram, labels)."""
    A = np.ones((5, 5)) - np.eye(5)
    opt = optimum(A, tau=0.5, batch_size=3, tol=1e-10)
    q = split_single_class(quotient(check_weights(A)))
    spec = batch_spec(np.array([5]), 3, "uniform", "mean", "drop")
    with single_threaded():
        out = _solve(q, tau=0.5, dim=None, spec=spec, samples=2000, replicates=0, seed=0,
                     exact_max=20_000, starts=start_budget(None, 1, None), tol=1e-10)
    assert opt.loss == out["loss"]
    assert np.array_equal(opt.quotient_gram, out["gram"])
    assert opt.labels.tolist() == q.labels.tolist() == [0, 1, 1, 1, 1]


@pytest.mark.parametrize("scale", [1.0, 4.0**8])
def test_twins_that_do_not_collapse_fall_back_to_the_chain_without_the_quotient(scale):
    """Complete bipartite weights: the samples of a side are twins, but their collapsed point
    fails the lifted certificate, so the N x N problem is solved (the chain without the twin
    quotient; the shift stays) and equals today's direct solve of the trivial quotient."""
    n = 3
    B = np.zeros((2 * n, 2 * n))
    B[:n, n:] = B[n:, :n] = scale
    assert quotient(check_weights(B)).K == 2  # twins exist
    opt = optimum(B, tau=0.5, tol=1e-10)
    assert opt.structure == "dense" and opt.sizes == (1,) * (2 * n)
    with single_threaded():
        out = _solve(trivial_quotient(check_weights(B / scale)), tau=0.5, dim=None, spec=None,
                     samples=2, replicates=0, seed=0, exact_max=1, starts=1, tol=1e-10)
    assert opt.loss == out["loss"]
    assert np.array_equal(opt.quotient_gram, out["gram"])
    assert opt.labels.tolist() == list(range(2 * n))
