"""``classify`` and ``classify_objective`` check the keywords they share in one place
(``dgp.classification.classify_keywords``, issue 39): the same values are refused with the
same messages, and the deprecation of ``rtol`` points at the user's own call in both."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dgp
from dgp.errors import InvalidParameterError
from dgp.objectives import classify_objective

LABELS = [0, 0, 1, 1, 2, 2]
W = dgp.weights.supcon_weights(LABELS)
GOOD = {"tau": 0.5, "dim": 2}

BAD = [
    ("tau", {"tau": 0.0}), ("tau", {"tau": "0.5"}), ("tau", {"tau": np.inf}),
    ("dim", {"dim": 0}), ("dim", {"dim": 2.0}),
    ("method", {"method": "cvx"}),
    ("tol", {"tol": 2.0}), ("tol", {"tol": -1e-9}),
    ("floor", {"floor": 1}),
    ("starts", {"starts": 3}),  # without floor=True
    ("seed", {"floor": True, "seed": -1}),
]


def _error(call, **kwargs):
    with pytest.raises(InvalidParameterError) as info:
        call(**{**GOOD, **kwargs})
    return info.value


@pytest.mark.parametrize(("name", "bad"), BAD, ids=[f"{n}-{i}" for i, (n, _) in enumerate(BAD)])
def test_both_entry_points_refuse_a_shared_keyword_alike(name, bad):
    a = _error(lambda **k: dgp.classify(W, **k), **bad)
    b = _error(lambda **k: classify_objective("supcon", LABELS, **k), **bad)
    assert a.param == b.param == name
    assert type(a) is type(b) and str(a) == str(b)


def test_both_read_the_shared_keywords_to_the_same_result():
    kw = {"tau": 0.3, "dim": 3, "tol": 1e-8}
    a = dgp.classify(W, **kw).to_dict()
    b = classify_objective("supcon", LABELS, **kw).to_dict()
    assert (a["verdict"], a["rank"], a["dim"], a["tau"]) == (b["verdict"], b["rank"], b["dim"],
                                                             b["tau"])


@pytest.mark.parametrize("call", [lambda **k: dgp.classify(W, **k),
                                  lambda **k: classify_objective("supcon", LABELS, **k)],
                         ids=["classify", "classify_objective"])
def test_the_rtol_warning_points_at_the_users_call(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = call(rtol=1e-7, **GOOD)
    dep = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    assert len(dep) == 1 and "use tol" in str(dep[0].message)
    assert dep[0].filename == __file__
    assert old.to_dict() == call(tol=1e-7, **GOOD).to_dict()
