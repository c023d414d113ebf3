"""The verdict engine's reductions (issue 39): each owns its inverse, one function chooses them.

Round trips: what a verdict says about the reduced problem (a constant, a component's samples,
a class entry or cycle) lifts to a true statement about the original (checked against the
original weights themselves, never against hard-coded answers); the chooser picks the chain
the problem's structure calls for; and classify's answer does not depend on the order of the
samples, through any chain.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import dgp
from dgp.engine._reductions import (
    Chain,
    ClassBlocks,
    LabelSpan,
    Located,
    LogShift,
    TwinClasses,
    ZeroComponents,
    choose_reductions,
    inverse_data,
)
from dgp.engine.blocks import block_weights, classify_blocks
from dgp.engine.lowrank import gaussian_target
from dgp.engine.target import log_target, log_weights, sparse_log_weights
from dgp.engine.zeros import ZeroPattern
from dgp.tolerance import Tolerance


def _random_pattern(rng: np.random.Generator, sizes: list[int], p: float = 0.7) -> np.ndarray:
    """Symmetric positive weights within random connected groups (a path keeps each one
    connected), zero across, samples shuffled."""
    n = sum(sizes)
    W = np.zeros((n, n))
    start = 0
    for k in sizes:
        idx = np.arange(start, start + k)
        block = rng.uniform(0.5, 2.0, (k, k)) * (rng.random((k, k)) < p)
        block = np.triu(block, 1)
        block[np.arange(k - 1), np.arange(1, k)] = rng.uniform(0.5, 2.0, k - 1)
        W[np.ix_(idx, idx)] = block + block.T
        start += k
    perm = rng.permutation(n)
    return W[np.ix_(perm, perm)]


# --- the canonical shift -------------------------------------------------------------------


def test_log_shift_round_trip_matches_the_raw_target():
    """For any canonical constant c, the canonical target L + c equals the raw log-weights plus
    the lifted constant: the inverse is exact."""
    rng = np.random.default_rng(1)
    raw = rng.normal(3.0, 2.0, (6, 6)) + 40.0
    kept = raw.copy()
    weights, data = LogShift().apply(raw)  # taken over
    off = ~np.eye(6, dtype=bool)
    assert weights.L[off].max() == 0.0
    for c in (-3.0, 0.0, 1.7):
        user = LogShift().invert(Located(c=c), data).c
        np.testing.assert_allclose((weights.L + c)[off], (kept + user)[off], rtol=0, atol=1e-12)
    assert LogShift().invert(Located(c=None), data).c is None


def test_log_shift_records_the_validators_shift():
    W = 1e6 * np.array([[0, 2, 1], [2, 0, 3], [1, 3, 0]], dtype=float)
    weights = log_weights(W)
    same, data = LogShift().apply(weights)
    assert same is weights
    assert data.shift == weights.shift == pytest.approx(np.log(3e6))


# --- the zero-pattern components ----------------------------------------------------------


def test_components_partition_and_lift_their_pairs():
    rng = np.random.default_rng(2)
    W = _random_pattern(rng, [3, 5, 1 + 1, 4])
    pattern = ZeroPattern.from_log_weights(log_weights(W))
    split, data = ZeroComponents().apply(pattern)
    members = np.concatenate([p.members for p in split.parts])
    assert sorted(members.tolist()) == list(range(W.shape[0]))
    firsts = [int(p.members[0]) for p in split.parts]
    assert firsts == sorted(firsts)
    for k, part in enumerate(split.parts):
        lr, lc = part.local
        # the local pairs lift to the pattern's own pairs, and they are W's positive pairs
        assert part.lift(lr) == tuple(pattern.rows[part.sel].tolist())
        assert part.lift(lc) == tuple(pattern.cols[part.sel].tolist())
        assert (W[pattern.rows[part.sel], pattern.cols[part.sel]] > 0).all()
        # a local path (a cycle's vertices, say) goes back through the chain's inverse
        local = tuple(range(part.members.size))[::-1]
        lifted = ZeroComponents().invert(Located(samples=local, part=k), data)
        assert lifted.part is None
        assert lifted.samples == tuple(part.members[::-1].tolist())
    # no positive weight joins two components
    comp = np.empty(W.shape[0], dtype=int)
    for k, part in enumerate(split.parts):
        comp[part.members] = k
    i, j = np.nonzero(W)
    assert (comp[i] == comp[j]).all()


def test_components_of_sparse_and_dense_forms_agree():
    rng = np.random.default_rng(3)
    W = _random_pattern(rng, [4, 3, 3])
    dense, _ = ZeroComponents().apply(log_weights(W))
    sparse, _ = ZeroComponents().apply(sparse_log_weights(sp.csr_matrix(W), "W"))
    assert len(dense.parts) == len(sparse.parts) == 3
    for a, b in zip(dense.parts, sparse.parts, strict=True):
        assert a.members.tolist() == b.members.tolist()
        np.testing.assert_array_equal(a.local[0], b.local[0])
        np.testing.assert_array_equal(a.local[1], b.local[1])


# --- the class blocks ---------------------------------------------------------------------


def _dense_of(labels: np.ndarray, within: np.ndarray, cross: np.ndarray) -> np.ndarray:
    _, inv = np.unique(labels, return_inverse=True)
    W = cross[np.ix_(inv, inv)].astype(float)
    same = inv[:, None] == inv[None, :]
    W[same] = within[inv][np.nonzero(same)[0]]
    np.fill_diagonal(W, 0.0)
    return W


def test_class_entry_lifts_to_the_first_such_pair_of_samples():
    rng = np.random.default_rng(4)
    labels = rng.permutation(np.repeat(np.arange(4), [2, 3, 1, 4]))
    bw = block_weights(labels, within=np.ones(4), cross=np.ones((4, 4)))
    _, data = ClassBlocks().apply(bw)
    inv = bw.inverse
    for k in range(4):
        for l in range(4):
            pairs = [(i, j) for i in range(inv.size) for j in range(inv.size)
                     if i != j and inv[i] == k and inv[j] == l]
            if not pairs:
                continue
            i, j = ClassBlocks().invert(Located(samples=(k, l), kind="entry"), data).samples
            assert (i, j) == min(pairs)  # row-major: the first pair of the two classes
    lifted = ClassBlocks().invert(Located(samples=(2, 0)), data).samples
    assert lifted == (int(np.flatnonzero(inv == 2)[0]), int(np.flatnonzero(inv == 0)[0]))


def test_class_vectors_lift_to_the_samples_of_each_class():
    """A class-level vector lifts to the sample vector that is v[k] on class k (compared with
    fancy indexing by the class of every sample), one column at a time; a vector within one
    class stays on that class with its sum."""
    rng = np.random.default_rng(12)
    labels = rng.permutation(np.repeat(np.arange(4), [3, 1, 2, 5]))
    bw = block_weights(labels, within=np.ones(4), cross=np.ones((4, 4)))
    _, data = ClassBlocks().apply(bw)
    v = rng.normal(size=4)
    V = rng.normal(size=(4, 3))
    np.testing.assert_array_equal(
        ClassBlocks().invert(Located(vectors=v), data).vectors, v[bw.inverse])
    np.testing.assert_array_equal(
        ClassBlocks().invert(Located(vectors=V), data).vectors, V[bw.inverse])
    h = np.array([1.0, -2.0, 0.5, 0.25, 0.25])
    x = data.members.within(3, h)
    assert (x[bw.inverse != 3] == 0).all() and x.sum() == pytest.approx(h.sum())
    np.testing.assert_array_equal(x[bw.inverse == 3], h)


def test_broken_class_cycle_lifts_to_a_broken_cycle_of_the_samples():
    """The cycle the class level reports, lifted to samples, breaks the cycle condition of the
    N x N weights by the reported log-ratio; the dense engine agrees on the verdict."""
    labels = np.array([2, 0, 1, 1, 0, 2, 2, 1])
    cross = np.array([[1.0, 2.0, 1.0], [1.0, 1.0, 5.0], [3.0, 1.0, 1.0]])
    within = np.array([2.0, 1.5, 1.0])
    bw = block_weights(labels, within=within, cross=cross)
    tol = Tolerance.make(1e-9, n=labels.size)
    res = classify_blocks(bw, similarity="euclidean", tau=0.5, dim=3, tol=tol)
    cert = res.certificate.to_dict()
    cycle = cert["cycle"]
    assert cycle[0] == cycle[-1] == 0 and len(set(cycle[:-1])) == len(cycle) - 1
    W = _dense_of(labels, within, cross)
    logW = np.log(np.where(W > 0, W, 1.0))
    ratio = sum(logW[a, b] - logW[b, a] for a, b in itertools.pairwise(cycle))
    assert ratio == pytest.approx(cert["log_ratio"], rel=1e-12)  # orientation included
    assert abs(ratio) > 1e-3
    assert dgp.classify(W, tau=0.5, dim=3, similarity="euclidean").verdict == res.verdict


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_block_zero_entry_is_the_dense_first_zero(seed):
    """SupCon under the cosine similarity: the class level's first zero weight, lifted,
    is the dense engine's (row-major first zero of the N x N weights)."""
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.repeat(np.arange(3), [2, 3, 2]))
    structured = dgp.classify_objective("supcon", labels, tau=0.3, dim=2, similarity="cosine")
    W = dgp.objective_weights("supcon", labels)
    dense = dgp.classify(W, tau=0.3, dim=2, similarity="cosine")
    s, d = structured.certificate.to_dict(), dense.certificate.to_dict()
    assert s["entry"] == d["entry"]
    i, j = s["entry"]
    assert W[i, j] == 0 and i != j


def test_class_pattern_expands_to_the_dense_pattern():
    """Where the class level cannot decide, ClassBlocks.sample_pattern gives the samples'
    pattern: the same positive pairs and canonical log-weights as the dense N x N weighting's,
    and the shift it carries is the largest positive log-weight."""
    rng = np.random.default_rng(10)
    labels = rng.permutation(np.repeat(np.arange(3), [3, 2, 4]))
    within = np.array([1.5, 0.0, 2.0])
    cross = np.array([[0.0, 3.0, 0.0], [1.0, 0.0, 0.5], [0.0, 2.5, 0.0]])
    bw = block_weights(labels, within=within, cross=cross)
    cp, _ = ClassBlocks().apply(bw)
    positive = np.isfinite(cp.log_weights) & cp.used
    pattern, top = ClassBlocks().sample_pattern(cp, positive)
    W = _dense_of(labels, within, cross)
    dense = ZeroPattern.from_log_weights(log_weights(W))
    np.testing.assert_array_equal(pattern.rows, dense.rows)
    np.testing.assert_array_equal(pattern.cols, dense.cols)
    np.testing.assert_allclose(pattern.logw, dense.logw, rtol=0, atol=1e-14)
    assert pattern.n_zero == dense.n_zero and pattern.first_zero == dense.first_zero
    assert top == pytest.approx(np.log(W.max()), rel=1e-14)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), objective=st.sampled_from(["supcon", "soft-supcon"]),
       similarity=st.sampled_from(["cosine", "euclidean"]), dim=st.integers(1, 4))
def test_class_objective_is_invariant_under_permutation(seed, objective, similarity, dim):
    """Through the class-block chain: permuting the samples changes nothing but the sample
    numbers a certificate names (the zero entry of SupCon stays a pair of two classes)."""
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(3), rng.integers(2, 4, size=3))
    perm = rng.permutation(labels.size)
    kw = {"eps": 0.2} if objective == "soft-supcon" else {}
    a = dgp.classify_objective(objective, labels, tau=0.4, dim=dim, similarity=similarity, **kw)
    b = dgp.classify_objective(objective, labels[perm], tau=0.4, dim=dim,
                               similarity=similarity, **kw)
    va, ra, ka, ca = _summary(a)
    vb, rb, kb, cb = _summary(b)
    assert (va, ra, ka) == (vb, rb, kb)
    assert (ca is None) == (cb is None)
    for x, y in zip(ca or (), cb or (), strict=True):
        assert (x is None) == (y is None)
        if x is not None:
            assert x == pytest.approx(y, rel=1e-7, abs=1e-9)
    entry = b.certificate.to_dict().get("entry")
    if entry is not None:  # a zero weight of the permuted labels: two different classes
        i, j = entry
        assert labels[perm][i] != labels[perm][j]


def test_twin_classes_of_a_dense_target_are_the_label_classes():
    """A class weighting written out densely: the twin classes found are the label classes, a
    class-level vector lifts to each sample's class entry, a class to its first sample; a
    target without twins is left as it is (the identity)."""
    rng = np.random.default_rng(13)
    labels = rng.permutation(np.repeat(np.arange(3), [9, 10, 12]))  # above TWIN_MIN_MEAN_SIZE
    W = dgp.objective_weights("soft-supcon", labels, eps=0.3)
    target = log_target(log_weights(W), Tolerance.make(1e-12, n=labels.size))
    chain = choose_reductions(target, similarity="cosine")
    assert chain.names == ("twin classes",)
    blocks, ((_, data),) = chain.apply(target)
    assert sorted(blocks.sizes.tolist()) == [9, 10, 12]
    assert {frozenset(m.tolist()) for m in data.members} == {
        frozenset(np.flatnonzero(labels == k).tolist()) for k in range(3)}
    cls = np.empty(labels.size, dtype=int)
    for k, m in enumerate(data.members):
        cls[m] = k
    v = rng.normal(size=3)
    np.testing.assert_array_equal(TwinClasses().invert(Located(vectors=v), data).vectors, v[cls])
    firsts = TwinClasses().invert(Located(samples=(0, 1, 2)), data).samples
    assert [int(cls[i]) for i in firsts] == [0, 1, 2]
    assert all(i == int(np.flatnonzero(cls == k)[0]) for k, i in enumerate(firsts))
    noisy = W + np.triu(rng.uniform(0.0, 1e-3, W.shape), 1)
    noisy = noisy + np.triu(noisy, 1).T - np.tril(noisy, -1)
    plain = log_target(log_weights(noisy), Tolerance.make(1e-12, n=labels.size))
    same, ((_, none),) = choose_reductions(plain, similarity="cosine").apply(plain)
    assert same is plain and none is None


# --- the label span of a low-rank target ---------------------------------------------------


def _low_rank(n: int, seed: int):
    x = np.random.default_rng(seed).normal(size=(n, 2))
    return gaussian_target(x - x.mean(axis=0), 0.7)


@pytest.mark.parametrize("n", [9, 30])
def test_label_span_lifts_capacitance_eigenvectors_to_eigenvectors_of_g(n):
    """A bottom eigenvector y of the capacitance matrix, lifted (Q y), is an eigenvector of the
    dense G(mu) = (1 - tau h - mu) I + U (tau C + mu e1 e1^T) U^T with the same eigenvalue."""
    t = _low_rank(n, 7)
    tau, mu = 0.4, 0.3
    reduced, data = LabelSpan().apply(t)
    U = t.U
    assert reduced.n_comp == n - reduced.R.shape[0]
    np.testing.assert_allclose(reduced.R.T @ reduced.R, U.T @ U, rtol=1e-10, atol=1e-9)
    R = reduced.R
    S = tau * (R @ t.C @ R.T) + mu * np.outer(R[:, 0], R[:, 0])
    S[np.diag_indices(R.shape[0])] += 1.0 - tau * t.h - mu
    lam, vec = np.linalg.eigh(0.5 * (S + S.T))
    x = LabelSpan().invert(Located(vectors=vec), data).vectors
    G = (1.0 - tau * t.h - mu) * np.eye(n) + U @ (tau * t.C + mu * np.diag(
        np.eye(t.C.shape[0])[0])) @ U.T
    np.testing.assert_allclose(G @ x, x * lam, rtol=1e-9, atol=1e-9 * np.abs(lam).max())
    np.testing.assert_allclose(x.T @ x, np.eye(lam.size), atol=1e-10)


def test_centred_label_span_lifts_into_the_complement_of_ones():
    """Centred (Euclidean): an eigenvector of R C' R^T, lifted, is orthogonal to 1 and an
    eigenvector of the centred P U' C' U'^T P with the same eigenvalue (U' = columns 2..k)."""
    n = 25
    t = _low_rank(n, 8)
    reduced, data = LabelSpan(centred=True).apply(t)
    assert reduced.n_comp == (n - 1) - reduced.R.shape[0]
    Q, R = data.factors()
    Cp = t.C[1:, 1:]
    lam, vec = np.linalg.eigh(R @ Cp @ R.T)
    x = LabelSpan(centred=True).invert(Located(vectors=vec), data, Q=Q).vectors
    P = np.eye(n) - np.ones((n, n)) / n
    Up = t.U[:, 1:]
    np.testing.assert_allclose(np.ones(n) @ x, 0.0, atol=1e-10)
    np.testing.assert_allclose(P @ Up @ Cp @ Up.T @ P @ x, x * lam, atol=1e-8 * np.abs(lam).max())
    # nothing kept to lift with above the listing size: the inverse says so, never guesses
    assert LabelSpan(centred=True).invert(Located(vectors=vec), data).vectors is None


# --- the chooser --------------------------------------------------------------------------


def test_chooser_picks_the_chain_from_the_structure():
    plain = log_weights(np.array([[0, 2, 1], [2, 0, 3], [1, 3, 0]], dtype=float))
    assert choose_reductions(plain, similarity="cosine").names == ("canonical shift",)
    assert choose_reductions(plain, similarity="euclidean").names == ("canonical shift",)
    W = _random_pattern(np.random.default_rng(5), [3, 3])
    zeros = log_weights(W)
    assert choose_reductions(zeros, similarity="euclidean").names == (
        "canonical shift", "zero-pattern components")
    # a zero weight decides the cosine verdict at once: no split of a dense weighting
    assert choose_reductions(zeros, similarity="cosine").names == ("canonical shift",)
    # kept as its pairs, the weighting is its pattern (its bound and first zero come from it)
    pairs = sparse_log_weights(sp.csr_matrix(W), "W")
    assert pairs.pairs is not None
    assert choose_reductions(pairs, similarity="cosine").names == (
        "canonical shift", "zero-pattern components")
    pattern = ZeroPattern.from_log_weights(zeros)
    assert choose_reductions(pattern, similarity="euclidean").names == (
        "zero-pattern components",)
    few = block_weights(np.repeat(np.arange(3), 2), within=np.ones(3), cross=np.ones((3, 3)))
    chain = choose_reductions(few, similarity="cosine")
    assert chain.names == ("class blocks",) and not chain.reductions[0].grouped
    many = dgp.engine.blocks.BlockWeights(np.full(64, 2), np.zeros(64), None,
                                          np.repeat(np.arange(64), 2), np.arange(64),
                                          cross_value=-1.0)
    assert choose_reductions(many, similarity="cosine").reductions[0].grouped
    t = _low_rank(6, 9)
    cos, euc = (choose_reductions(t, similarity=s) for s in ("cosine", "euclidean"))
    assert cos.names == euc.names == ("label span",)
    assert euc.reductions[0].centred and not cos.reductions[0].centred
    assert choose_reductions(object(), similarity="cosine").names == ()


def test_chain_inverts_in_reverse_order():
    """Shift then split: a component's local samples and a canonical constant come back as
    the original samples and the user's constant."""
    W = 1e3 * _random_pattern(np.random.default_rng(6), [3, 4])
    weights = log_weights(W)
    chain = Chain((LogShift(), ZeroComponents()))
    split, inverse = chain.apply(weights)
    part = split.parts[1]
    back = chain.invert(Located(c=2.0, samples=(0, 1), part=1), inverse)
    assert back.samples == tuple(part.members[:2].tolist())
    assert back.c == pytest.approx(2.0 - inverse_data(inverse, LogShift).shift)


# --- classify is invariant under a permutation of the samples, through every chain --------


def _summary(res) -> tuple:
    cert = res.certificate.to_dict()
    return res.verdict, res.rank, cert["kind"], res.c_interval


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), zeros=st.booleans(),
       similarity=st.sampled_from(["cosine", "euclidean"]), dim=st.integers(1, 4))
def test_classify_is_invariant_under_permutation(seed, zeros, similarity, dim):
    rng = np.random.default_rng(seed)
    if zeros:
        W = _random_pattern(rng, [int(k) for k in rng.integers(2, 4, size=2)], p=1.0)
    else:
        W = rng.uniform(0.2, 3.0, (6, 6))
        W = W + W.T
        np.fill_diagonal(W, 0.0)
    n = W.shape[0]
    perm = rng.permutation(n)
    a = dgp.classify(W, tau=0.5, dim=dim, similarity=similarity)
    b = dgp.classify(W[np.ix_(perm, perm)], tau=0.5, dim=dim, similarity=similarity)
    va, ra, ka, ca = _summary(a)
    vb, rb, kb, cb = _summary(b)
    assert (va, ra, ka) == (vb, rb, kb)
    assert (ca is None) == (cb is None)
    for x, y in zip(ca or (), cb or (), strict=True):  # an end may be None (unbounded)
        assert (x is None) == (y is None)
        if x is not None:
            assert x == pytest.approx(y, rel=1e-7, abs=1e-9)
    blocks_a = a.certificate.to_dict().get("blocks")
    if blocks_a is not None:  # the blocks are the same samples, renumbered
        # sample s of the permuted problem is sample perm[s] of the original
        got = {frozenset(int(perm[s]) for s in blk["members"])
               for blk in b.certificate.to_dict()["blocks"]}
        assert got == {frozenset(blk["members"]) for blk in blocks_a}
    json.dumps(b.to_dict())

