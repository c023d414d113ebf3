"""The sample-batch experiment's weighting (issue 40, point 6): what the trainer minimises is
what dgp predicts for, and for this sharp kernel batching changes the optimum while for a
realizable one it does not.

Two independent computations are compared: the PyTorch loss the CNNs train with and dgp's
batch loss read from the labels in log space; and, on sets small enough to enumerate every
batch, the exact expected batch loss of the full-batch optimum against that of the exact
expected-batch optimum."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sklearn")

from dgp.problem import Problem  # noqa: E402
from dgp.solver import (  # noqa: E402
    batch_loss,
    check_batch,
    finite_batches,
    solve_finite,
    sphere_lbfgs,
)
from dgp.torch.experiments.sample_batch import WEIGHTING  # noqa: E402
from dgp.torch.losses import make_loss  # noqa: E402


def _circle(n, seed):
    th = np.random.default_rng(seed).uniform(0.0, 2.0 * math.pi, n)
    return np.column_stack([np.cos(th), np.sin(th)])


def _spec(n, b):
    return check_batch(np.ones(n, dtype=np.int64), batch_size=b, sampler="uniform",
                       samples_per_class=None, reduction="mean",
                       anchors_without_positives="drop")


def _problem(y, label_tau):
    return Problem(objective=WEIGHTING["objective"], labels=y, tau=WEIGHTING["tau"],
                   label_tau=label_tau)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_trainers_loss_is_the_loss_dgp_predicts_for(seed):
    # a batch of 64 of 2000 angles at the experiment's sharp label temperature: most anchors'
    # kernel weights towards the other 63 underflow in float64, yet both computations keep
    # every anchor (the target is the nearest angle present) and agree
    y = _circle(2000, seed)
    rng = np.random.default_rng([seed, 1])
    idx = np.sort(rng.choice(2000, size=64, replace=False))
    Z = rng.standard_normal((64, 16))
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    tau, lt = float(WEIGHTING["tau"]), float(WEIGHTING["label_tau"])
    src = _problem(y, lt).batch_source()
    ours, _ = batch_loss(Z, np.ones(64), src.log_block(idx), tau=tau, spec=_spec(2000, 64),
                         gradient=False)
    loss = make_loss("x-clr", tau=tau, label_tau=lt, reduction="mean")
    with torch.no_grad():
        theirs = float(loss(torch.as_tensor(Z, dtype=torch.float64),
                            torch.as_tensor(y[idx], dtype=torch.float64)))
    assert math.isfinite(ours) and ours == pytest.approx(theirs, rel=1e-9, abs=1e-9)
    # every log-weight is finite, yet most of the weights, even scaled by their row's
    # largest, underflow to zero in float64: only the log-space reading keeps them
    Lb = src.log_block(idx)
    off = ~np.eye(64, dtype=bool)
    assert np.isfinite(Lb[off]).all()
    assert (np.exp(Lb - Lb[off].reshape(64, 63).max(axis=1, keepdims=True))[off] == 0).mean() > 0.5


def _exact_gap(y, label_tau, *, b, dim, seed=0):
    """The full-batch optimum's exact expected batch loss minus the exact expected-batch
    optimum's (every batch of ``b`` enumerated), nats per anchor."""
    n = y.shape[0]
    tau = float(WEIGHTING["tau"])
    L = _problem(y, label_tau).batch_source().log_block(np.arange(n))
    full = _spec(n, n)
    ones = np.ones(n)

    def value_grad(Z):
        return batch_loss(Z, ones, L, tau=tau, spec=full)

    rng = np.random.default_rng([seed, 3])
    best = None
    for _ in range(3):
        Z0 = rng.standard_normal((n, dim))
        Z, _ = sphere_lbfgs(value_grad, Z0 / np.linalg.norm(Z0, axis=1, keepdims=True),
                            maxiter=2000, gtol=1e-10, ftol=1e-15)
        Z /= np.linalg.norm(Z, axis=1, keepdims=True)
        f = value_grad(Z)[0]
        if best is None or f < best[1]:
            best = (Z, f)
    A = best[0]
    fb = finite_batches(L, b, _spec(n, b), tau=tau)
    sol = solve_finite(fb, dim, starts=[A], n_random=3, seed=seed)
    return fb.value_grad(A, gradient=False)[0] - sol.loss, sol


def test_batching_changes_the_optimum_of_a_sharp_kernel_and_not_of_a_realizable_one():
    # 10 angles, every batch of 3: the consistent X-CLR kernel (label_tau = tau) is attained
    # by the labels themselves in every batch and in the full set, so the two optima coincide;
    # the experiment's sharp kernel is not, and the full-batch optimum pays on batches
    y = _circle(10, 4)
    tau = float(WEIGHTING["tau"])
    same, sol_same = _exact_gap(y, tau, b=3, dim=2)
    sharp, sol_sharp = _exact_gap(y, float(WEIGHTING["label_tau"]), b=3, dim=2)
    # the realizable optimum is certified: it meets the dual lower bound of the convex problem
    assert sol_same.loss - sol_same.lower_bound <= 1e-6 * max(abs(sol_same.loss), 1.0)
    assert abs(same) < 1e-6
    # the sharp one is not attained in d = 2 (its exact optimum lies above the bound), and the
    # full-batch optimum is beaten on batches (the descent also started from it)
    assert sol_sharp.loss > sol_sharp.lower_bound
    assert sharp > 1e-3 and sharp > 1e3 * abs(same)
