"""One validator for the True-or-False parameters (issue 39): ``dgp.errors.check_flag``.

``classify(floor=)``, ``classify_objective(floor=)``, ``phase(excess=)``,
``load_edge_list(directed=)`` and ``TargetedSupConLoss(target_anchors=)`` each wrote the same
check again (and ``classify_objective`` raised a plain ``ParameterError`` where the others
raised the type error). They now go through the one validator, so they refuse and accept the
same values with the same error class and message.
"""

from __future__ import annotations

import numpy as np
import pytest

import dgp
from dgp.design import phase
from dgp.errors import InvalidParameterError, ParameterTypeError, check_flag
from dgp.io import load_edge_list
from dgp.objectives import classify_objective

NOT_FLAGS = [0, 1, 1.0, "yes", "True", None, np.array([True])]


@pytest.mark.parametrize("value", [True, False, np.True_, np.False_])
def test_check_flag_accepts_booleans_and_returns_a_python_bool(value):
    out = check_flag(value, "flag")
    assert type(out) is bool and out == bool(value)


@pytest.mark.parametrize("value", NOT_FLAGS)
def test_check_flag_refuses_everything_else_naming_the_parameter(value):
    with pytest.raises(ParameterTypeError) as info:
        check_flag(value, "some_flag")
    err = info.value
    # a type error that is also the one invalid-parameter class (exit 2 on the command line)
    assert isinstance(err, TypeError) and isinstance(err, InvalidParameterError)
    assert err.param == "some_flag"
    assert str(err).startswith("some_flag must be True or False, got ")


def _entry_points(tmp_path):
    W = dgp.weights.supcon_weights([0, 0, 1, 1])
    edges = tmp_path / "edges.txt"
    edges.write_text("1 2 1\n2 3 1\n")
    yield "floor", lambda v: dgp.classify(W, tau=0.5, dim=2, floor=v)
    yield "floor", lambda v: classify_objective("supcon", [0, 0, 1, 1], tau=0.5, dim=2, floor=v)
    yield "excess", lambda v: phase("soft-supcon", sizes=[3, 3], eps=0.1, dim=2,
                                    grid={"tau": [0.5]}, excess=v)
    yield "directed", lambda v: load_edge_list(edges, directed=v)


@pytest.mark.parametrize("value", [1, "yes", None])
def test_every_flag_of_the_library_is_refused_by_the_same_validator(tmp_path, value):
    for name, call in _entry_points(tmp_path):
        with pytest.raises(ParameterTypeError) as info:
            call(value)
        assert info.value.param == name
        assert str(info.value) == str(_message(value, name))


def _message(value, name):
    try:
        check_flag(value, name)
    except ParameterTypeError as err:
        return err
    raise AssertionError("check_flag accepted a non-boolean")


def test_a_numpy_boolean_is_a_flag_where_python_bools_are(tmp_path):
    # the same answer for np.False_ as for False (the validator returns a Python bool)
    W = dgp.weights.supcon_weights([0, 0, 1, 1])
    a = dgp.classify(W, tau=0.5, dim=2, floor=False).to_dict()
    b = dgp.classify(W, tau=0.5, dim=2, floor=np.False_).to_dict()
    assert a["verdict"] == b["verdict"] and a["rank"] == b["rank"]
    assert a["c_interval"] == b["c_interval"]


def test_targeted_supcon_target_anchors_goes_through_the_same_validator():
    pytest.importorskip("torch")
    from dgp.torch.losses import TargetedSupConLoss

    with pytest.raises(ParameterTypeError, match=r"^target_anchors must be True or False"):
        TargetedSupConLoss(tau=0.1, target_anchors=1)
    assert TargetedSupConLoss(tau=0.1, target_anchors=np.True_).target_anchors is True


def test_load_edge_list_reads_the_checked_flag(tmp_path):
    # ``directed`` is checked where the edge list is read; the checked bool builds the graph
    pytest.importorskip("networkx")
    edges = tmp_path / "edges.txt"
    edges.write_text("1 2 1\n2 1 1\n")
    assert load_edge_list(edges, directed=np.True_).is_directed()
    assert load_edge_list(edges, directed=np.True_).number_of_edges() == 2
    assert not load_edge_list(edges, directed=np.False_).is_directed()
    assert load_edge_list(edges, directed=np.False_).number_of_edges() == 1
