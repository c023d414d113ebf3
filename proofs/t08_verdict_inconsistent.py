r"""Theorem (verdict rule: inconsistent). The bound can be neither attained nor approached in
:math:`\mathbb R^d` — the loss minimum lies strictly above it — when (i) the cycle condition
fails, (ii) a weight is zero under the bounded cosine similarity, (iii) no constant makes
:math:`G(c)` PSD, or (iv) every admissible target needs more than ``d`` dimensions. Each reason
comes with a certificate a user can re-check: the offending cycle and its log-ratio, the zero
entry, a Farkas matrix, or the ranks along the admissible interval.

Checked by properties: every inconsistent answer of :func:`dgp.classify` is re-verified from its
certificate against ``W`` itself (cycle products recomputed, the zero entry looked up, the Farkas
inequalities evaluated on explicitly built matrices, ranks at the end points and inside the
interval from dense ``eigvalsh``), the dense re-implementation of the rules agrees, and for a
zero cosine weight the entropic gap of any embedding exceeds the closed-form lower bound
:math:`e^{-2/\tau}/(N-1)`.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import event, given
from hypothesis import strategies as st

from dgp import strategies as ds
from dgp.classification import classify
from dgp.proofs import _reference as ref
from dgp.proofs._theorem import Theorem, property_settings

THEOREM = Theorem(
    id="verdict-inconsistent",
    statement="A broken cycle, a zero weight under cosine, an empty PSD family, or rank > d "
    "along the whole admissible set: the bound is neither attained nor approached in R^d, and "
    "the certificate proving it re-checks against W.",
    method="property",
)

_weights = st.one_of(
    ds.symmetric_weights(log_range=2.0),
    ds.symmetrizable_weights(log_range=2.0),
    ds.cycle_breaking_weights(),
    ds.weights_with_zeros(),
)


@property_settings()
@given(
    W=_weights,
    tau=ds.temperatures(0.05, 2.0),
    dim=st.integers(1, 4),
    similarity=st.sampled_from(["cosine", "euclidean"]),
)
def test_property_certificates_recheck(W, tau, dim, similarity):
    """Every inconsistent verdict's certificate holds on W; the dense rules agree."""
    n = W.shape[0]
    off = ~np.eye(n, dtype=bool)
    has_zero = bool((W[off] == 0).any())
    if has_zero and similarity == "euclidean":
        similarity = "cosine"  # Euclidean zero weights are the block rule of verdict-degenerate
    res = classify(W, similarity=similarity, tau=tau, dim=dim)
    if not has_zero:
        rv = ref.verdict(W, similarity, tau, dim)
        if not rv.ambiguous and "inconsistent" in (res.verdict, rv.verdict):
            assert res.verdict == rv.verdict, (res.reason, rv)
    if res.verdict != "inconsistent":
        return
    assert not res.attainable and res.rank is None
    cert = res.to_dict()["certificate"]
    event(f"{similarity}: {cert['kind']}")
    if cert["kind"] == "zero_weight":
        i, j = cert["entry"]
        assert W[i, j] == 0 and i != j
        assert cert["zero_weights"] == int((W[off] == 0).sum())
    elif cert["kind"] == "cycle":
        cyc = cert["cycle"]
        assert cyc[0] == cyc[-1]
        a, b, c = cyc[:3]
        assert abs(ref.triangle_log_ratio(W, a, b, c) - cert["log_ratio"]) <= 1e-9 * max(
            1.0, abs(cert["log_ratio"])
        )
        assert abs(cert["log_ratio"]) > cert["tolerance"]
    elif cert["kind"] == "farkas":
        Y = sum(w * np.outer(v, v) for w, v in zip(cert["weights"], cert["vectors"], strict=True))
        ell = ref.log_target(W)
        A = ref.gram(ell, tau, 0.0)
        E = np.ones((n, n)) - np.eye(n)
        c_box = max(abs(-1.0 - tau * ell[off].min()), abs(1.0 - tau * ell[off].max())) / tau
        assert float(np.sum(Y * A)) + tau * c_box * abs(float(np.sum(Y * E))) < 0
    else:  # rank above dim along the admissible set
        assert cert["kind"] in ("spectrum", "schoenberg")
        ell = ref.log_target(W)
        if similarity == "cosine":
            lo, hi = res.c_interval
            for c in (lo, hi, 0.5 * (lo + hi)):
                r = ref.gram_rank(ref.gram(ell, tau, c))
                assert r.ambiguous or r.rank > dim, (c, r)
        else:
            hi = res.c_interval[1]
            r = ref.euclidean_end_rank(ell, tau)
            assert r.ambiguous or r.rank > dim
            assert n - 1 > dim  # the interior of the half-line has rank N - 1


@property_settings()
@given(
    W=ds.weights_with_zeros(symmetric=False),
    seed=ds.seeds(),
    d=st.integers(1, 4),
    tau=ds.temperatures(0.15, 2.0),
)
def test_property_zero_weight_gap_bounded_below(W, seed, d, tau):
    """Cosine, zero weight: gap >= e^{-2/tau}/(N-1) for every embedding; verdict inconsistent."""
    n = W.shape[0]
    res = classify(W, similarity="cosine", tau=tau, dim=d)
    assert res.verdict == "inconsistent" and res.certificate.kind == "zero_weight"
    Z = np.random.default_rng(seed).standard_normal((n, d))
    gap = float(ref.kl_rows(ref.similarities(Z, tau, "cosine"), W).sum())
    assert gap >= math.exp(-2.0 / tau) / (n - 1) * (1 - 1e-9)
