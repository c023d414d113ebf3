"""ReLU (non-negative) prototypes with mini-batches beyond exact enumeration: optimised on
fresh compositions with non-negative rows (or a closed form decided on sampled ones) and
reported on fresh batches they were not fitted on. The references here are exact: the same
problems are small enough to enumerate every composition, so the expected batch loss of the
returned Gram is known exactly."""

import numpy as np
import pytest

from dgp.prototypes import nonnegative_prototypes
from dgp.prototypes._blocks import block_weights
from dgp.solver import batch_rows, compositions

# each case evaluates on up to 20 000 fresh batches (the default half-width at B = 6)
pytestmark = pytest.mark.slow

SIZES = [6, 4, 3, 2]


def _exact_loss(G, sizes, tau, eps, spec):
    """The exact expected batch loss of the class Gram ``G``: every composition enumerated."""
    n = np.asarray(sizes)
    comps = compositions(n, spec, exact_max=10**6, samples=10, seed=0)
    assert comps.exact
    prob, _ = batch_rows(comps, block_weights(n.size, eps), spec, tau=tau)
    prob.set_scale(G)
    return prob.loss(G)[0]


@pytest.fixture(scope="module")
def sampled():
    # exact_max=1: the stochastic path although every composition could be enumerated
    return nonnegative_prototypes(SIZES, tau=0.3, dim=2, batch_size=6, exact_max=1,
                                  samples=200, starts=2, seed=3)


@pytest.fixture(scope="module")
def exact():
    return nonnegative_prototypes(SIZES, tau=0.3, dim=2, batch_size=6, starts=2, seed=3)


def test_sampled_loss_is_held_out_and_covers_the_exact_expectation(sampled):
    b = sampled.batch
    assert not b.exact and b.estimate is not None
    assert sampled.method == "stochastic"
    assert b.estimate.expectation == "stochastic"
    assert sampled.to_dict()["batch"]["expectation"] == "stochastic"
    assert sampled.loss == b.estimate.expected_loss
    lo, hi = b.estimate.interval
    true = _exact_loss(sampled.gram, SIZES, 0.3, None, b.spec)
    assert lo <= true <= hi, (lo, true, hi)
    assert hi - lo < 0.02


def test_sampled_bound_is_below_every_attained_expected_loss(sampled, exact):
    # the relaxation bound is on the minimum over all Grams, so below the exact ReLU optimum
    assert sampled.lower_bound <= exact.loss
    assert sampled.lower_bound <= _exact_loss(sampled.gram, SIZES, 0.3, None,
                                              sampled.batch.spec)
    # beyond enumeration nothing is proven but the bound at its confidence: the certificate
    # says so (expected-batch, not certified), with the bound reported
    c = sampled.to_dict()["certificate"]
    assert not sampled.certified and (c["kind"], c["certified"]) == ("expected-batch", False)
    assert c["lower_bound"] == sampled.lower_bound and c["confidence"] == 0.95


def test_sampled_gram_entries_carry_intervals_from_replicates(sampled):
    b = sampled.batch
    # two further runs: those that ended within the loss resolution of the kept prototypes
    # give the entries' spread, any other is said to be left out, and restarts of the kept
    # prototypes on other batch streams fill the spread to the three runs asked for
    assert b.replicates <= 2 and b.replicates - b.restarts + b.runs_left_out <= 2
    lo, hi = b.gram_interval
    G = sampled.gram
    if b.replicates >= 1:  # measured: every interval holds its entry
        assert np.all(lo <= G + 1e-12) and np.all(G <= hi + 1e-12)
    else:  # one run near the kept prototypes: not measured, and said, never a fake interval
        assert np.isnan(lo).all() and np.isnan(hi).all()
        assert "left out" in b.gram_error and "not measured" in " ".join(str(sampled).split())
    assert sampled.embedding.min() >= 0
    assert np.allclose(np.linalg.norm(sampled.embedding, axis=1), 1.0)
    assert sampled.identifiability.pinned is not None
    text = str(sampled)
    assert "optimised on" in text and "NOT certified" in text


def test_sampled_full_batch_comparison_is_paired(sampled):
    est = sampled.batch.estimate
    assert est.full_batch_expected_loss is not None
    assert est.full_batch_excess == pytest.approx(
        est.full_batch_expected_loss - est.expected_loss)
    # the full-batch Gram is an attained point: its exact expected loss is above the bound
    full = nonnegative_prototypes(SIZES, tau=0.3, dim=2, starts=2, seed=3)
    assert sampled.lower_bound <= _exact_loss(full.gram, SIZES, 0.3, None, sampled.batch.spec)


def test_exact_path_stays_certified_and_exact(exact):
    assert exact.batch.exact and exact.batch.estimate is None
    assert exact.certificate is not None
    assert exact.loss == pytest.approx(_exact_loss(exact.gram, SIZES, 0.3, None,
                                                   exact.batch.spec), rel=1e-9)


def test_closed_form_frame_has_no_sampling_error():
    # SupCon with a ReLU head: the orthogonal frame is optimal with any sampler (theorem
    # relu-orthogonal-frame); sampled compositions move only the loss estimate
    p = nonnegative_prototypes(SIZES, tau=0.3, dim=4, batch_size=6, exact_max=1, samples=200)
    assert p.method == "closed-form"
    assert np.array_equal(p.gram, np.eye(4))
    lo, hi = p.batch.gram_interval
    assert np.array_equal(lo, hi)
    assert p.batch.estimate.expectation == "sample-average"
    assert "fitted on a sample of" in str(p)
    a, b = p.batch.estimate.interval
    assert a <= _exact_loss(np.eye(4), SIZES, 0.3, None, p.batch.spec) <= b
