"""The cores dgp uses by default are those the process may actually use: its CPU affinity and
its cgroup's CPU quota (v2 ``cpu.max``, v1 ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``, of its
own cgroup or an ancestor), never the machine's count; the engine's BLAS threads are capped at
them, and a caller's lower count is kept."""

from __future__ import annotations

import math
import os

import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import dgp.resources as resources
import dgp.resources._cores as cores_module  # the cgroup paths are read where defined
from dgp._linalg import pass_workers


@pytest.fixture
def fake_cgroups(tmp_path, monkeypatch):
    """A cgroup tree under ``tmp_path/fs`` and a ``/proc/self/cgroup`` of the test's choosing:
    ``write(relative path, text)`` writes a file of the tree, ``member(text)`` the process's
    cgroup lines."""
    root = tmp_path / "fs"
    root.mkdir()
    self_file = tmp_path / "self-cgroup"
    self_file.write_text("0::/\n")
    monkeypatch.setattr(cores_module, "_CGROUP_ROOT", str(root))
    monkeypatch.setattr(cores_module, "_SELF_CGROUP", str(self_file))

    class Tree:
        def write(self, rel: str, text: str) -> None:
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)

        def member(self, text: str) -> None:
            self_file.write_text(text)

    return Tree()


@pytest.fixture
def eight_cores(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)), raising=False)


def test_no_quota_anywhere_leaves_the_affinity(fake_cgroups, eight_cores):
    assert resources.cgroup_cpu_limit() is None
    assert resources.available_cores() == 8


@pytest.mark.parametrize(("text", "cores", "available"), [
    ("150000 100000\n", 1.5, 2),     # rounded up, as joblib.cpu_count does
    ("200000 100000\n", 2.0, 2),
    ("50000 100000\n", 0.5, 1),      # never below one
    ("1600000 100000\n", 16.0, 8),   # a quota above the affinity: the affinity
    ("max 100000\n", None, 8),       # no limit
    ("garbage\n", None, 8),
])
def test_cgroup_v2_quota(fake_cgroups, eight_cores, text, cores, available):
    fake_cgroups.write("cpu.max", text)
    assert resources.cgroup_cpu_limit() == cores
    assert resources.available_cores() == available


def test_cgroup_v2_quota_of_an_ancestor_applies(fake_cgroups, eight_cores):
    fake_cgroups.member("0::/kubepods/pod1/ctr\n")
    fake_cgroups.write("kubepods/pod1/ctr/cpu.max", "max 100000\n")
    fake_cgroups.write("kubepods/pod1/cpu.max", "300000 100000\n")
    fake_cgroups.write("kubepods/cpu.max", "600000 100000\n")
    assert resources.cgroup_cpu_limit() == 3.0
    assert resources.available_cores() == 3


def test_cgroup_v2_beside_v1_is_read_from_unified(fake_cgroups, eight_cores):
    fake_cgroups.member("1:cpu,cpuacct:/\n0::/job\n")
    fake_cgroups.write("unified/job/cpu.max", "250000 100000\n")
    assert resources.cgroup_cpu_limit() == 2.5
    assert resources.available_cores() == 3


@pytest.mark.parametrize(("quota", "period", "available"), [
    ("50000", "100000", 1), ("400000", "100000", 4), ("-1", "100000", 8),
])
def test_cgroup_v1_quota(fake_cgroups, eight_cores, quota, period, available):
    fake_cgroups.member("4:memory:/x\n2:cpu,cpuacct:/batch\n")
    fake_cgroups.write("cpu,cpuacct/batch/cpu.cfs_quota_us", quota + "\n")
    fake_cgroups.write("cpu,cpuacct/batch/cpu.cfs_period_us", period + "\n")
    assert resources.available_cores() == available
    assert resources.cgroup_cpu_limit() == (None if quota == "-1" else int(quota) / int(period))


def test_the_affinity_counts_not_the_machine(fake_cgroups, monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3, 5}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert resources.available_cores() == 2


def test_without_an_affinity_call_the_cpu_count_is_the_start(fake_cgroups, monkeypatch):
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 6)
    fake_cgroups.write("cpu.max", "400000 100000\n")
    assert resources.available_cores() == 4


def test_this_machine_agrees_with_joblib():
    """An independent count: joblib (loky) reads the affinity and the cgroup quota too."""
    joblib = pytest.importorskip("joblib")
    if os.environ.get("LOKY_MAX_CPU_COUNT"):
        pytest.skip("LOKY_MAX_CPU_COUNT overrides joblib's count")
    assert resources.available_cores() == joblib.cpu_count()
    quota = resources.cgroup_cpu_limit()
    assert quota is None or resources.available_cores() <= math.ceil(quota)


def _blas_counts() -> list[int]:
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def test_blas_threads_are_capped_at_the_available_cores_and_restored(monkeypatch):
    import numpy as np

    np.linalg.eigvalsh(np.eye(3))  # numpy's and scipy's BLAS loaded
    if not _blas_counts():
        pytest.skip("no BLAS library that threadpoolctl can control")
    monkeypatch.delenv("DGP_DETERMINISTIC", raising=False)
    with threadpool_limits(limits=3, user_api="blas"):
        before = _blas_counts()
        monkeypatch.setattr(resources, "available_cores", lambda: 2)
        with resources.blas_threads():
            assert _blas_counts() == [min(c, 2) for c in before]
            assert pass_workers() <= 2
        assert _blas_counts() == before
        monkeypatch.setattr(resources, "available_cores", lambda: 1)
        assert pass_workers() == 1


def test_a_callers_lower_count_is_kept(monkeypatch):
    import numpy as np

    np.linalg.eigvalsh(np.eye(3))
    monkeypatch.delenv("DGP_DETERMINISTIC", raising=False)
    monkeypatch.setattr(resources, "available_cores", lambda: 8)
    with threadpool_limits(limits=1, user_api="blas"):
        with resources.blas_threads():
            assert set(_blas_counts()) <= {1}
        assert set(_blas_counts()) <= {1}


def test_a_parallel_sweep_within_a_one_core_quota_runs_serially(fake_cgroups, monkeypatch):
    """jobs=4 where the cgroup allows one core (the affinity may hold more): no worker process
    is started, and the map is the serial one."""
    joblib = pytest.importorskip("joblib")
    from dgp import phase

    kwargs = {"objective": "soft-supcon", "sizes": [6, 4, 3], "eps": 0.1, "dim": 3,
              "grid": {"tau": [0.1, 1.0]}}
    serial = phase(**kwargs, jobs=1)
    asked = []
    real = joblib.Parallel

    def recording(*args, **kw):
        asked.append(kw.get("n_jobs"))
        return real(*args, **kw)

    monkeypatch.setattr(joblib, "Parallel", recording)
    fake_cgroups.write("cpu.max", "100000 100000\n")
    assert resources.available_cores() == 1
    capped = phase(**kwargs, jobs=4)
    assert asked == []
    assert capped.cells == serial.cells
