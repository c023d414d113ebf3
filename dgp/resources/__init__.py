"""The memory budget: every allocation-heavy step checks it before allocating.

:func:`check_memory` refuses an allocation above :func:`memory_budget` with a
:class:`MemoryLimitError` (a :class:`ValueError`: the command line reports it as one ``error:``
line, exit status 2) that says what would fit and what to do instead. The budget is half of the
memory this process may use (the smallest of physical memory, the cgroup limit and the
address-space limit), or the value of the environment variable ``DGP_MEMORY_LIMIT``. Within one
command (:func:`holding`) every check also counts the input arrays already held (:func:`hold`),
so that the file as read and the working copy made from it are counted together; the dense path
checks :func:`dense_weighting_bytes` (its copy, its blocks' temporaries and its O(N) arrays).

Threads: the engine's :math:`O(N^3)` work (one tridiagonalisation) runs on the BLAS threads the
caller gives it, by default every core this process may use (:func:`available_cores`: its CPU
affinity and its cgroup's CPU quota, not the machine's count). Multi-threaded reductions round
differently with the thread count, so floats may differ in the last bits between machines;
verdicts, ranks, ``c`` interval decisions and certificates do not (the tolerance policy decides
them, not the last bits). Inside :func:`deterministic`, or with the environment variable
``DGP_DETERMINISTIC=1`` (the command line's ``--deterministic``), BLAS runs on one thread and
the output is bit-identical whatever the number of cores.

Outputs: every file dgp writes goes through :func:`atomic_output` (a temporary file in the same
folder, renamed over the output when complete), so an interrupted or failed write never leaves
a partial file and never clobbers a good one.

The cores a process may use (its affinity and its cgroup's CPU quota) are the job of
:mod:`dgp.resources._cores`, re-exported here.
"""

from __future__ import annotations

import math
import numbers
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from threadpoolctl import ThreadpoolController, threadpool_limits

from dgp.errors import InputError, InputTypeError, describe
from dgp.resources._cores import available_cores, cgroup_cpu_limit

__all__ = [
    "DEFAULT_MEMORY_FRACTION",
    "DETERMINISTIC_ENV",
    "MEMORY_LIMIT_ENV",
    "ROW_BLOCK_ELEMENTS",
    "MemoryLimitError",
    "MemoryScope",
    "atomic_output",
    "available_cores",
    "blas_threads",
    "cgroup_cpu_limit",
    "check_memory",
    "copies_that_fit",
    "dense_weighting_bytes",
    "deterministic",
    "deterministic_requested",
    "format_bytes",
    "hold",
    "holding",
    "memory_budget",
    "time_budget",
]

# ----------------------------------------------------------------------------------------------

#: environment variable that sets the memory budget (bytes, or a size such as ``8G``)
MEMORY_LIMIT_ENV = "DGP_MEMORY_LIMIT"
#: share of the usable memory that dgp allows itself by default
DEFAULT_MEMORY_FRACTION = 0.5
#: allocations up to this size pass the default budget without reading the system's limits
#: (any process that runs Python and NumPy may use more than twice this much)
SMALL_ALLOCATION = 16 * 2**20
_FALLBACK_MEMORY = 8 << 30  # assumed when the platform does not say how much memory there is
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}
#: elements per block of rows of the dense engine's O(N^2) passes (2 MiB per float64 temporary)
ROW_BLOCK_ELEMENTS = 1 << 18
#: float64 temporaries of one block of rows alive at once in the dense path (validation, the
#: entropic bound, the cycle test and the symmetrisation; measured peak: 3, with slack)
_DENSE_BLOCK_TEMPORARIES = 6
#: bytes per sample of the dense engine's O(N) arrays: the tridiagonal form, the reflectors,
#: LAPACK's blocked workspace (64 columns), the row offsets and entropies, the embedding
_DENSE_BYTES_PER_ROW = 8 * 128
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([kmgtp]?)(?:i?b)?\s*$", re.IGNORECASE)


class MemoryLimitError(InputError):
    """An allocation would exceed dgp's memory budget (bad input: the command line exits 2).

    Attributes
    ----------
    nbytes : int
        The estimated size of the refused allocation.
    budget : int
        The budget in force (:func:`memory_budget`).
    what : str
        What needed the memory.
    """

    def __init__(self, message: str, *, nbytes: int, budget: int, what: str) -> None:
        super().__init__(message)
        self.nbytes = nbytes
        self.budget = budget
        self.what = what


def format_bytes(nbytes: float) -> str:
    """A size for people: ``'512 B'``, ``'3.0 KiB'``, ``'74.5 GiB'`` (powers of 1024).

    >>> format_bytes(3 * 2**30)
    '3.0 GiB'
    """
    n = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{int(n)} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")  # pragma: no cover


def dense_weighting_bytes(n: int) -> float:
    """The peak working set of the dense path for ``n`` samples: the one float64 ``n x n``
    copy of the canonical log-weights (the validator's, which the engine then overwrites), the
    temporaries of its blocks of rows and the :math:`O(n)` arrays of the reduction.

    Every loader and validator of a dense weighting checks this (plus what is already held,
    :func:`holding`) before allocating.

    >>> format_bytes(dense_weighting_bytes(4800))
    '192.5 MiB'
    """
    return (8.0 * n * n + 8.0 * _DENSE_BLOCK_TEMPORARIES * ROW_BLOCK_ELEMENTS
            + float(_DENSE_BYTES_PER_ROW) * n)


class MemoryScope:
    """What one command holds (:func:`hold`: the arrays of its input files) and the largest
    estimate it checked (:func:`check_memory`, held bytes included): :func:`holding` yields it.

    Attributes
    ----------
    held : list of (int, str)
        Bytes held and what holds them.
    largest : float
        The largest estimate checked in the scope so far (bytes; 0 before any check).
    """

    def __init__(self) -> None:
        self.held: list[tuple[int, str]] = []
        self.largest = 0.0

    @property
    def held_bytes(self) -> int:
        """The bytes held in this scope."""
        return sum(b for b, _ in self.held)


# the scope of the running command (None: a library call, whose caller owns its arrays)
_SCOPE: ContextVar[MemoryScope | None] = ContextVar("dgp_memory_scope", default=None)


@contextmanager
def holding() -> Iterator[MemoryScope]:
    """A scope (one command) whose loaded inputs stay alive until it ends: what :func:`hold`
    records inside it is added to every :func:`check_memory` inside it, so that an estimate
    counts the file as read beside the working copies made from it. Nested, it is the
    enclosing scope.

    Examples
    --------
    >>> with holding() as scope:
    ...     hold(1000, "a file as read")
    ...     check_memory(24, what="a small array")
    >>> scope.held_bytes, scope.largest
    (1000, 1024.0)
    """
    outer = _SCOPE.get()
    if outer is not None:
        yield outer
        return
    scope = MemoryScope()
    token = _SCOPE.set(scope)
    try:
        yield scope
    finally:
        _SCOPE.reset(token)


def hold(nbytes: float, what: str) -> None:
    """Record ``nbytes`` that stay allocated until the enclosing :func:`holding` scope ends
    (no effect outside one: a library caller owns its arrays)."""
    scope = _SCOPE.get()
    if scope is not None:
        scope.held.append((int(nbytes), what))


def _usable_memory() -> tuple[int, str]:
    """The memory this process may use, and where the number comes from."""
    found: list[tuple[int, str]] = []
    try:
        found.append((os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"), "physical memory"))
    except (AttributeError, ValueError, OSError):  # not a POSIX system
        pass
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path, encoding="ascii") as fh:
                text = fh.read().strip()
        except (OSError, UnicodeDecodeError):
            continue
        if text.isdigit() and int(text) < 1 << 60:  # "max" or a huge number means no limit
            found.append((int(text), "the cgroup memory limit"))
            break
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY and soft > 0:
            found.append((int(soft), "the address-space limit (ulimit -v)"))
    except (ImportError, AttributeError, ValueError, OSError):  # not a POSIX system
        pass
    if not found:
        return _FALLBACK_MEMORY, "an assumed 8 GiB (the platform does not report its memory)"
    return min(found)


def _budget() -> tuple[int | None, str]:
    """The budget in bytes (``None``: unlimited) and a phrase saying where it comes from."""
    raw = os.environ.get(MEMORY_LIMIT_ENV)
    if raw is not None and raw.strip():
        if raw.strip().lower() in ("unlimited", "none", "inf"):
            return None, f"{MEMORY_LIMIT_ENV}={raw.strip()}"
        m = _SIZE.match(raw)
        if m is None or float(m.group(1)) * _UNITS[m.group(2).lower()] < 1:
            raise InputError(
                f"{MEMORY_LIMIT_ENV}={raw!r} is not a memory size; use a number of bytes or a "
                f"size with K, M, G or T (e.g. {MEMORY_LIMIT_ENV}=8G), or 'unlimited'"
            )
        return int(float(m.group(1)) * _UNITS[m.group(2).lower()]), f"{MEMORY_LIMIT_ENV}={raw}"
    usable, source = _usable_memory()
    share = int(DEFAULT_MEMORY_FRACTION * usable)
    return share, f"{DEFAULT_MEMORY_FRACTION:.0%} of {format_bytes(usable)}, {source}"


def memory_budget() -> int | None:
    """The number of bytes dgp allows one allocation-heavy step (``None``: unlimited).

    By default :data:`DEFAULT_MEMORY_FRACTION` (one half) of the memory this process may use:
    the smallest of the physical memory, the cgroup memory limit and the address-space limit
    (``ulimit -v``). The environment variable ``DGP_MEMORY_LIMIT`` overrides it: a number of
    bytes or a size such as ``512M``, ``8G``, ``1.5T`` (powers of 1024), or ``unlimited``.

    Raises
    ------
    ValueError
        If ``DGP_MEMORY_LIMIT`` is set to something that is not a size.

    Examples
    --------
    >>> import os
    >>> os.environ["DGP_MEMORY_LIMIT"] = "2G"
    >>> memory_budget()
    2147483648
    >>> del os.environ["DGP_MEMORY_LIMIT"]
    """
    return _budget()[0]


def check_memory(nbytes: float, *, what: str, hint: str | None = None) -> None:
    """Refuse an allocation of about ``nbytes`` bytes if it exceeds :func:`memory_budget`.

    Call it *before* allocating, with an honest estimate of the peak (all the arrays alive at
    once). Inside a :func:`holding` scope (a command of the command line), the bytes its inputs
    hold (:func:`hold`: the files as read) are added to ``nbytes``. The error says what needed
    the memory, the budget and where it comes from, what to do instead (``hint``) and how to
    raise the budget.

    Parameters
    ----------
    nbytes : float
        Estimated peak size of the allocation, in bytes (``>= 0``; may exceed 2**63).
    what : str
        What needs the memory, e.g. ``"the dense 40000 x 40000 target"``.
    hint : str, optional
        What would fit or what to use instead, e.g. ``"N <= 18000 fits; use the structured
        path (--objective) instead"``. Compute what fits from :func:`memory_budget`.

    Raises
    ------
    MemoryLimitError
        If ``nbytes`` exceeds the budget (a :class:`ValueError`).
    ValueError
        If ``nbytes`` is negative or NaN, or ``DGP_MEMORY_LIMIT`` is malformed.
    TypeError
        If ``nbytes`` is not a real number.

    Examples
    --------
    >>> import os
    >>> os.environ["DGP_MEMORY_LIMIT"] = "1G"
    >>> check_memory(8 * 1000**2, what="a 1000 x 1000 matrix")  # 7.6 MiB: fine
    >>> try:
    ...     check_memory(8 * 10**10, what="a 100000 x 100000 matrix", hint="use --dim")
    ... except MemoryLimitError as exc:
    ...     print(str(exc).split(" (")[0])
    a 100000 x 100000 matrix needs about 74.5 GiB, more than dgp's memory budget of 1.0 GiB
    >>> del os.environ["DGP_MEMORY_LIMIT"]
    """
    if isinstance(nbytes, bool) or not isinstance(nbytes, numbers.Real):
        raise InputTypeError(f"nbytes must be a number of bytes, got {describe(nbytes)}")
    if math.isnan(float(nbytes)) or nbytes < 0:
        raise InputError(f"nbytes must be >= 0, got {describe(nbytes)}")
    scope = _SCOPE.get()
    held = scope.held if scope is not None else []
    kept = 0 if scope is None else scope.held_bytes
    if scope is not None:
        scope.largest = max(scope.largest, float(nbytes) + kept)
    if nbytes + kept <= SMALL_ALLOCATION and not os.environ.get(MEMORY_LIMIT_ENV, "").strip():
        return  # below any default budget: the system's limits are not read for it
    budget, source = _budget()
    if budget is None or nbytes + kept <= budget:
        return
    if kept:
        what = (f"{what}, beside {format_bytes(kept)} already held "
                f"({', '.join(w for _, w in held)}),")
    message = (
        f"{what} needs about {format_bytes(nbytes + kept)}, more than dgp's memory budget of "
        f"{format_bytes(budget)} ({source})"
    )
    if hint:
        message += f"; {hint}"
    message += f"; to allow more, set {MEMORY_LIMIT_ENV} (e.g. {MEMORY_LIMIT_ENV}=32G)"
    raise MemoryLimitError(message, nbytes=int(min(nbytes + kept, 2**63)), budget=budget,
                           what=what)


def copies_that_fit(each: float, *, beside: float = 0.0) -> int | None:
    """How many allocations of ``each`` bytes fit in :func:`memory_budget` beside ``beside``
    bytes and what the enclosing :func:`holding` scope holds (``None``: no budget, any number).

    A step that runs its work in several copies (workers, each with its own working arrays)
    caps the copies with it, before starting any.

    >>> import os
    >>> os.environ["DGP_MEMORY_LIMIT"] = "1000"
    >>> copies_that_fit(300, beside=100)
    3
    >>> del os.environ["DGP_MEMORY_LIMIT"]
    """
    scope = _SCOPE.get()
    kept = 0 if scope is None else scope.held_bytes
    budget = _budget()[0]
    if budget is None or each <= 0:
        return None
    return max(0, int((budget - kept - beside) // each))


# ----------------------------------------------------------------------------------------------
# threads
# ----------------------------------------------------------------------------------------------

#: environment variable that sets the time budget of one call (seconds of estimated work)
TIME_BUDGET_ENV = "DGP_TIME_BUDGET_S"
#: the time budget when the variable is unset: one hour
DEFAULT_TIME_BUDGET_S = 3600.0


def time_budget() -> float:
    """Seconds of estimated work dgp allows one call: ``DGP_TIME_BUDGET_S`` (a number of seconds
    > 0; ``inf`` for no limit), or one hour when it is unset or empty.

    Raises
    ------
    InputError
        If ``DGP_TIME_BUDGET_S`` is set to something that is not a number of seconds > 0 (text,
        NaN, zero or a negative number): never ignored, never read as "refuse everything".

    >>> import os
    >>> os.environ["DGP_TIME_BUDGET_S"] = "90"
    >>> time_budget()
    90.0
    >>> del os.environ["DGP_TIME_BUDGET_S"]
    """
    raw = os.environ.get(TIME_BUDGET_ENV)
    if raw is None or not raw.strip():
        return DEFAULT_TIME_BUDGET_S
    try:
        value = float(raw.strip())
    except ValueError:
        value = math.nan
    if not value > 0:  # NaN, zero and negative numbers included
        raise InputError(
            f"{TIME_BUDGET_ENV}={describe(raw)} is not a number of seconds > 0; set it to, e.g., "
            f"{TIME_BUDGET_ENV}=3600 (or inf for no limit), or unset it for the default of one "
            "hour"
        )
    return value


#: environment variable that asks for bit-identical output (``1``; ``0`` or unset: all threads)
DETERMINISTIC_ENV = "DGP_DETERMINISTIC"
_ON, _OFF = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")
# inside deterministic(): BLAS is already pinned for the whole block
_PINNED: ContextVar[bool] = ContextVar("dgp_deterministic", default=False)


def _env_deterministic() -> bool:
    raw = os.environ.get(DETERMINISTIC_ENV)
    if raw is None or raw.strip().lower() in _OFF:
        return False
    if raw.strip().lower() in _ON:
        return True
    raise InputError(
        f"{DETERMINISTIC_ENV}={raw!r} is not a switch; use {DETERMINISTIC_ENV}=1 for "
        f"bit-identical output on one BLAS thread, or {DETERMINISTIC_ENV}=0 (or unset it) for "
        "all threads"
    )


def deterministic_requested() -> bool:
    """Whether bit-identical output is asked for: inside :func:`deterministic`, or with
    ``DGP_DETERMINISTIC=1`` in the environment.

    Raises
    ------
    InputError
        If ``DGP_DETERMINISTIC`` is set to something other than ``0``/``1`` (or ``true``/
        ``false``, ``yes``/``no``, ``on``/``off``).
    """
    return _PINNED.get() or _env_deterministic()


@contextmanager
def deterministic() -> Iterator[None]:
    """Bit-identical output whatever the number of cores: inside the block, BLAS (numpy's and
    scipy's) runs on one thread.

    By default dgp runs its :math:`O(N^3)` work on every BLAS thread; floats then differ in the
    last bits between thread counts (verdicts, ranks and certificates never do). Use this when
    the floats themselves must be reproducible across machines, at the price of one core. The
    environment variable ``DGP_DETERMINISTIC=1`` does the same for every classification, and
    the command line's ``--deterministic`` for the whole command.

    Examples
    --------
    >>> import numpy as np
    >>> import dgp
    >>> W = dgp.weights.soft_supcon_weights([0, 0, 1, 1], eps=0.3)
    >>> with dgp.deterministic():
    ...     res = dgp.classify(W, tau=0.5, dim=2)
    >>> res.verdict
    'realizable'
    """
    token = _PINNED.set(True)
    try:
        with threadpool_limits(limits=1, user_api="blas"):
            yield
    finally:
        _PINNED.reset(token)


_CONTROLLER: list[ThreadpoolController] = []


def _blas_libraries() -> list:
    """threadpoolctl's controllers of the BLAS libraries loaded (found once per process:
    scanning them costs milliseconds)."""
    if not _CONTROLLER:
        _CONTROLLER.append(ThreadpoolController())
    return [lib for lib in _CONTROLLER[0].lib_controllers if lib.user_api == "blas"]


@contextmanager
def blas_threads() -> Iterator[None]:
    """The BLAS threads of the engine's heavy work (a context manager): those the caller gives,
    but never more than :func:`available_cores` (OpenBLAS starts one per core of the affinity
    mask and ignores a cgroup's CPU quota: a container limited to 2 of 64 cores would run 64
    spinning threads), or one when :func:`deterministic_requested` (already one inside
    :func:`deterministic`; this pins it for ``DGP_DETERMINISTIC=1``). A library given fewer
    threads (``OPENBLAS_NUM_THREADS=1``, :func:`threadpoolctl.threadpool_limits`) keeps them.

    Raises
    ------
    InputError
        If ``DGP_DETERMINISTIC`` is malformed.
    """
    if _PINNED.get():
        yield
        return
    if _env_deterministic():
        with threadpool_limits(limits=1, user_api="blas"):
            yield
        return
    cap = available_cores()
    lowered = [(lib, lib.num_threads) for lib in _blas_libraries() if lib.num_threads > cap]
    for lib, _ in lowered:
        lib.set_num_threads(cap)
    try:
        yield
    finally:
        for lib, before in lowered:
            lib.set_num_threads(before)


# ----------------------------------------------------------------------------------------------
# outputs
# ----------------------------------------------------------------------------------------------


@contextmanager
def atomic_output(path: str) -> Iterator[str]:
    """A temporary path next to ``path`` (same extension) to write to; renamed over ``path``
    when the block ends normally, removed when it raises (the target is then untouched): a
    write that fails or is interrupted halfway never leaves a truncated file and never
    replaces a good one.

    The temporary file is created exclusively under an unpredictable name (``tempfile.mkstemp``:
    ``O_CREAT | O_EXCL``, so a link planted in the folder is never followed), in the folder of
    ``path``'s real path, so the rename stays on one file system. An existing file is replaced
    by the new one, which keeps its permission bits (a hard link to the old file keeps the old
    content); a new file gets the permission bits ``open`` would give it (``0o666`` less the
    umask); a symbolic link is followed, so the link stays and its target is replaced.

    Raises
    ------
    OSError
        If the temporary file cannot be created, written or renamed: naming ``path`` (not the
        temporary file).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "table.csv"
    >>> with atomic_output(str(out)) as tmp:
    ...     _ = pathlib.Path(tmp).write_text("a,b\\n")
    >>> out.read_text()
    'a,b\\n'
    """
    real = os.path.realpath(path)
    folder, base = os.path.split(real)
    ext = os.path.splitext(base)[1]
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{base[:100]}.", suffix=f".tmp{ext}", dir=folder)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror or str(exc), path) from exc
    try:
        if os.path.isfile(real):
            shutil.copymode(real, tmp)
        else:
            os.fchmod(fd, 0o666 & ~_umask())
        os.close(fd)
        fd = -1
        yield tmp
        os.replace(tmp, real)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror or str(exc), path) from exc
    finally:
        if fd >= 0:
            os.close(fd)
        if os.path.lexists(tmp):
            os.unlink(tmp)


def _umask() -> int:
    """The process's umask (read by setting it and putting it back: there is no getter)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
