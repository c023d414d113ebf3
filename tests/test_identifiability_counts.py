"""Every identifiability report says how many near-optimal solutions it compared, and says the
same number in its field, its statement and its JSON (the prototypes' record had no
``solutions``, and a settled rank-d report said "the search's near-optimal solutions" with the
count dropped, though the search knew it)."""

from __future__ import annotations

import json

import pytest

import dgp


@pytest.mark.slow  # a rank-d search and its sublevel probe, twice: about 5 s
def test_the_count_is_the_searchs_and_said_once():
    p = dgp.Problem(objective="supcon", sizes=[6, 5, 4, 3, 2, 2], tau=0.2)
    res = dgp.supcon_prototypes(p, dim=2, progress=False)
    ident = res.identifiability
    assert ident.solutions >= 2  # the search found other solutions within the resolution
    assert f"among {ident.solutions} solutions found" in ident.statement
    d = json.loads(json.dumps(res.to_dict()))["identifiability"]
    assert d["solutions"] == ident.solutions and d["statement"] == ident.statement
    # the same class problem through optimum: the same search, the same count
    o = dgp.optimum(p, dim=2, progress=False)
    assert o.identifiability.solutions == ident.solutions


def test_nothing_compared_leaves_no_spread():
    """One solution and no probe: undecided, and no spread measured (zeros read as pinned)."""
    import numpy as np

    from dgp.solver import identifiability_report

    Z = np.linalg.qr(np.random.default_rng(0).standard_normal((6, 3)))[0]
    rep = identifiability_report([Z], [1.0], 0, seed=0, resolution=5e-4)
    assert rep.statement.startswith("undecided") and rep.solutions == 1
    assert rep.spread == {} and rep.pinned == {}


def test_a_solution_found_twice_is_one_solution():
    """A run that never left its start (a warm ReLU run at a corner) is that start again, not a
    second near-optimal solution: the report compares distinct points only."""
    import numpy as np

    from dgp.solver import identifiability_report

    rng = np.random.default_rng(1)
    Z = np.linalg.qr(rng.standard_normal((6, 3)))[0]
    other = Z @ np.linalg.qr(rng.standard_normal((3, 3)))[0]  # the same Gram, rotated
    twice = identifiability_report([Z, Z.copy()], [1.0, 1.0], 0, seed=0, resolution=5e-4)
    assert twice.solutions == 1 and twice.statement.startswith("undecided")
    distinct = identifiability_report([Z, Z.copy(), other], [1.0, 1.0, 1.0], 0, seed=0,
                                      resolution=5e-4)
    assert distinct.solutions == 2 and distinct.identifiable


def test_each_candidate_is_near_on_its_own_paired_comparison():
    """A noisy candidate (its paired half-width 0.007) counts as near; it widens nothing for a
    clearly worse one (0.004 above the best to 1e-5: eight times the resolution)."""
    import numpy as np

    from dgp.solver._expected import near_optimal
    from dgp.solver._stochastic import Estimate

    rng = np.random.default_rng(0)
    base = rng.normal(1.0, 0.1, 200)

    def est(v):
        return Estimate(float(v.mean()), float(v.std(ddof=1) / np.sqrt(v.size)), v.size, v)

    E = [est(base), est(base + rng.normal(0.0, 0.05, 200)),
         est(base + 0.004 + rng.normal(0.0, 1e-4, 200)), est(base + 2e-4)]
    near = near_optimal(E, 0, 1.0)
    assert near == [0, 1, 3]
    # per anchor under reduction="sum": a batch of 10 anchors, the same differences x 10
    near10 = near_optimal([est(10 * e.values) for e in E], 0, 0.1)
    assert near10 == near


def test_the_probe_does_not_depend_on_the_rows_rotation():
    """At a zero mean (the balanced simplex) the mean's push had no gradient and moved or not
    with the roundoff of the rows' rotation ("pinned: mean_norm" an artefact): a rotated copy
    of the same prototypes now gives the same report."""
    import numpy as np

    from dgp.solver import BlockFactor
    from dgp.solver._identifiability import report_from_spread
    from dgp.solver._sublevel_probe import factor_loss

    s = dgp.supcon_prototypes(sizes=[2, 2, 2, 2], tau=0.2, dim=3, progress=False)
    lam, V = np.linalg.eigh(s.gram)
    Z = V[:, -3:] * np.sqrt(np.clip(lam[-3:], 0.0, None))
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    loss = BlockFactor(np.array([2, 2, 2, 2]), 0.2, None)
    reports = []
    for t in range(2):
        Q = np.linalg.qr(np.random.default_rng(t).standard_normal((3, 3)))[0] if t else np.eye(3)
        reports.append(report_from_spread({}, 1, Z @ Q, resolution=5e-4, seed=0,
                                          probe=factor_loss(loss, Z @ Q),
                                          row_weights=np.ones(4)))
    assert reports[0].pinned == reports[1].pinned
    for key in ("cosine_max", "spectrum", "mean_norm"):
        assert abs(reports[0].spread[key] - reports[1].spread[key]) < 1e-3, key
    assert reports[0].spread["mean_norm"] > 0.01  # the mean does move within the resolution
