"""Samples without a positive weight (a row of W with no positive entry off the diagonal) in a
mini-batch prediction: such a sample is an anchor without positives in every batch, dropped
from the mean or counted as zero (``anchors_without_positives``), and a negative of the
anchors that meet it. The full-batch analyses, whose targets are the rows' distributions,
still refuse it, naming the row.

The reference (:mod:`_batch_reference`) is written from the definitions (every B-subset, each
anchor's target row normalised within the batch, log-softmax over the other members),
independently of dgp's batch losses, and minimised by brute force over free unit
embeddings."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from _batch_reference import batch_losses, brute_force, expected

import dgp


def _graph():
    """Six samples in two triangles of unequal weights and a seventh with no positive weight
    (its row and its column are zero)."""
    W = np.zeros((7, 7))
    for (i, j), w in {(0, 1): 1.0, (1, 2): 2.0, (0, 2): 0.5, (3, 4): 1.0, (4, 5): 1.0,
                      (2, 3): 0.2}.items():
        W[i, j] = W[j, i] = w
    return W


@pytest.mark.slow  # brute force over every 4-subset of 7 samples, 12 starts: a few seconds
@pytest.mark.parametrize("no_positive", ["drop", "zero"])
def test_an_isolated_sample_is_an_anchor_without_positives_in_every_batch(no_positive):
    W, B, tau, d = _graph(), 4, 0.5, 2
    res = dgp.optimum(W, tau=tau, dim=d, batch_size=B, anchors_without_positives=no_positive,
                      progress=False)
    assert res.batch.exact and res.batch.compositions == math.comb(7, B)
    # the reported loss is the exact expectation of the returned embedding, from the definitions
    assert res.loss == pytest.approx(expected(res.embedding, W, B, tau, no_positive), rel=1e-9)
    # and no descent over free embeddings goes below it
    assert brute_force(W, B, tau, d, no_positive) >= res.loss - 1e-6 * abs(res.loss)
    # the sparse form of the same weighting is the same problem
    res_sp = dgp.optimum(sp.csr_matrix(W), tau=tau, dim=d, batch_size=B,
                         anchors_without_positives=no_positive, progress=False)
    assert res_sp.loss == pytest.approx(res.loss, rel=1e-7)


def test_a_sample_that_is_only_ever_a_positive():
    """Row 6 is empty but others weigh it (asymmetric W): it is a positive of theirs and never
    an anchor; the reported loss is still the exact expectation of the embedding."""
    W = _graph()
    W[0, 6] = W[5, 6] = 1.0
    res = dgp.optimum(W, tau=0.5, dim=2, batch_size=4, progress=False)
    assert res.loss == pytest.approx(expected(res.embedding, W, 4, 0.5), rel=1e-9)
    # relabelling the samples relabels the answer: the same loss
    perm = np.random.default_rng(3).permutation(7)
    res_p = dgp.optimum(W[np.ix_(perm, perm)], tau=0.5, dim=2, batch_size=4, progress=False)
    assert res_p.loss == pytest.approx(res.loss, rel=1e-7)


def test_full_batch_analyses_still_refuse_the_row_by_name():
    W = _graph()
    for call in (lambda: dgp.optimum(W, tau=0.5, dim=2), lambda: dgp.classify(W, tau=0.5, dim=2),
                 lambda: dgp.Problem(W=W), lambda: dgp.optimum(sp.csr_matrix(W), tau=0.5,
                                                               dim=2)):
        with pytest.raises(dgp.InvalidParameterError, match=r"row 6 has no positive weight"):
            call()
    p = dgp.Problem(W=W, batch_size=4, tau=0.5)  # a batch problem takes it
    assert p.n == 7
    with pytest.raises(dgp.InvalidParameterError, match="batch_size"):
        dgp.classify(p, dim=2)
    # a weighting with no positive weight at all is refused with a batch too
    with pytest.raises(dgp.InvalidParameterError, match="no anchor has a positive"):
        dgp.optimum(np.zeros((5, 5)), tau=0.5, dim=2, batch_size=2)
    with pytest.raises(dgp.InvalidParameterError, match="no anchor has a positive"):
        dgp.Problem(W=sp.csr_matrix((5, 5)), batch_size=2)


@pytest.mark.slow  # about 3.5 s (the exact path with its identifiability)
def test_cli_optimum_with_an_isolated_sample_and_a_batch(tmp_path, cli):
    path = tmp_path / "w.csv"
    np.savetxt(path, _graph(), delimiter=",")
    run = cli("optimum", path, "--tau", "0.5", "--dim", "2", "--batch-size", "4", "--json")
    assert run.code == 0, run.err
    assert run.json["batch"]["expectation"] == "exact"
    bad = cli("optimum", path, "--tau", "0.5", "--dim", "2")
    assert bad.code == 2 and bad.err.startswith("error:") and "row 6" in bad.err


def _fresh_batches_mean(Z, W, B, tau, batches, seed):
    """The mean batch loss of Z over ``batches`` uniform batches drawn here, and its standard
    error (the reference's batch loss: anchors without positives dropped)."""
    rng = np.random.default_rng(seed)
    sub = np.array([rng.choice(len(W), B, replace=False) for _ in range(batches)])
    vals = batch_losses(Z, W, sub, tau)
    return float(vals.mean()), float(vals.std(ddof=1) / math.sqrt(batches))


@pytest.mark.slow  # a stochastic prediction of 60 samples (about 10 s) and 3000 reference batches
def test_fresh_batches_with_isolated_samples_of_a_sparse_graph():
    """Beyond enumeration: a thresholded kernel graph of 60 samples, 7 of them isolated, in
    batches of 16; the held-out interval holds the embedding's loss measured here on other
    fresh batches with the reference's batch loss."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    W = np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / 0.3)
    W[W < 0.3] = 0.0
    np.fill_diagonal(W, 0.0)
    assert (W.sum(axis=1) == 0).sum() == 7
    res = dgp.optimum(sp.csr_matrix(W), tau=0.5, dim=4, batch_size=16, progress=False)
    assert res.batch.expectation == "stochastic"
    lo, hi = res.batch.interval
    mean, se = _fresh_batches_mean(res.embedding, W, 16, 0.5, 3000, seed=99)
    half = (hi - lo) / 2
    assert abs(mean - res.loss) <= math.hypot(half, 1.96 * se), (mean, se, res.loss, half)
    assert res.batch.lower_bound <= res.loss


def test_a_batch_problems_weighting_is_refused_by_the_full_batch_analyses():
    """The validated weighting of a batch problem keeps its first empty row: handed on to a
    full-batch analysis it is refused again, naming that row (not read as a distribution)."""
    W = _graph()
    for form in (W, sp.csr_matrix(W)):
        lw = dgp.Problem(W=form, batch_size=4, tau=0.5).weighting
        assert lw.first_empty_row == 6
        with pytest.raises(dgp.InvalidParameterError, match="row 6 has no positive weight"):
            dgp.classify(lw, tau=0.5, dim=2)
        with pytest.raises(dgp.InvalidParameterError, match="row 6 has no positive weight"):
            dgp.optimum(lw, tau=0.5, dim=2)
    assert dgp.Problem(W=np.ones((5, 5)), batch_size=3).weighting.first_empty_row is None


def test_a_batch_problems_own_classification_refuses_the_empty_row():
    p = dgp.Problem(W=_graph(), batch_size=4, tau=0.5)
    with pytest.raises(dgp.InvalidParameterError, match="row 6 has no positive weight"):
        p.classification(tau=0.5, dim=2, rtol=1e-8)


def test_a_mutual_knn_graph_keeps_its_isolated_samples_for_a_batch_prediction():
    """dgp's own builder makes the graph this is for: mutual neighbours leave samples alone,
    kept with empty_rows=True (refused by default, as a full-batch analysis refuses them)."""
    X = np.random.default_rng(0).standard_normal((30, 2))
    with pytest.raises(dgp.InvalidParameterError, match="empty_rows=True"):
        dgp.weights.knn_weights(X, 1, symmetrize="mutual")
    W = dgp.weights.knn_weights(X, 1, symmetrize="mutual", empty_rows=True)
    alone = np.flatnonzero(np.diff(W.indptr) == 0)
    assert alone.size > 0
    # the same graph as the "mean" one restricted to pairs that are neighbours both ways
    V = dgp.weights.knn_weights(X, 1, symmetrize="none")
    assert (W != V.minimum(V.T)).nnz == 0
    assert dgp.Problem(W=W, batch_size=8).weighting.first_empty_row == alone[0]
    with pytest.raises(dgp.InvalidParameterError, match="empty_rows"):
        dgp.weights.knn_weights(X, 1, symmetrize="mutual", empty_rows="yes")
