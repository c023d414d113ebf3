"""Euclidean zero-weight patterns against a brute-force minimisation of the loss.

The brute force is written here, independently of the engine: the entropic gap
``sum_i KL(p_i || q_i)`` of free embeddings ``Z`` in ``R^(N x d)`` from its definition, minimised
by L-BFGS from several starts at several scales (some with one random magnitude per sample, for
nested scales), batched into one run. A pattern whose bound is approached drives the gap to ~0
as ``Z`` grows (the run stops once it is below ``1e-9``); one that is not keeps a floor, which
on these supports is above 0.2 nats. The thresholds in between are never met by the patterns
tested (asserted: no ambiguous case).
"""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import logsumexp

import dgp

#: a brute-force gap below this is "approached", above FLOOR "not approached"
APPROACHED = 1e-4
FLOOR = 0.05


class _Done(Exception):
    pass


def brute_gap(W: np.ndarray, dim: int, *, tau: float = 1.0, restarts: int = 4, seed: int = 0,
              maxiter: int = 2500) -> float:
    """The smallest entropic gap L-BFGS reaches over free embeddings (restarts batched)."""
    W = np.array(W, dtype=float)
    n = W.shape[0]
    np.fill_diagonal(W, 0.0)
    P = W / W.sum(axis=1, keepdims=True)
    pos = P > 0
    logP = np.where(pos, np.log(np.where(pos, P, 1.0)), 0.0)
    eye = np.eye(n, dtype=bool)
    rng = np.random.default_rng(seed)
    scales = np.geomspace(0.5, 20.0, restarts)
    Z0 = rng.standard_normal((restarts, n, dim)) * scales[:, None, None]
    Z0[1::2] *= np.exp(rng.uniform(0.0, 3.0, size=(restarts // 2, n, 1)))
    best = [np.inf]

    def f(x):
        Z = x.reshape(restarts, n, dim)
        diff = Z[:, :, None, :] - Z[:, None, :, :]
        S = -(diff**2).sum(axis=3) / (2.0 * tau)
        S[:, eye] = -np.inf
        logq = S - logsumexp(S, axis=2, keepdims=True)
        gaps = np.where(pos, P * (logP - np.where(pos, logq, 0.0)), 0.0).sum(axis=(1, 2))
        best[0] = min(best[0], float(gaps.min()))
        G = np.exp(logq) - P
        G[:, eye] = 0.0
        M = G + np.transpose(G, (0, 2, 1))
        grad = -(M[..., None] * diff).sum(axis=2) / tau
        return float(gaps.sum()), grad.ravel()

    def stop(_):
        if best[0] < 1e-9:
            raise _Done

    try:
        minimize(f, Z0.ravel(), jac=True, method="L-BFGS-B", callback=stop,
                 options={"maxiter": maxiter, "gtol": 1e-13, "ftol": 1e-15})
    except _Done:
        pass
    return max(best[0], 0.0)


def brute_approached(W, dim, **kw) -> bool:
    g = brute_gap(W, dim, **kw)
    assert g < APPROACHED or g > FLOOR, f"ambiguous brute force: gap {g:.3g}"
    return g < APPROACHED


def _check(W, dim, tau=1.0):
    res = dgp.classify(W, similarity="euclidean", tau=tau, dim=dim)
    truth = brute_approached(W, dim, tau=tau)
    assert res.verdict == ("degenerate" if truth else "inconsistent"), (dim, res.reason)
    assert not res.attainable
    return res


# --- the known examples ----------------------------------------------------------------------


def test_path_without_its_end_weight_is_approached_on_a_line():
    W = nx.to_numpy_array(nx.path_graph(3))  # w_02 = 0
    res = _check(W, 1)
    cert = res.to_dict()["certificate"]
    assert cert["kind"] == "diverging_family" and cert["decided"]


@pytest.mark.parametrize("graph, needs", [
    (nx.star_graph(3), 2), (nx.cycle_graph(4), 2), (nx.star_graph(5), 2),
    (nx.complete_bipartite_graph(2, 3), 3),
    pytest.param(nx.star_graph(6), 3, marks=pytest.mark.slow),
])
def test_dimension_needed(graph, needs):
    W = nx.to_numpy_array(graph)
    for dim in (needs - 1, needs):
        res = _check(W, dim)
        assert res.verdict == ("degenerate" if dim >= needs else "inconsistent")


def test_asymmetric_pattern_forcing_a_coincidence_is_never_approached():
    # 0 <-> 1 weighted both ways, 0 -> 2 and 2 -> 1 one way: a_0 - a_1 stays bounded, yet
    # a_0 - a_2 -> inf and a_2 - a_1 -> inf; the bound is not approached in any dimension
    W = np.array([[0, 1, 1], [1, 0, 0], [0, 1, 0.0]])
    for dim in (1, 2, 3):
        res = _check(W, dim)
        assert res.to_dict()["certificate"]["kind"] == "scale_order"


# --- every symmetric support on at most 6 samples, dims 1..3 ----------------------------------


def _supports(max_n: int = 6):
    for G in nx.graph_atlas_g()[1:]:
        n = G.number_of_nodes()
        if n > max_n or min(dict(G.degree()).values()) == 0:
            continue
        if G.number_of_edges() == n * (n - 1) // 2:
            continue  # no zero weight
        yield G


#: the 150 supports of the truth table, in pieces that the test workers share
SUPPORTS = list(_supports())
PIECES = 10


@pytest.mark.slow
@pytest.mark.parametrize("piece", range(PIECES))
def test_every_symmetric_support_up_to_six_samples(piece):
    """All supports (up to isomorphism, no isolated sample, at least one zero weight) on at most
    6 samples, uniform weights, d = 1..3: the verdict agrees with the brute force (one piece of
    the table per test). Undecided components (their verdict is the engine's numerical
    evidence) are counted by the test below."""
    for G in SUPPORTS[piece::PIECES]:
        W = nx.to_numpy_array(G)
        for dim in (1, 2, 3):
            res = dgp.classify(W, similarity="euclidean", tau=1.0, dim=dim)
            cert = res.to_dict()["certificate"]
            if cert["kind"] == "diverging_family":
                truth = True  # the certificate's own gaps are re-checked in the proofs
                assert brute_gap(W, dim, restarts=2) < APPROACHED, (list(G.edges()), dim)
            else:
                truth = brute_approached(W, dim)
            assert res.verdict == ("degenerate" if truth else "inconsistent"), \
                (list(G.edges()), dim, res.reason)


@pytest.mark.slow
def test_the_truth_table_is_whole_and_mostly_decided():
    assert len(SUPPORTS) == 150  # supports with a zero weight and no isolated sample
    undecided = sum(
        not dgp.classify(nx.to_numpy_array(G), similarity="euclidean", tau=1.0, dim=dim)
        .to_dict()["certificate"].get("decided", True)
        for G in SUPPORTS for dim in (1, 2, 3)
    )
    assert undecided <= 7, undecided  # the planar and spatial cases dgp cannot decide


@pytest.mark.slow
def test_random_symmetric_weights_on_small_supports():
    """Random symmetric weights (prescribed log-ratios delta, not a constant) on a sample of
    supports: the rigidity system and the obstructions, against the brute force."""
    rng = np.random.default_rng(7)
    supports = list(_supports())
    for k in rng.choice(len(supports), 12, replace=False):
        G = supports[int(k)]
        n = G.number_of_nodes()
        A = nx.to_numpy_array(G)
        L = np.triu(rng.uniform(-1.0, 1.0, (n, n)), 1)
        W = A * np.exp(L + L.T)
        for dim in (1, 2, 3):
            _check(W, dim)


def _asymmetric_sample(count: int, seed: int):
    rng = np.random.default_rng(seed)
    seen = set()
    while len(seen) < count:
        n = int(rng.integers(3, 6))
        A = rng.random((n, n)) < 0.45
        np.fill_diagonal(A, False)
        if (A.sum(axis=1) == 0).any() or (A == A.T).all():
            continue
        key = A.tobytes()
        if key in seen:
            continue
        seen.add(key)
        yield A.astype(float)


@pytest.mark.slow
def test_asymmetric_supports_sample():
    """A seeded sample of asymmetric supports on 3-5 samples, d = 1..3: scale orders and broken
    cycles are decided exactly; the other patterns are reported as not decided, with the verdict
    of the engine's numerical evidence; all agree with the brute force."""
    kinds = set()
    for W in _asymmetric_sample(10, seed=3):
        for dim in (1, 2, 3):
            res = dgp.classify(W, similarity="euclidean", tau=1.0, dim=dim)
            cert = res.to_dict()["certificate"]
            kinds.add(cert["kind"])
            g = brute_gap(W, dim)
            assert g < 1e-3 or g > FLOOR, f"ambiguous brute force: gap {g:.3g}"
            assert res.verdict == ("degenerate" if g < 1e-3 else "inconsistent"), \
                (W.tolist(), dim, res.reason)
    assert "scale_order" in kinds


@pytest.mark.slow
def test_every_asymmetric_support_on_three_samples():
    """All 23 asymmetric supports on 3 samples (every row positive), d = 1, 2, random weights:
    the verdict agrees with the brute force, and every pattern whose one-way weights come from
    pure sources with one positive is decided (a family with its sources)."""
    rng = np.random.default_rng(7)
    pairs = [(i, j) for i in range(3) for j in range(3) if i != j]
    decided = cases = 0
    for mask in range(1, 2 ** 6):
        A = np.zeros((3, 3), dtype=bool)
        for b, (i, j) in enumerate(pairs):
            A[i, j] = bool(mask >> b & 1)
        if not A.any(axis=1).all() or (A == A.T).all():
            continue
        W = np.where(A, rng.uniform(0.5, 2.0, (3, 3)), 0.0)
        single = all(A[i].sum() == 1 for i in range(3) if not A[:, i].any())
        for dim in (1, 2):
            res = _check(W, dim)
            cert = res.to_dict()["certificate"]
            cases += 1
            decided += cert.get("decided", True)
            if cert["kind"] == "zero_undecided":
                assert any("several positives" in t for t in cert["tried"]) or not single
    assert cases == 2 * 23 and decided == 2 * 20  # the three undecided: a source, two positives


def test_star_leaves_against_the_kissing_numbers():
    """A star with k leaves: approached in the plane iff k <= 5 (a strict kissing configuration;
    six leaves close a hexagon of non-adjacent neighbours), in R^3 from the kissing number 12
    down (13 is impossible)."""
    for k, dim in itertools.product((5, 6, 7), (2,)):
        W = nx.to_numpy_array(nx.star_graph(k))
        res = dgp.classify(W, similarity="euclidean", tau=1.0, dim=dim)
        assert res.verdict == ("degenerate" if k <= 5 else "inconsistent")
    W = nx.to_numpy_array(nx.star_graph(13))
    res = dgp.classify(W, similarity="euclidean", tau=1.0, dim=3)
    cert = res.to_dict()["certificate"]
    assert res.verdict == "inconsistent" and cert["obstruction"] == "kissing"
    assert brute_gap(nx.to_numpy_array(nx.star_graph(6)), 2) > FLOOR
