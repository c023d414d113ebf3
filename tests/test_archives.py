"""Archives that numpy's own reader cannot handle are bad input, never an internal error: a
damaged deflate stream, an encrypted member, an unknown compression method, a header that
claims gigabytes, a sparse matrix whose shape holds floats. Every ``.npz`` input (weights,
labels, sparse weights, metrics inputs, ``verify --data``) reads its members through
:func:`dgp.io.load_npz`'s checks: the claimed size is checked before anything is read."""

from __future__ import annotations

import io
import struct
import zipfile

import numpy as np
import pytest

from dgp.io import load_array, load_npz


def _npy(a) -> bytes:
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()


def _local_data_offset(b: bytes) -> int:
    return 30 + struct.unpack("<H", b[26:28])[0] + struct.unpack("<H", b[28:30])[0]


def corrupt_deflate(path, **arrays) -> None:
    """An archive whose first member's deflate stream starts with an invalid block type."""
    np.savez_compressed(path, **arrays)
    b = bytearray(path.read_bytes())
    off = _local_data_offset(b)
    b[off], b[off + 1] = 0xFF, 0xFF
    path.write_bytes(bytes(b))


def unknown_method(path, **arrays) -> None:
    np.savez(path, **arrays)
    b = bytearray(path.read_bytes())
    b[8:10] = struct.pack("<H", 99)
    cd = b.find(b"PK\x01\x02")
    b[cd + 10:cd + 12] = struct.pack("<H", 99)
    path.write_bytes(bytes(b))


def encrypted(path, **arrays) -> None:
    np.savez(path, **arrays)
    b = bytearray(path.read_bytes())
    cd = b.find(b"PK\x01\x02")
    b[6] |= 1
    b[cd + 8] |= 1
    path.write_bytes(bytes(b))


def claims_8gb(path, **arrays) -> None:
    """The first member's .npy header claims a 32768 x 32768 float64 array (8 GiB)."""
    first, *rest = arrays
    hdr = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        hdr, {"descr": "<f8", "fortran_order": False, "shape": (32768, 32768)})
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        out.writestr(f"{first}.npy", hdr.getvalue() + b"\0" * 4096)
        for k in rest:
            out.writestr(f"{k}.npy", _npy(arrays[k]))


DAMAGES = {
    "deflate": (corrupt_deflate, "Error -3 while decompressing"),
    "method": (unknown_method, "compression method is not supported"),
    "encrypted": (encrypted, "it is encrypted"),
    "8 GiB": (claims_8gb, "8.0 GiB"),
}

_W = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 3.0], [2.0, 3.0, 0.0]])


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_member_is_named_and_refused(tmp_path, damage):
    make, words = DAMAGES[damage]
    path = tmp_path / "a.npz"
    make(path, W=_W)
    with pytest.raises(ValueError) as info:
        load_array(path, name="WEIGHTS")
    assert "member 'W' of the archive" in str(info.value) and words in str(info.value)
    with pytest.raises(ValueError, match="member 'W' of the archive"):
        load_npz(path, name="data")


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_damaged_archives_are_exit_2_everywhere(tmp_path, cli, monkeypatch, damage):
    monkeypatch.chdir(tmp_path)
    make, words = DAMAGES[damage]
    make(tmp_path / "W.npz", W=_W)
    make(tmp_path / "y.npz", y=np.array([0, 0, 1, 1, 2, 2]))
    make(tmp_path / "Z.npz", Z=np.eye(3))
    np.save("R.npy", np.eye(3))
    for argv in (("classify", "W.npz", "--tau", "0.5", "--dim", "2"),
                 ("classify", "--objective", "supcon", "--labels", "y.npz", "--tau", "0.5",
                  "--dim", "2"),
                 ("metrics", "--embeddings", "Z.npz", "--reference", "R.npy")):
        r = cli(*argv)
        assert r.code == 2, (argv, r.err)
        assert r.err.startswith("error: ") and r.err.count("\n") == 1, r.err
        assert words in r.err and "Traceback" not in r.err


def test_sparse_shape_of_floats_names_the_shape_member(tmp_path, cli, monkeypatch):
    import scipy.sparse as sp

    monkeypatch.chdir(tmp_path)
    sp.save_npz("S.npz", sp.csr_array(_W))
    with zipfile.ZipFile("S.npz") as z:
        parts = {n: z.read(n) for n in z.namelist()}
    with zipfile.ZipFile("F.npz", "w") as out:
        for n, d in parts.items():
            out.writestr(n, _npy(np.array([3.0, 3.0])) if n == "shape.npy" else d)
    r = cli("classify", "F.npz", "--tau", "0.5", "--dim", "2")
    assert r.code == 2
    assert "member 'shape' of the archive holds float64 numbers; it must hold integers" in r.err


@pytest.mark.torch
@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_verify_data_refuses_a_damaged_archive_before_reading(tmp_path, damage):
    pytest.importorskip("torch")
    from dgp.torch import data

    make, words = DAMAGES[damage]
    path = tmp_path / "d.npz"
    rng = np.random.default_rng(0)
    make(path, X=rng.standard_normal((8, 3)), y=np.repeat([0, 1], 4))
    with pytest.raises(ValueError) as info:
        data.load_npz(str(path))
    assert "member 'X' of the archive" in str(info.value) and words in str(info.value)
    assert not isinstance(info.value, MemoryError)


@pytest.mark.torch
def test_verify_data_cli_exit_2(tmp_path, cli, monkeypatch):
    pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    claims_8gb(tmp_path / "d.npz", X=np.zeros((8, 3)), y=np.repeat([0, 1], 4))
    r = cli("verify", "supcon-imbalance", "--quick", "--data", "d.npz", "--out", "out")
    assert r.code == 2 and "8.0 GiB" in r.err and r.err.count("\n") == 1, r.err
