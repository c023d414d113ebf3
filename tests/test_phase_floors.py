"""Loss floors (:func:`dgp.loss_floors`): the optimal, collapsed and random losses against the
loss evaluated on the configurations themselves, brute-force minimisation, direct Monte Carlo
over random embeddings, numerical integration, and the reduction conventions of
pytorch-metric-learning's ``SupConLoss`` and of the SupContrast reference."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import quad
from test_phase import brute_force_min

import dgp
from dgp.design import CONVENTIONS, log_mgf_cosine, loss_floors
from dgp.errors import ParameterError
from dgp.infonce import winfonce_loss
from dgp.weights import objective_weights


def _prototype_embedding(sizes, tau, eps=None):
    p = dgp.supcon_prototypes(sizes, tau=tau, eps=eps)
    lam, U = np.linalg.eigh(p.gram)
    P = U * np.sqrt(np.clip(lam, 0.0, None))
    return P[np.repeat(np.arange(len(sizes)), sizes)]


@pytest.mark.parametrize(("objective", "sizes", "eps", "tau"), [
    ("supcon", [4, 4, 4], None, 0.1),
    ("supcon", [10, 5, 3, 2], None, 0.5),
    ("soft-supcon", [6, 3, 2], 0.05, 1.5),   # past tau*: prototypes
    ("soft-supcon", [6, 3, 2], 0.05, 0.3),   # below tau*: the bound
])
def test_optimal_is_the_loss_of_the_optimal_embedding(objective, sizes, eps, tau):
    labels = np.repeat(np.arange(len(sizes)), sizes)
    W = objective_weights(objective, labels, eps=eps)
    f = loss_floors(objective, sizes=sizes, tau=tau, eps=eps)
    Z = _prototype_embedding(sizes, tau, eps)
    assert f.optimal_sum == pytest.approx(winfonce_loss(Z, W, tau=tau), rel=1e-12)
    assert f.entropic_bound == pytest.approx(dgp.entropic_bound(W), rel=1e-12)
    assert f.optimal_sum >= f.entropic_bound - 1e-9 * abs(f.entropic_bound)
    # no embedding found by brute force does better
    brute = brute_force_min(W, tau=tau, dim=len(sizes), starts=3)
    assert f.optimal_sum <= brute + 1e-9 * abs(brute)


def test_optimal_is_the_entropic_bound_when_attained():
    t = np.linspace(0, 2 * np.pi, 21)[:-1]
    y = np.c_[np.cos(t), np.sin(t)]
    f = loss_floors("y-aware", y, sigma=1.0, tau=0.5, dim=3)
    res = dgp.classify_objective("y-aware", y, sigma=1.0, tau=0.5, dim=3, embed=True)
    W = objective_weights("y-aware", y, sigma=1.0)
    assert "attained" in f.optimal_source
    assert f.optimal_sum == pytest.approx(winfonce_loss(res.embedding, W, tau=0.5), rel=1e-10)


@pytest.mark.parametrize(("objective", "kwargs"), [
    ("supcon", {"sizes": [3, 3, 3, 3]}),
    ("soft-supcon", {"sizes": [3, 3, 2, 2], "eps": 0.2}),
])
@pytest.mark.slow  # more than about 3 s (README test line <= 4 min)
def test_optimal_is_computed_below_the_rank_of_the_free_optimum(objective, kwargs):
    # four classes do not fit in R^2 (their free prototypes have rank >= 3): the floor is the
    # optimum in R^2, as dgp.optimum(W, tau, dim=2) computes it (issue 27: it was null)
    tau, d = 0.2, 2
    f = loss_floors(objective, tau=tau, dim=d, **kwargs)
    labels = np.repeat(np.arange(len(kwargs["sizes"])), kwargs["sizes"])
    W = objective_weights(objective, labels, eps=kwargs.get("eps"))
    opt = dgp.optimum(W, tau=tau, dim=d)
    assert f.optimal_sum == pytest.approx(opt.loss, rel=1e-12)
    assert "R^2" in f.optimal_source and f.per_anchor("pml")["optimal"] is not None
    # independently: no seeded brute-force minimisation over free embeddings in R^2 does better,
    free = loss_floors(objective, tau=tau, **kwargs)
    brute = brute_force_min(W, tau=tau, dim=d, starts=3)
    assert f.optimal_sum <= brute + 1e-7 * abs(brute)
    # and R^2 costs something: strictly above the free-dimension optimum, below the collapse
    assert free.optimal_sum < f.optimal_sum - 1e-6 < f.collapsed_sum


@pytest.mark.parametrize(("objective", "kwargs"), [
    ("supcon", {"sizes": [5, 3, 2]}),
    ("soft-supcon", {"sizes": [5, 3, 1], "eps": 0.2}),
    ("y-aware", {"labels": np.linspace(0, 1, 7)[:, None], "sigma": 0.3}),
])
def test_collapsed_is_the_loss_of_one_point(objective, kwargs):
    f = loss_floors(objective, tau=0.3, **kwargs)
    labels = kwargs.get("labels")
    if labels is None:
        labels = np.repeat(np.arange(len(kwargs["sizes"])), kwargs["sizes"])
    W = objective_weights(objective, labels, eps=kwargs.get("eps"), sigma=kwargs.get("sigma"))
    Z = np.ones((W.shape[0], 4))
    assert f.collapsed_sum == pytest.approx(winfonce_loss(Z, W, tau=0.3), rel=1e-12)


@pytest.mark.parametrize("d", [1, 2, 3, 8])
def test_random_against_direct_monte_carlo(d):
    sizes, tau = [5, 4, 3], 0.5
    labels = np.repeat(np.arange(3), sizes)
    W = objective_weights("soft-supcon", labels, eps=0.1)
    f = loss_floors("soft-supcon", sizes=sizes, eps=0.1, tau=tau, dim=d, samples=3000, seed=1)
    rng = np.random.default_rng(7)
    direct = []
    for _ in range(600):
        Z = rng.standard_normal((labels.size, d))
        Z /= np.linalg.norm(Z, axis=1, keepdims=True)
        direct.append(winfonce_loss(Z, W, tau=tau))
    se = math.hypot(f.random_stderr, np.std(direct) / math.sqrt(len(direct)))
    assert abs(f.random_sum - np.mean(direct)) <= 4.5 * se
    lo, hi = f.random_interval
    assert lo <= f.random_sum <= hi
    assert f.collapsed_sum == lo  # Jensen: a random start costs at least the collapsed loss


@pytest.mark.parametrize("d", [2, 3, 5, 50])
@pytest.mark.parametrize("kappa", [0.5, 5.0, 40.0])
def test_log_mgf_against_integration(d, kappa):
    a = (d - 3) / 2.0
    norm = quad(lambda u: 1.0, -1, 1, weight="alg", wvar=(a, a))[0]
    # integrate e^{kappa (u - 1)} to stay in range, add kappa back
    mgf = quad(lambda u: math.exp(kappa * (u - 1.0)), -1, 1, weight="alg", wvar=(a, a))[0]
    expected = math.log(mgf / norm) + kappa
    assert log_mgf_cosine(kappa, d) == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_log_mgf_series_in_high_dimension():
    """Where the scaled Bessel function underflows, the series takes over; u ~ N(0, 1/d) gives
    log M = kappa^2 / (2d) to leading order."""
    d, kappa = 4000, 10.0
    assert log_mgf_cosine(kappa, d) == pytest.approx(kappa**2 / (2 * d), rel=2e-3)


def test_conventions():
    f = loss_floors("supcon", sizes=[4, 6], tau=0.1, dim=16, base_temperature=0.07)
    s, pml, sc = (f.per_anchor(c) for c in CONVENTIONS)
    assert pml["optimal"] == pytest.approx(s["optimal"] / 10)
    assert sc["collapsed"] == pytest.approx(s["collapsed"] / 10 * 0.1 / 0.07)
    assert pml["collapsed"] == pytest.approx(math.log(9))
    d = f.to_dict()
    assert set(d["conventions"]) == set(CONVENTIONS)
    text = str(f)
    assert "SupContrast" in text and max(len(line) for line in text.splitlines()) <= 80
    with pytest.raises(ParameterError, match="convention"):
        f.per_anchor("mean")


def test_bad_arguments():
    with pytest.raises(ParameterError, match="base_temperature"):
        loss_floors("supcon", sizes=[3, 3], tau=0.1, base_temperature=0)
    with pytest.raises(ParameterError, match="samples"):
        loss_floors("supcon", sizes=[3, 3], tau=0.1, dim=2, samples=1)
    with pytest.raises(ParameterError, match="eps"):
        loss_floors("soft-supcon", sizes=[3, 3], tau=0.1)
    with pytest.raises(ParameterError, match="tau"):
        loss_floors("supcon", sizes=[3, 3], tau=-1.0)


# ----------------------------------------------------------------------------------------------
# the conventions of the reference implementations (torch, optional)
# ----------------------------------------------------------------------------------------------


def _supcontrast_reference(features, labels, temperature, base_temperature):
    """The SupContrast reference ``SupConLoss.forward`` (HobbitLong/SupContrast, losses.py),
    transcribed: features ``[bsz, n_views, dim]`` (normalised), ``contrast_mode='all'``."""
    import torch

    bsz, n_views = features.shape[:2]
    mask = torch.eq(labels.view(-1, 1), labels.view(1, -1)).float()
    contrast = torch.cat(torch.unbind(features, dim=1), dim=0)
    logits = contrast @ contrast.T / temperature
    logits = logits - logits.max(dim=1, keepdim=True)[0].detach()
    mask = mask.repeat(n_views, n_views)
    logits_mask = 1.0 - torch.eye(bsz * n_views, dtype=features.dtype)
    mask = mask * logits_mask
    exp_logits = torch.exp(logits) * logits_mask
    log_prob = logits - torch.log(exp_logits.sum(1, keepdim=True))
    pos = mask.sum(1)
    pos = torch.where(pos < 1e-6, torch.ones_like(pos), pos)
    mean_log_prob_pos = (mask * log_prob).sum(1) / pos
    loss = -(temperature / base_temperature) * mean_log_prob_pos
    return loss.view(n_views, bsz).mean()


@pytest.mark.torch
@pytest.mark.parametrize(("counts", "tau"), [([2, 2, 2], 0.1), ([5, 3, 1, 1], 0.5),
                                             ([6, 2], 0.07)])
def test_floors_match_the_reference_losses_on_the_optimal_embedding(counts, tau):
    torch = pytest.importorskip("torch")
    losses = pytest.importorskip(
        "pytorch_metric_learning.losses",
        reason="pytorch-metric-learning is an optional test dependency: "
        "pip install --no-deps pytorch-metric-learning",
    )
    n_views = 2
    sizes = [n_views * c for c in counts]  # each sample contributes n_views rows
    f = loss_floors("supcon", sizes=sizes, tau=tau, dim=8)
    Z = _prototype_embedding(sizes, tau)
    y = np.repeat(np.arange(len(sizes)), sizes)
    Zt = torch.tensor(Z, dtype=torch.float64)
    pml = losses.SupConLoss(temperature=tau)(Zt, torch.tensor(y)).item()
    assert pml == pytest.approx(f.per_anchor("pml")["optimal"], rel=1e-12)
    collapsed = losses.SupConLoss(temperature=tau)(torch.ones_like(Zt), torch.tensor(y)).item()
    assert collapsed == pytest.approx(f.per_anchor("pml")["collapsed"], rel=1e-12)
    # SupContrast: samples with n_views views; rows of view v are [v * bsz, (v + 1) * bsz)
    sample_labels = np.repeat(np.arange(len(counts)), counts)
    prot = Z[np.cumsum([0, *sizes[:-1]])]  # one prototype per class
    feats = torch.tensor(np.stack([prot[sample_labels]] * n_views, axis=1))
    ref = _supcontrast_reference(feats, torch.tensor(sample_labels), tau, 0.07).item()
    assert ref == pytest.approx(f.per_anchor("supcontrast")["optimal"], rel=1e-12)


@pytest.mark.parametrize("kappa", [1e3, 1e10, 1e100, 1e300])
def test_log_mgf_of_the_cosine_is_exact_for_huge_kappa(kappa):
    # d = 3: the cosine is uniform on [-1, 1], E e^{k u} = sinh(k) / k, so the log is
    # k - log(2 k) + log1p(-e^{-2k}) (the last term is 0 here); d = 1: log cosh k
    assert log_mgf_cosine(kappa, 3) == pytest.approx(kappa - math.log(2.0 * kappa), rel=1e-15)
    assert log_mgf_cosine(kappa, 1) == pytest.approx(kappa - math.log(2.0), rel=1e-15)
    # a larger dimension concentrates the cosine nearer 0: a smaller value (where floats
    # resolve the difference, about log kappa next to kappa)
    if kappa <= 1e10:
        assert log_mgf_cosine(kappa, 8) < log_mgf_cosine(kappa, 3) < log_mgf_cosine(kappa, 1)
