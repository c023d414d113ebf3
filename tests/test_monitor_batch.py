"""GeometryMonitor against a mini-batch prediction (issue 42): the loss gap is in the
prediction's own loss (the expected batch loss under its sampler and batch size), carries an
uncertainty and says when a gap is within it; and the first pass's nearest-centre numbers."""

import itertools
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import dgp  # noqa: E402
from dgp.torch import GeometryMonitor, SupConLoss  # noqa: E402

pytestmark = pytest.mark.torch

SIZES = (5, 3, 2, 2)
TAU = 0.5
B = 4


@pytest.fixture(scope="module")
def pred():
    return dgp.supcon_prototypes(SIZES, tau=TAU, batch_size=B)


def unit_factor(G):
    lam, V = np.linalg.eigh(G)
    Z = V * np.sqrt(np.clip(lam, 0.0, None))
    return Z / np.linalg.norm(Z, axis=1, keepdims=True)


def exact_batch_loss(Z):
    """The expected loss of uniform batches of B distinct samples, by enumerating every
    subset of the N samples (each sample its class's prototype) with the torch SupCon loss
    (mean over anchors with a positive, pytorch-metric-learning's reduction)."""
    y = np.repeat(np.arange(len(SIZES)), SIZES)
    E = torch.tensor(Z[y])
    labels = torch.tensor(y)
    loss_fn = SupConLoss(temperature=TAU, reduction="mean")
    total, count = 0.0, 0
    for idx in itertools.combinations(range(len(y)), B):
        idx = list(idx)
        has = np.bincount(y[idx], minlength=len(SIZES))[y[idx]] > 1
        total += float(loss_fn(E[idx], labels[idx])) if has.any() else 0.0
        count += 1
    return total / count


def test_batch_prediction_loss_is_the_expected_batch_loss(pred):
    mon = GeometryMonitor(pred)
    assert "expected batch loss" in mon.loss_kind and f"B = {B}" in mon.loss_kind
    out = mon.compute()
    # the prediction's own number, and an independent enumeration at its Gram
    assert out["predicted_loss"] == pred.loss
    assert out["predicted_loss"] == pytest.approx(exact_batch_loss(unit_factor(pred.gram)),
                                                  rel=1e-9)


def test_batch_loss_gap_against_enumeration(pred):
    rng = np.random.default_rng(3)
    R = rng.normal(size=(len(SIZES), 6))
    mon = GeometryMonitor(pred)
    mon.update(torch.tensor(R), torch.arange(len(SIZES)))
    out = mon.compute()
    U = R / np.linalg.norm(R, axis=1, keepdims=True)
    exact_gap = exact_batch_loss(U) - pred.loss
    assert exact_gap > 0.01  # random directions are far from the optimum
    assert 0 < out["loss_gap_uncertainty"] < exact_gap / 5
    assert abs(out["loss_gap"] - exact_gap) <= out["loss_gap_uncertainty"]
    assert out["loss_gap_within_uncertainty"] == 0.0
    # the full-batch loss gap is another number (the user's confusion of issue 42)
    full = dgp.prototypes.prototype_loss(U @ U.T, SIZES, tau=TAU) / sum(SIZES)
    assert abs(full - exact_gap - pred.loss) > 10 * out["loss_gap_uncertainty"]


def test_batch_loss_gap_at_the_prediction_is_within_uncertainty(pred):
    mon = GeometryMonitor(pred)
    Z = unit_factor(pred.gram)
    mon.update(torch.tensor(Z), torch.arange(len(SIZES)))
    out = mon.compute()
    assert abs(out["loss_gap"]) < 1e-12
    assert out["loss_gap_within_uncertainty"] == 1.0


def test_full_batch_prediction_keys_unchanged():
    full = dgp.supcon_prototypes(SIZES, tau=TAU)
    mon = GeometryMonitor(full)
    assert mon.loss_kind.startswith("full batch")
    assert "loss_gap_uncertainty" not in mon.compute()


def reference_ncc(Z, y, W=None):
    H = Z / np.linalg.norm(Z, axis=1, keepdims=True)
    K = int(y.max()) + 1
    means = np.array([H[y == c].mean(axis=0) for c in range(K)])
    ncc = ((H[:, None, :] - means[None]) ** 2).sum(axis=2).argmin(axis=1)
    out = {"ncc_accuracy": float(np.mean(ncc == y))}
    if W is not None:
        out["nc4"] = float(np.mean((Z @ W.T).argmax(axis=1) != ncc))
    return out


@pytest.mark.parametrize("classifier", [False, True])
def test_first_pass_ncc_is_judged_against_this_pass_centres(classifier):
    rng = np.random.default_rng(7)
    K, d, n = 4, 5, 40
    y = rng.integers(0, K, size=n)
    y[:K] = np.arange(K)
    Z = rng.normal(size=(K, d))[y] + 1.2 * rng.normal(size=(n, d))
    W = rng.normal(size=(K, d))
    kw = {"classifier": torch.tensor(W)} if classifier else {}
    mon = GeometryMonitor(np.eye(K) - (1 - np.eye(K)) / (K - 1), **kw)
    for part in np.array_split(np.arange(n), 3):
        mon.update(torch.tensor(Z[part]), torch.tensor(y[part]))
    out = mon.compute()
    ref = reference_ncc(Z, y, W if classifier else None)
    assert 0 < ref["ncc_accuracy"] < 1  # overlapping classes: a real test of the centres
    for key, value in ref.items():
        assert out[key] == pytest.approx(value, abs=1e-12)
    assert out["ncc_samples"] == n
    # a second pass over the same data with the first pass's centres gives the same numbers
    mon.reset()
    mon.update(torch.tensor(Z), torch.tensor(y))
    again = mon.compute()
    for key, value in ref.items():
        assert again[key] == pytest.approx(value, abs=1e-12)


def test_first_pass_ncc_nan_only_while_a_class_is_unseen():
    mon = GeometryMonitor(np.eye(3) - 0.5 * (1 - np.eye(3)))
    mon.update(torch.tensor([[1.0, 0.0], [0.0, 1.0]]), torch.tensor([0, 1]))
    assert math.isnan(mon.compute()["ncc_accuracy"])
    mon.update(torch.tensor([[-1.0, -1.0]]), torch.tensor([2]))
    assert mon.compute()["ncc_accuracy"] == 1.0
