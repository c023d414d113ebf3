"""Tests of dgp.io: hostile files are refused with one clear ValueError naming the file, real
files (headers, pandas output, class names, .npz, sparse, edge lists) are read, the text parser
stays near the size of the array, and the memory budget refuses what would not fit.

FIFOs, device symlinks and big-header files are created under pytest's tmp_path only.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pathlib
import signal
import string
import tracemalloc
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from dgp import io as dio
from dgp.io import (
    EDGE_LIST_FORMATS,
    LABEL_FORMATS,
    MEMORY_LIMIT_ENV,
    WEIGHT_FORMATS,
    LabelFile,
    MemoryLimitError,
    check_memory,
    format_bytes,
    load_array,
    load_edge_list,
    load_labels,
    load_weights,
    memory_budget,
)

posix_only = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs and devices: POSIX")

LOADERS = {
    "array": lambda p: load_array(p, name="data"),
    "weights": lambda p: load_weights(p, name="data"),
    "labels": lambda p: load_labels(p, name="data"),
    "edges": lambda p: load_edge_list(p, name="data"),
}


@contextlib.contextmanager
def deadline(seconds: int):
    """Fail (instead of hanging the suite) if the block takes longer than ``seconds``."""

    def handler(signum, frame):
        raise TimeoutError(f"blocked for more than {seconds} s")

    old = signal.signal(signal.SIGALRM, handler)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def refused(path, loader="array", match=None):
    """The loader raises a ValueError naming the file (and ``match``)."""
    with pytest.raises(ValueError) as info:
        LOADERS[loader](path)
    text = str(info.value)
    assert repr(str(path)) in text, text
    if match is not None:
        assert match in text, text
    return text


# ----------------------------------------------------------------------------------------------
# non-regular files
# ----------------------------------------------------------------------------------------------


@posix_only
@pytest.mark.parametrize("loader", sorted(LOADERS))
@pytest.mark.parametrize(
    ("device", "ext"),
    [("/dev/zero", ".csv"), ("/dev/zero", ".npy"), ("/dev/null", ".npz"), ("/dev/urandom", ".txt")],
)
def test_symlinks_to_devices_are_refused(tmp_path, loader, device, ext):
    if not os.path.exists(device):
        pytest.skip(f"{device} missing on this platform")
    link = tmp_path / f"w{ext}"
    link.symlink_to(device)
    with deadline(10):
        text = refused(link, loader, match="character device (through a symlink)")
    assert "not a regular file" in text


@posix_only
@pytest.mark.parametrize("loader", sorted(LOADERS))
def test_fifo_without_writer_is_refused_not_waited_on(tmp_path, loader):
    fifo = tmp_path / "labels.csv"
    os.mkfifo(fifo)
    with deadline(10):
        refused(fifo, loader, match="FIFO")


def test_directory_missing_and_broken_symlink(tmp_path):
    (tmp_path / "d.csv").mkdir()
    refused(tmp_path / "d.csv", match="is a directory")
    refused(tmp_path / "nope.csv", match="does not exist")
    (tmp_path / "broken.npy").symlink_to(tmp_path / "gone.npy")
    refused(tmp_path / "broken.npy", match="symlink to a missing file")
    (tmp_path / "loop.npy").symlink_to(tmp_path / "loop.npy")
    refused(tmp_path / "loop.npy", match="cannot be opened")


def test_symlink_to_a_regular_file_is_read(tmp_path):
    np.save(tmp_path / "real.npy", np.arange(4.0))
    (tmp_path / "link.npy").symlink_to(tmp_path / "real.npy")
    np.testing.assert_array_equal(load_array(tmp_path / "link.npy", name="x"), np.arange(4.0))


@pytest.mark.skipif(getattr(os, "geteuid", lambda: 0)() == 0, reason="root reads any file")
def test_unreadable_file(tmp_path):
    f = tmp_path / "w.csv"
    f.write_text("1,2\n")
    f.chmod(0)
    refused(f, match="permission denied")


def test_path_of_wrong_type():
    with pytest.raises(TypeError, match="data must be a path"):
        load_array(3.5, name="data")


# ----------------------------------------------------------------------------------------------
# .npy
# ----------------------------------------------------------------------------------------------


def test_zip_saved_under_npy_name(tmp_path):
    with open(tmp_path / "w.npy", "wb") as fh:
        np.savez(fh, W=np.eye(3))
    refused(tmp_path / "w.npy", match="is a zip archive (an .npz), not a .npy file; rename it")
    refused(tmp_path / "w.npy", "weights", match="rename it to .npz")


def test_npy_saved_under_npz_or_csv_name(tmp_path):
    with open(tmp_path / "w.npz", "wb") as fh:
        np.save(fh, np.eye(3))
    refused(tmp_path / "w.npz", "weights", match="is a .npy file, not an .npz archive")
    with open(tmp_path / "w.csv", "wb") as fh:
        np.save(fh, np.eye(3))
    refused(tmp_path / "w.csv", "weights", match="binary .npy file, not text")


def test_every_single_byte_corruption_of_a_header_is_a_clean_error(tmp_path):
    """Fuzz the header: each byte replaced by several values either still loads a numeric array
    or raises a ValueError naming the file; never another exception."""
    good = tmp_path / "good.npy"
    np.save(good, np.arange(12.0).reshape(3, 4))
    raw = good.read_bytes()
    header_end = raw.index(b"\n") + 1
    bad = tmp_path / "bad.npy"
    outcomes = {"loaded": 0, "refused": 0}
    for pos in range(header_end):
        for value in (0x00, ord("("), ord("'"), ord("9"), 0xFF):
            if raw[pos] == value:
                continue
            blob = bytearray(raw)
            blob[pos] = value
            bad.write_bytes(bytes(blob))
            try:
                arr = load_array(bad, name="W")
            except ValueError as exc:
                assert repr(str(bad)) in str(exc)
                outcomes["refused"] += 1
            else:
                assert arr.dtype.kind in "biuf"
                outcomes["loaded"] += 1
    assert outcomes["refused"] > 100


def _npy_with_header(path: pathlib.Path, header: str, payload: bytes = b"") -> None:
    text = header.encode("latin1")
    text += b" " * (-(len(text) + 11) % 64) + b"\n"
    path.write_bytes(b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text + payload)


def test_header_claiming_a_huge_array_is_refused_before_reading(tmp_path):
    f = tmp_path / "big.npy"
    _npy_with_header(f, "{'descr': '<f8', 'fortran_order': False, 'shape': (100000, 100000), }")
    text = refused(f, "weights", match="is truncated")
    assert "100000 x 100000 float64" in text and "74.5 GiB" in text


def test_header_within_the_file_size_but_above_the_budget(tmp_path, monkeypatch):
    f = tmp_path / "w.npy"
    np.save(f, np.zeros((200, 200)))  # 312.5 KiB of data
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "100K")
    with pytest.raises(MemoryLimitError) as info:
        load_weights(f)
    text = str(info.value)
    assert "200 x 200 float64" in text and "100.0 KiB" in text and MEMORY_LIMIT_ENV in text
    # the file alone would fit in 1M, but a weighting is read to be validated into a float64
    # working copy (with its blocks' temporaries), alive beside it: both are counted
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "1M")
    with pytest.raises(MemoryLimitError, match="and its float64 working copy"):
        load_weights(f)
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "20M")
    assert load_weights(f).shape == (200, 200)


def test_negative_shape_and_unknown_version(tmp_path):
    f = tmp_path / "neg.npy"
    _npy_with_header(f, "{'descr': '<f8', 'fortran_order': False, 'shape': (-4, 2), }")
    refused(f, match="corrupted .npy header")
    raw = bytearray(f.read_bytes())
    raw[6] = 7
    f.write_bytes(bytes(raw))
    refused(f, match="unknown .npy format version 7.0")


def test_truncated_data(tmp_path):
    f = tmp_path / "t.npy"
    np.save(f, np.ones((10, 10)))
    f.write_bytes(f.read_bytes()[:-80])
    refused(f, match="is truncated")


@pytest.mark.parametrize("content", [b"\0" * 4096, bytes(range(256)) * 8, b"", b"\x93NUM"])
def test_garbage_is_not_called_pickled(tmp_path, content):
    f = tmp_path / "g.npy"
    f.write_bytes(content)
    text = refused(f)
    assert "pickle" not in text
    assert ("not a .npy file" in text) or ("is empty" in text)


@pytest.mark.parametrize(
    ("array", "words"),
    [
        (np.eye(2) + 1j, "complex numbers (complex128)"),
        (np.array(["2020-01-01"], dtype="M8[D]"), "dates (datetime64[D])"),
        (np.array([3], dtype="m8[s]"), "time differences (timedelta64[s])"),
        (np.array(["a", "b"]), "strings (<U1)"),
        (np.zeros(2, dtype=[("x", "f8"), ("y", "i4")]), "structured"),
    ],
)
def test_non_numeric_dtypes_named(tmp_path, array, words):
    f = tmp_path / "x.npy"
    np.save(f, array)
    refused(f, match=words)


class _Trap:
    """Unpickling this object creates a marker file: it must never happen."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (pathlib.Path.touch, (pathlib.Path(self.marker),))


def test_pickles_are_never_run(tmp_path):
    marker = tmp_path / "PWNED"
    payload = np.array([_Trap(str(marker)), 1], dtype=object)
    np.save(tmp_path / "p.npy", payload, allow_pickle=True)
    np.savez(tmp_path / "p.npz", labels=payload)
    for loader in ("array", "weights", "labels"):
        refused(tmp_path / "p.npy", loader, match="never unpickles")
        refused(tmp_path / "p.npz", loader, match="never unpickles")
    assert not marker.exists()


def test_byte_order_fortran_order_and_dtype_kept(tmp_path):
    A = np.arange(12, dtype=">f4").reshape(3, 4)
    np.save(tmp_path / "be.npy", np.asfortranarray(A))
    out = load_array(tmp_path / "be.npy", name="x")
    assert out.dtype == np.float32 and out.dtype.isnative
    np.testing.assert_array_equal(out, A)
    np.save(tmp_path / "w32.npy", np.ones((3, 3), dtype=np.float32))
    assert load_weights(tmp_path / "w32.npy").dtype == np.float32  # float32 stays float32


def test_scalar_and_empty_arrays(tmp_path):
    np.save(tmp_path / "s.npy", np.float64(3.0))
    refused(tmp_path / "s.npy", match="single number")
    np.save(tmp_path / "e.npy", np.zeros((0, 3)))
    refused(tmp_path / "e.npy", match="empty array")
    np.save(tmp_path / "v.npy", np.arange(5.0))
    refused(tmp_path / "v.npy", "weights", match="weights are an N x N matrix")


# ----------------------------------------------------------------------------------------------
# .npz, dense and sparse
# ----------------------------------------------------------------------------------------------


def test_npz_member_choice(tmp_path):
    W, y = np.ones((3, 3)), np.array([0, 0, 1])
    np.savez(tmp_path / "d.npz", W=W, y=y, extra=np.arange(2))
    np.testing.assert_array_equal(load_weights(tmp_path / "d.npz"), W)
    np.testing.assert_array_equal(load_labels(tmp_path / "d.npz").values, y)
    np.testing.assert_array_equal(load_labels(tmp_path / "d.npz", column="extra").values, [0, 1])
    np.testing.assert_array_equal(load_array(tmp_path / "d.npz", name="x", key="y"), y)
    text = refused(tmp_path / "d.npz", match="holds several arrays")
    assert "'W', 'extra', 'y'" in text and "key=" in text
    with pytest.raises(ValueError, match=r"no array 'Y' \(did you mean 'y'\?\)"):
        load_array(tmp_path / "d.npz", name="x", key="Y")
    np.savez(tmp_path / "one.npz", np.arange(3.0))
    np.testing.assert_array_equal(load_array(tmp_path / "one.npz", name="x"), np.arange(3.0))


def test_npz_corrupted_and_hostile(tmp_path):
    np.savez(tmp_path / "ok.npz", W=np.ones((50, 50)))
    raw = (tmp_path / "ok.npz").read_bytes()
    (tmp_path / "cut.npz").write_bytes(raw[: len(raw) // 2])
    refused(tmp_path / "cut.npz", "weights", match="not an .npz (zip) archive")
    (tmp_path / "junk.npz").write_bytes(b"PK\x03\x04" + b"\x00" * 100)
    refused(tmp_path / "junk.npz", "weights")
    with zipfile.ZipFile(tmp_path / "lie.npz", "w") as zf:  # header promises 10^10 entries
        zf.writestr(
            "W.npy",
            b"\x93NUMPY\x01\x00v\x00"
            + b"{'descr': '<f8', 'fortran_order': False, 'shape': (100000, 100000), }".ljust(117)
            + b"\n",
        )
    refused(tmp_path / "lie.npz", "weights", match="truncated")
    with zipfile.ZipFile(tmp_path / "empty.npz", "w"):
        pass
    refused(tmp_path / "empty.npz", "weights")


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "bsr", "dia"])
@pytest.mark.parametrize("kind", ["matrix", "array"])
def test_scipy_sparse_weights(tmp_path, fmt, kind):
    rng = np.random.default_rng(1)
    dense = rng.random((7, 7)) * (rng.random((7, 7)) < 0.4)
    mat = (sp.csr_matrix if kind == "matrix" else sp.csr_array)(dense).asformat(fmt)
    sp.save_npz(tmp_path / "w.npz", mat)
    W = load_weights(tmp_path / "w.npz")
    assert sp.issparse(W) and W.format == "csr"
    np.testing.assert_array_equal(W.toarray(), dense)  # absent entries are zero weights
    refused(tmp_path / "w.npz", "array", match="scipy.sparse")


def test_sparse_with_out_of_range_indices(tmp_path):
    np.savez(
        tmp_path / "bad.npz",
        format=np.array(b"csr"),
        shape=np.array([3, 3]),
        data=np.ones(2),
        indices=np.array([0, 7]),
        indptr=np.array([0, 1, 2, 2]),
    )
    refused(tmp_path / "bad.npz", "weights", match="invalid csr sparse matrix")
    np.savez(
        tmp_path / "nofmt.npz", format=np.array(b"xyz"), shape=np.array([3, 3]), data=np.ones(1)
    )
    refused(tmp_path / "nofmt.npz", "weights", match="unknown format 'xyz'")


# ----------------------------------------------------------------------------------------------
# text: formats, errors with line and column, memory
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "0,1,2\n1,0,3\n2,3,0\n",
        "\ufeff0,1,2\n1,0,3\n2,3,0\n",  # UTF-8 byte-order mark
        "# a comment\n\n0 1 2\n1 0 3   # trailing comment\n2 3 0\n",
        "0\t1\t2\r\n1\t0\t3\r\n2\t3\t0\r\n",  # tabs, CRLF
        "0;1;2\n1;0;3\n2;3;0\n",
        "a,b,c\n0,1,2\n1,0,3\n2,3,0\n",  # header row
        ",a,b,c\n0,0,1,2\n1,1,0,3\n2,2,3,0\n",  # pandas DataFrame.to_csv
        " 0 , 1 , 2 \n1,0,3\n2,3,0",  # spaces around values, no final newline
        "0 1 2\r1 0 3\r2 3 0\r",  # old Mac line ends
    ],
)
def test_text_weight_formats(tmp_path, text):
    f = tmp_path / "w.csv"
    f.write_bytes(text.encode("utf-8"))
    np.testing.assert_array_equal(load_weights(f), np.array([[0.0, 1, 2], [1, 0, 3], [2, 3, 0]]))


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("0,1\n1,x\n", "line 2, column 2: 'x' is not a number"),
        ("# c\n0,1\n\n1,,\n", "line 4 has 3 values where line 2 has 2"),
        ("0,1\n1,\n", "line 2, column 2 is empty"),
        ("0,1\n1,0x1f\n", "line 2, column 2: '0x1f' is not a number"),
        ("0,1\n1,1_000\n", "line 2, column 2: '1_000' is not a number"),
        ("a,b\n", "has a header (line 1) but no data lines"),
        ("# only comments\n\n", "is empty"),
        ("0,1,2\n1,0,3\n", "holds a 2 x 3 array; weights are an N x N matrix"),
    ],
)
def test_text_errors_name_line_and_column(tmp_path, text, words):
    f = tmp_path / "w.csv"
    f.write_text(text)
    refused(f, "weights", match=words)


def test_text_encoding_and_binary(tmp_path):
    f = tmp_path / "w.csv"
    f.write_bytes(b"0,1\n1,\xe9\n")
    refused(f, "weights", match="is not UTF-8 text")
    f.write_bytes(b"0,1\x00\x00\n")
    refused(f, "weights", match="binary file")
    f.write_bytes(b"1" * (dio._MAX_LINE + 10))
    refused(f, "weights", match="longer than")
    f.write_text("0,1\n")
    (tmp_path / "w.xlsx").write_text("0,1\n")
    refused(tmp_path / "w.xlsx", "weights", match="unknown type '.xlsx'")


def test_text_integers_one_column(tmp_path):
    f = tmp_path / "y.txt"
    f.write_text("3\n1\n2\n")
    out = load_array(f, name="labels")
    assert out.dtype == np.int64 and out.tolist() == [3, 1, 2]
    f.write_text("3\n1.5\n")
    assert load_array(f, name="labels").dtype == np.float64
    f.write_text("inf,-inf\n-inf,nan\n")  # log-weights may hold -inf; checked by their user
    out = load_weights(f)
    assert np.isneginf(out[0, 1]) and np.isnan(out[1, 1])


def test_text_parse_stays_near_the_size_of_the_array(tmp_path):
    """Peak traced memory of reading a CSV matrix is below 3x the final array (the old parser
    built Python lists: ~15x)."""
    rng = np.random.default_rng(0)
    A = rng.random((800, 800))
    np.savetxt(tmp_path / "w.csv", A, delimiter=",")
    tracemalloc.start()
    try:
        W = load_weights(tmp_path / "w.csv")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(W, A)
    assert peak <= 3.0 * W.nbytes, peak / W.nbytes


def test_text_matrix_above_the_budget_is_refused_before_parsing(tmp_path, monkeypatch):
    np.savetxt(tmp_path / "w.csv", np.ones((300, 300)), delimiter=",", fmt="%d")
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "200K")
    with pytest.raises(MemoryLimitError, match="300 values"):
        load_weights(tmp_path / "w.csv")


# ----------------------------------------------------------------------------------------------
# labels as people have them
# ----------------------------------------------------------------------------------------------


def _labels(tmp_path, text, name="y.csv", **kw) -> LabelFile:
    f = tmp_path / name
    f.write_text(text)
    return load_labels(f, **kw)


def test_labels_pandas_to_csv_with_names(tmp_path):
    # exactly what pandas.Series(["dog", "cat", ...], name="species").to_csv() writes
    lab = _labels(tmp_path, ",species\n0,dog\n1,cat\n2,dog\n3,cat\n4,eel\n5,eel\n")
    assert lab.values.tolist() == [1, 0, 1, 0, 2, 2]
    assert lab.classes == ("cat", "dog", "eel") and lab.columns == ("species",)
    assert [lab.class_name(int(v)) for v in lab.values] == [
        "dog",
        "cat",
        "dog",
        "cat",
        "eel",
        "eel",
    ]
    assert len(lab) == 6


def test_labels_header_detection(tmp_path):
    assert _labels(tmp_path, "label\n0\n0\n1\n1\n").values.tolist() == [0, 0, 1, 1]
    lab = _labels(tmp_path, "label\ncat\ncat\ndog\ndog\n")  # header named once, classes twice
    assert lab.classes == ("cat", "dog") and lab.columns == ("label",)
    lab = _labels(tmp_path, "cat\ncat\ndog\ndog\n")  # no header: the first value recurs
    assert lab.values.tolist() == [0, 0, 1, 1] and lab.columns == (0,)
    lab = _labels(tmp_path, "golden retriever\npug\npug\ngolden retriever\n")  # spaces in names
    assert lab.classes == ("golden retriever", "pug")
    lab = _labels(tmp_path, '"a, b",1\n"c",2\n"a, b",3\n', column=0)  # quoted commas
    assert lab.classes == ("a, b", "c")


def test_labels_columns_by_name_and_position(tmp_path):
    text = "id,y,age,name\n1,0,3.5,cat\n2,0,4,cat\n3,1,5,dog\n4,1,6,dog\n"
    assert _labels(tmp_path, text, column="y").values.tolist() == [0, 0, 1, 1]
    assert _labels(tmp_path, text, column="Y").columns == ("y",)  # case-insensitive fallback
    assert _labels(tmp_path, text, column=1).values.tolist() == [0, 0, 1, 1]
    assert _labels(tmp_path, text, column="1").columns == ("y",)  # digits: a position
    assert _labels(tmp_path, text, column=-1).classes == ("cat", "dog")
    age = _labels(tmp_path, text, column="age", kind="continuous")
    assert age.values.dtype == np.float64 and age.values.tolist() == [3.5, 4, 5, 6]
    with pytest.raises(ValueError, match=r"no column 'ag' \(did you mean 'age'\?\)"):
        _labels(tmp_path, text, column="ag")
    with pytest.raises(ValueError, match="column 9 is out of range"):
        _labels(tmp_path, text, column=9)
    with pytest.raises(ValueError, match=r"has 4 columns .*choose it with column="):
        _labels(tmp_path, text, kind="class")
    with pytest.raises(ValueError, match=r"line 2 holds 3\.5, not an integer class label"):
        _labels(tmp_path, text, column="age", kind="class")
    with pytest.raises(ValueError, match="no header row, so there is no column named 'y'"):
        _labels(tmp_path, "0,1\n1,1\n", column="y")
    with pytest.raises(TypeError, match="column"):
        _labels(tmp_path, text, column=1.0)
    with pytest.raises(ValueError, match="kind"):
        _labels(tmp_path, text, kind="ordinal")


def test_labels_continuous_table(tmp_path):
    lab = _labels(tmp_path, "x,y\n0.5,1\n1.5,2\n2.5,3\n", kind="continuous")
    assert lab.values.shape == (3, 2) and lab.columns == ("x", "y")
    with pytest.raises(ValueError, match="line 1, column 1: 'cat' is not a number"):
        _labels(tmp_path, "cat\ncat\ndog\n", kind="continuous")
    np.save(tmp_path / "names.npy", np.array(["a", "b"]))
    with pytest.raises(ValueError, match="holds text where continuous labels need numbers"):
        load_labels(tmp_path / "names.npy", kind="continuous")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("1\n2\nn/a\n2\n", "line 3, column 1: 'n/a' is not a number"),
        ("y\n1\n2\n\n1.5\n", "line 5 holds 1.5, not an integer class label"),
        ("cat\ncat\n7\ndog\n", "line 3 holds '7' among class names"),
        ("1\n1\n2\n2\ncat\n", "line 5, column 1: 'cat' is not a number"),
        (",y\n0,cat\n1,\n2,cat\n", "line 3 has no label"),
    ],
)
def test_labels_bad_values_give_the_line(tmp_path, text, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)")):
        _labels(tmp_path, text, kind="class")


def test_labels_single_row_and_binary(tmp_path):
    assert _labels(tmp_path, "0,1,0,1\n").values.tolist() == [0, 1, 0, 1]
    np.save(tmp_path / "names.npy", np.array(["b", "a", "b", "a"]))
    lab = load_labels(tmp_path / "names.npy")
    assert lab.classes == ("a", "b") and lab.values.tolist() == [1, 0, 1, 0]
    np.save(tmp_path / "bytes.npy", np.array([b"x", b"y", b"x"]))
    assert load_labels(tmp_path / "bytes.npy").classes == ("x", "y")
    np.save(tmp_path / "f.npy", np.array([[0.5, 1.0], [1.5, 2.0]]))
    assert load_labels(tmp_path / "f.npy", kind="continuous").values.shape == (2, 2)
    assert load_labels(tmp_path / "f.npy", column=1).values.tolist() == [1, 2]


def test_labels_result_is_frozen_and_read_only(tmp_path):
    lab = _labels(tmp_path, "0\n0\n1\n1\n")
    with pytest.raises(dataclasses.FrozenInstanceError):
        lab.classes = ("x",)
    with pytest.raises(ValueError, match="read-only"):
        lab.values[0] = 5


_NAMES = st.text(alphabet=string.ascii_letters + " -_", min_size=1, max_size=8).map(str.strip)


@settings(max_examples=40)
@given(
    names=st.lists(
        _NAMES.filter(lambda s: s and s[0].isalpha()), min_size=2, max_size=5, unique=True
    ),
    reps=st.lists(st.integers(0, 4), min_size=6, max_size=30),
    delimiter=st.sampled_from([",", "\t"]),
    header=st.sampled_from([None, "class", "pandas"]),
)
def test_property_class_names_round_trip(tmp_path_factory, names, reps, delimiter, header):
    """Class names written as people write them come back as codes in sorted order, whatever
    the delimiter and header: classes[values] is the column as written."""
    column = [names[r % len(names)] for r in reps] + list(names) * 2  # every class twice
    lines = []
    if header == "class":
        lines.append("class")
    elif header == "pandas":
        lines.append(f"{delimiter}class")
    for i, name in enumerate(column):
        lines.append(f"{i}{delimiter}{name}" if header == "pandas" else name)
    f = tmp_path_factory.mktemp("lab") / "y.csv"
    f.write_text("\n".join(lines) + "\n")
    lab = load_labels(f, kind="class")
    assert lab.classes == tuple(sorted(set(column)))
    assert [lab.classes[v] for v in lab.values] == column
    assert lab.columns == (("class",) if header else (0,))


@settings(max_examples=40)
@given(
    values=st.lists(st.integers(-(10**12), 10**12), min_size=2, max_size=40),
    fmt=st.sampled_from(["%d", "%.1f", "%.3e"]),
)
def test_property_numeric_labels_round_trip(tmp_path_factory, values, fmt):
    f = tmp_path_factory.mktemp("lab") / "y.txt"
    np.savetxt(f, np.array(values, dtype=float), fmt=fmt)
    lab = load_labels(f)
    expected = np.array([float(fmt % v) for v in values])
    np.testing.assert_array_equal(lab.values, expected)
    assert lab.classes is None


# ----------------------------------------------------------------------------------------------
# edge lists
# ----------------------------------------------------------------------------------------------


def test_edge_list_named_nodes_and_header(tmp_path):
    f = tmp_path / "g.csv"
    f.write_text("source,target,weight\ncat,dog,2.5\ndog,eel,1\n# comment\neel,cat,0.5\n")
    G = load_edge_list(f)
    assert [G.nodes[k]["name"] for k in sorted(G)] == ["cat", "dog", "eel"]
    assert G[0][1]["weight"] == 2.5 and G[1][2]["weight"] == 1.0 and G[0][2]["weight"] == 0.5
    assert not G.is_directed()


def test_a_header_of_other_words_is_still_a_header(tmp_path):
    f = tmp_path / "g.txt"
    f.write_text("x y w\n0 1 2\n1 2 3\n")
    G = load_edge_list(f)
    assert sorted(G.edges(data="weight")) == [(0, 1, 2.0), (1, 2, 3.0)]


def test_edge_list_matches_networkx_reader(tmp_path):
    nx = pytest.importorskip("networkx")
    rng = np.random.default_rng(3)
    pairs = rng.choice(30 * 30, size=80, replace=False)  # distinct edges of a bipartite graph
    lines = [f"{p // 30} {30 + p % 30} {w:.6g}" for p, w in zip(pairs, rng.random(80), strict=True)]
    f = tmp_path / "g.edges"
    f.write_text("\n".join(lines) + "\n")
    reference = nx.read_weighted_edgelist(f, nodetype=int)
    G = load_edge_list(f)
    assert sorted(G) == sorted(reference)
    assert {(u, v, d["weight"]) for u, v, d in G.edges(data=True)} == {
        (min(u, v), max(u, v), d["weight"]) for u, v, d in reference.edges(data=True)
    }


def test_edge_list_directed_unweighted_duplicates(tmp_path):
    f = tmp_path / "g.txt"
    f.write_text("1 2\n2 1\n3 1\n")
    G = load_edge_list(f)
    assert G.number_of_edges() == 2 and G[1][2]["weight"] == 1.0  # 2 1 repeats 1 2
    D = load_edge_list(f, directed=True)
    assert D.is_directed() and D.number_of_edges() == 3
    f.write_text("1 2 1\n5 6 1\n2 1 2\n")
    with pytest.raises(ValueError, match="edge on line 1 again on line 3 with another weight"):
        load_edge_list(f)
    assert load_edge_list(f, directed=True).number_of_edges() == 3
    with pytest.raises(TypeError, match="directed"):
        load_edge_list(f, directed="yes")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("1 2 -1\n", "line 1: weight -1 is not a finite number >= 0"),
        ("1 2 1\n2 3 nan\n", "line 2: weight nan"),
        ("u v w\n1 2 heavy\n", "line 2, column 3: 'heavy' is not a number"),
        ("1 2 3 4\n", "line 1 has 4 fields"),
        ("1\n", "line 1 has 1 field;"),
        ("1,2\n3\n", "line 2 has 1 values where line 1 has 2"),
        ("source,target\n", "has a header (line 1) but no edges"),
        ('"",b\n', "line 1 has an empty node label"),
        # a first edge with a bad weight is an error, not a header that drops the edge
        ("0 1 abc\n1 2 3\n", "line 1, column 3: 'abc' is not a number"),
        ("cat dog abc\ndog eel 1\n", "line 1, column 3: 'abc' is not a number"),
    ],
)
def test_edge_list_errors(tmp_path, text, words):
    f = tmp_path / "g.csv"
    f.write_text(text)
    refused(f, "edges", match=words)


# ----------------------------------------------------------------------------------------------
# the memory budget
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("123", 123),
        ("8G", 8 << 30),
        ("512m", 512 << 20),
        ("1.5GiB", 3 << 29),
        ("2 TB", 2 << 40),
        ("unlimited", None),
    ],
)
def test_budget_from_the_environment(monkeypatch, value, expected):
    monkeypatch.setenv(MEMORY_LIMIT_ENV, value)
    assert memory_budget() == expected


@pytest.mark.parametrize("value", ["lots", "-1G", "0", "8X", "1e9"])
def test_bad_budget_names_the_variable(monkeypatch, value):
    monkeypatch.setenv(MEMORY_LIMIT_ENV, value)
    with pytest.raises(ValueError, match=MEMORY_LIMIT_ENV):
        memory_budget()


def test_default_budget_is_half_the_usable_memory(monkeypatch):
    monkeypatch.delenv(MEMORY_LIMIT_ENV, raising=False)
    from dgp import resources

    usable, _ = resources._usable_memory()
    assert memory_budget() == usable // 2
    phys = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert 0 < memory_budget() <= phys // 2
    import resource

    cap = 1 << 30  # an address-space limit below physical memory decides the budget
    monkeypatch.setattr(resource, "getrlimit", lambda which: (cap, resource.RLIM_INFINITY))
    assert memory_budget() == min(cap, usable) // 2
    with pytest.raises(MemoryLimitError, match=r"ulimit -v"):
        check_memory(cap, what="x")


def test_small_allocations_skip_reading_the_system_limits_but_not_the_variable(monkeypatch):
    """Below SMALL_ALLOCATION the default budget is not computed (every phase-map cell asks):
    the system is not read; a set DGP_MEMORY_LIMIT is still obeyed and validated."""
    from dgp import resources

    def unreadable():
        raise AssertionError("the system's limits were read for a small allocation")

    monkeypatch.delenv(MEMORY_LIMIT_ENV, raising=False)
    monkeypatch.setattr(resources, "_usable_memory", unreadable)
    check_memory(resources.SMALL_ALLOCATION, what="a small array")
    with pytest.raises(AssertionError):
        check_memory(resources.SMALL_ALLOCATION + 1, what="a larger array")
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "1K")
    with pytest.raises(MemoryLimitError):
        check_memory(4096, what="a small array under a tiny limit")
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "lots")
    with pytest.raises(ValueError, match=MEMORY_LIMIT_ENV):
        check_memory(16, what="anything")


def test_check_memory_message_and_arguments(monkeypatch):
    monkeypatch.setenv(MEMORY_LIMIT_ENV, "1G")
    check_memory(1 << 30, what="exactly the budget")
    with pytest.raises(MemoryLimitError) as info:
        check_memory(10**20, what="the dense target", hint="N <= 11000 fits; use --dim")
    err = info.value
    assert isinstance(err, ValueError) and err.budget == 1 << 30 and err.what == "the dense target"
    text = str(err)
    assert text.startswith("the dense target needs about 88817.8 PiB, ")
    assert "more than dgp's memory budget of 1.0 GiB" in text
    assert "N <= 11000 fits; use --dim" in text and f"{MEMORY_LIMIT_ENV}=" in text
    with pytest.raises(ValueError, match="nbytes"):
        check_memory(-1, what="x")
    with pytest.raises(ValueError, match="nbytes"):
        check_memory(float("nan"), what="x")
    with pytest.raises(TypeError, match="nbytes"):
        check_memory(True, what="x")
    assert format_bytes(512) == "512 B" and format_bytes(1536) == "1.5 KiB"


def test_format_texts_are_in_the_docstrings():
    """The help texts quote the loaders' docstrings: keep them the same."""

    def flat(text: str) -> str:
        return " ".join(text.split())

    assert flat(WEIGHT_FORMATS) in flat(load_weights.__doc__)
    assert flat(LABEL_FORMATS) in flat(load_labels.__doc__)
    assert flat(EDGE_LIST_FORMATS) in flat(load_edge_list.__doc__)


@pytest.mark.parametrize(
    ("text", "classes"),
    [
        ("A\nINFINITY\nA\nINFINITY\n", ("A", "INFINITY")),
        ("nan\nNaN\nnan\nNaN\n", ("NaN", "nan")),
        ("label\ninf\ninf\nx\nx\n", ("inf", "x")),
    ],
)
def test_labels_named_like_special_numbers_are_names(tmp_path, text, classes):
    assert _labels(tmp_path, text).classes == classes


def test_labels_nan_among_numbers_is_refused_not_taken_for_a_header(tmp_path):
    with pytest.raises(ValueError, match="line 1 holds 'nan' among numeric labels"):
        _labels(tmp_path, "nan\n1\n1\n2\n")
