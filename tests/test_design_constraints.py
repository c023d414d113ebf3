"""The design tools check ``tau``, the objectives' parameters, ``similarity`` and ``sizes``
against the one declaration of their constraints, ``dgp.problem.PARAMETER_CONSTRAINTS``
(issue 39: constraints declared once), so that ``phase`` refuses exactly what ``Problem``
refuses, with the same message, and accepts what it accepts."""

from __future__ import annotations

import pytest

from dgp.design import phase, recommend
from dgp.errors import InvalidParameterError
from dgp.problem import PARAMETER_CONSTRAINTS, Problem

VALUES = ("tau", "sigma", "eps", "label_tau")


def _problem_error(name, value):
    c = PARAMETER_CONSTRAINTS[name]
    with pytest.raises(InvalidParameterError) as info:
        Problem(**{"tau": 0.5, **c.context, name: value})
    return info.value


def _phase(name, value):
    c = PARAMETER_CONSTRAINTS[name]
    kwargs = {"tau": 0.5, **c.context, name: value}
    return phase(kwargs.pop("objective"), kwargs.pop("labels", None), grid={"dim": [2]},
                 **kwargs)


@pytest.mark.parametrize("name", [*VALUES, "similarity", "sizes"])
def test_phase_refuses_what_problem_refuses_with_the_same_message(name):
    for bad in PARAMETER_CONSTRAINTS[name].invalid:
        want = _problem_error(name, bad)
        with pytest.raises(InvalidParameterError) as info:
            _phase(name, bad)
        assert type(info.value) is type(want)
        assert (info.value.param, str(info.value)) == (want.param, str(want)), bad


@pytest.mark.parametrize("name", [*VALUES, "similarity", "sizes"])
def test_phase_accepts_what_problem_accepts(name):
    good = PARAMETER_CONSTRAINTS[name].valid
    Problem(**{"tau": 0.5, **PARAMETER_CONSTRAINTS[name].context, name: good})
    pm = _phase(name, good)
    assert len(pm.cells) == 1 and pm.cells[0]["verdict"] in (
        "realizable", "degenerate", "inconsistent")


@pytest.mark.parametrize("name", VALUES)
def test_a_swept_value_is_checked_against_the_same_constraint(name):
    c = PARAMETER_CONSTRAINTS[name]
    for bad in c.invalid:
        if isinstance(bad, bool | str):  # a grid is an array of numbers
            continue
        want = _problem_error(name, bad)
        kwargs = {"tau": 0.5, **c.context}
        kwargs.pop(name, None)
        with pytest.raises(InvalidParameterError) as info:
            phase(kwargs.pop("objective"), kwargs.pop("labels", None),
                  grid={name: [c.valid, bad]}, dim=2, **kwargs)
        # the same rule, the grid named as the parameter
        assert info.value.param == f"grid[{name!r}]"
        assert info.value.detail == want.detail


def test_recommend_refuses_a_fixed_value_as_problem_does():
    want = _problem_error("eps", 1.5)
    with pytest.raises(InvalidParameterError) as info:
        recommend("soft-supcon", sizes=[3, 3, 3], eps=1.5, dim=2, want="realizable")
    assert str(info.value) == str(want)


def test_the_design_tools_read_the_declaration_itself(monkeypatch):
    # tighten one declared constraint: phase follows it, with no second copy to update
    from dataclasses import replace

    from dgp.problem import Constraint

    c = PARAMETER_CONSTRAINTS["eps"]

    def at_most_half(value, name, rec, batch=False):
        v = c.check(value, name, rec, batch=batch)
        if v > 0.5:
            raise InvalidParameterError(name, f"must be at most 0.5 here, got {v}")
        return v

    monkeypatch.setitem(PARAMETER_CONSTRAINTS, "eps", replace(c, check=at_most_half))
    assert isinstance(PARAMETER_CONSTRAINTS["eps"], Constraint)
    assert len(phase("soft-supcon", sizes=[3, 3], eps=0.4, tau=0.5, grid={"dim": [2]}).cells) == 1
    with pytest.raises(InvalidParameterError, match=r"^eps must be at most 0\.5 here"):
        phase("soft-supcon", sizes=[3, 3], eps=0.6, tau=0.5, grid={"dim": [2]})
    with pytest.raises(InvalidParameterError, match=r"grid\['eps'\] must be at most 0\.5 here"):
        phase("soft-supcon", sizes=[3, 3], tau=0.5, dim=2, grid={"eps": [0.4, 0.6]})


@pytest.mark.parametrize(("name", "value"), [("eps", 1.0), ("eps", 0.0), ("tau", -0.5),
                                             ("tau", float("inf"))])
def test_recommend_simplex_checks_its_given_value_against_the_declaration(name, value):
    want = _problem_error(name, value)
    other = {"tau": None, "eps": None, name: value}
    with pytest.raises(InvalidParameterError) as info:
        recommend("soft-supcon", sizes=[3, 3, 3], want="simplex", **other)
    assert str(info.value) == str(want)


@pytest.mark.parametrize("name", ["tau", "eps"])
def test_the_closed_form_checks_tau_and_eps_against_the_declaration(name):
    from dgp.design import balanced_soft_supcon_simplex

    for bad in PARAMETER_CONSTRAINTS[name].invalid:
        want = _problem_error(name, bad)
        kwargs = {"tau": 2.0, "eps": 0.1, name: bad}
        with pytest.raises(InvalidParameterError) as info:
            balanced_soft_supcon_simplex([3, 3, 3], **kwargs)
        assert type(info.value) is type(want) and str(info.value) == str(want)
