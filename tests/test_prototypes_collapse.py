"""The minority-collapse verdict and the summaries that lead with it (issue 42): the verdict
against an independent computation, never a difference inside its interval, invariant under
relabelling the classes; text, HTML and JSON lead with it and with the positive-pair rates."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import t as student_t

from dgp.prototypes import (
    MINORITY_COSINE_FLOOR,
    MinorityCollapse,
    minority_collapse,
    positive_pair_rates,
    supcon_prototypes,
)

LT = [round(200 * 0.02 ** (k / 11)) for k in range(12)]  # long-tailed, 200 to 4


def _simplex(K):
    G = np.full((K, K), -1.0 / (K - 1))
    np.fill_diagonal(G, 1.0)
    return G


def test_full_batch_long_tail_leans_together_and_the_numbers_are_the_grams():
    p = supcon_prototypes(LT, tau=0.1)
    mc = p.minority_collapse
    assert isinstance(mc, MinorityCollapse) and mc.collapsed is True
    G = p.gram
    head, tail = [0, 1, 2, 3], [8, 9, 10, 11]  # the largest and the smallest third
    assert (mc.head_classes, mc.tail_classes) == (4, 4)
    head_mean = np.mean([G[i, j] for i in head for j in head if i < j])
    assert mc.head_cosine == pytest.approx(head_mean, abs=1e-12)
    i, j = mc.pair
    assert i in tail and j in tail and mc.cosine == pytest.approx(G[i, j], abs=1e-12)
    # exact: the chosen pair is the tail pair most above the head, and no interval
    best = max(G[a, b] for a in tail for b in tail if a < b)
    assert mc.cosine == pytest.approx(best, abs=1e-12)
    assert mc.cosine_interval == (mc.cosine, mc.cosine) and "exact" in mc.noise
    assert mc.excess > MINORITY_COSINE_FLOOR and mc.cosine < 1


def test_balanced_and_class_balanced_simplex_do_not_collapse():
    assert supcon_prototypes([6] * 7, tau=0.1).minority_collapse.collapsed is False
    b = supcon_prototypes(LT[:8], tau=0.1, batch_size=16, sampler="class-balanced")
    assert b.method == "closed-form" and b.minority_collapse.collapsed is False
    # what the sampler changes: the same lean at full batch, gone under balanced batches
    assert b.full_batch_minority_collapse.collapsed is True
    text = " ".join(str(b).split())
    assert "against uniform batches" in text
    assert "full batch: minority collapse partial: the tail leans together, not merged" in text


def test_the_json_verdict_tells_partial_from_merged():
    """``collapsed`` is true for a lean and for a merge; the JSON's ``verdict`` tells them
    apart (U14 read ``collapsed: true`` as merged prototypes)."""
    partial = supcon_prototypes(LT, tau=0.1).minority_collapse  # leans, cosine < 1
    K = 9
    merged_gram = _simplex(K)
    merged_gram[7, 8] = merged_gram[8, 7] = 1.0  # two tail prototypes at one point
    merged = minority_collapse(merged_gram, [20] * 5 + [3] * 4)
    no = minority_collapse(_simplex(K), [20] * 5 + [3] * 4)
    undecided = minority_collapse(_simplex(3), [5, 4, 3])
    for mc, verdict in ((partial, "partial"), (merged, "merged"), (no, "no"),
                        (undecided, "undecided")):
        d = json.loads(json.dumps(mc.to_dict()))
        assert d["verdict"] == mc.verdict == verdict
        assert d["collapsed"] == {"partial": True, "merged": True, "no": False,
                                  "undecided": None}[verdict]
        assert list(d)[list(d).index("collapsed") + 1] == "verdict"
        assert mc.word.startswith({"merged": "yes: merged"}.get(verdict, verdict))


def test_verdict_is_invariant_under_relabelling_the_classes():
    G = supcon_prototypes(LT, tau=0.1).gram
    perm = np.random.default_rng(3).permutation(len(LT))
    a = minority_collapse(G, LT)
    b = minority_collapse(G[np.ix_(perm, perm)], [LT[k] for k in perm])
    assert b.collapsed == a.collapsed and b.cosine == pytest.approx(a.cosine, abs=1e-12)
    assert sorted(perm[list(b.pair)]) == sorted(a.pair)


@settings(max_examples=40, deadline=None)
@given(st.floats(0.0, 0.3), st.floats(1e-3, 0.4), st.integers(2, 6), st.integers(0, 10**6))
def test_a_difference_inside_its_interval_is_never_headlined(lean, spread, R, seed):
    K = 9
    rng = np.random.default_rng(seed)
    base = _simplex(K)
    base[7, 8] = base[8, 7] = base[7, 8] + lean  # a tail pair leans by `lean`
    runs = []
    for _ in range(R):
        E = rng.normal(0, spread, (K, K))
        E = np.triu(E, 1)
        runs.append(base + E + E.T)
    runs = np.array(runs)
    sizes = [90, 80, 70, 40, 30, 20, 5, 4, 3]
    mc = minority_collapse(runs[0], sizes, runs=runs)
    head = [0, 1, 2]
    i, j = mc.pair
    # an independent computation of the chosen pair's paired interval, simultaneous over the
    # family of the 3 tail pairs and the tail's mean (Bonferroni, alpha 0.05 split in two)
    run_head = np.array([np.mean([r[a, b] for a in head for b in head if a < b]) for r in runs])
    q_pair = student_t.ppf(1 - 0.0125 / 3, R - 1)
    q_mean = student_t.ppf(1 - 0.0125, R - 1)
    d = runs[:, i, j] - run_head
    assert mc.excess_interval[0] == pytest.approx(d[0] - q_pair * d.std(ddof=1), abs=1e-10)
    tails = [(6, 7), (6, 8), (7, 8)]
    lows = [(runs[:, a, b] - run_head)[0] - q_pair * (runs[:, a, b] - run_head).std(ddof=1)
            for a, b in tails]
    mean = np.mean([runs[:, a, b] - run_head for a, b in tails], axis=0)
    mean_low = mean[0] - q_mean * mean.std(ddof=1)
    assert mc.tail_excess_interval[0] == pytest.approx(mean_low, abs=1e-10)
    beyond = max(lows) > MINORITY_COSINE_FLOOR or mean_low > MINORITY_COSINE_FLOOR
    assert mc.collapsed is bool(beyond)  # headlined exactly when beyond its simultaneous interval


def test_pinned_false_is_undecided_and_few_classes_too():
    G = _simplex(6)
    assert minority_collapse(G, [9, 8, 7, 3, 2, 2], pinned=False).collapsed is None
    assert minority_collapse(_simplex(3), [9, 3, 2]).collapsed is None


def test_summaries_lead_with_the_verdict_and_the_rates():
    p = supcon_prototypes(LT[:6], tau=0.2, batch_size=8)  # every composition: exact
    assert p.batch.exact
    lines = str(p).splitlines()
    assert lines[1].lstrip().startswith("minority")
    assert any(line.lstrip().startswith("positives") for line in lines[2:8])
    assert "minority" in p._repr_html_().split("method")[0]
    d = json.loads(json.dumps(p.to_dict()))
    keys = list(d)
    assert keys.index("minority_collapse") < keys.index("gram") < keys.index("loss")
    assert d["minority_collapse"]["collapsed"] in (True, False)
    r = positive_pair_rates(LT[:6], batch_size=8)
    np.testing.assert_allclose(d["positive_pairs"]["anchor_rate"], r.anchor_rate, rtol=1e-12)
    short = p.summary(gram=False)
    assert "prototype Gram:" not in short and short == str(p).split("\n  prototype Gram:")[0]


def test_full_batch_json_has_no_rates():
    d = supcon_prototypes(LT, tau=0.1).to_dict()
    assert d["positive_pairs"] is None and d["minority_collapse"]["collapsed"] is True


def test_the_verdict_and_the_rates_display_themselves():
    """A notebook shows the verdict and the rates as short tables (no array of one float per
    class), the same facts as the text."""
    p = supcon_prototypes(LT, tau=0.1)
    mc = p.minority_collapse
    text, html = str(mc), mc._repr_html_()
    assert text.startswith("Minority collapse") and mc.word in " ".join(text.split())
    assert "<table" in html and "minority" in html and mc.word.split(":")[0] in html
    r = positive_pair_rates(LT, batch_size=8, sampler="class-balanced")
    text, html = str(r), r._repr_html_()
    assert text.startswith("Positive-pair rates") and "class-balanced" in text
    assert "[" not in text and len(text.splitlines()) <= 5  # no per-class array
    small = int(np.argmin(np.asarray(LT)))
    assert f"{100 * r.anchor_rate[small]:.3g}%" in text and "<table" in html


def test_a_lower_end_above_zero_but_within_the_floor_says_so():
    """A tail pair whose excess over the head is positive but below MINORITY_COSINE_FLOOR is
    no finding; the statement must not print a positive lower end as if it contradicted the
    "no" (new-user trial: "interval down to +0.001" beside "no ... beyond noise")."""
    from dgp.prototypes._collapse import MINORITY_COSINE_FLOOR, minority_collapse

    n = [10, 9, 8, 7, 6, 5, 4, 3, 2, 2, 2, 2]
    K = len(n)
    G = np.full((K, K), -1.0 / (K - 1))
    np.fill_diagonal(G, 1.0)
    G[10, 11] = G[11, 10] = G[0, 1] + 0.8 * MINORITY_COSINE_FLOOR
    mc = minority_collapse(G, n)
    assert mc.collapsed is False
    assert mc.excess_interval[0] > 0
    assert f"within the {MINORITY_COSINE_FLOOR:g} that counts" in mc.statement
    G[10, 11] = G[11, 10] = G[0, 1] + 3 * MINORITY_COSINE_FLOOR
    assert minority_collapse(G, n).collapsed is True
