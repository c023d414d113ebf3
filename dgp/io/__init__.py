r"""Reading user files, and the memory budget every allocation-heavy step checks first.

Loaders
-------
- :func:`load_array`: a plain numeric array (``.npy``, ``.npz``, ``.csv``/``.tsv``/``.txt``).
- :func:`load_weights`: an :math:`N \times N` weighting, dense or ``scipy.sparse``.
- :func:`load_labels`: labels as people have them (header rows, pandas ``to_csv`` output, class
  names such as ``cat``/``dog``, a column chosen by name or position, ``.npz``).
- :func:`load_edge_list`: a graph from lines ``i j [weight]`` (a ``networkx`` graph).

Every failure is a :class:`ValueError` whose message names the file, says what is really wrong
(the line and column of a bad value in a text file) and how to fix it: never a traceback, never
unbounded memory, never a hang. Only regular files are read (no devices, FIFOs or sockets, also
not through a symlink); ``.npy`` headers are parsed and checked against the file size and the
memory budget before any data is read, and nothing is ever unpickled. Text is parsed by numpy's C
parser (:func:`numpy.loadtxt`), at about the size of the final array.

The memory budget (:func:`check_memory`, :func:`memory_budget`) lives in
:mod:`dgp.resources` and is re-exported here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from dgp.errors import InputError, InputTypeError, check_choice
from dgp.io._archive import (
    binary_array,
    is_sparse_npz,
    npz_members,
    pick_member,
    read_member,
    read_sparse,
)
from dgp.io._edges import read_edges
from dgp.io._labels import binary_labels, text_labels
from dgp.io._npy import NUMERIC, read_npy, shape_text, weights_work
from dgp.io._source import dispatch_error, open_regular
from dgp.io._text import MAX_LINE as _MAX_LINE  # noqa: F401 (its name before the split, kept)
from dgp.io._text import numeric_table, text_array
from dgp.resources import (
    DEFAULT_MEMORY_FRACTION,
    MEMORY_LIMIT_ENV,
    MemoryLimitError,
    check_memory,
    format_bytes,
    hold,
    memory_budget,
)

__all__ = [
    "DEFAULT_MEMORY_FRACTION",
    "EDGE_LIST_FORMATS",
    "LABEL_FORMATS",
    "MEMORY_LIMIT_ENV",
    "WEIGHT_FORMATS",
    "LabelFile",
    "MemoryLimitError",
    "check_memory",
    "format_bytes",
    "load_array",
    "load_edge_list",
    "load_labels",
    "load_npz",
    "load_weights",
    "memory_budget",
]


_TEXT = (".csv", ".tsv", ".txt")
_EDGE_TEXT = (*_TEXT, ".edges", ".edgelist")


def load_npz(path: str | os.PathLike, *, name: str) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` archive (:func:`numpy.savez`), read as :func:`load_array`
    reads one: never unpickled, each member's ``.npy`` header checked against the size its
    archive declares and against the memory budget *before* it is read, and a damaged,
    encrypted or oddly compressed member refused with a message naming it.

    Raises
    ------
    ValueError
        If the file is missing, not a regular file, not an ``.npz`` archive, or one of its
        members cannot be read or holds anything but numbers (the message names the member);
        :class:`MemoryLimitError` if a member would exceed the memory budget.
    """
    out: dict[str, np.ndarray] = {}
    with open_regular(path, name) as src:
        zf, members = npz_members(src)
        with zf:
            for key in sorted(members):
                out[key] = read_member(src, zf, members[key], key, NUMERIC)
    return out


# ----------------------------------------------------------------------------------------------
# public loaders
# ----------------------------------------------------------------------------------------------

_ARRAY_KEYS = ("arr_0", "array", "data")
_WEIGHT_KEYS = ("W", "weights", "w", "arr_0")


def _hold(arr, name: str) -> None:
    """Count a loaded array in every later memory check of the command
    (:func:`dgp.resources.hold`): it stays alive beside what is made from it."""
    parts = (arr.data, arr.indices, arr.indptr) if hasattr(arr, "indptr") else (arr,)
    hold(sum(p.nbytes for p in parts), f"the {name} file as read")


def load_array(path: str | os.PathLike, *, name: str, key: str | None = None) -> np.ndarray:
    """Load a plain numeric array from ``path``.

    Accepted formats:

    - ``.npy`` (:func:`numpy.save`); never unpickled: an object array is refused.
    - ``.npz`` (:func:`numpy.savez`): the array ``key``, else the only array, else one called
      ``arr_0``, ``array`` or ``data``.
    - ``.csv``/``.tsv``/``.txt``: numbers separated by commas, tabs, semicolons or whitespace, one
      row per line; ``#`` starts a comment; a UTF-8 byte-order mark is accepted; a header row
      (a line with a field that is not a number) is skipped, and so is the index column of
      pandas ``to_csv`` output (a header whose first field is empty). A single column is
      returned 1-D, as ``int64`` when every value is an integer.

    Parameters
    ----------
    path : str or os.PathLike
        A regular file (devices, FIFOs and sockets are refused, also through a symlink).
    name : str
        What the file is, for messages (e.g. ``"embeddings"``).
    key : str, optional
        The array to read from an ``.npz`` archive.

    Returns
    -------
    numpy.ndarray
        Booleans, integers or floats, in native byte order.

    Raises
    ------
    ValueError
        If the file is missing, not a regular file, unreadable, empty, of an unknown type,
        corrupted or truncated, holds Python objects, complex numbers, dates or strings, a text
        value that is not a number (the message gives its line and column), or would exceed the
        memory budget (:class:`MemoryLimitError`).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "z.csv"
    >>> _ = f.write_text("# two samples\\n1, 2\\n3, 4\\n")
    >>> load_array(f, name="embeddings")
    array([[1., 2.],
           [3., 4.]])
    """
    with open_regular(path, name) as src:
        if src.ext in (".npy", ".npz"):
            arr = binary_array(src, key=key, preferred=_ARRAY_KEYS, allowed=NUMERIC)
        elif src.ext in _TEXT:
            arr = text_array(src)
            if arr.ndim == 1 and np.isfinite(arr).all() and np.equal(np.round(arr), arr).all():
                arr = arr.astype(np.int64)
        else:
            raise dispatch_error(src, (".npy", ".npz", ".csv", ".tsv", ".txt"))
    if arr.ndim == 0:
        raise InputError(f"{name} file {os.fspath(path)!r} holds a single number, not an array")
    if arr.size == 0:
        raise InputError(f"{name} file {os.fspath(path)!r} holds an empty array {arr.shape}")
    _hold(arr, name)
    return arr


#: accepted formats of a weights file (quoted by the command line's help)
WEIGHT_FORMATS = (
    "an N x N matrix: .npy (never unpickled), .npz (numpy.savez: the array W or weights, or "
    "the only one; scipy.sparse.save_npz: a sparse matrix, absent entries being zero weights) "
    "or .csv/.tsv/.txt (numbers separated by commas or whitespace, # comments, an optional "
    "header row)"
)


def load_weights(path: str | os.PathLike, *, name: str = "WEIGHTS", key: str | None = None):
    """Load an ``N x N`` weighting (or log-weighting) from ``path``.

    Accepted formats: an N x N matrix: .npy (never unpickled), .npz (numpy.savez: the array W
    or weights, or the only one; scipy.sparse.save_npz: a sparse matrix, absent entries being
    zero weights) or .csv/.tsv/.txt (numbers separated by commas or whitespace, # comments, an
    optional header row). Text may hold ``inf``/``-inf``/``nan`` (log-weights use ``-inf``);
    values are checked by the function that uses them, not here.

    Parameters
    ----------
    path, name
        As :func:`load_array`.
    key : str, optional
        The array to read from a dense ``.npz`` archive.

    Returns
    -------
    numpy.ndarray or scipy.sparse.csr_array
        A dense array in its stored dtype (float32 stays float32) or, for a file written by
        :func:`scipy.sparse.save_npz`, a validated CSR array.

    Raises
    ------
    ValueError
        As :func:`load_array`, and if the matrix is not square.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "w.csv"
    >>> _ = f.write_text("0 1\\n1 0\\n")
    >>> load_weights(f)
    array([[0., 1.],
           [1., 0.]])
    """
    with open_regular(path, name) as src:
        if src.ext == ".npz":
            zf, members = npz_members(src)
            with zf:
                if is_sparse_npz(members) and key is None:
                    W = read_sparse(src, zf, members)
                else:
                    k = pick_member(src, members, key, _WEIGHT_KEYS)
                    W = read_member(src, zf, members[k], k, NUMERIC, then=weights_work)
        elif src.ext == ".npy":
            W = read_npy(src.fh, src.size, src, what="", allowed=NUMERIC, then=weights_work)
        elif src.ext in _TEXT:
            W, _ = numeric_table(src, then=weights_work)
        else:
            raise dispatch_error(src, (".npy", ".npz", ".csv", ".tsv", ".txt"))
        if W.ndim != 2 or W.shape[0] != W.shape[1]:
            raise src.error(f"holds a {shape_text(W.shape)} array; weights are an N x N matrix")
    _hold(W, name)
    return W


#: accepted formats of a labels file (quoted by the command line's help)
LABEL_FORMATS = (
    ".npy/.npz (an array of labels, integer or class names; .npz: the array labels or y, or "
    "the only one) or .csv/.tsv/.txt: one label per line, or a table with one column per field "
    "(comma, tab or whitespace separated, # comments, an optional header row, pandas to_csv "
    "output with its index column); class labels may be integers or names (cat, dog: numbered "
    "in sorted order); pick a column by name or position"
)


@dataclass(frozen=True)
class LabelFile:
    """Labels read from a file by :func:`load_labels`.

    Attributes
    ----------
    values : numpy.ndarray
        Read-only. Class labels: ``int64`` of shape ``(N,)`` (class names replaced by their
        index in ``classes``). Continuous labels: ``float64`` of shape ``(N,)`` or ``(N, p)``.
    classes : tuple of str or None
        The class names, in sorted order, when the file names its classes (``values[i]`` is an
        index into it); ``None`` when the labels are numbers.
    columns : tuple of (str or int)
        The columns used: their header names when the file has a header, else their 0-based
        positions in the file.
    path : str
        The file read.
    """

    values: np.ndarray
    classes: tuple[str, ...] | None
    columns: tuple[str | int, ...]
    path: str

    def __len__(self) -> int:
        return int(self.values.shape[0])

    def class_name(self, code: int) -> str:
        """The name of class ``code`` (its number as text when the labels are numbers)."""
        return self.classes[code] if self.classes is not None else str(code)

    @property
    def labels(self) -> np.ndarray:
        """The labels as the file gives them, for the library: the class names (a string
        array) when the file names its classes, so that messages and results speak of ``'dog'``,
        not of class 2; else ``values``."""
        if self.classes is None:
            return self.values
        return np.asarray(self.classes, dtype=str)[self.values]


def load_labels(
    path: str | os.PathLike,
    *,
    name: str = "labels",
    column: str | int | None = None,
    kind: str = "auto",
    key: str | None = None,
) -> LabelFile:
    """Load labels from ``path``, as people have them.

    Accepted formats: .npy/.npz (an array of labels, integer or class names; .npz: the array
    labels or y, or the only one) or .csv/.tsv/.txt: one label per line, or a table with one
    column per field (comma, tab or whitespace separated, # comments, an optional header row,
    pandas to_csv output with its index column); class labels may be integers or names (cat,
    dog: numbered in sorted order); pick a column by name or position.

    The first data line is a header when one of its fields is not a number while the line
    below holds a number there, when its first field is empty (pandas' unnamed index, which is
    then skipped), or when it names a column of class names that it never occurs in again (a
    class needs at least two samples). A single line of several values is one label per value.

    Parameters
    ----------
    path, name
        As :func:`load_array`.
    column : str or int, optional
        The column to use: a header name, or a 0-based position in the file (negative counts
        from the end; a string of digits is a position unless it is a header name). In an
        ``.npz`` archive a name may also choose the array. Default: the only column (after
        dropping a pandas index column); for continuous labels, all columns.
    kind : {"auto", "class", "continuous"}
        ``"class"``: one column of integers or names (names are numbered in sorted order and
        kept in :attr:`LabelFile.classes`). ``"continuous"``: numbers, one or more columns.
        ``"auto"``: class names when the column holds names, else the numbers as they are
        (``int64`` when all are integers).
    key : str, optional
        The array to read from an ``.npz`` archive.

    Returns
    -------
    LabelFile
        ``values`` (read-only), ``classes`` (names or ``None``), ``columns`` used, ``path``.

    Raises
    ------
    ValueError
        As :func:`load_array`; and, naming the line and column, if a value is missing, is not a
        number where numbers are needed, or is not an integer for class labels; if several
        columns could be meant for class labels (choose one with ``column``); or if ``column``
        does not exist.
    TypeError
        If ``column`` is neither a string nor an integer.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "y.csv"
    >>> _ = f.write_text(",species\\n0,dog\\n1,cat\\n2,dog\\n3,cat\\n")  # pandas to_csv
    >>> lab = load_labels(f)
    >>> lab.values, lab.classes, lab.columns
    (array([1, 0, 1, 0]), ('cat', 'dog'), ('species',))
    """
    check_choice(kind, ("auto", "class", "continuous"), "kind")
    if column is not None and (isinstance(column, bool) or not isinstance(column, (str, int))):
        raise InputTypeError(f"column must be a column name or a 0-based position, got {column!r}")
    with open_regular(path, name) as src:
        if src.ext in (".npy", ".npz"):
            out = binary_labels(src, column=column, kind=kind, key=key)
        elif src.ext in _TEXT:
            out = text_labels(src, column=column, kind=kind)
        else:
            raise dispatch_error(src, (".npy", ".npz", ".csv", ".tsv", ".txt"))
    values, classes, columns = out
    if values.shape[0] == 0:
        raise InputError(f"{name} file {os.fspath(path)!r} holds no labels")
    values = np.ascontiguousarray(values)
    values.flags.writeable = False
    return LabelFile(values=values, classes=classes, columns=columns, path=os.fspath(path))


#: accepted formats of an edge-list file
EDGE_LIST_FORMATS = (
    "text (.csv/.tsv/.txt/.edges/.edgelist): one edge per line, 'i j' or 'i j weight' (comma, "
    "tab or whitespace separated, # comments, an optional header row such as 'source,target,"
    "weight'); integer node labels are kept, other labels are numbered in sorted order; a "
    "missing weight is 1"
)


def load_edge_list(path: str | os.PathLike, *, directed: bool = False, name: str = "edges"):
    """Load a weighted graph from an edge list.

    Accepted formats: text (.csv/.tsv/.txt/.edges/.edgelist): one edge per line, 'i j' or 'i j
    weight' (comma, tab or whitespace separated, # comments, an optional header row such as
    'source,target,weight'); integer node labels are kept, other labels are numbered in sorted
    order; a missing weight is 1.

    An edge listed twice (for an undirected graph: also as ``j i``) must carry the same weight
    both times. Weights must be finite and ``>= 0``.

    Parameters
    ----------
    path : str or os.PathLike
        A regular file.
    directed : bool
        Build a :class:`networkx.DiGraph` (``i j`` is the edge from ``i`` to ``j``) instead of an
        undirected :class:`networkx.Graph`.
    name : str
        What the file is, for messages.

    Returns
    -------
    networkx.Graph or networkx.DiGraph
        Edges carry a ``"weight"`` attribute. With named nodes, node ``k`` is the ``k``-th name in
        sorted order and carries it as its ``"name"`` attribute. Nodes are added in sorted order.

    Raises
    ------
    ImportError
        If networkx is not installed.
    ValueError
        As :func:`load_array`; and, naming the line, if a line does not have 2 or 3 fields, a
        node label is empty, a weight is not a finite number ``>= 0``, or an edge is listed twice
        with different weights.
    TypeError
        If ``directed`` is not a bool.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "g.csv"
    >>> _ = f.write_text("source,target,weight\\ncat,dog,2.5\\ndog,eel,1\\n")
    >>> G = load_edge_list(f)
    >>> sorted(G.edges(data="weight")), G.nodes[0]["name"]
    ([(0, 1, 2.5), (1, 2, 1.0)], 'cat')
    """
    try:
        import networkx as nx
    except ImportError:
        raise ImportError("load_edge_list needs networkx: pip install networkx") from None
    with open_regular(path, name) as src:
        if src.ext not in _EDGE_TEXT:
            raise dispatch_error(src, _EDGE_TEXT)
        u, v, w, names, directed = read_edges(src, directed=directed)
    G = nx.DiGraph() if directed else nx.Graph()
    if names is None:
        G.add_nodes_from(np.unique(np.concatenate([u, v])).tolist())
    else:
        G.add_nodes_from((k, {"name": n}) for k, n in enumerate(names))
    G.add_weighted_edges_from(zip(u.tolist(), v.tolist(), w.tolist(), strict=True))
    return G


def __getattr__(name: str):
    """``dgp.io.Labels`` is the old name of :class:`LabelFile` (two classes were named
    ``Labels``; an objective's validated labels are :class:`dgp.objectives.registry.Labels`)."""
    if name == "Labels":
        import warnings

        warnings.warn("dgp.io.Labels is renamed dgp.io.LabelFile", DeprecationWarning,
                      stacklevel=2)
        return LabelFile
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
