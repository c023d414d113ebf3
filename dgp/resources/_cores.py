"""The cores this process may use: its CPU affinity and its cgroup's CPU quota (cgroup v1 and
v2, the process's own cgroup and its ancestors). Re-exported by :mod:`dgp.resources`, where the
API reference documents :func:`available_cores` and :func:`cgroup_cpu_limit`."""

from __future__ import annotations

import math
import os

__all__ = ["available_cores", "cgroup_cpu_limit"]


# where the kernel shows this process's cgroups (tests point them at fake trees)
_CGROUP_ROOT = "/sys/fs/cgroup"
_SELF_CGROUP = "/proc/self/cgroup"


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as fh:
            return fh.read().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _cgroup_paths() -> tuple[list[str], list[str]]:
    """The folders of this process's cgroup (v2) and of its ``cpu`` controller (v1), each
    followed by its ancestors up to the mount point: the quota of any of them applies."""
    v2: list[str] = []
    v1: list[str] = []
    text = _read(_SELF_CGROUP) or ""
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, rel = parts
        rel = rel.strip().strip("/")
        chain = [rel]
        while rel:
            rel = os.path.dirname(rel)
            chain.append(rel)
        if controllers == "":  # v2, mounted alone or beside v1 ("unified")
            for base in (_CGROUP_ROOT, os.path.join(_CGROUP_ROOT, "unified")):
                v2 += [os.path.join(base, r) if r else base for r in chain]
        elif "cpu" in controllers.split(","):
            for mount in (controllers, "cpu", "cpu,cpuacct", "cpuacct,cpu"):
                base = os.path.join(_CGROUP_ROOT, mount)
                v1 += [os.path.join(base, r) if r else base for r in chain]
    # inside a container (its own cgroup namespace) the mount point is the process's cgroup
    v2.append(_CGROUP_ROOT)
    v1 += [os.path.join(_CGROUP_ROOT, m) for m in ("cpu", "cpu,cpuacct", "cpuacct,cpu")]
    return v2, v1


def cgroup_cpu_limit() -> float | None:
    """The CPU quota of this process's cgroup, in cores (``2.5``: 250 ms of CPU time per
    100 ms), or ``None`` when there is none (or no cgroup file says one).

    cgroup v2 (``cpu.max``: ``QUOTA PERIOD``, or ``max``) and v1 (``cpu.cfs_quota_us`` over
    ``cpu.cfs_period_us``, ``-1`` for none) are read for the process's own cgroup and each of
    its ancestors; the smallest quota applies. Read once per process.
    """
    key = (_CGROUP_ROOT, _SELF_CGROUP)
    if key not in _QUOTA:  # read once per process: a dozen small files, a quarter millisecond
        _QUOTA[key] = _read_cpu_limit()
    return _QUOTA[key]


_QUOTA: dict[tuple[str, str], float | None] = {}


def _read_cpu_limit() -> float | None:
    v2, v1 = _cgroup_paths()
    found: list[float] = []
    for folder in dict.fromkeys(v2):
        fields = (_read(os.path.join(folder, "cpu.max")) or "").split()
        if len(fields) == 2 and fields[0] != "max":
            try:
                quota, period = float(fields[0]), float(fields[1])
            except ValueError:
                continue
            if quota > 0 and period > 0:
                found.append(quota / period)
    for folder in dict.fromkeys(v1):
        quota_s = _read(os.path.join(folder, "cpu.cfs_quota_us"))
        period_s = _read(os.path.join(folder, "cpu.cfs_period_us"))
        try:
            quota, period = float(quota_s or "-1"), float(period_s or "0")
        except ValueError:
            continue
        if quota > 0 and period > 0:
            found.append(quota / period)
    return min(found) if found else None


def available_cores() -> int:
    """The cores this process may actually use (at least 1): those of its CPU affinity
    (``os.sched_getaffinity``: ``taskset``, a container's ``--cpuset-cpus``, a batch
    scheduler's allocation), fewer when its cgroup's CPU quota (:func:`cgroup_cpu_limit`: a
    container's ``--cpus``, a Kubernetes CPU limit) allows less, rounded up as
    :func:`joblib.cpu_count` rounds it. ``os.cpu_count()`` counts the machine's cores instead,
    which a process limited to two of them would oversubscribe.

    Examples
    --------
    >>> 1 <= available_cores() <= os.cpu_count()
    True
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cores = os.cpu_count() or 1
    quota = cgroup_cpu_limit()
    if quota is not None:
        cores = min(cores, math.ceil(quota))
    return max(1, cores)
