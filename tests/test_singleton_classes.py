"""Singleton classes in mini-batch predictions of SupCon and Soft SupCon (given as sizes or as
labels): a SupCon singleton's anchor has no positive in any uniform batch, so it is dropped or
counted as zero (``anchors_without_positives``) and its sample is only a negative of the
others. The full-batch analyses of SupCon still refuse it, and say that the mini-batch
prediction takes it; some class must still give an anchor a positive.

The reference is the one written from the definitions in :mod:`_batch_reference`
(every B-subset, the target row normalised within the batch, the log-softmax over the other
members), applied to the class weighting lifted to samples, and minimised by brute force over
free unit embeddings."""

from __future__ import annotations

import numpy as np
import pytest
from _batch_reference import brute_force, expected

import dgp


def _class_weighting(sizes, eps=None):
    lab = np.repeat(np.arange(len(sizes)), sizes)
    W = np.where(lab[:, None] == lab[None, :], 1.0, 0.0 if eps is None else eps)
    np.fill_diagonal(W, 0.0)
    return W, lab


def _sample_embedding(gram, sizes):
    """Unit sample embeddings whose Gram is the class Gram lifted to samples."""
    lam, U = np.linalg.eigh(gram)
    F = U * np.sqrt(np.clip(lam, 0.0, None))
    F /= np.linalg.norm(F, axis=1, keepdims=True)
    return np.repeat(F, sizes, axis=0)


@pytest.mark.parametrize("no_positive", ["drop", "zero"])
def test_the_prediction_is_the_exact_expectation_and_no_descent_beats_it(no_positive):
    sizes, B, tau = [1, 2, 3], 3, 0.5
    W, _ = _class_weighting(sizes)
    p = dgp.supcon_prototypes(sizes, tau=tau, batch_size=B,
                              anchors_without_positives=no_positive)
    assert p.batch.exact and p.certificate is not None
    Z = _sample_embedding(p.gram, sizes)
    assert p.loss == pytest.approx(expected(Z, W, B, tau, no_positive), rel=1e-9)
    # free embeddings of the 6 samples in R^6 (every Gram): the prediction is the least loss
    best = brute_force(W, B, tau, 6, no_positive, starts=4)
    assert best >= p.loss - 1e-7
    assert best <= p.loss + 1e-5
    # the singleton's anchor never has a positive
    assert p.batch.positive_pair_probability[0] == 0.0


def test_sizes_labels_and_the_weighting_give_one_answer():
    sizes, B, tau = [1, 2, 6, 3], 4, 0.5
    W, lab = _class_weighting(sizes)
    by_sizes = dgp.supcon_prototypes(sizes, tau=tau, batch_size=B)
    by_labels = dgp.supcon_prototypes(
        dgp.Problem(objective="supcon", labels=lab, batch_size=B), tau=tau)
    by_w = dgp.optimum(W, tau=tau, batch_size=B)
    assert by_labels.loss == pytest.approx(by_sizes.loss, rel=1e-12)
    assert by_w.loss == pytest.approx(by_sizes.loss, rel=1e-9)
    Z = _sample_embedding(by_sizes.gram, sizes)
    assert np.abs(Z @ Z.T - by_w.gram).max() < 1e-5
    # relabelling the classes permutes the prototypes: the same loss, the Gram permuted
    perm = np.array([2, 0, 3, 1])
    q = dgp.supcon_prototypes(np.array(sizes)[perm], tau=tau, batch_size=B)
    assert q.loss == pytest.approx(by_sizes.loss, rel=1e-9)
    assert np.abs(q.gram - by_sizes.gram[np.ix_(perm, perm)]).max() < 1e-6
    # string labels, in any order, are the same problem
    names = np.array(["a", "b", "c", "d"])[lab][::-1]
    r = dgp.optimum(dgp.Problem(objective="supcon", labels=names, batch_size=B), tau=tau)
    assert r.loss == pytest.approx(by_sizes.loss, rel=1e-9)


def test_two_singletons_are_one_negative_in_free_dimension():
    """Two singletons have the same weights to every sample: the unique optimum puts them
    together (cosine 1), both only negatives."""
    p = dgp.supcon_prototypes([1, 1, 4, 5], tau=0.5, batch_size=5)
    assert p.unique and p.gram[0, 1] == pytest.approx(1.0, abs=1e-6)
    W, _ = _class_weighting([1, 1, 4, 5])
    assert dgp.optimum(W, tau=0.5, batch_size=5).loss == pytest.approx(p.loss, rel=1e-9)
    # a tail that merges because its classes are twin singletons is said to be no effect of
    # imbalance
    q = dgp.supcon_prototypes([1, 1, 6, 6], tau=0.5, batch_size=14)
    assert q.minority_collapse.pair == (0, 1)
    assert "not an effect of imbalance" in " ".join(q.summary(gram=False).split())


def test_soft_supcon_takes_a_singleton_at_full_batch_too():
    """A Soft SupCon singleton has positives (weight eps to every other sample): its full batch
    is a problem, the same as the weighting's."""
    W, _ = _class_weighting([1, 3, 3], eps=0.1)
    p = dgp.supcon_prototypes(dgp.Problem(objective="soft-supcon", sizes=[1, 3, 3], eps=0.1),
                              tau=0.5)
    o = dgp.optimum(W, tau=0.5)
    assert p.certificate is not None and p.certificate.kkt_residual < 1e-8
    assert p.loss == pytest.approx(o.loss, rel=1e-8)
    Z = _sample_embedding(p.gram, [1, 3, 3])
    assert np.abs(Z @ Z.T - o.gram).max() < 1e-5
    # and its batch prediction is the weighting's
    b = dgp.supcon_prototypes([1, 3, 3], tau=0.5, eps=0.1, batch_size=4)
    assert b.loss == pytest.approx(dgp.optimum(W, tau=0.5, batch_size=4).loss, rel=1e-9)


def test_a_relu_head_with_a_singleton():
    sizes, B, tau = [1, 2, 3], 3, 0.5
    W, _ = _class_weighting(sizes)
    p = dgp.supcon_prototypes(sizes, tau=tau, batch_size=B, nonnegative=True)
    assert p.batch.exact and bool(p.embedding.min() >= 0)
    Z = np.repeat(p.embedding, sizes, axis=0)
    assert p.loss == pytest.approx(expected(Z, W, B, tau), rel=1e-9)
    signed = dgp.supcon_prototypes(sizes, tau=tau, batch_size=B)
    assert p.loss >= signed.loss - 1e-9


@pytest.mark.slow  # the stochastic class-level path: about 4 s
def test_beyond_enumeration_the_stochastic_path_agrees_within_its_interval():
    sizes, B, tau = [1, 2, 6, 3], 4, 0.5
    exact = dgp.supcon_prototypes(sizes, tau=tau, batch_size=B)
    s = dgp.supcon_prototypes(sizes, tau=tau, batch_size=B, exact_max=5, samples=4000,
                              progress=False)
    assert s.method == "stochastic" and not s.batch.exact
    lo, hi = s.batch.estimate.interval
    # the exact optimum lies below every embedding's expectation, so below the interval's top
    assert exact.loss <= hi
    assert hi - lo < 0.02


def test_full_batch_supcon_refuses_a_singleton_and_says_what_takes_it():
    for call in (lambda: dgp.supcon_prototypes([1, 3, 3], tau=0.5),
                 lambda: dgp.Problem(objective="supcon", sizes=[1, 3, 3]),
                 lambda: dgp.Problem(objective="supcon", labels=[0, 1, 1, 2, 2])):
        with pytest.raises(dgp.InvalidParameterError,
                           match=r"needs at least 2.*mini-batch predictions \(dgp.supcon_prototypes"
                           r" and dgp.optimum given a batch size; dgp supcon and dgp optimum "
                           r"with --batch-size\) take a singleton class"):
            call()
    # some class must still give an anchor a positive
    for call in (lambda: dgp.Problem(objective="supcon", sizes=[1, 1, 1], batch_size=2),
                 lambda: dgp.Problem(objective="supcon", labels=[0, 1, 2, 3], batch_size=3),
                 lambda: dgp.supcon_prototypes([1, 1], tau=0.5, batch_size=2)):
        with pytest.raises(dgp.InvalidParameterError,
                           match=r"has no class of 2 or more samples: no anchor has a "
                           r"positive"):
            call()
    # a batch problem with a singleton is not handed to a full-batch analysis
    with pytest.raises(dgp.InvalidParameterError, match="batch_size"):
        dgp.classify(dgp.Problem(objective="supcon", sizes=[1, 3, 3], batch_size=4, tau=0.5),
                     dim=2)


def test_cli_supcon_with_a_singleton(cli):
    out = cli("supcon", "--sizes", "1,3,3", "--tau", "0.5", "--batch-size", "4", "--json")
    assert out.code == 0, out.err
    W, _ = _class_weighting([1, 3, 3])
    assert out.json["loss"] == pytest.approx(dgp.optimum(W, tau=0.5, batch_size=4).loss,
                                             rel=1e-9)
    bad = cli("supcon", "--sizes", "1,3,3", "--tau", "0.5")
    assert bad.code == 2 and bad.out == ""
    assert bad.err.count("\n") == 1 and bad.err.startswith("error: --sizes[0] = 1")


def test_cli_optimum_with_labels_holding_a_singleton(tmp_path, cli):
    path = tmp_path / "y.csv"
    path.write_text("0\n1\n1\n1\n2\n2\n2\n")
    out = cli("optimum", "--objective", "supcon", "--labels", path, "--tau", "0.5",
              "--batch-size", "4", "--json")
    assert out.code == 0, out.err
    W, _ = _class_weighting([1, 3, 3])
    assert out.json["loss"] == pytest.approx(dgp.optimum(W, tau=0.5, batch_size=4).loss,
                                             rel=1e-9)
    bad = cli("optimum", "--objective", "supcon", "--labels", path, "--tau", "0.5")
    assert bad.code == 2 and bad.err.startswith("error: --labels has class 0 with 1 sample")


def test_a_singleton_rates_zero_in_uniform_batches_and_not_with_replacement():
    from itertools import combinations

    sizes, B = [1, 2, 3], 3
    r = dgp.prototypes.positive_pair_rates(sizes, batch_size=B)
    assert r.anchor_rate[0] == 0.0 and r.batch_rate[0] == 0.0
    # the other classes' rates, counted over every batch of samples
    lab = np.repeat(np.arange(3), sizes)
    subsets = list(combinations(range(6), B))
    pair = [np.mean([np.sum(lab[list(s)] == k) >= 2 for s in subsets]) for k in range(3)]
    assert np.allclose(r.batch_rate, pair, atol=1e-12)
    # with replacement (class-balanced) a singleton can meet itself
    cb = dgp.prototypes.positive_pair_rates(sizes, batch_size=B, sampler="class-balanced")
    assert cb.anchor_rate[0] == pytest.approx(1 - (2 / 3) ** (B - 1))
    with pytest.raises(dgp.InvalidParameterError, match="no anchor has a positive"):
        dgp.prototypes.positive_pair_rates([1, 1, 1], batch_size=2)


def test_soft_supcon_singletons_everywhere_they_apply():
    # the entropic bound takes one where the prototypes do, and SupCon's full batch refuses it
    b = dgp.prototypes.entropic_bound_prototypes([1, 3, 3], eps=0.1)
    assert b == pytest.approx(dgp.supcon_prototypes([1, 3, 3], tau=0.5, eps=0.1).entropic_bound,
                              rel=1e-12)
    with pytest.raises(dgp.InvalidParameterError, match=r"^sizes\[0\] = 1"):
        dgp.prototypes.entropic_bound_prototypes([1, 3, 3])
    # an option refused without a singleton is refused with one
    with pytest.raises(dgp.InvalidParameterError, match="first-order is the small-tau formula"):
        dgp.supcon_prototypes([1, 3, 3], tau=0.5, eps=0.1, method="first-order")
    # the rates count a class's own samples, and say so for Soft SupCon
    p = dgp.supcon_prototypes([1, 3, 3], tau=0.5, eps=0.1, batch_size=4)
    assert "anchors with a same-class positive" in p.summary(gram=False)
    # one probability, one number: the batch record's and the rates'
    q = dgp.supcon_prototypes([1, 9, 30, 4], tau=0.5, batch_size=30)
    assert q.batch.positive_pair_probability == tuple(q.positive_pairs.batch_rate.tolist())
    assert q.batch.positive_pair_probability[0] == 0.0


def test_soft_supcon_singletons_take_the_equiangular_closed_form_certified():
    """Where rho = 1 + tau log eps lies above the simplex, the equiangular Gram attains the
    entropic bound with singletons too (a singleton's row: every other sample at eps, every
    one at cosine rho); it is certified on the K x K rows (the certified solver did not converge
    on 18 long-tailed classes with three singletons at tau 0.1)."""
    sizes = [400, 300, 200, 150, 100, 80, 60, 50, 40, 30, 20, 10, 5, 3, 2, 1, 1, 1]
    p = dgp.supcon_prototypes(sizes, tau=0.1, eps=0.1)
    assert p.method == "closed-form" and p.certificate.kkt_residual < 1e-12
    assert p.loss == pytest.approx(p.entropic_bound, rel=1e-12)
    assert p.gram[0, -1] == pytest.approx(1 + 0.1 * np.log(0.1), rel=1e-12)
    # the same on the weighting of a small case, and the prototype loss of the Gram agrees
    small = [4, 2, 1, 1]
    W, _ = _class_weighting(small, eps=0.1)
    q = dgp.supcon_prototypes(small, tau=0.1, eps=0.1)
    assert q.method == "closed-form"
    assert q.loss == pytest.approx(dgp.optimum(W, tau=0.1).loss, rel=1e-9)
    assert dgp.prototypes.prototype_loss(q.gram, small, tau=0.1, eps=0.1) == pytest.approx(
        q.loss, rel=1e-12)
    # the public certificate takes a Soft SupCon singleton, and refuses a SupCon one
    assert dgp.prototypes.kkt_certificate(q.gram, small, tau=0.1, eps=0.1).kkt_residual < 1e-12
    with pytest.raises(dgp.InvalidParameterError, match=r"^sizes\[2\] = 1"):
        dgp.prototypes.kkt_certificate(np.eye(4), small, tau=0.1)


def test_positive_pair_rates_read_a_problem():
    lab = [0, 1, 1, 1, 2, 2, 2]
    p = dgp.Problem(objective="supcon", labels=lab, batch_size=4)
    by_problem = dgp.prototypes.positive_pair_rates(p)
    by_sizes = dgp.prototypes.positive_pair_rates([1, 3, 3], batch_size=4)
    assert np.array_equal(by_problem.anchor_rate, by_sizes.anchor_rate)
    assert np.array_equal(by_problem.batch_rate, by_sizes.batch_rate)
    cb = dgp.prototypes.positive_pair_rates(p, sampler="class-balanced")
    assert cb.sampler == "class-balanced"
    with pytest.raises(dgp.InvalidParameterError, match=r"^batch_size = 5 disagrees"):
        dgp.prototypes.positive_pair_rates(p, batch_size=5)
    with pytest.raises(dgp.InvalidParameterError, match=r"^batch_size is missing"):
        dgp.prototypes.positive_pair_rates([1, 3, 3])
    with pytest.raises(dgp.InvalidParameterError, match=r"^problem is a weight matrix"):
        dgp.prototypes.positive_pair_rates(dgp.Problem(W=np.ones((3, 3)), batch_size=3))
