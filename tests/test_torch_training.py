"""Training loop, encoders and data sets of the torch backend."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from dgp.torch import data  # noqa: E402
from dgp.torch.encoders import ConvEncoder, MLPEncoder  # noqa: E402
from dgp.torch.experiments import free_optimum_gram, gram_embedding, regular_simplex  # noqa: E402
from dgp.torch.losses import EuclidEuclidLoss, SupConLoss  # noqa: E402
from dgp.torch.training import (  # noqa: E402
    cpu_threads,
    embed,
    resolve_device,
    seed_everything,
    train,
)


def _fit(seed, **kw):
    X, y = data.blob_images(grid=4, size=12, seed=0)
    seed_everything(seed)
    enc = MLPEncoder(in_dim=144, out_dim=3, hidden=(32,))
    res = train(enc, EuclidEuclidLoss(tau=0.5, sigma=0.5), X, y, steps=60, device="cpu", **kw)
    return res, embed(enc, X)


def test_training_is_seeded_and_lowers_the_loss():
    a, Za = _fit(0)
    b, Zb = _fit(0)
    c, _ = _fit(1)
    assert a.losses == b.losses and np.array_equal(Za, Zb)
    assert a.losses != c.losses
    assert a.losses[-1] < a.losses[0]
    assert a.device == "cpu" and a.steps == 60


def test_minibatch_training_runs():
    res, _ = _fit(0, batch_size=8, progress=False)
    assert len(res.losses) == 60


def test_encoders_shapes():
    x = torch.zeros(5, 1, 16, 16)
    assert ConvEncoder(image_size=16, out_dim=4)(x).shape == (5, 4)
    assert ConvEncoder(image_size=16, out_dim=4)(x[:, 0]).shape == (5, 4)
    assert MLPEncoder(in_dim=256, out_dim=7)(x).shape == (5, 7)
    with pytest.raises(ValueError, match="image_size"):
        ConvEncoder(image_size=10, out_dim=2)
    with pytest.raises(ValueError, match="hidden"):
        MLPEncoder(in_dim=3, out_dim=2, hidden=(0,))


def test_train_bad_arguments():
    enc = MLPEncoder(in_dim=2, out_dim=2, hidden=(4,))
    X, y = np.zeros((4, 2)), np.array([0, 0, 1, 1])
    with pytest.raises(ValueError, match="labels must have one entry"):
        train(enc, SupConLoss(tau=0.5), X, y[:3], steps=1, device="cpu")
    with pytest.raises(ValueError, match="batch_size"):
        train(enc, SupConLoss(tau=0.5), X, y, steps=1, batch_size=9, device="cpu")
    with pytest.raises(ValueError, match="device"):
        resolve_device("tpu")
    with pytest.raises(ValueError, match="seed"):
        seed_everything(-1)


def test_cpu_threads_restores():
    before = torch.get_num_threads()
    with cpu_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(ValueError, match="threads"), cpu_threads(0):
        pass


def test_imbalanced_digits_sizes():
    X, y, sizes = data.imbalanced_digits(classes=10, ratio=10.0, seed=0)
    assert X.shape == (sizes.sum(), 64) and 0.0 <= X.min() and X.max() <= 1.0
    assert np.array_equal(np.bincount(y), sizes)
    assert np.all(np.diff(sizes) <= 0) and sizes[0] / sizes[-1] == pytest.approx(10, rel=0.05)
    with pytest.raises(ValueError, match="classes"):
        data.imbalanced_digits(classes=11)
    with pytest.raises(ValueError, match="smallest class"):
        data.geometric_sizes(classes=3, largest=10, ratio=100.0)


def test_blob_images_labels_are_positions():
    X, y = data.blob_images(grid=5, copies=2, size=16, noise=0.0, seed=1)
    assert X.shape == (50, 16, 16) and y.shape == (50, 2)
    # brightest pixel moves with the label
    peak = np.array([np.unravel_index(np.argmax(x), x.shape) for x in X])  # (row, col)
    assert np.corrcoef(peak[:, 1], y[:, 0])[0, 1] > 0.95
    assert np.corrcoef(peak[:, 0], y[:, 1])[0, 1] > 0.95
    with pytest.raises(ValueError, match="grid"):
        data.blob_images(grid=1)


def test_gram_embedding_and_simplex():
    S = regular_simplex(4)
    G = S @ S.T
    assert np.allclose(np.diag(G), 1) and np.allclose(G[0, 1], -1 / 3)
    U = gram_embedding(G)
    assert U.shape == (4, 3) and np.allclose(U @ U.T, G)


def test_free_optimum_supcon_balanced_is_collapsed_simplex():
    from dgp.weights import supcon_weights

    # balanced SupCon: classes collapse onto the vertices of a regular simplex
    y = np.array([0, 0, 1, 1, 2, 2])
    G = free_optimum_gram(supcon_weights(y), tau=0.5)
    same = y[:, None] == y[None, :]
    assert np.allclose(G[same], 1.0, atol=1e-4)
    assert np.allclose(G[~same], -0.5, atol=1e-4)
