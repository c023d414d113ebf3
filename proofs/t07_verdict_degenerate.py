r"""Theorem (verdict rule: degenerate). If two admissible constants give targets of rank
:math:`\le d` (an interval of admissible ``c`` whose interior rank is :math:`\le d`, both end
points, or a Euclidean half-line with :math:`d \ge N - 1`), the bound is attained by
non-isometric embeddings: there is no unique optimal geometry. If zero weights split a Euclidean
weighting into complete blocks that each fit in :math:`\mathbb R^d`, the bound is approached
(not attained) by blocks drifting apart: the infimum is the bound, minimising sequences diverge.

Checked by properties: for every degenerate answer of :func:`dgp.classify`, two admissible
constants are re-derived from dense spectra, both targets are embedded by a dense
eigendecomposition, both embeddings attain the bound (loss from the definition) and their Gram /
distance matrices differ; for block supports an explicit sequence of configurations with blocks
``t`` apart has an entropic gap decreasing to zero as ``t`` grows; and the dense rules agree.
"""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import event, given
from hypothesis import strategies as st

from dgp import strategies as ds
from dgp.classification import classify
from dgp.proofs import _reference as ref
from dgp.proofs._theorem import Theorem, property_settings

THEOREM = Theorem(
    id="verdict-degenerate",
    statement="Two admissible c with rank <= d give non-isometric minimisers attaining the bound "
    "(degenerate); Euclidean zero weights on complete blocks that fit in R^d: the bound is the "
    "infimum, approached only as the blocks drift apart.",
    method="property",
)


@property_settings()
@given(
    W=st.one_of(ds.symmetric_weights(log_range=2.0), ds.symmetrizable_weights(log_range=2.0)),
    tau=ds.temperatures(0.05, 1.0),
    extra=st.integers(-2, 1),
    similarity=st.sampled_from(["cosine", "euclidean"]),
)
def test_property_two_minimisers(W, tau, extra, similarity):
    """Degenerate answers come with two non-isometric embeddings attaining the bound."""
    n = W.shape[0]
    dim = max(1, n + extra)
    res = classify(W, similarity=similarity, tau=tau, dim=dim)
    rv = ref.verdict(W, similarity, tau, dim)
    if not rv.ambiguous and "degenerate" in (res.verdict, rv.verdict):
        assert res.verdict == rv.verdict, (res.reason, rv)
    if res.verdict != "degenerate":
        return
    event(f"{similarity}: degenerate")
    ell = ref.log_target(W)
    B = ref.bound(W)
    if similarity == "cosine":
        iv = ref.cosine_interval(ell, tau)
        assert iv.lo is not None and iv.hi - iv.lo > 1e-9
        mid = ref.gram_rank(ref.gram(ell, tau, 0.5 * (iv.lo + iv.hi))).rank
        if mid <= dim:  # the interior fits: two interior constants
            cs = (iv.lo + 0.25 * (iv.hi - iv.lo), iv.lo + 0.75 * (iv.hi - iv.lo))
        else:  # only the two end points fit
            cs = (iv.lo, iv.hi)
        mats = [ref.gram(ell, tau, c) for c in cs]
        embs = [ref.embedding_from_psd(G) for G in mats]
    else:
        c_max = ref.euclidean_c_max(ell, tau)
        cs = (c_max - 0.5, c_max - 1.0)
        mats = [ref.edm(ell, tau, c) for c in cs]
        embs = [ref.mds(D) for D in mats]
    for X in embs:
        assert X.shape[1] <= dim
        assert abs(ref.loss(X, W, tau, similarity) - B) <= 1e-7 * max(1.0, B)
    assert np.abs(mats[0] - mats[1]).max() > 1e-6  # different geometries, not isometric


@property_settings()
@given(case=ds.block_weights(), tau=ds.temperatures(0.1, 2.0), dim=st.integers(1, 4))
def test_property_blocks_drift_apart(case, tau, dim):
    """Euclidean, zero weights across complete blocks: degenerate iff every block fits in R^d;
    then placing each block's optimal geometry t apart gives a gap decreasing to 0 in t."""
    W, labels = case
    res = classify(W, similarity="euclidean", tau=tau, dim=dim)
    blocks = [np.flatnonzero(labels == b) for b in np.unique(labels)]
    shapes, ranks = [], []
    for idx in blocks:
        Wb = W[np.ix_(idx, idx)]
        ell = ref.log_target(Wb)
        shapes.append(ref.mds(ref.edm(ell, tau, ref.euclidean_c_max(ell, tau))))
        ranks.append(ref.euclidean_end_rank(ell, tau).rank)
    fits = all(r <= dim for r in ranks)
    assert res.verdict == ("degenerate" if fits else "inconsistent"), res.reason
    assert not res.attainable
    if not fits:
        return
    event("euclidean blocks: degenerate")
    width = max(1, max(X.shape[1] for X in shapes))
    B = ref.bound(W)

    def gap(t: float) -> float:
        Z = np.zeros((W.shape[0], width))
        for b, (idx, X) in enumerate(zip(blocks, shapes, strict=True)):
            Z[idx, : X.shape[1]] = X
            Z[idx, 0] += t * b
        return ref.loss(Z, W, tau, "euclidean") - B

    spread = max([1.0] + [float(np.abs(X).max()) for X in shapes if X.size])
    ts = [0.0, 1.0, 3.0, 12.0, 60.0]
    gaps = [gap(spread * np.sqrt(tau) * t) for t in ts]
    assert all(g >= -1e-9 for g in gaps)
    assert gaps[0] > 0 and gaps[-1] < 1e-9  # overlapping blocks leave a gap; far apart, none
    assert all(a >= b - 1e-12 for a, b in itertools.pairwise(gaps))
