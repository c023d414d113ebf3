"""Every value of a phase grid is checked before the first cell runs, by the one declaration of
its parameter (:data:`dgp.problem.PARAMETER_CONSTRAINTS`): a temperature whose inverse overflows
(tau < 5.57e-309) was refused only when its cell came, after the cells before it had been solved
(10 s of an 8-class sweep, minutes of a larger one)."""

from __future__ import annotations

import pytest

import dgp
import dgp.design._sweep as sweep


@pytest.mark.parametrize("name", ["tau", "label_tau"])
def test_a_temperature_whose_inverse_overflows_is_refused_by_its_declaration(name):
    with pytest.raises(dgp.InvalidParameterError, match=f"{name} = .* is too small"):
        dgp.errors.check_temperature(1e-320, name)
    assert dgp.errors.check_temperature(5.6e-309, name) == 5.6e-309


def test_a_bad_grid_value_is_refused_before_any_cell(monkeypatch):
    def no_cells(*args, **kwargs):
        raise AssertionError("a cell ran before the grid was checked")

    monkeypatch.setattr(sweep, "map_cells", no_cells)
    with pytest.raises(dgp.InvalidParameterError, match=r"grid\['tau'\]"):
        dgp.phase("supcon", sizes=[3, 3], dim=2, grid={"tau": [0.1, 0.2, 1e-320]})
    with pytest.raises(dgp.InvalidParameterError, match="tau"):
        dgp.Problem(objective="supcon", sizes=[3, 3], tau=1e-320)
