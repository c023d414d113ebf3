"""dgp.torch.GeometryMonitor: streaming class geometry of a training run against the prediction.

The numbers are checked against a one-shot NumPy computation written from the definitions
(centred within-class scatter, explicit pseudo-inverse), on a tiny seeded SupCon training loop
(dgp's loss and pytorch-metric-learning's), and for the invariances they must have.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

import dgp  # noqa: E402
from dgp.errors import InputError, InputTypeError, ParameterError  # noqa: E402
from dgp.torch import GeometryMonitor, SupConLoss  # noqa: E402
from dgp.torch.training import cpu_threads  # noqa: E402

pytestmark = pytest.mark.torch

SIZES = (24, 16, 6, 6)
TAU = 0.5
# nearest-centre numbers: a first pass is judged against its own class means at compute()
# (issue 42), so no key is nan once every class has a direction
FIRST_PASS_NAN: set[str] = set()


@pytest.fixture(scope="module")
def pred():
    return dgp.supcon_prototypes(SIZES, tau=TAU)


def reference(Z: np.ndarray, y: np.ndarray, target: np.ndarray, sizes) -> dict[str, float]:
    """The monitor's numbers from the definitions, on all the data at once."""
    H = Z / np.linalg.norm(Z, axis=1, keepdims=True)
    K = target.shape[0]
    means = np.stack([H[y == c].mean(axis=0) for c in range(K)])
    U = means / np.linalg.norm(means, axis=1, keepdims=True)
    G = U @ U.T
    off = ~np.eye(K, dtype=bool)
    simplex = np.where(off, -1.0 / (K - 1), 1.0)
    R = H - means[y]
    sigma_w = R.T @ R / len(y)
    C = means - H.mean(axis=0)
    sigma_b = C.T @ C / K
    nc1 = np.trace(sigma_w @ np.linalg.pinv(sigma_b, rcond=1e-9, hermitian=True)) / K
    s = np.asarray(sizes)
    minority, majority = s < np.median(s), s > np.median(s)
    return {
        "gram_rms": float(np.sqrt(np.mean((G - target)[off] ** 2))),
        "gram_rms_simplex": float(np.sqrt(np.mean((G - simplex)[off] ** 2))),
        "nc1": float(nc1),
        "cosine_minority_majority": float(G[np.ix_(minority, majority)].mean()),
    }


def toy_data(seed: int = 0, noise: float = 0.1):
    """Separable classes of SIZES samples in R^8 around orthogonal centres."""
    g = torch.Generator().manual_seed(seed)
    y = torch.cat([torch.full((n,), c) for c, n in enumerate(SIZES)])
    X = 3.0 * torch.eye(len(SIZES), 8)[y] + noise * torch.randn(len(y), 8, generator=g)
    return X, y


def monitored(enc, X, y, mon, batch=16):
    mon.reset()
    with torch.no_grad():
        for i in range(0, len(y), batch):
            mon.update(enc(X[i:i + batch]), y[i:i + batch])
    return mon.compute()


def train(loss_fn, mon, steps=150, every=30, seed=0):
    X, y = toy_data(seed)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        enc = torch.nn.Linear(8, 4, bias=False)
    opt = torch.optim.Adam(enc.parameters(), lr=0.08)
    history = []
    with cpu_threads(1):  # a 52 x 4 problem: more threads only contend
        _loop(loss_fn, mon, enc, opt, X, y, steps, every, history)
    return history, enc, X, y


def _loop(loss_fn, mon, enc, opt, X, y, steps, every, history):
    for step in range(steps + 1):
        if step % every == 0:
            history.append(monitored(enc, X, y, mon))
        if step == steps:
            break
        opt.zero_grad()
        loss_fn(enc(X), y).backward()
        opt.step()


def test_training_approaches_the_prediction_not_the_simplex(pred):
    # the prediction is far enough from the simplex for the comparison to mean something
    K = len(SIZES)
    off = ~np.eye(K, dtype=bool)
    gap = np.sqrt(np.mean((pred.gram - np.where(off, -1 / (K - 1), 1.0))[off] ** 2))
    assert gap > 0.05
    mon = GeometryMonitor(pred)
    hist, enc, X, y = train(SupConLoss(tau=TAU, reduction="mean"), mon)
    rms = [h["gram_rms"] for h in hist]
    assert rms[0] > 0.3
    assert rms[-1] < 0.02 and rms[-1] < rms[0] / 20
    assert rms[-1] <= min(rms[1:]) + 1e-3  # it ends near its best: the decrease is real
    last = hist[-1]
    assert last["gram_rms_simplex"] == pytest.approx(gap, abs=0.02)
    assert last["cosine_minority_majority"] == pytest.approx(
        last["predicted_cosine_minority_majority"], abs=0.02)
    assert last["nc1"] < hist[0]["nc1"]
    # and the streaming numbers are those of the definitions on the same data
    with torch.no_grad():
        Z = enc(X).double().numpy()
    ref = reference(Z, y.numpy(), pred.gram, SIZES)
    for key, value in ref.items():
        assert last[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key


def test_works_with_pytorch_metric_learning(pred):
    pml = pytest.importorskip("pytorch_metric_learning.losses")
    mon = GeometryMonitor(pred)
    hist, *_ = train(pml.SupConLoss(temperature=TAU), mon)
    assert hist[0]["gram_rms"] > 0.3
    assert hist[-1]["gram_rms"] < 0.02


def _batches(Z, y, cuts):
    edges = [0, *cuts, len(y)]
    return [(Z[a:b], y[a:b]) for a, b in itertools.pairwise(edges)]


def test_streaming_equals_one_shot(pred):
    rng = np.random.default_rng(3)
    y = rng.permutation(np.repeat(np.arange(4), [30, 20, 9, 7]))
    Z = rng.standard_normal((len(y), 5)) + 2.0 * np.eye(4, 5)[y]
    ref = reference(Z, y, pred.gram, SIZES)
    one = GeometryMonitor(pred)
    one.update(torch.tensor(Z), torch.tensor(y))
    many = GeometryMonitor(pred)
    for Zb, yb in _batches(Z, y, [1, 7, 8, 33, 50]):  # uneven, one of a single sample
        many.update(torch.tensor(Zb, dtype=torch.float64), torch.tensor(yb))
    a, b = one.compute(), many.compute()
    assert a.keys() == b.keys()
    for key in a:
        assert a[key] == pytest.approx(b[key], rel=1e-12, abs=1e-14, nan_ok=True), key
    for key, value in ref.items():
        assert a[key] == pytest.approx(value, rel=1e-10, abs=1e-13), key
    assert a["samples_seen"] == len(y) and a["classes_seen"] == 4
    H = Z / np.linalg.norm(Z, axis=1, keepdims=True)
    U = np.stack([H[y == c].mean(axis=0) for c in range(4)])
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    np.testing.assert_allclose(many.learned_gram(), U @ U.T, rtol=0, atol=1e-13)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), cuts=st.lists(st.integers(1, 59), max_size=6),
       perm=st.permutations(range(4)))
def test_batching_and_class_names_never_matter(pred, seed, cuts, perm):
    """Any split into batches and any renaming of the classes (with the prediction renamed
    alike) give the numbers of one batch, to rounding."""
    rng = np.random.default_rng(seed)
    y = np.concatenate([np.arange(4), rng.integers(0, 4, 56)])  # every class present
    Z = rng.standard_normal((60, 5)) + rng.uniform(0, 3) * np.eye(4, 5)[y]
    perm = np.asarray(perm)
    inv = np.argsort(perm)
    one = GeometryMonitor(pred.gram, sizes=SIZES)
    one.update(torch.tensor(Z), torch.tensor(y))
    renamed = GeometryMonitor(pred.gram[np.ix_(inv, inv)], sizes=[SIZES[i] for i in inv])
    for Zb, yb in _batches(Z, perm[y], sorted(set(cuts))):
        renamed.update(torch.tensor(Zb), torch.tensor(yb))
    a, b = one.compute(), renamed.compute()
    assert a.keys() == b.keys()
    for key in a:
        assert b[key] == pytest.approx(a[key], rel=1e-9, abs=1e-12,
                                                nan_ok=True), key


def test_permuting_the_classes_permutes_nothing_else(pred):
    rng = np.random.default_rng(5)
    y = rng.integers(0, 4, 60)
    Z = torch.tensor(rng.standard_normal((60, 6)))
    perm = np.array([2, 0, 3, 1])  # class c is called perm[c]
    inv = np.argsort(perm)
    G = pred.gram
    a = GeometryMonitor(G, sizes=SIZES)
    b = GeometryMonitor(G[np.ix_(inv, inv)], sizes=[SIZES[i] for i in inv])
    a.update(Z, torch.tensor(y))
    b.update(Z, torch.tensor(perm[y]))
    ra, rb = a.compute(), b.compute()
    for key in ra:
        assert ra[key] == pytest.approx(rb[key], rel=1e-12, abs=1e-14, nan_ok=True), key


def test_rotation_and_scale_of_embeddings_change_nothing(pred):
    rng = np.random.default_rng(7)
    y = rng.integers(0, 4, 50)
    Z = rng.standard_normal((50, 6)) + np.eye(4, 6)[y]
    Q, _ = np.linalg.qr(rng.standard_normal((6, 6)))
    scale = rng.uniform(0.1, 10.0, (50, 1))
    a, b = GeometryMonitor(pred), GeometryMonitor(pred)
    a.update(torch.tensor(Z), torch.tensor(y))
    b.update(torch.tensor(scale * Z @ Q), torch.tensor(y))
    ra, rb = a.compute(), b.compute()
    for key in ra:
        assert ra[key] == pytest.approx(rb[key], rel=1e-9, abs=1e-12,
                                                nan_ok=True), key


def test_prototype_forms_agree(pred):
    rng = np.random.default_rng(11)
    y = rng.integers(0, 4, 40)
    Z = torch.tensor(rng.standard_normal((40, 3)))
    vectors = 2.5 * pred.embedding  # K x rank rows, any length
    outs = []
    for protos in (pred, pred.gram, vectors, torch.tensor(vectors)):
        mon = GeometryMonitor(protos, sizes=SIZES, tau=TAU)
        mon.update(Z, torch.tensor(y))
        outs.append(mon.compute())
    for out in outs[1:]:
        for key in outs[0]:
            assert out[key] == pytest.approx(outs[0][key], rel=1e-9, abs=1e-12,
                                                nan_ok=True), key


def test_collapsed_embeddings_sit_on_their_target(pred):
    # every sample at its class prototype (rotated, scaled): distance 0, no spread
    rng = np.random.default_rng(2)
    y = np.repeat(np.arange(4), SIZES)
    Q, _ = np.linalg.qr(rng.standard_normal((5, 5)))
    P = np.pad(pred.embedding, ((0, 0), (0, 5 - pred.embedding.shape[1]))) @ Q
    Z = rng.uniform(0.5, 2.0, (len(y), 1)) * P[y]
    mon = GeometryMonitor(pred, uniform=dgp.supcon_prototypes([5, 5, 5, 5], tau=TAU).gram)
    mon.update(torch.tensor(Z), torch.tensor(y))
    out = mon.compute()
    assert out["gram_rms"] < 1e-12
    assert out["nc1"] < 1e-12
    # balanced SupCon is the simplex: the uniform and simplex distances coincide
    assert out["gram_rms_uniform"] == pytest.approx(out["gram_rms_simplex"], rel=1e-12)
    assert out["cosine_minority_majority"] == pytest.approx(
        out["predicted_cosine_minority_majority"], abs=1e-12)


def test_absent_classes_are_nan_and_counted(pred):
    mon = GeometryMonitor(pred)
    out = mon.compute()
    assert out["samples_seen"] == 0 and out["classes_seen"] == 0
    assert math.isnan(out["gram_rms"]) and math.isnan(out["nc1"])
    Z = torch.randn(6, 4, generator=torch.Generator().manual_seed(0))
    mon.update(Z, torch.tensor([0, 0, 1, 1, 2, 2]))
    out = mon.compute()
    assert (out["samples_seen"], out["classes_seen"]) == (6, 3)
    assert math.isnan(out["gram_rms"]) and math.isnan(out["cosine_minority_majority"])
    assert math.isfinite(out["predicted_cosine_minority_majority"])  # from the prediction alone
    G = mon.learned_gram()
    assert np.isnan(G[3]).all() and np.isnan(G[:, 3]).all() and np.isfinite(G[:3, :3]).all()
    mon.update(Z[:2], torch.tensor([3, 3]))
    assert all(math.isfinite(v) for k, v in mon.compute().items() if k not in FIRST_PASS_NAN)
    G = mon.learned_gram()
    assert np.allclose(np.diag(G), 1.0) and np.allclose(G, G.T)
    assert np.linalg.eigvalsh(G).min() > -1e-12  # a Gram of unit vectors
    mon.reset()
    assert mon.compute()["samples_seen"] == 0


def test_minority_and_majority_by_the_median():
    G = dgp.supcon_prototypes([50, 10, 10], tau=TAU).gram
    out = GeometryMonitor(G, sizes=[50, 10, 10]).compute()  # ties make up the empty side
    assert out["predicted_cosine_minority_majority"] == pytest.approx((G[0, 1] + G[0, 2]) / 2)
    out = GeometryMonitor(G, sizes=[50, 50, 10]).compute()
    assert out["predicted_cosine_minority_majority"] == pytest.approx((G[2, 0] + G[2, 1]) / 2)
    assert math.isnan(GeometryMonitor(G, sizes=[7, 7, 7]).compute()[
        "predicted_cosine_minority_majority"])
    assert "cosine_minority_majority" not in GeometryMonitor(G).compute()  # sizes unknown


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_low_precision_and_grad_inputs(pred, dtype):
    rng = np.random.default_rng(4)
    y = torch.tensor(rng.integers(0, 4, 64))
    Z = torch.tensor(rng.standard_normal((64, 8)) + 3 * np.eye(4, 8)[y.numpy()])
    exact = GeometryMonitor(pred)
    exact.update(Z, y)
    low = GeometryMonitor(pred)
    Zl = Z.to(dtype).requires_grad_(True)
    low.update(Zl, y)
    assert Zl.grad is None
    a, b = exact.compute(), low.compute()
    for key in ("gram_rms", "gram_rms_simplex"):
        assert b[key] == pytest.approx(a[key], abs=2e-2), key


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_on_cuda_equals_cpu(pred):
    rng = np.random.default_rng(6)
    y = torch.tensor(rng.integers(0, 4, 64))
    Z = torch.tensor(rng.standard_normal((64, 8)), dtype=torch.float32)
    cpu, gpu = GeometryMonitor(pred), GeometryMonitor(pred)
    cpu.update(Z, y)
    gpu.update(Z.cuda(), y.cuda())
    a, b = cpu.compute(), gpu.compute()
    for key in a:
        assert b[key] == pytest.approx(a[key], rel=1e-9, abs=1e-12,
                                                nan_ok=True), key


def test_bad_input_is_named(pred):
    with pytest.raises(ParameterError, match="prototypes"):
        GeometryMonitor(np.ones(3))
    with pytest.raises(ParameterError, match="zero row"):
        GeometryMonitor(np.array([[1.0, 0.0], [0.0, 0.0], [1.0, 1.0]]))
    with pytest.raises(ParameterError, match="sizes"):
        GeometryMonitor(pred, sizes=[24, 16, 6, 7])
    with pytest.raises(ParameterError, match="uniform"):
        GeometryMonitor(pred, uniform=np.eye(3))
    mon = GeometryMonitor(pred)
    Z = torch.zeros(3, 4) + 1.0
    with pytest.raises(InputError, match=r"classes 0\.\.3 .*got 4"):
        mon.update(Z, torch.tensor([0, 1, 4]))
    with pytest.raises(InputTypeError, match="integer"):
        mon.update(Z, torch.tensor([0.0, 1.0, 2.0]))
    with pytest.raises(InputTypeError, match="embeddings"):
        mon.update(np.ones((3, 4)), torch.tensor([0, 1, 2]))
    with pytest.raises(InputError, match="NaN"):
        mon.update(torch.full((3, 4), math.nan), torch.tensor([0, 1, 2]))
    mon.update(Z, torch.tensor([0, 1, 2]))
    with pytest.raises(InputError, match="dimension 5"):
        mon.update(torch.ones(3, 5), torch.tensor([0, 1, 2]))
    with pytest.raises(InputError, match="3 entries for 2"):
        mon.update(torch.ones(2, 4), torch.tensor([0, 1, 2]))


def test_a_rejected_batch_leaves_no_trace(pred):
    mon = GeometryMonitor(pred)
    with pytest.raises(InputError):
        mon.update(torch.ones(3, 4), torch.tensor([0, 1, 9]))
    assert mon.compute()["samples_seen"] == 0
    mon.update(torch.ones(2, 5), torch.tensor([0, 1]))  # its dimension was not fixed
    assert (mon.compute()["samples_seen"], repr(mon)) == (
        2, "GeometryMonitor(K=4, samples_seen=2, classes_seen=2)")


def test_a_class_of_zero_vectors_is_seen_but_has_no_geometry(pred):
    """Samples of norm 0 count in their class (classes_seen, zero_norm_samples) but give it no
    direction: every geometry value, nc1 included, is nan until the class has one."""
    mon = GeometryMonitor(pred, sizes=SIZES)
    Z = torch.randn(6, 4, generator=torch.Generator().manual_seed(1))
    mon.update(Z, torch.tensor([0, 0, 1, 1, 2, 2]))
    mon.update(torch.zeros(2, 4), torch.tensor([3, 3]))
    out = mon.compute()
    assert (out["classes_seen"], out["zero_norm_samples"]) == (4, 2)
    for key in ("gram_rms", "gram_rms_simplex", "nc1", "cosine_minority_majority"):
        assert math.isnan(out[key]), key
    assert np.isnan(mon.learned_gram()[3]).all()
    mon.update(Z[:1], torch.tensor([3]))  # one real direction: everything is defined
    assert all(math.isfinite(v) for k, v in mon.compute().items() if k not in FIRST_PASS_NAN)
