"""``.npz`` archives: each member read through the checked ``.npy`` path, a damaged member named,
and ``scipy.sparse.save_npz`` matrices rebuilt as validated CSR arrays."""

from __future__ import annotations

import lzma
import zipfile
import zlib

import numpy as np

from dgp.errors import describe
from dgp.io._npy import NPY_MAGIC, no_work, read_npy
from dgp.io._source import Source, suggest
from dgp.resources import check_memory


def npz_members(src: Source) -> tuple[zipfile.ZipFile, dict[str, zipfile.ZipInfo]]:
    try:
        zf = zipfile.ZipFile(src.fh)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        src.fh.seek(0)
        if src.fh.read(len(NPY_MAGIC)) == NPY_MAGIC:
            raise src.error("is a .npy file, not an .npz archive; rename it to .npy") from None
        raise src.error(f"is not an .npz (zip) archive ({exc})") from None
    members: dict[str, zipfile.ZipInfo] = {}
    for info in zf.infolist():
        if info.is_dir():
            continue
        key = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
        members[key] = info
    if not members:
        raise src.error("is an empty .npz archive")
    return zf, members


def pick_member(
    src: Source, members: dict[str, zipfile.ZipInfo], key: str | None, preferred: tuple[str, ...]
) -> str:
    keys = sorted(members)
    listing = ", ".join(repr(k) for k in keys)
    if key is not None:
        if key in members:
            return key
        raise src.error(f"has no array {key!r}{suggest(key, keys)}; it holds {listing}")
    if len(keys) == 1:
        return keys[0]
    lower = {k.lower(): k for k in keys}
    for want in preferred:
        if want.lower() in lower:
            return lower[want.lower()]
    raise src.error(
        f"holds several arrays ({listing}) and none is called {' or '.join(preferred[:3])}; "
        "choose one (key=...)"
    )


def read_member(
    src: Source, zf: zipfile.ZipFile, info: zipfile.ZipInfo, key: str, allowed: str,
    then=no_work,
) -> np.ndarray:
    if not info.filename.endswith(".npy"):
        raise src.error(f"member {info.filename!r} is not a .npy array")
    try:
        with zf.open(info) as member:
            return read_npy(
                member, info.file_size, src, what=f"member {key!r} of the archive ",
                allowed=allowed, then=then,
            )  # fmt: skip
    # a damaged archive: a bad CRC or header (BadZipFile, EOFError), an encrypted member
    # (RuntimeError), an unknown compression method (NotImplementedError), a corrupt deflate,
    # bzip2 or lzma stream (zlib.error, OSError, lzma.LZMAError)
    except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError,
            zlib.error, lzma.LZMAError) as exc:
        detail = str(exc) or type(exc).__name__
        if isinstance(exc, RuntimeError) and "encrypted" in detail:
            detail = "it is encrypted: a password would be needed"
        raise src.error(f"member {key!r} of the archive cannot be read ({detail}); the archive "
                        "is damaged, encrypted or compressed in a way numpy cannot read: save "
                        "it again with numpy.savez or numpy.savez_compressed") from None


def is_sparse_npz(members: dict[str, zipfile.ZipInfo]) -> bool:
    return "format" in members and "shape" in members and "data" in members


_SPARSE_PARTS = {
    "csr": ("data", "indices", "indptr"),
    "csc": ("data", "indices", "indptr"),
    "bsr": ("data", "indices", "indptr"),
    "dia": ("data", "offsets"),
    "coo": ("data",),
}


def read_sparse(src: Source, zf: zipfile.ZipFile, members: dict[str, zipfile.ZipInfo]):
    """A matrix saved by :func:`scipy.sparse.save_npz`, as a validated CSR array."""
    import scipy.sparse as sp

    fmt_arr = read_member(src, zf, members["format"], "format", "SU")
    fmt = fmt_arr.item()
    fmt = fmt.decode("ascii", "replace") if isinstance(fmt, bytes) else str(fmt)
    if fmt not in _SPARSE_PARTS:
        raise src.error(f"holds a sparse matrix in an unknown format {fmt!r}")
    shape = read_member(src, zf, members["shape"], "shape", "iu")
    if shape.shape != (2,) or (shape < 0).any():
        raise src.error(f"holds a sparse matrix with a bad shape {describe(shape.tolist())}")
    n_rows, n_cols = (int(s) for s in shape)
    parts = list(_SPARSE_PARTS[fmt])
    if fmt == "coo":
        parts += ["coords"] if "coords" in members else ["row", "col"]
    missing = [k for k in parts if k not in members]
    if missing:
        raise src.error(f"holds a {fmt} sparse matrix without its {', '.join(missing)} array")
    total = sum(members[k].file_size for k in parts) + 8 * (n_rows + 1)
    check_memory(
        3 * total, what=f"reading the sparse {src.name} file {src.path!r} ({n_rows} x {n_cols})"
    )
    arrays = {
        k: read_member(src, zf, members[k], k, "biuf" if k == "data" else "iu") for k in parts
    }
    try:
        if fmt in ("csr", "csc", "bsr"):
            cls = {"csr": sp.csr_array, "csc": sp.csc_array, "bsr": sp.bsr_array}[fmt]
            mat = cls((arrays["data"], arrays["indices"], arrays["indptr"]), shape=(n_rows, n_cols))
        elif fmt == "dia":
            mat = sp.dia_array((arrays["data"], arrays["offsets"]), shape=(n_rows, n_cols))
        elif "coords" in arrays:
            mat = sp.coo_array((arrays["data"], tuple(arrays["coords"])), shape=(n_rows, n_cols))
        else:
            mat = sp.coo_array(
                (arrays["data"], (arrays["row"], arrays["col"])), shape=(n_rows, n_cols)
            )
        out = sp.csr_array(mat)
        out.check_format(full_check=True)
    except (ValueError, TypeError, IndexError) as exc:
        raise src.error(f"holds an invalid {fmt} sparse matrix ({exc})") from None
    return out


def binary_array(src: Source, *, key: str | None, preferred: tuple[str, ...], allowed: str):
    """The array of a ``.npy`` file or the chosen member of an ``.npz`` archive."""
    if src.ext == ".npy":
        return read_npy(src.fh, src.size, src, what="", allowed=allowed)
    zf, members = npz_members(src)
    with zf:
        if is_sparse_npz(members) and key is None:
            raise src.error("holds a scipy.sparse matrix; only weights may be sparse")
        k = pick_member(src, members, key, preferred)
        return read_member(src, zf, members[k], k, allowed)
