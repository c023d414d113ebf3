"""Training loop, encoders and the scoring helpers of the experiments."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sklearn")

from dgp import supcon_prototypes  # noqa: E402
from dgp.infonce import winfonce_loss  # noqa: E402
from dgp.torch import data  # noqa: E402
from dgp.torch.encoders import ConvEncoder, MLPEncoder  # noqa: E402
from dgp.torch.experiments import (  # noqa: E402
    gram_embedding,
    loss_excess,
    prototype_gram,
    regular_simplex,
    summarise,
)
from dgp.torch.losses import SupConLoss  # noqa: E402
from dgp.torch.training import (  # noqa: E402
    cpu_threads,
    embed,
    resolve_device,
    seed_everything,
    train,
)
from dgp.weights import supcon_weights  # noqa: E402

pytestmark = pytest.mark.torch


def _fit(init, **kw):
    X, y = data.digits()
    X, y = X[:120], y[:120]
    seed_everything(init)
    enc = ConvEncoder(image_size=8, out_dim=4, channels=(4, 8), hidden=16)
    with cpu_threads(1):
        res = train(enc, SupConLoss(tau=0.5, empty_rows="skip"), X, y, steps=40, device="cpu", **kw)
    return res, embed(enc, X)


def test_training_is_seeded_and_lowers_the_loss():
    a, Za = _fit(0)
    b, Zb = _fit(0)
    c, _ = _fit(1)
    assert a.losses == b.losses and np.array_equal(Za, Zb)
    assert a.losses != c.losses
    assert a.losses[-1] < a.losses[0]
    assert a.device == "cpu" and a.steps == 40


def test_minibatch_training_draws_batches_from_the_seed():
    a, _ = _fit(0, batch_size=16, progress=False)
    b, _ = _fit(0, batch_size=16, progress=False, seed=5)
    assert len(a.losses) == 40 and a.losses != b.losses


def test_encoders_shapes():
    x = torch.zeros(5, 1, 16, 12)
    assert ConvEncoder(image_size=(16, 12), out_dim=4)(x).shape == (5, 4)
    assert ConvEncoder(image_size=(16, 12), out_dim=4)(x[:, 0]).shape == (5, 4)
    assert ConvEncoder(in_channels=3, image_size=8, out_dim=2)(torch.zeros(2, 3, 8, 8)).shape == (
        2,
        2,
    )
    assert MLPEncoder(in_dim=192, out_dim=7)(x).shape == (5, 7)
    with pytest.raises(ValueError, match="image_size"):
        ConvEncoder(image_size=3, out_dim=2)
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


def test_gram_embedding_and_simplex():
    S = regular_simplex(4)
    G = S @ S.T
    assert np.allclose(np.diag(G), 1) and np.allclose(G[0, 1], -1 / 3)
    U = gram_embedding(G)
    assert U.shape == (4, 3) and np.allclose(U @ U.T, G)
    # a rank-2 Gram with rounding noise below zero: two columns, Gram reproduced
    A = np.random.default_rng(0).standard_normal((6, 2))
    G2 = A @ A.T - 1e-14 * np.eye(6)
    U2 = gram_embedding(G2)
    assert U2.shape == (6, 2) and np.allclose(U2 @ U2.T, A @ A.T, atol=1e-12)


def test_prototype_gram_of_a_collapsed_embedding():
    U = regular_simplex(3) * 2.5  # scale is irrelevant: embeddings are normalised
    y = np.array([0, 0, 1, 2, 2, 2])
    _, G, collapse = prototype_gram(U[y], y, 3)
    assert np.allclose(G, regular_simplex(3) @ regular_simplex(3).T)
    assert collapse == pytest.approx(1.0, abs=1e-12)
    Z = U[y] + 0.3 * np.random.default_rng(0).standard_normal((6, 3))
    assert prototype_gram(Z, y, 3)[2] < 1.0


def test_loss_excess_full_batch_is_the_loss_difference():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], [6, 4, 2])
    Zs = regular_simplex(3)[y]
    Z = Zs + 0.4 * rng.standard_normal(Zs.shape)
    W = supcon_weights(y)
    ex, se = loss_excess(Z, Zs, y, SupConLoss(tau=0.5), batch_size=12, batches=10, seed=0)
    ref = (winfonce_loss(Z, W, tau=0.5) - winfonce_loss(Zs, W, tau=0.5)) / 12
    assert se == 0.0 and ex == pytest.approx(ref, rel=1e-10)
    skip = SupConLoss(tau=0.5, empty_rows="skip")
    assert loss_excess(Zs, Zs, y, skip, batch_size=5, batches=8, seed=0)[0] == 0


def _supcon_sum(Z, y, tau):
    """SupCon summed over the anchors that have a positive (numpy, written out)."""
    Zn = Z / np.linalg.norm(Z, axis=1, keepdims=True)
    S = Zn @ Zn.T / tau
    total, anchors = 0.0, 0
    for i in range(len(y)):
        pos = [j for j in range(len(y)) if j != i and y[j] == y[i]]
        if not pos:
            continue
        others = np.delete(S[i], i)
        m = others.max()
        total += -S[i, pos].mean() + m + np.log(np.exp(others - m).sum())
        anchors += 1
    return total, anchors


def test_loss_excess_batches_match_a_monte_carlo_reference():
    # the same estimate written independently: explicit batches and a numpy SupCon
    rng = np.random.default_rng(1)
    y = np.repeat([0, 1, 2], [8, 5, 3])
    Zs, Z = regular_simplex(3)[y], rng.standard_normal((16, 3))
    loss = SupConLoss(tau=0.5, empty_rows="skip")
    ex, se = loss_excess(Z, Zs, y, loss, batch_size=6, batches=300, seed=3)
    gen = torch.Generator().manual_seed(3)
    d, a = [], []
    for _ in range(300):
        idx = torch.randperm(16, generator=gen)[:6].numpy()
        lz, n = _supcon_sum(Z[idx], y[idx], 0.5)
        ls, _ = _supcon_sum(Zs[idx], y[idx], 0.5)
        d.append(lz - ls)
        a.append(n)
    assert ex == pytest.approx(np.mean(d) / np.mean(a), rel=1e-9)
    assert se > 0 and ex > 3 * se  # a random embedding is far above the optimum


def test_summarise_counts_every_run_and_shows_the_converged_ones_beside():
    runs = [
        {"condition": "a", "converged": True, "x": 1.0},
        {"condition": "a", "converged": True, "x": 3.0},
        {"condition": "a", "converged": False, "x": 100.0},
        {"condition": "b", "converged": None, "x": 5.0},
    ]
    a, b = summarise(runs, ["x"])
    assert a["n_seeds"] == 3 and a["n_converged"] == 2
    assert a["x"] == [pytest.approx(104 / 3), pytest.approx(np.std([1, 3, 100], ddof=1))]
    assert a["converged_only"]["x"] == [2.0, np.sqrt(2.0)]
    assert a["trained"] and not b["trained"]
    assert b["n_converged"] == 0 and b["x"] == [5.0, 0.0]  # untrained: all seeds count


def _brute_force_prototypes(sizes, tau, seed=0):
    """Minimise the SupCon loss over free unit embeddings (one per sample) with L-BFGS."""
    from dgp.torch.losses import winfonce

    y = np.repeat(np.arange(len(sizes)), sizes)
    W = torch.as_tensor(supcon_weights(y))
    V = torch.randn(len(y), len(y), dtype=torch.float64,
                    generator=torch.Generator().manual_seed(seed)).requires_grad_(True)
    opt = torch.optim.LBFGS([V], max_iter=4000, tolerance_grad=1e-12, tolerance_change=1e-16,
                            history_size=50, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        value = winfonce(V, W, tau=tau)
        value.backward()
        return value

    opt.step(closure)
    return prototype_gram(V.detach().numpy(), y, len(sizes))


@pytest.mark.parametrize("sizes", [(4, 4, 4), (8, 4, 2)])
def test_prediction_matches_brute_force_minimisation(sizes):
    # the prediction the experiments score against, checked against free-point minimisation
    _, G, collapse = _brute_force_prototypes(sizes, tau=0.5)
    pred = supcon_prototypes(list(sizes), tau=0.5)
    assert collapse > 1 - 1e-6  # classes collapse onto prototypes
    assert np.abs(G - pred.gram).max() < 1e-5
    if len(set(sizes)) > 1:  # imbalance: minority pair closer than the simplex's -1/2
        assert pred.gram[1, 2] > -0.5 + 0.05
