"""The statistics behind ``dgp verify`` (numpy only) and the identifiability of a prototype
prediction: each can come out against the prediction, and does when the data say so."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dgp import supcon_prototypes
from dgp.prototypes import prototype_loss


def _stats():
    # numpy only, but it lives in the torch extra's package
    pytest.importorskip("torch")
    from dgp.torch.experiments import statistics

    return statistics


def _simplex(K):
    G = np.full((K, K), -1.0 / (K - 1))
    np.fill_diagonal(G, 1.0)
    return G


def _embedding(G):
    lam, V = np.linalg.eigh(G)
    return V * np.sqrt(np.clip(lam, 0, None))


# ----------------------------------------------------------------------------------------------
# convergence from the run's own loss


def test_plateau_decides_from_the_loss_alone():
    s = _stats()
    rng = np.random.default_rng(0)
    steps = np.arange(1000)
    still_falling = 2.0 + 1.0 / np.sqrt(1 + steps) + 0.001 * rng.standard_normal(1000)
    flat = 2.0 + 0.05 * rng.standard_normal(1000)  # noisy batches, no trend
    # over the last 10% of steps it falls by 0.1%: above a 0.01% tolerance, within the
    # default 1% (the rule is stated, not tuned to an outcome)
    clean = 2.0 + 1.0 / np.sqrt(1 + steps)
    ref = (clean[800:900].mean() - clean[900:].mean()) / clean[900:].mean()
    p = s.plateau(still_falling)
    assert p.relative_decrease == pytest.approx(ref, abs=3 * p.decrease_se / clean[900:].mean())
    assert p.converged
    assert not s.plateau(still_falling, rtol=1e-4).converged
    assert s.plateau(flat).converged
    assert not s.plateau([1.0] * 20).converged  # 2 steps per window: too few to tell
    assert not s.plateau([1.0, float("nan")] * 100).converged


@given(st.floats(0.5, 50.0), st.integers(0, 2**31 - 1))
@settings(max_examples=25)
def test_plateau_is_scale_invariant(scale, seed):
    s = _stats()
    rng = np.random.default_rng(seed)
    x = 3.0 + np.exp(-np.arange(400) / 50.0) + 0.01 * rng.standard_normal(400)
    a, b = s.plateau(x), s.plateau(scale * x)
    assert a.converged == b.converged
    assert a.relative_decrease == pytest.approx(b.relative_decrease, rel=1e-9, abs=1e-12)


# ----------------------------------------------------------------------------------------------
# verdicts over seeds


def test_one_sample_verdict_uses_student_t():
    s = _stats()
    # mean 1, SE 0.35 over 3 seeds: 2.9 SE, beyond 2 but within t(2) = 4.30
    d = [0.4, 1.0, 1.6]
    v = s.one_sample_verdict(d, ("P", "A"))
    assert v["supports"] == "undecided" and v["critical_t"] == pytest.approx(4.303, abs=1e-3)
    assert s.one_sample_verdict([x + 1 for x in d], ("P", "A"))["supports"] == "P"
    assert s.one_sample_verdict([-x - 1 for x in d], ("P", "A"))["supports"] == "A"
    assert s.one_sample_verdict([1.0], ("P", "A"))["supports"] == "undecided"


def test_compare_counts_every_run_and_reports_the_converged_ones_beside():
    s = _stats()
    runs = [{"converged": c, "adv": a} for c, a in
            [(True, 1.0), (True, 1.1), (True, 0.9), (False, -5.0), (False, -6.0)]]
    out = s.compare(runs, lambda r: r["adv"], ("P", "A"))
    assert out["all_runs"]["n"] == 5 and out["converged_runs"]["n"] == 3
    assert out["converged_runs"]["supports"] == "P"
    assert out["supports"] == out["all_runs"]["supports"] == "undecided"
    assert out["not_converged"] == 2


def test_identifiability_is_the_loss_gap_against_what_training_resolves():
    s = _stats()
    common = {"final_losses": [3.00, 3.004, 2.997], "learned_excess": [1e-3, 2e-3, 1.5e-3]}
    big = s.identifiability([0.02] * 3, [1e-4] * 3, **common)
    small = s.identifiability([2e-5] * 3, [1e-6] * 3, **common)
    assert big["informative"] and big["loss_prefers"] == "prediction"
    assert not small["informative"] and small["loss_prefers"] is None
    # what training resolves: the runs' spread in loss, measured against one reference
    assert small["resolution"] == pytest.approx(np.std(common["learned_excess"], ddof=1))
    # the runs' distance from the prediction in loss does not silence the comparison: runs that
    # land on the alternative (their excess is the gap) leave it informative
    landed = s.identifiability([0.0217] * 3, [1e-4] * 3, [3.0] * 3, [0.0217, 0.0216, 0.0218])
    assert landed["informative"]
    # a gap within twice its standard error is not a gap
    assert not s.identifiability([0.02] * 3, [0.03] * 3, **common)["informative"]
    # two-sided: the alternative with the lower loss is a failure of the prediction
    worse = s.identifiability([-0.02] * 3, [1e-4] * 3, **common)
    assert worse["informative"] and worse["loss_prefers"] == "alternative"
    # runs that beat the prediction's loss by many standard errors
    beat = s.identifiability([0.1] * 3, [1e-4] * 3, [3.0] * 3, [-1.3e-3, -1.3e-3, -2e-4],
                             [1e-5] * 3)
    assert beat["runs_beat_prediction"]
    assert not s.identifiability([0.1] * 3, [1e-4] * 3, [3.0] * 3, [-1e-6, 2e-6, 0.0],
                                 [1e-5] * 3)["runs_beat_prediction"]


def _run(adv, dp, da, noise=0.05, delta=0.02, excess=1e-3, converged=True):
    heldout = {"advantage": adv, "dist_prediction": dp, "dist_alternative": da,
               "distance": "d"}
    return {"converged": converged, "final_loss": 3.0, "loss_excess": excess,
            "loss_excess_se": 1e-5, "heldout_noise": {"noise_rms": noise, "reliability": 0.9},
            "comparisons": {"A": {"delta": delta, "delta_se": 1e-4, "heldout": heldout,
                                  "train": {"advantage": adv}}}}


def test_decide_reaches_every_outcome():
    s = _stats()
    names = ("P", "A")
    ex = [1e-3, 1.2e-3, 0.9e-3]
    win = [_run(0.1 + 0.01 * k, 0.05, 0.15, excess=ex[k]) for k in range(3)]
    assert s.decide(win, "A", names)["supports"] == "P"
    lose = [_run(-0.1 - 0.01 * k, 0.15, 0.05, excess=ex[k]) for k in range(3)]
    assert s.decide(lose, "A", names)["supports"] == "A"
    far = [_run(0.1 + 0.01 * k, 0.5, 0.6, noise=0.05, excess=ex[k]) for k in range(3)]
    assert s.decide(far, "A", names)["supports"] == "neither"
    tie = [_run(0.0, 0.04, 0.04, excess=ex[k]) for k in range(3)]
    assert s.decide(tie, "A", names)["supports"] == "tie"
    flat = [_run(0.1 + 0.01 * k, 0.05, 0.15, delta=1e-6, excess=ex[k]) for k in range(3)]
    assert s.decide(flat, "A", names)["supports"] == "uninformative"
    worse = [_run(0.1 + 0.01 * k, 0.05, 0.15, delta=-0.02, excess=ex[k]) for k in range(3)]
    assert s.decide(worse, "A", names)["supports"] == "against"
    # decided at the edge of a threshold: said so
    edge = [_run(0.1 + 0.01 * k, 0.149, 0.3, noise=0.05, excess=ex[k]) for k in range(3)]
    out = s.decide(edge, "A", names)
    assert out["supports"] == "P" and out["near_threshold"] == ["absolute fit"]
    assert s.decide(win, "A", names)["near_threshold"] == []


def test_holm_keeps_only_what_survives_the_correction():
    s = _stats()

    def comp(p, won="P"):
        return {"supports": won, "heldout": {"all_runs": {"supports": won, "p_value": p}}}

    out = s.holm([comp(0.001), comp(0.03), comp(0.04), {"supports": "boundary"}])
    assert [c["supports"] for c in out] == ["P", "undecided", "undecided", "boundary"]
    assert out[0]["p_holm"] == pytest.approx(0.003) and out[0]["tests"] == 3
    assert out[1]["p_holm"] == pytest.approx(0.06) and "Holm" in out[1]["why"]
    assert out[2]["p_holm"] == pytest.approx(0.06)  # step-down: never below the one before


# ----------------------------------------------------------------------------------------------
# held-out comparisons: the label-permutation null removes the bias of uninformative embeddings


def _imbalanced_gram():
    return supcon_prototypes([140, 79, 44, 25, 14], tau=0.5).gram


def _heldout(U, y, spread, rng, shift=None):
    Z = U[y] + spread * rng.standard_normal((y.size, U.shape[1]))
    if shift is not None:  # every embedding pulled towards one direction: cosines near 1
        Z = Z + shift
    return Z / np.linalg.norm(Z, axis=1, keepdims=True)


def test_uninformative_embeddings_never_confirm_the_prediction():
    """Embeddings that carry no information about the labels, all close to one direction
    (held-out noise through a trained encoder): every class mean is alike, cosines near 1, which
    is closer to the imbalanced prediction (higher cosines) than to the simplex in plain RMS.
    That biased statistic favours the prediction; the null-corrected advantage does not."""
    s = _stats()
    P, A = _imbalanced_gram(), _simplex(5)
    y = np.repeat(np.arange(5), 30)
    raw, adv = [], []
    for seed in range(40):
        rng = np.random.default_rng(seed)
        Z = rng.standard_normal((y.size, 16)) * 0.3 + 3.0 * np.eye(16)[0]
        Z /= np.linalg.norm(Z, axis=1, keepdims=True)
        r = s.null_corrected(Z, y, P, A, permutations=100, seed=seed)
        G = s.prototypes_of(Z, y, 5)[0] @ s.prototypes_of(Z, y, 5)[0].T
        off = ~np.eye(5, dtype=bool)
        raw.append(np.sqrt(np.mean((G - A)[off] ** 2)) - np.sqrt(np.mean((G - P)[off] ** 2)))
        adv.append(r["advantage"])
    assert np.mean(raw) > 0.015  # the biased statistic "confirms", in every draw
    assert min(raw) > 0
    assert abs(np.mean(adv)) < 3 * np.std(adv) / math.sqrt(len(adv))  # the corrected one: 0
    wins = [s.one_sample_verdict(adv[k : k + 3], ("P", "A"))["supports"] for k in range(0, 39, 3)]
    assert wins.count("P") <= 2  # about the nominal 5% of false confirmations (13 triples)


@pytest.mark.parametrize(("truth", "winner"), [("P", "P"), ("A", "A")])
def test_informative_embeddings_decide_for_either_reference(truth, winner):
    s = _stats()
    P, A = _imbalanced_gram(), _simplex(5)
    y = np.repeat(np.arange(5), 30)
    U = _embedding(P if truth == "P" else A)
    adv = [
        s.null_corrected(_heldout(U, y, 0.4, np.random.default_rng(k)), y, P, A,
                         permutations=100, seed=k)["advantage"]
        for k in range(3)
    ]
    assert s.one_sample_verdict(adv, ("P", "A"))["supports"] == winner


def test_the_distance_allows_a_common_pull_of_the_cosines_towards_one():
    s = _stats()
    P, A = _imbalanced_gram(), _simplex(5)
    pulled = 1 - 0.6 * (1 - A)  # held-out class means drawn together: every cosine raised
    assert s.shrink_fit(pulled, A) == pytest.approx((0.0, 0.6), abs=1e-12)
    assert s.shrink_distance(pulled, P) > 0.02
    # in plain RMS the pulled simplex looks closer to the prediction (higher cosines)
    off = ~np.eye(5, dtype=bool)
    assert np.sqrt(np.mean((pulled - P)[off] ** 2)) < np.sqrt(np.mean((pulled - A)[off] ** 2))
    # a Gram more spread than the reference is not pulled (k <= 1): plain distance
    assert s.shrink_fit(A, 1 - 0.5 * (1 - A))[1] == 1.0
    # two equiangular references below the observed level both fit: a tie, not a verdict
    E = np.full((5, 5), 0.2)
    np.fill_diagonal(E, 1.0)
    G = np.full((5, 5), 0.4)
    np.fill_diagonal(G, 1.0)
    assert s.shrink_distance(G, E) == pytest.approx(0.0, abs=1e-12)
    assert s.shrink_distance(G, A) == pytest.approx(0.0, abs=1e-12)


@given(st.permutations(range(5)))
@settings(max_examples=20)
def test_the_distance_is_invariant_under_relabelling(perm):
    s = _stats()
    P, A = _imbalanced_gram(), _simplex(5)
    idx = np.arange(25).reshape(5, 5)
    G = 1 - 0.7 * (1 - P) + 0.01 * np.sin(idx + idx.T)
    np.fill_diagonal(G, 1.0)
    q = list(perm)
    assert s.shrink_distance(G[np.ix_(q, q)], P[np.ix_(q, q)]) == pytest.approx(
        s.shrink_distance(G, P), rel=1e-12, abs=1e-15)
    assert s.shrink_distance(G, A) == pytest.approx(s.shrink_distance(G[np.ix_(q, q)], A))


def test_split_half_noise_ceiling_tracks_the_sampling_noise():
    s = _stats()
    U = _embedding(_imbalanced_gram())
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(5), 40)
    quiet = s.split_half(_heldout(U, y, 0.05, rng), y, 5, splits=10, seed=0)
    loud = s.split_half(_heldout(U, y, 1.0, rng), y, 5, splits=10, seed=0)
    assert quiet["noise_rms"] < 0.01 < loud["noise_rms"]
    assert quiet["reliability"] > 0.9 > loud["reliability"]


def test_change_point_finds_the_onset_and_its_interval():
    s = _stats()
    m = np.array([0.5, 0.75, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0])
    rng = np.random.default_rng(0)
    for knot in (0.9, 1.0, 1.25):
        ys = [0.02 + 0.3 * np.maximum(0, m - knot) + 0.005 * rng.standard_normal(m.size)
              for _ in range(4)]
        cp = s.change_point([m] * 4, ys)
        assert cp["value"] == pytest.approx(knot, abs=0.06)
        lo, hi = cp["interval"]
        assert lo <= cp["value"] <= hi
    flat = [0.02 + 0.005 * rng.standard_normal(m.size) for _ in range(4)]
    cp = s.change_point([m] * 4, flat)
    assert cp["interval"][1] - cp["interval"][0] > 0.3  # no onset: no precise location
    # the estimator's own bias on a coarse grid, calibrated on a curve with a known onset
    exact = 0.3 * np.sqrt(np.maximum(0, m - 1.0))
    assert s.knot(m, exact) == pytest.approx(1.0, abs=0.1)


# ----------------------------------------------------------------------------------------------
# identifiability as a design output of supcon_prototypes

SIZES = [140, 79, 44, 25, 14]


def test_identifiability_is_the_loss_difference_per_anchor():
    """Two methods: the block objective's excess difference, and the plain loss of the two
    collapsed Grams (:func:`prototype_loss`) divided by N."""
    for tau in (0.5, 0.2):
        p = supcon_prototypes(SIZES, tau=tau)
        ref = (prototype_loss(_simplex(5), SIZES, tau=tau)
               - prototype_loss(p.gram, SIZES, tau=tau)) / sum(SIZES)
        assert p.identifiability.simplex_gap == pytest.approx(ref, rel=1e-6)
        assert p.identifiability.anchors == sum(SIZES)


@pytest.mark.slow  # more than about 3 s (README test line <= 4 min)
def test_identifiability_shrinks_with_the_temperature():
    gaps = [supcon_prototypes(SIZES, tau=t).identifiability.simplex_gap for t in (0.5, 0.2, 0.1)]
    assert gaps[0] > 0.01 and gaps[2] < 1e-4 and gaps[0] > gaps[1] > gaps[2] > 0
    runs = [supcon_prototypes(SIZES, tau=t, batch_size=64, reduction="sum") for t in (0.5, 0.1)]
    batched = [p.identifiability for p in runs]
    assert batched[0].simplex_gap > 100 * batched[1].simplex_gap
    if runs[0].batch.kept_full_batch:  # the prediction is the full-batch point: no gap to it
        assert batched[0].full_batch_gap is None
    else:
        assert 0 <= batched[0].full_batch_gap < batched[0].simplex_gap


def test_identifiability_invariances():
    perm = [SIZES[k] for k in (3, 0, 4, 2, 1)]
    a = supcon_prototypes(SIZES, tau=0.3).identifiability
    b = supcon_prototypes(perm, tau=0.3).identifiability
    assert a.simplex_gap == pytest.approx(b.simplex_gap, rel=1e-7)
    # balanced: the prediction is the simplex, nothing to tell apart
    assert supcon_prototypes([20] * 4, tau=0.1).identifiability.simplex_gap == 0.0
    # Soft SupCon below tau*: equiangular, far above the simplex's level
    soft = supcon_prototypes(SIZES, tau=0.1, eps=0.25)
    ref = (prototype_loss(_simplex(5), SIZES, tau=0.1, eps=0.25) - soft.loss) / sum(SIZES)
    assert soft.identifiability.simplex_gap == pytest.approx(ref, rel=1e-6)


def test_batch_identifiability_matches_a_monte_carlo_of_the_trainer():
    """The expected batch loss gap against an explicit average over random batches of the
    summed SupCon loss (the trainer's), collapsed embeddings."""
    from scipy.special import logsumexp

    sizes = [12, 6, 3]
    tau, B = 0.5, 8
    p = supcon_prototypes(sizes, tau=tau, batch_size=B, reduction="sum")
    y = np.repeat(np.arange(3), sizes)
    UP, US = _embedding(p.gram)[y], _embedding(_simplex(3))[y]
    rng = np.random.default_rng(0)
    diffs, anchors = [], []

    def supcon_sum(Z, yb):  # SupCon L_out summed over the anchors that have a positive
        S = Z @ Z.T / tau
        np.fill_diagonal(S, -np.inf)
        pos = (yb[:, None] == yb[None, :]) & ~np.eye(len(yb), dtype=bool)
        has = pos.any(axis=1)
        mean_pos = np.where(pos, S, 0.0).sum(axis=1)[has] / pos.sum(axis=1)[has]
        return float(np.sum(-mean_pos + logsumexp(S[has], axis=1)))

    for _ in range(4000):
        idx = rng.permutation(y.size)[:B]
        yb = y[idx]
        anchors.append(sum(int((yb == c).sum()) for c in range(3) if (yb == c).sum() >= 2))
        diffs.append(supcon_sum(US[idx], yb) - supcon_sum(UP[idx], yb))
    mc = np.mean(diffs) / np.mean(anchors)
    se = np.std(diffs) / np.sqrt(len(diffs)) / np.mean(anchors)
    assert p.identifiability.simplex_gap == pytest.approx(mc, abs=4 * se + 1e-9)
