"""GeometryMonitor in every regime: neural-collapse metrics (NC1-NC4) against hand-computed
values and a one-shot NumPy computation from the toolboxes' definitions, the class-level loss
gap to the prediction against DESIGN section 8's formula, the invariants the loss pins, and
the warning where the pairwise cosines are not pinned (K > d + 1, or a report that says so).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import dgp  # noqa: E402
from dgp.errors import ParameterError, ParameterTypeError  # noqa: E402
from dgp.torch import GeometryMonitor  # noqa: E402
from dgp.torch.monitor import UnpinnedComparisonWarning  # noqa: E402

pytestmark = pytest.mark.torch


def two_passes(mon, Z, y):
    """The same data twice, with a reset between: the nearest-centre numbers get their centres."""
    mon.update(torch.tensor(Z), torch.tensor(y))
    mon.reset()
    mon.update(torch.tensor(Z), torch.tensor(y))
    return mon.compute()


def test_nc_metrics_by_hand():
    # class 0 at (1,0) and (0,1), class 1 at (-1,0) and (0,-1): means +-(1/2, 1/2), global 0
    Z = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])
    y = np.array([0, 0, 1, 1])
    W = np.eye(2)  # logits = z: class 0 where the first coordinate is the larger
    mon = GeometryMonitor([[1.0, -1.0], [-1.0, 1.0]], classifier=torch.tensor(W))
    out = two_passes(mon, Z, y)
    # within-class spread (1/2, -1/2)-wise, between-class along (1, 1): orthogonal, NC1 = 0
    assert out["nc1"] == pytest.approx(0.0, abs=1e-12)
    # two centred means of equal norm at cosine -1 = -1/(K-1): a simplex ETF
    for key in ("nc2_equinorm", "nc2_equiangular", "nc2_maxangle", "nc2_etf"):
        assert out[key] == pytest.approx(0.0, abs=1e-12), key
    # NC3: || I/sqrt2 - M/||M||_F ||_F^2 with M = [[.5, .5], [-.5, -.5]] (||M||_F = 1) is
    # (1/sqrt2 - 1/2)^2 + 1/4 + 1/4 + (1/sqrt2 + 1/2)^2 = 2
    assert out["nc3"] == pytest.approx(2.0, rel=1e-12)
    # nearest centre: every sample's own class; the classifier (argmax of the coordinates)
    # says 0 for (1,0), 1 for (0,1), 1 for (-1,0), 0 for (0,-1): two of four disagree
    assert out["ncc_accuracy"] == 1.0
    assert out["nc4"] == 0.5
    assert out["class_mean_norm"] == pytest.approx(math.sqrt(0.5), rel=1e-12)
    assert out["within_class_spread"] == pytest.approx(0.5, rel=1e-12)
    assert out["global_mean_norm"] == pytest.approx(0.0, abs=1e-7)  # sqrt of a rounding


def nc_reference(Z, y, K, W):
    """NC1-NC4 from the definitions (Papyan, Han & Donoho 2020; Zhu et al. 2021) on the
    L2-normalised embeddings, in one shot."""
    H = Z / np.linalg.norm(Z, axis=1, keepdims=True)
    means = np.stack([H[y == c].mean(axis=0) for c in range(K)])
    g = H.mean(axis=0)
    M = means - g
    norms = np.linalg.norm(M, axis=1)
    cos = [M[a] @ M[b] / (norms[a] * norms[b]) for a in range(K) for b in range(K) if a != b]
    P = M @ M.T
    etf = (np.eye(K) - np.ones((K, K)) / K) / np.sqrt(K - 1)
    dist = np.array([[np.sum((h - m) ** 2) for m in means] for h in H])
    ncc = dist.argmin(axis=1)
    clf = (Z @ W.T).argmax(axis=1)
    return {
        "nc2_equinorm": np.std(norms) / np.mean(norms),
        "nc2_equiangular": np.std(cos),
        "nc2_maxangle": np.mean(np.abs(np.array(cos) + 1 / (K - 1))),
        "nc2_etf": np.linalg.norm(P / np.linalg.norm(P) - etf),
        "nc3": np.sum((W / np.linalg.norm(W) - M / np.linalg.norm(M)) ** 2),
        "nc4": np.mean(clf != ncc),
        "ncc_accuracy": np.mean(ncc == y),
        "class_mean_norm": np.linalg.norm(means, axis=1).mean(),
        "class_mean_norm_min": np.linalg.norm(means, axis=1).min(),
        "within_class_spread": np.mean(np.sum((H - means[y]) ** 2, axis=1)),
    }


@pytest.mark.parametrize("seed", range(3))
def test_nc_metrics_equal_the_definitions_whatever_the_batches(seed):
    rng = np.random.default_rng(seed)
    K, d = 4, 5
    y = rng.permutation(np.repeat(np.arange(K), [20, 11, 6, 3]))
    Z = rng.standard_normal((len(y), d)) + 1.5 * np.eye(K, d)[y]
    W = rng.standard_normal((K, d))
    pred = dgp.supcon_prototypes([20, 11, 6, 3], tau=0.5)
    ref = nc_reference(Z, y, K, W)
    lin = torch.nn.Linear(d, K, bias=False).double()
    with torch.no_grad():
        lin.weight.copy_(torch.tensor(W))
    for clf in (torch.tensor(W), lin):
        mon = GeometryMonitor(pred, classifier=clf)
        mon.update(torch.tensor(Z), torch.tensor(y))
        mon.reset()
        for a in range(0, len(y), 7):  # the second pass in batches of 7
            mon.update(torch.tensor(Z[a:a + 7]), torch.tensor(y[a:a + 7]))
        out = mon.compute()
        for key, value in ref.items():
            assert out[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key


def supcon_class_loss(G, sizes, tau):
    """DESIGN section 8: sum_c n_c log((n_c - 1) + sum_{c' != c} n_c' exp((G_cc' - 1)/tau))."""
    n = np.asarray(sizes, dtype=float)
    total = 0.0
    for c in range(len(n)):
        other = sum(n[k] * math.exp((G[c, k] - 1) / tau) for k in range(len(n)) if k != c)
        total += n[c] * math.log(n[c] - 1 + other)
    return total


def test_loss_gap_is_the_class_level_loss_difference_per_anchor():
    sizes, tau = [30, 12, 5, 3], 0.3
    pred = dgp.supcon_prototypes(sizes, tau=tau)
    N = sum(sizes)
    rng = np.random.default_rng(1)
    y = np.repeat(np.arange(4), sizes)
    Z = rng.standard_normal((N, 6)) + 2.0 * np.eye(4, 6)[y]
    mon = GeometryMonitor(pred)
    mon.update(torch.tensor(Z), torch.tensor(y))
    out = mon.compute()
    G = mon.learned_gram()
    expected = (supcon_class_loss(G, sizes, tau) - supcon_class_loss(pred.gram, sizes, tau)) / N
    assert out["loss_gap"] == pytest.approx(expected, rel=1e-9)
    assert out["loss_gap"] > 0  # the prediction is the optimum over every Gram
    assert out["predicted_loss"] == pytest.approx(pred.loss / N, rel=1e-9)
    # samples on the prototypes (rotated, any lengths): no gap, every invariant as predicted
    Q, _ = np.linalg.qr(rng.standard_normal((6, 6)))
    P = np.pad(pred.embedding, ((0, 0), (0, 6 - pred.embedding.shape[1]))) @ Q
    on = GeometryMonitor(pred)
    on.update(torch.tensor(rng.uniform(0.5, 2, (N, 1)) * P[y]), torch.tensor(y))
    out = on.compute()
    assert abs(out["loss_gap"]) < 1e-12
    assert out["spectrum_gap"] < 1e-9
    assert out["global_mean_norm"] == pytest.approx(out["predicted_global_mean_norm"], rel=1e-9)
    assert out["class_mean_norm_min"] == pytest.approx(1.0, rel=1e-12)
    assert out["within_class_spread"] < 1e-12
    # without the temperature there is no loss to compare
    assert "loss_gap" not in GeometryMonitor(pred.gram, sizes=sizes).compute()
    assert "loss_gap" in GeometryMonitor(pred.gram, sizes=sizes, tau=tau).compute()


def test_spectrum_gap_sees_what_cosines_cannot():
    """A rotation of the classes' directions keeps the spectrum; a different rank does not."""
    sizes = [10, 10, 10, 10]
    simplex = dgp.supcon_prototypes(sizes, tau=0.5)  # rank 3
    y = np.repeat(np.arange(4), 10)
    flat = np.array([[1.0, 0], [0, 1], [-1, 0], [0, -1]])  # a square: rank 2
    mon = GeometryMonitor(simplex)
    mon.update(torch.tensor(flat[y]), torch.tensor(y))
    with pytest.warns(UnpinnedComparisonWarning):
        out = mon.compute()
    # spectra of G/4: simplex 1/3, 1/3, 1/3, 0; square 1/2, 1/2, 0, 0: the largest difference,
    # the third eigenvalue's 1/3, relative to the simplex's top 1/3, is 1
    assert out["spectrum_gap"] == pytest.approx(1.0, rel=1e-9)
    assert out["gram_rms_pinned"] == 0.0  # K = 4 > d + 1 = 3


def make_pred(K):
    return dgp.supcon_prototypes([8] * K, tau=0.5)  # the simplex, rank K - 1


def test_warning_fires_when_K_exceeds_d_plus_one_and_only_then():
    K = 5
    pred = make_pred(K)
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(K), 4)
    for d, pinned in ((3, False), (4, True), (6, True)):
        mon = GeometryMonitor(pred)
        mon.update(torch.tensor(rng.standard_normal((len(y), d))), torch.tensor(y))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = mon.compute()
            again = mon.compute()
        unpinned = [w for w in caught if issubclass(w.category, UnpinnedComparisonWarning)]
        assert out["gram_rms_pinned"] == again["gram_rms_pinned"] == float(pinned), d
        assert len(unpinned) == (0 if pinned else 1), d  # once per monitor, not per compute
        if not pinned:
            assert "K > d + 1" in str(unpinned[0].message)
            assert "loss_gap" in str(unpinned[0].message)
    # before any batch the dimension is unknown: undecided, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert math.isnan(GeometryMonitor(pred).compute()["gram_rms_pinned"])


def test_a_report_that_cosines_are_not_pinned_warns_in_any_dimension():
    pred = make_pred(3)
    mon = GeometryMonitor(pred, pinned={"pairwise cosines": False, "spectrum": True})
    with pytest.warns(UnpinnedComparisonWarning, match="identifiability"):
        out = mon.compute()
    assert out["gram_rms_pinned"] == 0.0
    mon.update(torch.eye(3, 8, dtype=torch.float64), torch.tensor([0, 1, 2]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once already
        assert mon.compute()["gram_rms_pinned"] == 0.0
    ok = GeometryMonitor(pred, pinned={"pairwise cosines": True})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ok.compute()["gram_rms_pinned"] == 1.0


def test_bad_new_arguments_are_named():
    pred = make_pred(3)
    with pytest.raises(ParameterTypeError, match="classifier"):
        GeometryMonitor(pred, classifier=torch.zeros(4, 2))  # 4 rows for 3 classes
    with pytest.raises(ParameterTypeError, match="pinned"):
        GeometryMonitor(pred, pinned={"pairwise cosines": "no"})
    with pytest.raises(ParameterError, match="tau"):
        GeometryMonitor(pred, tau=0.1)  # the prediction's tau is 0.5
    with pytest.raises(ParameterError, match="eps"):
        GeometryMonitor(pred.gram, eps=0.1)
