"""Issue 27, round 2: extremes answered or refused with the flag named, never an internal error
or a kill."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dgp


@pytest.mark.parametrize("sizes", [[2, 2], [5, 3], [2, 9], [100, 2]])
@pytest.mark.parametrize("tau", [0.05, 0.5, 5.0])
def test_two_class_supcon_closed_form_is_the_certified_numeric_optimum(sizes, tau):
    closed = dgp.supcon_prototypes(sizes, tau=tau)
    numeric = dgp.supcon_prototypes(sizes, tau=tau, method="numeric")
    assert closed.method == "closed-form" and closed.equiangular == -1.0
    assert numeric.gram[0, 1] == pytest.approx(-1.0, abs=1e-7)
    assert closed.loss == pytest.approx(numeric.loss, rel=1e-12, abs=1e-12)
    assert closed.unique == numeric.unique


def test_two_classes_at_an_extreme_temperature(cli):
    r = cli("supcon", "--sizes", "5,3", "--tau", "1e-300")
    assert r.code == 0, r.err
    assert "antipodal" in r.out and "exp(-2e+300)" in r.out
    assert all(len(line) <= 80 for line in r.out.splitlines()[:8])


def test_the_batch_tolerance_flag_is_named_as_typed(cli):
    r = cli("supcon", "--sizes", "5,3", "--tau", "0.1", "--batch-size", "4",
                        "--tolerance", "0")
    assert r.code == 2 and r.err.startswith("error: --tolerance ")


def test_a_value_that_starts_with_a_minus_is_taken_by_its_flag(cli):
    r = cli("recommend", "--objective", "soft-supcon", "--sizes", "10,5",
                        "--eps", "0.1", "--want", "realizable", "--dim", "2", "--search", "-1:1")
    assert r.code == 2 and "expected one argument" not in r.err and "--search" in r.err


def test_a_grid_axis_above_the_cell_limit_is_refused_before_it_is_built(cli):
    import time

    t0 = time.perf_counter()
    r = cli("phase", "--objective", "soft-supcon", "--sizes", "30,20",
                        "--grid", "tau=0.1:1:600000000", "--eps", "0.1", "--dim", "3")
    assert r.code == 2 and "above the limit" in r.err
    assert time.perf_counter() - t0 < 5


def test_burer_monteiro_starts_are_guarded_by_the_time_budget():
    W = np.exp(np.random.default_rng(0).standard_normal((5, 5)))
    W = 0.5 * (W + W.T)
    with pytest.raises(dgp.errors.ParameterError, match="starts"):
        dgp.optimum(W, tau=0.5, dim=2, starts=10**9)
    assert math.isfinite(dgp.optimum(W, tau=0.5, dim=2, starts=3).loss)


@pytest.mark.parametrize(("objective", "flag", "value"), [
    ("y-aware", "--sigma", "1e200"), ("y-aware", "--sigma", "1e-200"),
    ("x-clr", "--label-tau", "1e-320"),
])
def test_label_widths_beyond_float64_are_refused_naming_the_flag(tmp_path, cli, objective,
                                                                 flag, value):
    y = tmp_path / "y.csv"
    np.savetxt(y, np.random.default_rng(0).standard_normal((20, 2)), delimiter=",")
    r = cli("classify", "--objective", objective, "--labels", str(y), flag,
                        value, "--tau", "0.5", "--dim", "2")
    assert r.code == 2 and r.err.startswith(f"error: {flag} ") and r.err.count("\n") == 1


def test_memory_refusals_are_the_users_exit_2(cli, monkeypatch):
    monkeypatch.setenv("DGP_MEMORY_LIMIT", "1M")
    r = cli("floors", "--objective", "supcon", "--sizes", "1000000,5",
                        "--tau", "0.1")
    assert r.code == 2 and "memory budget" in r.err and "internal error" not in r.err
    assert issubclass(dgp.resources.MemoryLimitError, dgp.errors.InputError)


@pytest.mark.torch
def test_verify_data_refuses_an_archive_that_unpacks_beyond_the_budget(tmp_path, cli,
                                                                       monkeypatch):
    pytest.importorskip("torch")
    bomb = tmp_path / "bomb.npz"
    np.savez_compressed(bomb, X=np.zeros((2**21, 16)), y=np.zeros(2**21, dtype=np.int64))
    assert bomb.stat().st_size < 2**20  # under a MiB on disk, 272 MiB unpacked
    monkeypatch.setenv("DGP_MEMORY_LIMIT", "64M")
    r = cli("verify", "supcon-imbalance", "--quick", "--data", str(bomb))
    assert r.code == 2 and "memory budget" in r.err and "unpacked" in r.err
    trunc = tmp_path / "trunc.npz"
    trunc.write_bytes(bomb.read_bytes()[: bomb.stat().st_size // 2])
    r = cli("verify", "supcon-imbalance", "--quick", "--data", str(trunc))
    assert r.code == 2 and r.err.startswith("error: data: cannot read")


def test_floors_samples_are_guarded_before_drawing(cli):
    r = cli("floors", "--objective", "supcon", "--sizes", "10,5", "--tau",
                        "0.1", "--dim", "3", "--samples", "1000000000000")
    assert r.code == 2 and "Monte Carlo draws" in r.err and "internal error" not in r.err


@pytest.mark.parametrize("spec", ["dim=1:1e20:3", "dim=1,inf", "tau=0.1,nan"])
def test_grid_values_beyond_numbers_are_one_line_without_numpy_warnings(cli, spec):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a numpy RuntimeWarning would fail the test
        r = cli("phase", "--objective", "soft-supcon", "--sizes", "30,20",
                            "--eps", "0.1", "--tau", "0.5", "--grid", spec)
    assert r.code == 2 and r.err.count("\n") == 1 and "warning" not in r.err
    assert "-9223372036854775808" not in r.err and "nan" not in r.err.split(":")[-1]
