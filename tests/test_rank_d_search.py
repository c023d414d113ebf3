"""The fixed-dimension search that can be trusted (issue 40, point 4): the judge of
``benchmarks/rank_d.py`` checked against dgp's own losses, the non-negative search's moves,
hard known cases, and (slow) the hit rate on a small seeded set of the benchmark's draws (the
budget's monotonicity is in ``tests/test_rank_d_policy.py``).

The reference of the benchmark (a batched L-BFGS written from the loss formulas, numpy only)
is independent of the policy it judges; the first tests make sure it evaluates the same loss as
dgp (two codes agreeing) and finds the known optimum of the issue's ReLU example.
"""

from __future__ import annotations

import numpy as np
import pytest

import dgp
from benchmarks import rank_d as bench
from dgp.prototypes import block_weights
from dgp.solver import block_problem, nonnegative_factor, rank_d_starts
from dgp.solver._nonnegative import _move
from dgp.weights import gaussian_kernel_weights

# the issue's ReLU example and a draw of the first measurement the old moves missed
RELU_EXAMPLE = ([20, 12, 8, 5, 3, 2], 0.3, 3, 139.1960)
RELU_FLAT_MISS = ([13, 23, 11, 7, 30, 18, 27, 27, 37], 0.2, 3, 750.47216)


def _unit_columns(rng, shape):
    X = rng.standard_normal(shape)
    return X / np.linalg.norm(X, axis=-2, keepdims=True)


def test_reference_class_loss_is_dgps_prototype_loss():
    rng = np.random.default_rng(0)
    n = np.array([30, 3, 12, 2, 8, 20, 5])
    X = _unit_columns(rng, (3, 4, 7))
    f, g = bench.class_loss(n, 0.3)(X)
    for b in range(3):
        ours = dgp.prototypes.prototype_loss(X[b].T @ X[b], n, tau=0.3)
        assert f[b] == pytest.approx(ours, rel=1e-12)
    # the gradient against central differences along a random direction
    V = rng.standard_normal(X.shape)
    h = 1e-6
    loss = bench.class_loss(n, 0.3)
    num = (loss(X + h * V)[0] - loss(X - h * V)[0]) / (2 * h)
    np.testing.assert_allclose(np.sum(g * V, axis=(1, 2)), num, rtol=1e-6)


@pytest.mark.slow  # about 4 s of CPU (dgp's optimum)
def test_reference_sample_loss_is_dgps_optimum_loss():
    rng = np.random.default_rng(1)
    y = rng.standard_normal((9, 2))
    W = gaussian_kernel_weights(y, sigma=0.6)
    opt = dgp.optimum(W, tau=0.3, dim=2, starts=1)
    X = opt.embedding.T / np.linalg.norm(opt.embedding.T, axis=0)
    assert bench.sample_loss(W, 0.3)(X[None])[0][0] == pytest.approx(opt.loss, rel=1e-9)


@pytest.mark.slow  # about 3 s of CPU
def test_reference_finds_the_issue_relu_optimum():
    sizes, tau, dim, best = RELU_EXAMPLE
    ref = bench.reference(bench.class_loss(np.array(sizes), tau), len(sizes), dim,
                          nonneg=True, seed=0)
    assert ref == pytest.approx(best, abs=1e-4)


def test_nonnegative_moves_stay_in_the_orthant_and_change_one_or_two_rows():
    # swaps (two rows exchanged), relocations (one row) and noise (every row) all occur
    rng = np.random.default_rng(3)
    Z = np.abs(rng.standard_normal((7, 3)))
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    seen = set()
    for h in range(16):
        Y = _move(Z, h, np.random.default_rng([5, h]))
        assert Y.shape == Z.shape and Y.min() >= 0
        np.testing.assert_allclose(np.linalg.norm(Y, axis=1), 1.0, rtol=1e-12)
        changed = int(np.sum(np.any(np.abs(Y - Z) > 1e-12, axis=1)))
        seen.add(min(changed, 3))
        if changed == 2:  # a swap: the same rows, two exchanged
            assert sorted(map(tuple, Y.round(12))) == sorted(map(tuple, Z.round(12)))
    assert seen == {1, 2, 3}


@pytest.mark.slow  # about 30 s of CPU
def test_relu_flat_miss_reaches_the_known_configuration():
    sizes, tau, dim, best = RELU_FLAT_MISS
    n = np.array(sizes)
    prob = block_problem(n, block_weights(n.size, None), tau=tau)
    default = rank_d_starts(n.size, dim, given=0)
    losses = {}
    for s in (default, 2 * default):
        Z, _, _ = nonnegative_factor(prob, dim, starts=s, seed=0)
        assert Z.min() >= 0
        losses[s] = dgp.prototypes.prototype_loss(Z @ Z.T, n, tau=tau)
    # swaps and noise alone stopped at 750.6315 at the default budget; with relocations the
    # default reaches the benchmark's reference (750.49581) and twice the budget the best known
    assert losses[default] <= 750.49582
    assert losses[2 * default] <= best + 1e-4
    assert losses[2 * default] <= losses[default]


@pytest.mark.slow  # about 30 s of CPU
def test_signed_k30_d8_draw_reaches_the_best_of_256_descents():
    # draw 13 of the benchmark's signed draws (seed 1): chains of 60 moves stopped 0.014 nats
    # above the judge's best (1340.27888647, 256 descents with swaps, 117 s); chains lengthened
    # with K (120 moves at K = 30) reach below it
    rng = np.random.default_rng([1, bench.KINDS.index("signed")])
    case = [bench.draw(rng, "signed") for _ in range(14)][13]
    assert (case["K"], case["d"]) == (30, 8)
    judge = 1340.2788864715712
    loss, _ = bench.ours(case)
    assert loss <= judge * (1 + bench.RELATIVE_SLACK)
    assert loss == pytest.approx(judge, rel=1e-4)  # the same landscape, not another problem


@pytest.mark.slow  # a few minutes of CPU: the benchmark's judge and dgp's default, small draws
@pytest.mark.parametrize("kind,seed", [("signed", 11), ("relu", 12), ("sample", 13)])
def test_hit_rate_on_small_draws(kind, seed):
    row = bench.rate(kind, 3, k_max=10, d_max=3, seed=seed)
    assert row["ratio"] >= bench.TARGET, row["table"]
