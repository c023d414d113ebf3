"""Class-balanced batches in ``dgp.optimum`` (issue 40): each of the ``B`` draws picks a class
uniformly, then a sample of it, with replacement. The expected loss dgp reports is checked
against an independent enumeration of every ordered draw of ``B`` samples, each batch's loss
computed as a standard implementation computes it on those rows (a sample drawn twice is its
own positive; only an anchor's own position is masked)."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

import dgp
from dgp.solver import BatchSpec, ClassBatches, batch_rows, compositions, evaluate

LABELS = np.array([0, 0, 0, 1, 1, 2])
EPS, TAU, B = 0.3, 0.5, 3
REDUCTIONS = [("sum", "drop"), ("mean", "drop"), ("mean", "zero")]


def _row_losses(Zt, yt, eps, tau):
    """Per-anchor w-InfoNCE of the rows ``Zt`` with labels ``yt`` (weight 1 within a class,
    ``eps`` across; the anchor's own position masked), written out loop by loop; ``None`` for
    an anchor without positive weight."""
    G = Zt @ Zt.T
    out = []
    for a in range(len(yt)):
        others = [b for b in range(len(yt)) if b != a]
        w = np.array([1.0 if yt[a] == yt[b] else eps for b in others])
        s = G[a, others] / tau
        if w.sum() == 0:
            out.append(None)
            continue
        out.append(float(np.log(np.exp(s).sum()) - (w / w.sum()) @ s))
    return out


def _reduce(losses, reduction, awp):
    kept = [v for v in losses if v is not None]
    if reduction == "sum":
        return sum(kept)
    if awp == "zero":
        return sum(kept) / len(losses)
    return sum(kept) / len(kept) if kept else 0.0


def _enumerated(Z, labels, eps, tau, batch, reduction, awp):
    """The expected batch loss of sample embeddings ``Z`` over every ordered draw of ``batch``
    samples of the class-balanced sampler (probability of a sample: 1/(K n_c) per draw)."""
    K = labels.max() + 1
    p_sample = 1.0 / (K * np.bincount(labels)[labels])
    total = 0.0
    for t in itertools.product(range(len(labels)), repeat=batch):
        t = list(t)
        total += np.prod(p_sample[t]) * _reduce(_row_losses(Z[t], labels[t], eps, tau),
                                                reduction, awp)
    return total


#: SupCon needs two samples of every class
SUPCON_LABELS = np.array([0, 0, 0, 1, 1, 2, 2])


def _problem(eps=EPS):
    if eps == 0.0:
        return dgp.Problem(objective="supcon", labels=SUPCON_LABELS.tolist(), tau=TAU)
    return dgp.Problem(objective="soft-supcon", labels=LABELS.tolist(), eps=eps, tau=TAU)


def _collapsed(seed, d=2):
    rng = np.random.default_rng(seed)
    P = rng.standard_normal((LABELS.max() + 1, d))
    return (P / np.linalg.norm(P, axis=1, keepdims=True))[LABELS]


@pytest.mark.parametrize(("eps", "reduction", "awp"),
                         [(EPS, *r) for r in REDUCTIONS] + [(0.0, "mean", "drop")])
def test_reported_loss_is_the_sampler_feeding_a_standard_loss(eps, reduction, awp):
    """At dgp's optimum, its reported (exact) expected loss is the enumerated expectation of
    the class-balanced sampler feeding the loop-by-loop loss."""
    res = dgp.optimum(_problem(eps), dim=2, batch_size=B, sampler="class-balanced",
                      reduction=reduction, anchors_without_positives=awp, starts=2)
    assert isinstance(res, dgp.Optimum) and res.batch.exact
    assert res.batch.spec.sampler == "class-balanced"
    labels = SUPCON_LABELS if eps == 0.0 else LABELS
    ref = _enumerated(res.embedding, labels, eps, TAU, B, reduction, awp)
    assert res.loss == pytest.approx(ref, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_class_compositions_give_the_enumerated_loss_at_any_collapsed_point(seed):
    """The multinomial class compositions and the row problem (the exact path's expectation)
    agree with the ordered enumeration at a random collapsed embedding, and differ from the
    uniform sampler's expectation (the sampler matters)."""
    Z = _collapsed(seed)
    P = Z[np.unique(LABELS, return_index=True)[1]]
    sizes = np.bincount(LABELS)
    Wq = np.full((3, 3), EPS) + (1 - EPS) * np.eye(3)
    spec = BatchSpec(B, "class-balanced", None, "mean", "drop")
    comps = compositions(sizes, spec, exact_max=1000, samples=10, seed=0)
    prob, _ = batch_rows(comps, Wq, spec, tau=TAU)
    ours = prob.loss(P @ P.T)[0]
    assert ours == pytest.approx(_enumerated(Z, LABELS, EPS, TAU, B, "mean", "drop"), rel=1e-10)
    uni = BatchSpec(B, "uniform", None, "mean", "drop")
    prob_u, _ = batch_rows(compositions(sizes, uni, exact_max=1000, samples=10, seed=0), Wq, uni,
                           tau=TAU)
    assert abs(prob_u.loss(P @ P.T)[0] - ours) > 1e-3


def test_fresh_class_balanced_batches_estimate_the_enumerated_loss():
    """The batches the stochastic path draws (ClassBatches, class-balanced) have the
    enumerated expectation: a Monte-Carlo mean within 4.5 standard errors of it."""
    Z = _collapsed(4)
    P = Z[np.unique(LABELS, return_index=True)[1]]
    with np.errstate(divide="ignore"):
        L = np.log(np.full((3, 3), EPS) + (1 - EPS) * np.eye(3))
    from dgp.solver import DenseBatchWeights

    spec = BatchSpec(B, "class-balanced", None, "mean", "drop")
    est = evaluate([P], DenseBatchWeights(L), ClassBatches(np.bincount(LABELS), spec), spec,
                   tau=TAU, seed=3, min_batches=4000, max_batches=4000)[0]
    ref = _enumerated(Z, LABELS, EPS, TAU, B, "mean", "drop")
    assert abs(est.mean - ref) <= 4.5 * est.se
    assert est.se < 0.01  # the check has teeth


@pytest.mark.slow  # more than about 2 s of CPU
def test_beyond_enumeration_the_class_balanced_optimum_is_reported_honestly():
    """Above exact_max, the optimum found on fresh class-balanced batches reports an expected
    loss whose interval holds the enumerated value at its own embedding, and a lower bound
    under the exact optimum."""
    exact = dgp.optimum(_problem(), dim=2, batch_size=B, sampler="class-balanced")
    res = dgp.optimum(_problem(), dim=2, batch_size=B, sampler="class-balanced", exact_max=5,
                      samples=1000, progress=False)
    assert isinstance(res, dgp.BatchOptimum) and res.batch.spec.sampler == "class-balanced"
    ref = _enumerated(res.sample_embedding, LABELS, EPS, TAU, B, "mean", "drop")
    lo, hi = res.batch.interval
    half = (hi - lo) / 2
    assert abs(res.loss - ref) <= 2.3 * half
    assert res.batch.lower_bound <= exact.loss + 1e-12
    assert ref >= exact.loss - 2.3 * half  # nothing beats the exact optimum beyond noise


@pytest.mark.slow  # importing torch takes about 2 s
def test_torch_loss_on_duplicated_rows_is_the_reference():
    """The loop-by-loop reference is the standard implementation (dgp.torch.losses.winfonce)
    on batches with a sample drawn twice."""
    torch = pytest.importorskip("torch")
    from dgp.torch.losses import winfonce

    Z = np.random.default_rng(5).standard_normal((6, 3))
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    for t in ([0, 0, 3], [5, 5, 5], [1, 3, 5], [3, 4, 3, 2]):
        yt = LABELS[t]
        W = np.where(yt[:, None] == yt[None, :], 1.0, EPS)
        for red, awp in REDUCTIONS:
            torch_red = {"sum": "sum", "drop": "mean", "zero": "none"}[awp if red == "mean"
                                                                       else red]
            v = winfonce(torch.tensor(Z[t]), torch.tensor(W), tau=TAU, reduction=torch_red,
                         empty_rows="skip")
            v = float(v.sum() / len(t)) if torch_red == "none" else float(v)
            assert v == pytest.approx(_reduce(_row_losses(Z[t], yt, EPS, TAU), red, awp),
                                      rel=1e-10)


def test_class_balanced_needs_class_labels():
    W = np.ones((6, 6))
    with pytest.raises(dgp.InvalidParameterError, match=r"sampler.*class labels"):
        dgp.optimum(W, tau=TAU, batch_size=B, sampler="class-balanced")
    y = np.random.default_rng(0).standard_normal((6, 1))
    with pytest.raises(dgp.InvalidParameterError, match=r"sampler.*continuous"):
        dgp.optimum(dgp.Problem(objective="y-aware", labels=y, sigma=1.0), tau=TAU,
                    batch_size=B, sampler="class-balanced")
    with pytest.raises(dgp.InvalidParameterError, match=r"labels holds one class"):
        dgp.Problem(objective="soft-supcon", labels=[0, 0, 0], eps=EPS)  # refused at once
    with pytest.raises(dgp.InvalidParameterError, match="sampler"):
        dgp.optimum(_problem(), batch_size=B, sampler="m-per-class")
    with pytest.raises(dgp.InvalidParameterError, match="batch_size"):
        dgp.optimum(_problem(), sampler="class-balanced")


def test_cli_optimum_class_balanced(tmp_path, cli):
    path = tmp_path / "y.csv"
    np.savetxt(path, LABELS, fmt="%d")
    run = cli("optimum", "--objective", "soft-supcon", "--labels", path, "--eps", str(EPS),
              "--tau", str(TAU), "--dim", "2", "--batch-size", str(B), "--sampler",
              "class-balanced", "--starts", "2", "--json")
    assert run.code == 0, run.err
    d = json.loads(run.out)
    api = dgp.optimum(_problem(), dim=2, batch_size=B, sampler="class-balanced", starts=2)
    assert d["batch"]["sampler"] == "class-balanced"
    assert d["loss"] == pytest.approx(api.loss, rel=1e-12)
    np.save(tmp_path / "w.npy", np.ones((6, 6)))
    bad = cli("optimum", tmp_path / "w.npy", "--tau", "0.5", "--batch-size", "3", "--sampler",
              "class-balanced")
    assert bad.code == 2 and "class labels" in bad.err


def test_class_balanced_supcon_is_the_regular_simplex_whatever_the_sizes():
    """Class-balanced compositions do not depend on the class sizes (multinomial (B, 1/K)), so
    the free expected-batch optimum of SupCon is symmetric in the classes: the certified
    regular simplex (cosines -1/(K-1)); uniform batches of the same imbalanced labels move the
    minority classes together."""
    labels = [0] * 6 + [1] * 6 + [2] * 2 + [3] * 2
    p = dgp.Problem(objective="supcon", labels=labels, tau=0.2, batch_size=6)
    bal = dgp.optimum(p, sampler="class-balanced")
    assert bal.certified_global and bal.rank == 3
    G = bal.quotient_gram
    assert np.allclose(G[~np.eye(4, dtype=bool)], -1.0 / 3.0, atol=1e-6)
    uni = dgp.optimum(p)
    assert uni.quotient_gram[2, 3] > -1.0 / 3.0 + 0.1  # the minority classes pulled together
