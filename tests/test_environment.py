"""Environment variables that set dgp's guards are validated: a malformed value is a clear
error naming the variable (exit 2 on the command line), never ignored and never read as a
budget that refuses every call."""

from __future__ import annotations

import numpy as np
import pytest

from dgp.errors import InputError
from dgp.resources import time_budget
from dgp.solver import check_time


@pytest.mark.parametrize("value", ["abc", "nan", "-1", "0", "-inf", "1e", "ten"])
def test_a_malformed_time_budget_is_refused_by_name(monkeypatch, value):
    monkeypatch.setenv("DGP_TIME_BUDGET_S", value)
    with pytest.raises(InputError, match=r"^DGP_TIME_BUDGET_S=.* is not a number of seconds"):
        time_budget()
    with pytest.raises(InputError, match=r"^DGP_TIME_BUDGET_S="):
        check_time(1.0, what="a tiny solve", instead="nothing")


@pytest.mark.parametrize("value, seconds", [(None, 3600.0), ("", 3600.0), (" 90 ", 90.0),
                                            ("inf", float("inf")), ("1e-3", 1e-3)])
def test_a_valid_time_budget_is_read(monkeypatch, value, seconds):
    if value is None:
        monkeypatch.delenv("DGP_TIME_BUDGET_S", raising=False)
    else:
        monkeypatch.setenv("DGP_TIME_BUDGET_S", value)
    assert time_budget() == seconds


@pytest.mark.parametrize("value", ["abc", "nan", "-1"])
def test_cli_refuses_a_malformed_time_budget_before_any_work(tmp_path, cli, monkeypatch, value):
    monkeypatch.chdir(tmp_path)
    X = np.random.default_rng(0).standard_normal((4, 2))
    np.save("W.npy", np.exp(X @ X.T))
    monkeypatch.setenv("DGP_TIME_BUDGET_S", value)
    r = cli("classify", "W.npy", "--tau", "0.5", "--dim", "2")
    assert r.code == 2 and r.out == ""
    assert r.err.startswith(f"error: DGP_TIME_BUDGET_S={value!r}") and r.err.count("\n") == 1


def test_cli_with_no_time_limit_works(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    X = np.random.default_rng(0).standard_normal((4, 2))
    np.save("W.npy", np.exp(X @ X.T))
    monkeypatch.setenv("DGP_TIME_BUDGET_S", "inf")
    assert cli("classify", "W.npy", "--tau", "0.5", "--dim", "2").code == 0
