"""dgp.torch.TargetedSupConLoss: SupCon with fixed class targets, as TSC trains.

Checked against an independent loop over anchors written here from TSC's recipe (targets
appended to the contrast set, the assigned target one more positive of each anchor of its class,
targets not anchors), its gradient by central differences, its limits (no targets: SupCon, dgp's
and pytorch-metric-learning's; a heavy target weight: a softmax classifier onto the targets), a
symmetric stationary point, and the Hungarian assignment against brute force.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import dgp  # noqa: E402
from dgp.errors import InputError, ParameterError  # noqa: E402
from dgp.torch import SupConLoss, TargetedSupConLoss, hungarian_assignment  # noqa: E402

pytestmark = pytest.mark.torch


def simplex(K: int) -> np.ndarray:
    """K unit vectors in R^K with pairwise cosine -1/(K-1)."""
    C = np.eye(K) - 1.0 / K
    return C / np.linalg.norm(C, axis=1, keepdims=True)


def reference(Z, y, T, a, tau, lam=1.0, target_anchors=False):
    """Per-anchor TSC loss by an explicit loop (float64): anchors are the batch samples (and the
    targets when asked), the contrast set every other point of batch + targets."""
    H = Z / np.linalg.norm(Z, axis=1, keepdims=True)
    Tn = T / np.linalg.norm(T, axis=1, keepdims=True)
    X = np.vstack([H, Tn])
    B, M = len(y), len(Tn)
    owner = {int(a[c]): c for c in range(len(a))}  # target row -> class
    out = []
    for i in range(B + M if target_anchors else B):
        others = [j for j in range(B + M) if j != i]
        s = np.array([X[i] @ X[j] / tau for j in others])
        lse = math.log(sum(math.exp(v) for v in s))
        w = []
        for j in others:
            if i < B:
                if j < B:
                    w.append(1.0 if y[j] == y[i] else 0.0)
                else:
                    w.append(lam if j - B == a[y[i]] else 0.0)
            else:
                c = owner.get(i - B, -1)
                w.append(1.0 if j < B and y[j] == c else 0.0)
        w = np.array(w)
        out.append(0.0 if w.sum() == 0 else float(-(w * (s - lse)).sum() / w.sum()))
    return np.array(out)


def batch(seed, B=7, d=3, K=4):
    rng = np.random.default_rng(seed)
    y = np.concatenate([[0, 0, 1, 2], rng.integers(0, K, B - 4)])  # class 3 may be absent
    Z = rng.standard_normal((B, d))
    return Z, y


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("lam", "anchors"), [(1.0, False), (0.3, False), (2.0, True)])
def test_value_equals_the_loop_over_anchors(seed, lam, anchors):
    Z, y = batch(seed)
    rng = np.random.default_rng(100 + seed)
    T = rng.standard_normal((5, 3))  # M = 5 targets for K = 4 classes: one unassigned
    a = np.array([3, 0, 4, 1])
    ref = reference(Z, y, T, a, 0.2, lam, anchors)
    loss = TargetedSupConLoss(T, tau=0.2, assignment=a, target_weight=lam, target_anchors=anchors,
                              reduction="none")
    per = loss(torch.tensor(Z), torch.tensor(y)).numpy()
    np.testing.assert_allclose(per, ref, rtol=1e-12, atol=1e-12)
    kept = ref[ref != 0]
    for red, value in (("sum", ref.sum()), ("mean", kept.mean())):
        loss.reduction = red
        assert loss(torch.tensor(Z), torch.tensor(y)).item() == pytest.approx(value, rel=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_gradient_equals_central_differences(seed):
    Z, y = batch(seed, B=6)
    T = simplex(4)[:, :3] + 0.1  # any fixed rows
    a = np.array([1, 2, 0, 3])
    Zt = torch.tensor(Z, requires_grad=True)
    TargetedSupConLoss(T, tau=0.3, assignment=a, target_weight=0.7)(Zt, torch.tensor(y)).backward()
    h = 1e-6
    num = np.zeros_like(Z)
    for i, k in itertools.product(range(Z.shape[0]), range(Z.shape[1])):
        Zp, Zm = Z.copy(), Z.copy()
        Zp[i, k] += h
        Zm[i, k] -= h
        num[i, k] = (reference(Zp, y, T, a, 0.3, 0.7).sum()
                     - reference(Zm, y, T, a, 0.3, 0.7).sum()) / (2 * h)
    np.testing.assert_allclose(Zt.grad.numpy(), num, rtol=1e-6, atol=1e-7)


def test_without_targets_it_is_supcon_and_pml():
    pml = pytest.importorskip("pytorch_metric_learning.losses")
    for seed in range(5):
        g = torch.Generator().manual_seed(seed)
        Z = torch.randn(12, 5, generator=g, dtype=torch.float64)
        y = torch.tensor([0, 0, 0, 1, 1, 2, 3, 3, 4, 5, 5, 6])  # singletons 2, 4, 6
        ours = TargetedSupConLoss(None, temperature=0.1, reduction="mean")(Z, y)
        assert ours.item() == pytest.approx(
            SupConLoss(temperature=0.1, reduction="mean")(Z, y).item(), rel=1e-12)
        assert ours.item() == pytest.approx(pml.SupConLoss(temperature=0.1)(Z, y).item(),
                                            rel=1e-9)
        total = TargetedSupConLoss(None, tau=0.1)(Z, y)
        assert total.item() == pytest.approx(SupConLoss(tau=0.1)(Z, y).item(), rel=1e-12)


def test_heavy_target_weight_is_a_softmax_onto_the_targets():
    """As lambda grows the positives reduce to the target: loss_i -> -s_it + log sum_j e^s_ij."""
    Z, y = batch(1)
    T = simplex(4)[:, :3] + np.array([0.0, 0.2, -0.1])
    X = np.vstack([Z / np.linalg.norm(Z, axis=1, keepdims=True),
                   T / np.linalg.norm(T, axis=1, keepdims=True)])
    S = X @ X.T / 0.5
    np.fill_diagonal(S, -np.inf)
    B = len(y)
    limit = [-S[i, B + y[i]] + np.log(np.exp(S[i]).sum()) for i in range(B)]
    per = TargetedSupConLoss(T, tau=0.5, target_weight=1e9, reduction="none")(
        torch.tensor(Z), torch.tensor(y))
    np.testing.assert_allclose(per.numpy(), limit, rtol=1e-7)


def test_collapsed_on_simplex_targets_is_stationary_and_a_wrong_target_pulls_back():
    K = 4
    T = simplex(K)
    y = np.repeat(np.arange(K), 2)
    Z = torch.tensor(2.0 * T[y], requires_grad=True)  # every sample on its own target
    loss = TargetedSupConLoss(T, tau=0.1)
    loss(Z, torch.tensor(y)).backward()
    assert Z.grad.abs().max().item() < 1e-9  # symmetric: no tangential force at all
    # one sample per class, each sitting on the next class's target: -grad points home
    y1 = np.arange(K)
    Z1 = torch.tensor(T[(y1 + 1) % K], requires_grad=True)
    loss(Z1, torch.tensor(y1)).backward()
    for i in range(K):
        h = T[(i + 1) % K]
        home = T[i] - (T[i] @ h) * h  # the tangent direction towards the own target
        g = -Z1.grad[i].numpy()
        assert g @ h == pytest.approx(0.0, abs=1e-9)  # gradients of a cosine are tangent
        assert g @ home / (np.linalg.norm(g) * np.linalg.norm(home)) > 0.9


def test_every_anchor_has_a_positive_with_targets():
    """A class with one sample still gets a pull (its target), unlike plain SupCon."""
    Z = torch.randn(3, 2, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    y = torch.tensor([0, 1, 2])  # three singletons
    per = TargetedSupConLoss(simplex(3)[:, :2] + 0.1, tau=0.2, reduction="none")(Z, y)
    assert (per > 0).all()
    assert SupConLoss(tau=0.2)(Z, y).item() == 0.0  # SupCon: nothing to learn from
    z = torch.tensor([[0.0, 2.0]], dtype=torch.float64)
    one = TargetedSupConLoss(np.eye(2), tau=0.2)(z, torch.tensor([1]))
    assert one.item() == pytest.approx(math.log(1 + math.exp(-5.0)), rel=1e-6)  # B = 1 works
    with pytest.raises(InputError, match="anchor 2"):
        TargetedSupConLoss(np.eye(3), tau=0.2, target_weight=0.0, empty_rows="error")(
            torch.randn(3, 3), torch.tensor([0, 0, 1]))


def brute_force(C, T):
    cos = (C / np.linalg.norm(C, axis=1, keepdims=True)) @ (T / np.linalg.norm(
        T, axis=1, keepdims=True)).T
    best = max(itertools.permutations(range(len(T)), len(C)),
               key=lambda p: sum(cos[c, p[c]] for c in range(len(C))))
    return list(best)


@pytest.mark.parametrize("seed", range(6))
def test_hungarian_assignment_is_the_best_matching(seed):
    rng = np.random.default_rng(seed)
    T = rng.standard_normal((5, 3))
    C = rng.standard_normal((4, 3))
    assert hungarian_assignment(C, T).tolist() == brute_force(C, T)


def test_hungarian_is_computed_once_and_stated():
    rng = np.random.default_rng(0)
    K, T = 4, simplex(4)
    perm = np.array([2, 0, 3, 1])  # class c's samples sit near target perm[c]
    y = np.repeat(np.arange(K), [9, 5, 2, 1])
    Z = T[perm[y]] + 0.1 * rng.standard_normal((len(y), K))
    loss = TargetedSupConLoss(T, tau=0.1, assignment="hungarian")
    assert loss.assignment is None
    with pytest.raises(InputError, match="assign"):
        loss(torch.tensor(Z[:14]), torch.tensor(y[:14]))  # classes 2 and 3 missing
    assert loss.assign(torch.tensor(Z), torch.tensor(y)).tolist() == perm.tolist()
    value = loss(torch.tensor(Z[:5]), torch.tensor(y[:5]))
    fixed = TargetedSupConLoss(T, tau=0.1, assignment=perm)
    assert value.item() == pytest.approx(fixed(torch.tensor(Z[:5]), torch.tensor(y[:5])).item())
    assert loss.assignment.tolist() == perm.tolist()  # kept, not re-matched per batch
    auto = TargetedSupConLoss(T, tau=0.1, assignment="hungarian")
    auto(torch.tensor(Z), torch.tensor(y))  # a batch with every class assigns
    assert auto.assignment.tolist() == perm.tolist()
    assert "assignment='hungarian'" in repr(auto)


@pytest.mark.slow
def test_dgp_prototypes_plug_in_and_train_in_mini_batches():
    """Targets from dgp.supcon_prototypes(..., dim=d) in a short mini-batch loop: every class
    mean ends near its target, the tail included."""
    sizes = [40, 20, 6, 3]
    pred = dgp.supcon_prototypes(sizes, tau=0.2, dim=3)
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(4), sizes)
    X = torch.tensor(3.0 * np.eye(4, 8)[y] + 0.3 * rng.standard_normal((len(y), 8)))
    torch.manual_seed(0)
    enc = torch.nn.Linear(8, 3, bias=False).double()
    loss_fn = TargetedSupConLoss(pred, tau=0.2, reduction="mean")
    opt = torch.optim.Adam(enc.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(0)
    for _ in range(60):
        idx = torch.randperm(len(y), generator=g)[:16]
        opt.zero_grad()
        loss_fn(enc(X[idx]), torch.tensor(y)[idx]).backward()
        opt.step()
    with torch.no_grad():
        H = torch.nn.functional.normalize(enc(X), dim=1).numpy()
    T = loss_fn.targets.numpy()
    for c in range(4):
        m = H[y == c].mean(axis=0)
        assert m @ T[c] / np.linalg.norm(m) > 0.95, c


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: TargetedSupConLoss(np.eye(3), tau=0.1, assignment=[0, 0, 1]), "distinct"),
        (lambda: TargetedSupConLoss(np.eye(3), tau=0.1, assignment=[0, 5]), "distinct"),
        (lambda: TargetedSupConLoss(np.eye(3), tau=0.1, assignment="greedy"), "assignment"),
        (lambda: TargetedSupConLoss(np.eye(3), tau=0.1, target_weight=-1), "target_weight"),
        (lambda: TargetedSupConLoss(np.zeros((3, 2)), tau=0.1), "targets"),
        (lambda: TargetedSupConLoss(np.eye(3), tau=0.1, num_classes=2), "num_classes"),
        (lambda: TargetedSupConLoss(None, tau=0.1, assignment=[0]), "assignment"),
        (lambda: TargetedSupConLoss(np.eye(3)), "tau"),
    ],
)
def test_bad_arguments_are_named(build, match):
    with pytest.raises(ParameterError, match=match):
        build()


def test_bad_batches_are_named():
    loss = TargetedSupConLoss(np.eye(3), tau=0.1)
    with pytest.raises(InputError, match="width 2"):
        loss(torch.randn(4, 2), torch.tensor([0, 0, 1, 1]))
    with pytest.raises(InputError, match=r"classes 0\.\.2 .*got 3"):
        loss(torch.randn(2, 3), torch.tensor([0, 3]))
    with pytest.raises(InputError, match="one entry per embedding"):
        loss(torch.randn(2, 3), torch.tensor([0, 1, 2]))


#: every loss module checks its temperature, reduction and empty rows the same way (one place)
_LOSS_MODULES = {
    "generic": lambda **kw: dgp.torch.WInfoNCELoss(weights=torch.ones(3, 3), **kw),
    "supcon": lambda **kw: SupConLoss(**kw),
    "targeted": lambda **kw: TargetedSupConLoss(np.eye(3), **kw),
    "targeted, no targets": lambda **kw: TargetedSupConLoss(None, **kw),
}


@pytest.mark.parametrize("make", list(_LOSS_MODULES.values()), ids=list(_LOSS_MODULES))
@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({}, "tau"),
        ({"tau": -0.1}, "tau"),
        ({"tau": 0.1, "temperature": 0.2}, "temperature"),
        ({"tau": 0.1, "reduction": "avg"}, "reduction"),
        ({"tau": 0.1, "empty_rows": "drop"}, "empty_rows"),
    ],
)
def test_every_loss_module_refuses_the_same_setup_naming_it(make, options, named):
    with pytest.raises(ParameterError, match=named):
        make(**options)
    good = make(temperature=0.25, reduction="mean", empty_rows="error")
    assert (good.tau, good.temperature, good.reduction, good.empty_rows) == (
        0.25, 0.25, "mean", "error")
    assert repr(good).startswith(f"{type(good).__name__}(tau=0.25")


@pytest.mark.parametrize("seed", range(3))
def test_targeted_mean_is_the_sum_over_the_anchors_kept(seed):
    """Without targets, anchors without positives are dropped: "mean" divides the sum by the
    count of anchors that have a positive, found here from the labels alone."""
    rng = np.random.default_rng(seed)
    y = np.array([0, 0, 1, 1, 1, 2, 3])[rng.permutation(7)]  # classes 2 and 3 are singletons
    Z = torch.tensor(rng.standard_normal((7, 3)))
    kw = {"tau": 0.3, "empty_rows": "skip"}
    per = TargetedSupConLoss(None, reduction="none", **kw)(Z, torch.tensor(y))
    total = TargetedSupConLoss(None, reduction="sum", **kw)(Z, torch.tensor(y))
    mean = TargetedSupConLoss(None, reduction="mean", **kw)(Z, torch.tensor(y))
    kept = np.array([(y == c).sum() > 1 for c in y])
    assert kept.sum() == 5 and np.all(per.numpy()[~kept] == 0.0)
    assert total.item() == pytest.approx(per.sum().item(), rel=1e-12)
    assert mean.item() == pytest.approx(total.item() / kept.sum(), rel=1e-12)
