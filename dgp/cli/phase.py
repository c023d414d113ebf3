"""``dgp phase``: the verdict map of an objective over a grid of one or two parameters."""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np

from dgp.cli._inputs import add_design_arguments, design_kwargs
from dgp.cli._output import FileArg, add_json_flag, atomic_output, print_result, quiet
from dgp.design import GRID_PARAMETERS, MAX_CELLS, PROFILES, phase
from dgp.errors import InputError, ParameterError
from dgp.resources import check_memory, memory_budget

__all__ = ["DESCRIPTION", "HELP", "add_arguments", "parse_axis", "run"]

_GRID_HELP = (
    "a swept parameter and its values: NAME=LO:HI:N (N values evenly spaced), "
    "NAME=LO:HI:N:log (geometric spacing) or NAME=V1,V2,... ; NAME is one of "
    f"{', '.join(GRID_PARAMETERS)} (label-tau also accepted). Give one or two; the first runs "
    "along the x axis"
)


def parse_axis(text: str) -> tuple[str, np.ndarray]:
    """One ``--grid`` item: ``NAME=LO:HI:N[:log]`` or ``NAME=V1,V2,...``.

    Raises
    ------
    ValueError
        If the item is malformed (the message names ``--grid`` and shows the syntax).
    """
    syntax = "use NAME=LO:HI:N, NAME=LO:HI:N:log or NAME=V1,V2,..."
    name, sep, spec = text.partition("=")
    name = name.strip().replace("-", "_")
    if not sep or not name or not spec.strip():
        raise InputError(f"--grid {text!r}: {syntax}")
    if name not in GRID_PARAMETERS:
        raise InputError(f"--grid {text!r}: unknown parameter {name!r}; sweep one of "
                         f"{', '.join(GRID_PARAMETERS)}")
    integer = name == "dim"
    try:
        if ":" in spec:
            parts = spec.split(":")
            if len(parts) not in (3, 4) or (len(parts) == 4 and parts[3].strip() != "log"):
                raise ValueError
            lo, hi, n = float(parts[0]), float(parts[1]), int(parts[2])
            if not (math.isfinite(lo) and math.isfinite(hi)):  # before numpy spaces them
                raise InputError(f"--grid {text!r}: every value must be a finite number")
            if n < 1:
                raise ValueError
            if n > MAX_CELLS:  # refused before the axis is built
                raise InputError(f"--grid {text!r}: {n} values on one axis, above the limit of "
                                 f"{MAX_CELLS} cells")
            if len(parts) == 4:
                if lo <= 0 or hi <= 0:
                    raise InputError(f"--grid {text!r}: geometric spacing needs LO, HI > 0")
                values = np.geomspace(lo, hi, n)
            else:
                values = np.linspace(lo, hi, n)
        else:
            values = np.array([float(v) for v in spec.split(",")])
    except ValueError as exc:
        if str(exc).startswith("--grid"):
            raise
        raise InputError(f"--grid {text!r}: {syntax}") from None
    if not np.isfinite(values).all():
        raise InputError(f"--grid {text!r}: every value must be a finite number")
    if integer:
        if np.abs(values).max() > 2**53:  # beyond exact integers in float64 (and any dimension)
            raise InputError(f"--grid {text!r}: dim values must be integers below 2**53")
        if not np.all(values == np.round(values)):
            raise InputError(f"--grid {text!r}: dim takes integers; LO:HI:N gives "
                             f"{np.round(values[:4], 3).tolist()}... (use dim=1:16:16, or list "
                             "the values)")
        values = values.astype(np.int64)
    return name, values


#: ``dgp phase``: its line in ``dgp --help``
HELP = "verdict map over a grid of one or two parameters"

#: ``dgp phase``: what ``dgp phase --help`` says first
DESCRIPTION = (
    "The verdict (realizable, degenerate, inconsistent), rank, c interval and "
    "excess loss of an objective (or a weight matrix) on a grid of one or two parameters, "
    "with the closed-form boundaries (Soft SupCon's tau*, y-Aware's tau R^2 = sigma^2, "
    "X-CLR's tau R^2 = tau_y) checked against every cell. Runs in parallel with --jobs, or "
    "on a Dask cluster with --scheduler; the output is the same whichever runs it."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_design_arguments(p)
    p.add_argument("--grid", nargs="+", action="extend", required=True, metavar="NAME=SPEC",
                   help=_GRID_HELP)
    p.add_argument("--classes", type=int,
                   help="imbalance sweep: number of classes K (with --majority)")
    p.add_argument("--majority", type=int, help="imbalance sweep: size of the largest class")
    p.add_argument("--profile", choices=PROFILES, default="exponential",
                   help="imbalance sweep: class sizes n_max r^(-c/(K-1)) (exponential, default) "
                   "or half the classes at n_max / r (step)")
    p.add_argument("--no-excess", action="store_true",
                   help="skip the excess loss of inconsistent cells (verdicts only; faster for "
                   "the class objectives, which solve a prototype problem per cell)")
    p.add_argument("--jobs", type=int, default=1,
                   help="worker processes (joblib; -1: every core). With --scheduler local, the "
                   "number of Dask workers")
    p.add_argument("--scheduler", metavar="ADDR",
                   help="run on Dask: 'local' (a LocalCluster of this machine) or a scheduler "
                   "address such as tcp://HOST:8786, where a Dask scheduler must answer "
                   "Dask's handshake within 10 s, checked before the work (needs the dask "
                   "extra)")
    out = p.add_mutually_exclusive_group()
    add_json_flag(out)
    out.add_argument("--csv", metavar="FILE", type=FileArg("output", "text"),
                     help="write the table, one row per cell, as CSV")
    p.add_argument("--plot", metavar="FILE", type=FileArg("output", "figure"),
                   help="also save a figure (.png, .pdf or .svg; needs the plot extra)")


#: bytes per sample that a cell of an imbalance sweep holds: its int64 class codes and a copy
LABEL_BYTES = 16


def _check_sweep_memory(args: argparse.Namespace) -> None:
    """An imbalance sweep builds the labels of up to ``classes x majority`` samples per cell:
    refused before the work when they do not fit (exit 2, with what would fit)."""
    k, m = args.classes, args.majority
    if k is None or m is None or k < 1 or m < 1:
        return  # the sweep's own validation names them
    n = k * m
    budget = memory_budget()
    hint = ("use a smaller --majority" if budget is None else
            f"--majority <= {max(1, budget // (LABEL_BYTES * k))} fits with --classes {k}")
    check_memory(float(LABEL_BYTES) * n, what=f"an imbalance sweep of up to {n} samples "
                 f"per cell (--classes {k} x --majority {m})", hint=hint)


#: seconds that a scheduler address has to accept a connection and answer Dask's handshake
SCHEDULER_TIMEOUT_S = 10.0


def _check_scheduler(address: str | None) -> None:
    """``--scheduler`` before the work: ``local``, or a ``tcp://HOST:PORT`` (or ``HOST:PORT``)
    where a Dask scheduler answers Dask's handshake within :data:`SCHEDULER_TIMEOUT_S` seconds.
    Another scheme (``local://``, ``inproc://``: nothing another process can reach), a server
    that never answers or one that answers something else (an HTTP server: Dask would read its
    reply as a frame length) is exit 2 naming the address."""
    if address is None or address.strip() == "local":
        return
    text = address.strip()
    scheme, sep, rest = text.rpartition("://")
    host, _, port = (rest if sep else text).rpartition(":")
    if (sep and scheme != "tcp") or not host or not port.isdigit():
        raise InputError(f"--scheduler {address!r}: give 'local' (a Dask LocalCluster of this "
                         "machine) or the address of a running Dask scheduler, tcp://HOST:PORT")
    try:
        from distributed.comm import connect
    except ImportError:
        return  # the sweep names the missing extra
    import asyncio
    import socket
    import struct

    async def handshake() -> None:
        comm = await connect(f"tcp://{host}:{port}", timeout=SCHEDULER_TIMEOUT_S)
        await comm.close()

    try:  # nothing listening: refused at once (Dask would retry until its timeout)
        socket.create_connection((host.strip("[]"), int(port)), timeout=SCHEDULER_TIMEOUT_S).close()
        asyncio.run(asyncio.wait_for(handshake(), SCHEDULER_TIMEOUT_S + 1.0))
    # what a peer that is not a Dask scheduler makes the handshake raise: a refused or reset
    # connection, a timeout (OSError), a reply cut short (EOFError, struct.error) and a reply
    # read as an absurd frame length (MemoryError, ValueError); nothing else runs here
    except (OSError, EOFError, struct.error, MemoryError, ValueError) as exc:
        if isinstance(exc, OSError):
            why = (exc.strerror or str(exc).splitlines()[0]) if str(exc) else type(exc).__name__
        else:
            why = "it answered, but not in Dask's protocol"
        raise InputError(f"--scheduler {address!r}: no Dask scheduler answers there "
                         f"({why[:200]}; waited at most {SCHEDULER_TIMEOUT_S:g} s); check the "
                         "address, or use --scheduler local") from None


def run(args: argparse.Namespace) -> int:
    plot = args.plot  # checked by check_files, with the plot extra, before any work
    grid: dict[str, np.ndarray] = {}
    for item in args.grid:
        name, values = parse_axis(item)
        if name in grid:
            raise ParameterError("grid", f"sweeps {name!r} twice")
        grid[name] = values
    _check_sweep_memory(args)
    _check_scheduler(args.scheduler)
    pm = phase(
        **design_kwargs(args), grid=grid, classes=args.classes,
        majority=args.majority, profile=args.profile, excess=not args.no_excess, jobs=args.jobs,
        scheduler=args.scheduler,
        progress=sys.stderr.isatty() and not quiet(args),
    )
    if plot is not None:
        with atomic_output(plot) as tmp:
            pm.figure().savefig(tmp, dpi=100)
    if args.csv is not None:
        with atomic_output(args.csv) as tmp:
            pm.to_csv(tmp)
    if print_result(args, pm):
        return 0
    if args.csv is not None:
        print(f"\ntable        {args.csv} ({len(pm.cells)} rows)")
    if plot is not None:
        print(("" if args.csv is not None else "\n") + f"figure       {plot}")
    return 0
