"""The torch w-InfoNCE losses equal dgp.infonce.winfonce_loss (numpy) on the same batch."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from dgp.infonce import winfonce_loss  # noqa: E402
from dgp.objectives import OBJECTIVE_NAMES, get  # noqa: E402
from dgp.torch import losses as L  # noqa: E402
from dgp.weights import (  # noqa: E402
    gaussian_kernel_weights,
    objective_weights,
    soft_supcon_weights,
    supcon_weights,
    xclr_weights,
)

pytestmark = pytest.mark.torch
PARAMS = {"sigma": 0.7, "eps": 0.2, "label_tau": 0.5}

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.fixture
def batch():
    rng = np.random.default_rng(1)
    Z = rng.standard_normal((12, 5))
    classes = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2, 3, 3, 3])
    y = rng.standard_normal((12, 2))
    return Z, classes, y


def _case(name, Z, classes, y):
    if name == "supcon":
        return L.SupConLoss(tau=0.3), classes, supcon_weights(classes), "cosine"
    if name == "soft-supcon":
        W = soft_supcon_weights(classes, eps=0.2)
        return L.SoftSupConLoss(tau=0.3, eps=0.2), classes, W, "cosine"
    if name == "y-aware":
        W = gaussian_kernel_weights(y, sigma=0.7)
        return L.YAwareLoss(tau=0.3, sigma=0.7), y, W, "cosine"
    if name == "euclid-euclid":
        W = gaussian_kernel_weights(y, sigma=0.7)
        return L.EuclidEuclidLoss(tau=0.3, sigma=0.7), y, W, "euclidean"
    W = xclr_weights(y, label_tau=0.5)
    return L.XCLRLoss(tau=0.3, label_tau=0.5), y, W, "cosine"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["supcon", "soft-supcon", "y-aware", "euclid-euclid", "x-clr"])
def test_matches_numpy(batch, name, device):
    Z, classes, y = batch
    loss_fn, labels, W, sim = _case(name, Z, classes, y)
    assert loss_fn.objective == name and loss_fn.similarity == sim
    Zt = torch.tensor(Z, dtype=torch.float64, device=device, requires_grad=True)
    value = loss_fn(Zt, torch.as_tensor(labels, device=device))
    expected = winfonce_loss(Z, W, tau=0.3, similarity=sim)
    assert value.item() == pytest.approx(expected, rel=1e-10)
    value.backward()
    assert torch.isfinite(Zt.grad).all()
    # the factory builds the same loss, from the registry's parameters
    params = {p: PARAMS[p] for p in get(name).params}
    made = L.make_loss(name, tau=0.3, **params)
    assert type(made) is type(loss_fn)
    assert made(Zt.detach(), torch.as_tensor(labels, device=device)).item() == pytest.approx(
        expected, rel=1e-10
    )


@pytest.mark.parametrize("name", OBJECTIVE_NAMES)
def test_every_registered_objective_has_a_loss_equal_to_numpy(batch, name):
    """make_loss reads the registry: each objective's torch loss equals the numpy w-InfoNCE of
    the registry's own weights."""
    Z, classes, y = batch
    rec = get(name)
    labels = classes if rec.labels == "class" else y
    params = {p: PARAMS[p] for p in rec.params}
    loss = L.make_loss(name, temperature=0.3, **params)
    assert loss.objective == name and loss.similarity == rec.similarity
    W = objective_weights(name, labels, **params)
    expected = winfonce_loss(Z, W, tau=0.3, similarity=rec.similarity)
    assert loss(torch.tensor(Z), torch.as_tensor(labels)).item() == pytest.approx(expected,
                                                                                   rel=1e-10)


def test_repr_shows_every_parameter():
    assert repr(L.YAwareLoss(tau=0.1, sigma=1.0)) == (
        "YAwareLoss(tau=0.1, sigma=1, similarity='cosine', reduction='sum', "
        "empty_rows='skip')")
    text = repr(L.make_loss("soft-supcon", tau=0.2, eps=0.05, reduction="mean",
                            empty_rows="skip"))
    for part in ("tau=0.2", "eps=0.05", "reduction='mean'", "empty_rows='skip'"):
        assert part in text
    assert "label_tau=0.5" in repr(L.XCLRLoss(tau=0.1, label_tau=0.5))


def test_temperature_alias_and_conflicts():
    a = L.SupConLoss(temperature=0.25)
    assert a.tau == a.temperature == 0.25
    assert L.SupConLoss(tau=0.25, temperature=0.25).tau == 0.25
    with pytest.raises(ValueError, match="temperature"):
        L.SupConLoss(tau=0.2, temperature=0.3)
    with pytest.raises(ValueError, match="tau"):
        L.SupConLoss()


def test_make_loss_exposes_empty_rows_and_refuses_foreign_parameters():
    Z = torch.randn(5, 3, generator=torch.Generator().manual_seed(0))
    y = torch.tensor([0, 0, 1, 1, 2])
    per = L.make_loss("soft-supcon", tau=0.5, eps=0.1, empty_rows="skip", reduction="none")(Z, y)
    assert per.shape == (5,) and per[4].item() > 0  # soft-supcon: singletons have mass eps
    skip = L.make_loss("supcon", tau=0.5, empty_rows="skip", reduction="none")(Z, y)
    assert skip[4].item() == 0.0
    with pytest.raises(ValueError, match="sigma"):
        L.make_loss("supcon", tau=0.5, sigma=1.0)


def test_mean_is_the_sum_divided_by_the_anchors_kept():
    Z = torch.randn(7, 3, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    y = torch.tensor([0, 0, 1, 1, 1, 2, 3])  # two anchors without positives
    total = L.SupConLoss(tau=0.5, empty_rows="skip")(Z, y)
    mean = L.SupConLoss(tau=0.5, empty_rows="skip", reduction="mean")(Z, y)
    assert mean.item() == pytest.approx(total.item() / 5, rel=1e-12)


def test_column_normalised_loss_is_the_public_slip(batch):
    Z, _, y = batch
    K = gaussian_kernel_weights(y, sigma=0.7)
    np.fill_diagonal(K, 1.0)  # public code divides by the full kernel's row sums
    W = K / K.sum(1)
    np.fill_diagonal(W, 0.0)
    value = L.YAwareColnormLoss(tau=0.3, sigma=0.7)(torch.tensor(Z), torch.tensor(y))
    assert value.item() == pytest.approx(winfonce_loss(Z, W, tau=0.3), rel=1e-10)


def test_reductions(batch):
    Z, classes, _ = batch
    Zt = torch.tensor(Z)
    per = L.SupConLoss(tau=0.5, reduction="none")(Zt, torch.tensor(classes))
    assert per.shape == (12,)
    total = L.SupConLoss(tau=0.5)(Zt, torch.tensor(classes))
    mean = L.SupConLoss(tau=0.5, reduction="mean")(Zt, torch.tensor(classes))
    assert total.item() == pytest.approx(per.sum().item())
    assert mean.item() == pytest.approx(per.mean().item())


def test_generic_weights_indices_and_weight_fn(batch):
    Z, _, y = batch
    W = gaussian_kernel_weights(y, sigma=0.5)
    Zt = torch.tensor(Z)
    full = L.WInfoNCELoss(tau=0.2, weights=W)
    assert full(Zt, torch.arange(12)).item() == pytest.approx(winfonce_loss(Z, W, tau=0.2))
    # a sub-batch uses the sub-matrix of the dataset weighting
    idx = torch.tensor([0, 3, 5, 7, 11])
    sub = W[np.ix_(idx.numpy(), idx.numpy())]
    assert full(Zt[idx], idx).item() == pytest.approx(winfonce_loss(Z[idx.numpy()], sub, tau=0.2))
    fn = L.WInfoNCELoss(tau=0.2, weight_fn=lambda lab: L.gaussian_weights(lab, sigma=0.5))
    assert fn(Zt, torch.tensor(y)).item() == pytest.approx(winfonce_loss(Z, W, tau=0.2))
    explicit = L.WInfoNCELoss(tau=0.2)(Zt, weights=torch.tensor(W))
    assert explicit.item() == pytest.approx(winfonce_loss(Z, W, tau=0.2))


def test_float32_close(batch):
    Z, classes, _ = batch
    value = L.SupConLoss(tau=0.1)(torch.tensor(Z, dtype=torch.float32), torch.tensor(classes))
    assert value.dtype == torch.float32
    expected = winfonce_loss(Z, supcon_weights(classes), tau=0.1)
    assert value.item() == pytest.approx(expected, rel=1e-5)


def test_euclidean_gradient_finite_at_duplicates():
    Z = torch.tensor([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0]], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([[0.0], [0.0], [1.0]], dtype=torch.float64)
    L.EuclidEuclidLoss(tau=0.5, sigma=1.0)(Z, y).backward()
    assert torch.isfinite(Z.grad).all()


def test_empty_rows():
    Z = torch.randn(5, 3, generator=torch.Generator().manual_seed(0))
    y = torch.tensor([0, 0, 1, 1, 2])  # class 2 has one sample: its anchor has no positive
    with pytest.raises(ValueError, match=r"row 4 .*empty_rows=.skip."):
        L.SupConLoss(tau=0.5, empty_rows="error")(Z, y)  # the strict option
    skip = L.SupConLoss(tau=0.5, empty_rows="skip", reduction="none")(Z, y)
    assert skip[4].item() == 0.0
    kept = winfonce_loss(Z.numpy()[:4], supcon_weights([0, 0, 1, 1]), tau=0.5)
    # dropping the anchor is not the same as dropping the sample (it stays a negative)
    assert skip.sum().item() != pytest.approx(kept)


@pytest.mark.parametrize(
    ("build", "exc", "match"),
    [
        (lambda: L.SupConLoss(tau=0.0), ValueError, "tau"),
        (lambda: L.SoftSupConLoss(tau=0.1, eps=1.5), ValueError, "eps"),
        (lambda: L.YAwareLoss(tau=0.1, sigma=-1.0), ValueError, "sigma"),
        (lambda: L.XCLRLoss(tau=0.1, label_tau=0), ValueError, "label_tau"),
        (lambda: L.WInfoNCELoss(tau=0.1, similarity="dot"), ValueError, "similarity"),
        (lambda: L.WInfoNCELoss(tau=0.1, reduction="avg"), ValueError, "reduction"),
        (lambda: L.make_loss("simclr", tau=0.1), ValueError, "objective"),
        (lambda: L.make_loss("y-aware", tau=0.1), ValueError, "sigma"),
        (lambda: L.make_loss("supcon", tau=0.1, eps=0.5), ValueError, "eps"),
        (lambda: L.WInfoNCELoss(tau=0.1, weight_fn=3), TypeError, "weight_fn"),
    ],
)
def test_bad_options(build, exc, match):
    with pytest.raises(exc, match=match):
        build()


def test_bad_batches():
    loss = L.SupConLoss(tau=0.5)
    with pytest.raises(ValueError, match="labels must have one entry"):
        loss(torch.randn(4, 2), torch.tensor([0, 0, 1]))
    with pytest.raises(ValueError, match="embeddings must be an N x d"):
        loss(torch.randn(4), torch.tensor([0, 0, 1, 1]))
    with pytest.raises(TypeError, match=r"embeddings must be a torch\.Tensor"):
        loss(np.zeros((4, 2)), torch.tensor([0, 0, 1, 1]))
    with pytest.raises(ValueError, match="weights must be 4 x 4"):
        L.WInfoNCELoss(tau=0.5)(torch.randn(4, 2), weights=torch.ones(3, 3))
    with pytest.raises(ValueError, match="finite and >= 0"):
        L.WInfoNCELoss(tau=0.5)(torch.randn(3, 2), weights=-torch.ones(3, 3))
    with pytest.raises(ValueError, match="sample indices"):
        L.WInfoNCELoss(tau=0.5, weights=np.ones((3, 3)))(torch.randn(2, 2), torch.tensor([0, 5]))


# --------------------------------------------------------------------------------------------
# anchors without positives: dropped by default, as pytorch-metric-learning drops them


@pytest.mark.parametrize("seed", range(6))
def test_default_supcon_drops_singletons_exactly_as_pml(seed):
    pml = pytest.importorskip("pytorch_metric_learning.losses")
    g = torch.Generator().manual_seed(seed)
    Z = torch.randn(16, 6, generator=g, dtype=torch.float64, requires_grad=True)
    y = torch.randint(0, 9, (16,), generator=g)  # 16 draws of 9 classes: singletons likely
    y[0] = y[1]  # at least one anchor has a positive
    ours = L.SupConLoss(temperature=0.2, reduction="mean")(Z, y)
    theirs = pml.SupConLoss(temperature=0.2)(Z, y)
    assert ours.item() == pytest.approx(theirs.item(), rel=1e-9)
    (g1,) = torch.autograd.grad(ours, Z)
    (g2,) = torch.autograd.grad(theirs, Z)
    np.testing.assert_allclose(g1.numpy(), g2.numpy(), rtol=1e-7, atol=1e-12)
    # the sum is the mean times the anchors that have a positive
    counts = torch.bincount(y)
    kept = int((counts[y] > 1).sum())
    total = L.SupConLoss(temperature=0.2)(Z, y)
    assert total.item() == pytest.approx(ours.item() * kept, rel=1e-12)


def test_strict_option_and_make_loss_default():
    Z = torch.randn(5, 3, generator=torch.Generator().manual_seed(0))
    y = torch.tensor([0, 0, 1, 1, 2])
    assert L.SupConLoss(tau=0.5).empty_rows == "skip"
    assert L.make_loss("supcon", tau=0.5).empty_rows == "skip"
    assert L.make_loss("y-aware", tau=0.5, sigma=1.0).empty_rows == "skip"  # every module
    assert L.make_loss("supcon", tau=0.5, empty_rows="error").empty_rows == "error"
    with pytest.raises(ValueError, match="row 4"):
        L.make_loss("supcon", tau=0.5, empty_rows="error")(Z, y)
    with pytest.raises(ValueError, match="empty_rows"):
        L.make_loss("supcon", tau=0.5, empty_rows="drop")


def test_a_batch_of_singletons_is_zero_with_a_zero_gradient_as_pml():
    pml = pytest.importorskip("pytorch_metric_learning.losses")
    Z = torch.randn(4, 3, generator=torch.Generator().manual_seed(1), requires_grad=True)
    y = torch.tensor([0, 1, 2, 3])
    for reduction in ("mean", "sum"):
        ours = L.SupConLoss(tau=0.1, reduction=reduction)(Z, y)
        assert ours.item() == 0.0 == pml.SupConLoss(temperature=0.1)(Z, y).item()
        (grad,) = torch.autograd.grad(ours, Z)
        assert torch.equal(grad, torch.zeros_like(Z))


def test_every_loss_module_drops_anchors_without_positives_by_default():
    """A fixed k-NN weighting leaves some anchors of a batch without a neighbour in it: every
    loss module drops them by default (``empty_rows="skip"``), as the mini-batch predictions
    (``anchors_without_positives="drop"``) and pytorch-metric-learning do; ``"error"`` still
    raises on request."""
    from dgp.weights import knn_weights

    X = np.random.default_rng(5).standard_normal((12, 2))
    A = torch.as_tensor(knn_weights(X, 2, symmetrize="mutual", empty_rows=True).toarray())
    idx = torch.tensor([0, 3, 5, 7, 9, 11])
    sub = A[idx][:, idx]
    assert bool((sub.sum(dim=1) == 0).any()), "the batch should hold an anchor without positives"
    Z = torch.as_tensor(np.random.default_rng(6).standard_normal((6, 3)))
    for reduction in ("sum", "mean"):
        got = L.WInfoNCELoss(tau=0.4, weights=A, reduction=reduction)(Z, idx)
        ref = L.winfonce(Z, sub, tau=0.4, reduction=reduction, empty_rows="skip")
        assert got.item() == pytest.approx(ref.item(), rel=1e-12)
    # the anchors kept are those with a positive: the sum of their own terms
    keep = (sub.sum(dim=1) > 0).numpy()
    per = L.winfonce(Z, sub, tau=0.4, reduction="none", empty_rows="skip").numpy()
    assert per[~keep].tolist() == [0.0] * int((~keep).sum())
    with pytest.raises(ValueError, match="no positive weight"):
        L.WInfoNCELoss(tau=0.4, weights=A, empty_rows="error")(Z, idx)
    for name, kw in (("soft-supcon", {"eps": 0.1}), ("y-aware", {"sigma": 1.0}),
                     ("x-clr", {"label_tau": 0.2})):
        assert L.make_loss(name, tau=0.3, **kw).empty_rows == "skip"
