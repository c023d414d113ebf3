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
