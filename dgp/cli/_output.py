"""Shared output helpers of the CLI: JSON with numpy values, simple aligned tables, and the files
a command reads and writes.

File arguments are declared with ``type=FileArg(...)`` (an input, or an output of a kind):
:func:`check_files` then checks every one before the command does any work (each output's
folder writable, its extension known, no output the same file as an input or as another
output), and outputs are written through :func:`atomic_output` (that of
:mod:`dgp.resources`, which the figures of ``dgp verify`` use too: a temporary file in the
same folder, renamed over the target when complete), so an interrupted or failed run never
leaves a partial or clobbered file."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Iterable
from typing import Any

import numpy as np

from dgp.display import SUMMARY_WIDTH
from dgp.errors import InputError
from dgp.records import plain
from dgp.resources import atomic_output

__all__ = [
    "MAX_TABLE",
    "FileArg",
    "add_json_flag",
    "array_path",
    "atomic_output",
    "check_files",
    "emit_json",
    "jsonable",
    "plot_path",
    "print_result",
    "quiet",
    "save_array",
    "save_arrays",
    "table",
]


#: numpy values (and non-finite floats, as null) to plain JSON values: the certificates' own
jsonable = plain

#: the largest Gram (N x N samples or K x K classes) printed whole without ``--gram``
MAX_TABLE = 12


def quiet(args: argparse.Namespace) -> bool:
    """``--quiet``: nothing on stderr but warnings and errors (no estimate, no progress, no
    notes). ``--json`` does not imply it: the JSON object is stdout's alone, and a long
    ``--json`` run redirected to a file still says on stderr how long it will take and how it
    goes (a 90 s ``dgp optimum --json`` at N = 10 000 was silent)."""
    return bool(getattr(args, "quiet", False))


def add_json_flag(p: argparse.ArgumentParser | argparse._ActionsContainer) -> None:
    """``--json`` (on a parser, or on a group of its flags): one JSON object on stdout."""
    p.add_argument("--json", action="store_true", help="print one JSON object")


def add_gram_outputs(o: argparse._ActionsContainer, *, gram: str, embedding: str) -> None:
    """The Gram and embedding files of ``dgp optimum`` and ``dgp supcon`` (``gram``,
    ``embedding``: what each array is, for the help): ``--save-gram``, ``--save-gram-interval``
    (:func:`save_gram_interval`) and ``--save-embedding``."""
    o.add_argument("--save-gram", metavar="FILE", type=FileArg("output", "array"),
                   help=f"write {gram} (.npy, .csv or .txt)")
    o.add_argument("--save-gram-interval", metavar="FILE", type=FileArg("output", "archive"),
                   help="beyond exact enumeration (batches sampled): write a .npz of the Gram "
                   "(gram) and each entry's 95%% interval over the runs (lower, upper; gram_error "
                   "in --json says how)")
    o.add_argument("--save-embedding", metavar="FILE", type=FileArg("output", "array"),
                   help=f"write {embedding} (.npy, .csv or .txt)")


def emit_json(obj: Any) -> None:
    """Print one JSON object on stdout and nothing else."""
    sys.stdout.write(json.dumps(jsonable(obj), indent=2) + "\n")


def print_result(args: argparse.Namespace, result: Any, *, words: Any = None,
                 **fields: Any) -> bool:
    """A command's result on stdout: under ``--json`` exactly ``result.to_dict(**fields)``
    (nothing added, dropped or rewritten), else its ``summary()`` (``summary(words)`` when a
    rewording of its hints is given). Returns whether it printed JSON, after which nothing else
    may go to stdout."""
    if args.json:
        emit_json(result.to_dict(**fields))
        return True
    print(result.summary() if words is None else result.summary(words))
    return False


def table(rows: list[list[str]], header: list[str], *, width: int = SUMMARY_WIDTH) -> str:
    """A plain aligned text table; wider than ``width`` columns, it is printed in blocks of
    columns that fit, one under the other, each with the first column (the row names) again.

    >>> print(table([["a", "1.5", "2.25"]], ["", "x", "y"], width=8))
       x
    -  ---
    a  1.5
    <BLANKLINE>
       y
    -  ----
    a  2.25
    """
    cols = [header, *rows]
    widths = [max(len(r[k]) for r in cols) for k in range(len(header))]
    blocks: list[list[int]] = [[]]
    used = widths[0]
    for k in range(1, len(header)):
        if blocks[-1] and used + 2 + widths[k] > width:
            blocks.append([])
            used = widths[0]
        blocks[-1].append(k)
        used += 2 + widths[k]
    out = []
    for block in blocks:
        keep = [0, *block]
        fmt = "  ".join(f"{{:<{widths[k]}}}" for k in keep)
        lines = [fmt.format(*(header[k] for k in keep)),
                 fmt.format(*("-" * widths[k] for k in keep))]
        lines += [fmt.format(*(r[k] for k in keep)) for r in rows]
        out.append("\n".join(line.rstrip() for line in lines))
    return "\n\n".join(out)


_FIGURE_FORMATS = (".png", ".pdf", ".svg")


def plot_path(path: str, flag: str = "--plot") -> str:
    """Check a ``--plot FILE`` before any work: the figure's real path (``.png`` added when
    there is no extension).

    Raises
    ------
    ValueError
        If the path is a directory, its extension is not a figure format, or its folder does
        not exist or is not writable.
    """
    if os.path.isdir(path):
        raise InputError(f"{flag} {path!r} is a directory; give a file name such as "
                         f"{os.path.join(path, 'figure.png')!r}")
    ext = os.path.splitext(path)[1]
    if not ext:  # the name given is checked too: --plot /dev/null is refused, not /dev/null.png
        _regular_or_absent(path, flag)
        path, ext = path + ".png", ".png"
    if ext.lower() not in _FIGURE_FORMATS:
        raise InputError(f"{flag} {path!r}: unknown figure format {ext!r}; use one of "
                         f"{', '.join(_FIGURE_FORMATS)}")
    return _writable(path, flag)


def _regular_or_absent(path: str, flag: str) -> str:
    """The real path of ``path`` (links followed) when nothing is there or a regular file is;
    a path that cannot be resolved (a loop of links, a name longer than the folder allows, a
    regular file used as a folder) or anything else there (a device, a pipe) is refused: a
    rename would replace the node."""
    try:
        os.stat(path)
    except FileNotFoundError:
        pass  # nothing there (or a dangling link, whose target will be created)
    except OSError as exc:  # ELOOP: a loop of links
        raise InputError(f"{flag} {path!r} cannot be resolved ({exc.strerror or exc}); give a "
                         "file name") from None
    real = os.path.realpath(path)
    if os.path.exists(real) and not os.path.isfile(real):
        raise InputError(f"{flag} {path!r} exists and is not a regular file; give a file name")
    return real


def _writable(path: str, flag: str) -> str:
    """``path`` if a file can be written there: its folder (a link's target's folder) exists
    and a file can be created in it (tried, not guessed from permission bits: ``/proc`` and
    read-only mounts pass ``os.access``), and what is there now, if anything, is a regular
    file (a device, a pipe or a socket is never replaced by a rename)."""
    real = _regular_or_absent(path, flag)
    folder = os.path.dirname(real)
    if not os.path.isdir(folder):
        what = "is not a folder" if os.path.exists(folder) else "does not exist"
        raise InputError(f"{flag} {path!r}: the folder {folder!r} {what}")
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".dgp-write-test-"):
            pass
    except OSError as exc:
        raise InputError(f"{flag} {path!r}: cannot write in the folder {folder!r} "
                         f"({exc.strerror or exc})") from None
    return path


_ARRAY_FORMATS = (".npy", ".csv", ".txt")
#: a comma-separated table (``--csv``)
_TEXT_FORMATS = (".csv", ".txt")
#: several named arrays in one file (``--save-gram-interval``): numpy's ``.npz``, no pickles
_ARCHIVE_FORMATS = (".npz",)


def array_path(path: str, flag: str, formats: tuple[str, ...] = _ARRAY_FORMATS) -> str:
    """Check an output array path (``--save-embedding FILE``) before any work.

    Raises
    ------
    ValueError
        If the path is a directory, has an unknown extension, or its folder does not exist or
        is not writable.
    """
    words = formats[0] if len(formats) == 1 else ", ".join(formats[:-1]) + " or " + formats[-1]
    if os.path.isdir(path):
        raise InputError(f"{flag} {path!r} is a directory; give a file name ending in {words}")
    ext = os.path.splitext(path)[1].lower()
    if ext not in formats:
        raise InputError(f"{flag} {path!r}: use a {words} file name")
    return _writable(path, flag)


def save_array(path: str, array) -> None:
    """Write ``array`` to ``path`` (``.npy`` without pickles, or comma-separated text),
    atomically. Written through an open file, so the name is kept as given (``np.save`` on a
    name would append ``.npy`` to ``P.NPY``)."""
    arr = np.asarray(array, dtype=float)
    with atomic_output(path) as tmp, open(tmp, "wb") as fh:
        if os.path.splitext(path)[1].lower() == ".npy":
            np.save(fh, arr, allow_pickle=False)
        else:
            np.savetxt(fh, arr, delimiter=",", fmt="%.17g")


def save_gram_interval(path: str | None, result: Any) -> str | None:
    """Write ``--save-gram-interval FILE``: a ``.npz`` of the result's ``gram`` and each entry's
    95% interval over independent runs (``lower``, ``upper``; ``confidence`` 0.95), atomically
    and without pickles, where the Gram comes from sampled batches
    (``result.batch.gram_interval``; a sample-level optimum's ``result.gram_spread()``); else a
    warning on stderr says why there is none, and no file is written. Returns the path
    written, or ``None``."""
    if path is None:
        return None
    batch = getattr(result, "batch", None)
    interval = getattr(batch, "gram_interval", None)
    spread = getattr(result, "gram_spread", None)  # a sample-level optimum's, from its runs
    sampled = batch is not None and getattr(batch, "expectation", None) == "stochastic"
    if interval is None and spread is not None and sampled and len(result.runs) > 1:
        _, interval = spread()
    if interval is None:
        why = ("the full-batch Gram, no sampling error" if batch is None else
               "every batch composition enumerated, no sampling error"
               if getattr(batch, "exact", False) or getattr(batch, "expectation", None)
               == "exact" else "one run: the spread of its entries over runs is not measured")
        print(f"warning: --save-gram-interval: no per-entry interval ({why}); {path} not "
              "written", file=sys.stderr)
        return None
    lo, hi = (np.asarray(a, dtype=float) for a in interval)
    with atomic_output(path) as tmp, open(tmp, "wb") as fh:
        np.savez(fh, gram=np.asarray(result.gram, dtype=float), lower=lo, upper=hi,
                 confidence=np.float64(0.95))
    return path


def save_arrays(result: Any, outputs: Iterable[tuple[str, str | None]]) -> None:
    """Write the array attribute ``name`` of ``result`` to ``path`` (:func:`save_array`) for
    each ``(name, path)`` whose path was given (``--save-NAME FILE``); an array not asked for is
    not computed."""
    for name, path in outputs:
        if path is not None:
            save_array(path, getattr(result, name))


class FileArg:
    """The ``type=`` of a file argument: ``FileArg("input")`` or ``FileArg("output", kind)``
    with ``kind`` one of ``"array"`` (``.npy/.csv/.txt``), ``"text"`` (``.csv/.txt``),
    ``"archive"`` (``.npz``),
    ``"figure"`` (``.png/.pdf/.svg``,
    ``.png`` added when there is none), ``"table"`` (any file name) or ``"folder"`` (a
    directory, created before any work). The value stays the string given;
    :func:`check_files` checks it."""

    KINDS = ("array", "text", "archive", "figure", "table", "folder")

    def __init__(self, role: str, kind: str | None = None) -> None:
        if role not in ("input", "output") or (role == "output") != (kind in self.KINDS):
            raise ValueError(f"FileArg({role!r}, {kind!r})")
        self.role, self.kind = role, kind
        self.__name__ = f"{role} file"  # argparse names the type in its messages

    def __call__(self, text: str) -> str:
        return text


def _same(a: str, b: str) -> bool:
    """Whether two paths name the same file (links included; missing files by their path)."""
    if os.path.exists(a) and os.path.exists(b):
        return os.path.samefile(a, b)
    return os.path.realpath(a) == os.path.realpath(b)


def check_files(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Check every :class:`FileArg` of ``args`` before any work, and put each output's real
    path (``.png`` added to a figure without extension) back into ``args``.

    A figure to write needs the ``plot`` extra (matplotlib): that too is checked here, before
    any work.

    Raises
    ------
    InputError
        If an output is a directory (or, for a folder, a file), has an unknown extension, lies
        in a missing or unwritable folder, or is the same file as an input or another output.
    ImportError
        If a figure is asked for and matplotlib is missing (naming the ``plot`` extra).
    """
    inputs: list[tuple[str, str]] = []
    outputs: list[tuple[str, str]] = []
    figures = False
    for action in parser._actions:
        spec = action.type
        value = getattr(args, action.dest, None)
        if not isinstance(spec, FileArg) or value is None:
            continue
        flag = action.option_strings[0] if action.option_strings else action.metavar
        values = value if isinstance(value, list) else [value]
        if spec.role == "input":
            inputs += [(flag, v) for v in values if os.path.isfile(v)]
            continue
        if spec.kind == "figure":
            figures = True
        checked = [_output_path(v, flag, spec.kind) for v in values]
        setattr(args, action.dest, checked if isinstance(value, list) else checked[0])
        outputs += [(flag, v) for v in checked]
    for k, (flag, path) in enumerate(outputs):
        for in_flag, in_path in inputs:
            if _same(path, in_path):
                raise InputError(f"{flag} {path!r} is the input {in_flag} {in_path!r}: writing it "
                                 "would destroy the input; choose another file name")
        for other_flag, other in outputs[:k]:
            if _same(path, other):
                raise InputError(f"{flag} {path!r} and {other_flag} {other!r} are the same file; "
                                 "give each output its own name")
    if figures:
        from dgp.plots import require_matplotlib

        require_matplotlib()


def _output_path(path: str, flag: str, kind: str | None) -> str:
    if kind == "array":
        return array_path(path, flag)
    if kind == "text":
        return array_path(path, flag, _TEXT_FORMATS)
    if kind == "archive":
        return array_path(path, flag, _ARCHIVE_FORMATS)
    if kind == "figure":
        return plot_path(path, flag)
    if kind == "folder":  # created now, and a file written there, before any work
        if os.path.exists(path) and not os.path.isdir(path):
            raise InputError(f"{flag} {path!r} exists and is not a directory")
        try:
            os.makedirs(path, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=path, prefix=".dgp-write-test-"):
                pass
        except OSError as exc:
            raise InputError(f"{flag} {path!r} is not writable ({exc.strerror or exc})") from None
        return path
    if os.path.isdir(path):
        raise InputError(f"{flag} {path!r} is a directory; give a file name")
    return _writable(path, flag)
