r"""Theorem (invariances of the metrics). For embeddings ``Z`` and a reference ``Z*``:

- Procrustes :math:`r^2` is 1 exactly for rigid copies :math:`Z^*Q + t`, equals
  :math:`1 - \min_{Q,t}\|ZQ + t - Z^*\|^2/\|Z^* - \bar Z^*\|^2`, and is invariant under rigid
  motions of ``Z``, common permutations of the samples and one common scaling of both inputs;
- similarity :math:`r^2` is invariant under rotations and scalings of either input (for the
  cosine similarity also under positive rescaling of each row; for the Euclidean one also under
  translations) and under common permutations;
- the entropic gap :math:`L(Z) - \sum_i H(p_i)` is non-negative and invariant under rotations
  (both similarities), positive row rescaling (cosine), translations (Euclidean) and scaling
  of ``W``.

Every scaling is drawn from the whole float range (factors :math:`10^{k}`,
:math:`|k| \le 300`): the invariances hold in floating point, not only on paper.

Checked by properties: each invariance on random embeddings and random orthogonal maps, and the
values against independent computations (:func:`scipy.linalg.orthogonal_procrustes`,
:func:`numpy.corrcoef`, losses from the definition).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from dgp import strategies as ds
from dgp.metrics import entropic_gap, procrustes_r2, similarity_r2
from dgp.proofs import _reference as ref
from dgp.proofs._theorem import Theorem, property_settings

THEOREM = Theorem(
    id="metrics-invariances",
    statement="Procrustes r2 = 1 on rigid copies and is invariant to rigid motions, permutations "
    "and a common scaling; similarity r2 is invariant to rotations, scalings (rows, for cosine), "
    "translations (Euclidean) and permutations; the entropic gap is >= 0 and invariant likewise "
    "and to scaling W; scalings anywhere in 1e-300..1e300.",
    method="property",
)


def _pair(seed: int, n: int, d: int, d2: int):
    rng = np.random.default_rng(seed)
    return rng, rng.standard_normal((n, d)), rng.standard_normal((n, d2))


@property_settings()
@given(
    seed=ds.seeds(),
    n=st.integers(3, 9),
    d=st.integers(1, 4),
    d2=st.integers(1, 4),
    k=st.integers(-300, 300),
)
def test_property_procrustes(seed, n, d, d2, k):
    """r2 == 1 - residual^2 (scipy); rigid copies score 1; rigid motions, permutations and a
    common scaling 10**k leave r2 unchanged."""
    rng, Z, Zref = _pair(seed, n, d, d2)
    r2 = procrustes_r2(Z, Zref)
    resid = ref.procrustes_residual(Z, Zref)
    assert abs(r2 - (1.0 - resid**2)) <= 1e-9
    Q = ref.random_orthogonal(d, seed + 1)
    t = rng.standard_normal(d)
    assert abs(procrustes_r2(Z @ Q + t, Zref) - r2) <= 1e-9
    Q2 = ref.random_orthogonal(d2, seed + 2)
    assert abs(procrustes_r2(Zref @ Q2 + rng.standard_normal(d2), Zref) - 1.0) <= 1e-9
    perm = rng.permutation(n)
    assert abs(procrustes_r2(Z[perm], Zref[perm]) - r2) <= 1e-9
    assert abs(procrustes_r2(10.0**k * Z, 10.0**k * Zref) - r2) <= 1e-9


@property_settings()
@given(
    seed=ds.seeds(),
    n=st.integers(3, 9),
    d=st.integers(2, 4),
    similarity=st.sampled_from(["cosine", "euclidean"]),
    k=st.integers(-300, 300),
)
def test_property_similarity_r2(seed, n, d, similarity, k):
    """similarity r2 == corrcoef^2 of the pairwise similarities, and invariant."""
    rng, Z, Zref = _pair(seed, n, d, d)
    r2 = similarity_r2(Z, Zref, similarity=similarity)
    iu = np.triu_indices(n, 1)

    def sims(X):
        if similarity == "cosine":
            U = X / np.linalg.norm(X, axis=1, keepdims=True)
            return (U @ U.T)[iu]
        return -((X[:, None] - X[None]) ** 2).sum(-1)[iu]

    expected = float(np.corrcoef(sims(Z), sims(Zref))[0, 1] ** 2)
    assert abs(r2 - expected) <= 1e-9
    Q = ref.random_orthogonal(d, seed + 3)
    moved = Z @ Q
    if similarity == "cosine":
        moved = moved * rng.uniform(0.1, 10.0, size=(n, 1))
    else:
        moved = moved + rng.standard_normal(d)
    moved = moved * (rng.uniform(1.0, 10.0) * 10.0**k)
    assert abs(similarity_r2(moved, Zref, similarity=similarity) - r2) <= 1e-9
    perm = rng.permutation(n)
    assert abs(similarity_r2(Z[perm], Zref[perm], similarity=similarity) - r2) <= 1e-9


@property_settings()
@given(
    W=st.one_of(ds.symmetric_weights(), ds.symmetrizable_weights(), ds.weights_with_zeros()),
    seed=ds.seeds(),
    d=st.integers(1, 4),
    tau=ds.temperatures(0.1, 2.0),
    similarity=st.sampled_from(["cosine", "euclidean"]),
    k=st.integers(-300, 300),
)
def test_property_entropic_gap(W, seed, d, tau, similarity, k):
    """gap >= 0, equals the loss minus the bound from the definitions, and is invariant (also
    to scaling W by 10**k)."""
    n = W.shape[0]
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, d))
    gap = entropic_gap(Z, W, tau=tau, similarity=similarity)
    expected = ref.loss(Z, W, tau, similarity) - ref.bound(W)
    scale = max(1.0, abs(ref.bound(W)))
    assert gap >= -1e-10 * scale
    assert abs(gap - expected) <= 1e-9 * scale
    Q = ref.random_orthogonal(d, seed + 5)
    moved = Z @ Q
    if similarity == "cosine":
        moved = moved * rng.uniform(0.1, 10.0, size=(n, 1))
    else:
        moved = moved + rng.standard_normal(d)
    assert abs(entropic_gap(moved, W, tau=tau, similarity=similarity) - gap) <= 1e-8 * scale
    assert abs(entropic_gap(Z, 10.0**k * W, tau=tau, similarity=similarity) - gap) <= 1e-9 * scale
