r"""Canonical log-weights and the one inverse of their shift.

:class:`LogWeights` is what every caller receives from :func:`dgp.engine.target.log_weights`:
:math:`L_{ij} = \log w_{ij} - \mathrm{shift}`, dense or as its positive :class:`Pairs`;
:class:`CanonicalShift` converts a constant between the canonical and the user's convention
(defined here only); :func:`canonical` shifts log-weights that dgp built itself."""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace

import numpy as np

from dgp._linalg import map_blocks
from dgp.errors import InputError, ParameterError
from dgp.resources import ROW_BLOCK_ELEMENTS, check_memory, dense_weighting_bytes


def row_blocks(n: int, width: int | None = None):
    """Slices of consecutive rows with about ``ROW_BLOCK_ELEMENTS`` entries each (bounded extra
    memory: 2 MiB per temporary)."""
    step = max(1, ROW_BLOCK_ELEMENTS // max(1, width if width is not None else n))
    for s in range(0, n, step):
        yield slice(s, min(n, s + step))


class CanonicalShift:
    r"""The inverse of the canonical shift, for whatever records ``shift``.

    Canonical log-weights are :math:`L_{ij} = \log w_{ij} - \mathrm{shift}` (``shift`` the
    largest log-weight), so the target :math:`s_{ij} = L_{ij} + c` of a canonical constant ``c``
    is :math:`\log w_{ij} + (c - \mathrm{shift})`: every conversion between the two conventions
    goes through these methods (defined here only).
    """

    __slots__ = ()
    shift: float

    def to_user_c(self, c: float | None) -> float | None:
        r"""A constant of the canonical target in the user's convention :math:`s^* = \log w + c`
        (``c - shift``); ``None`` stays ``None``."""
        return None if c is None else float(c) - self.shift

    def to_canonical_c(self, c: float) -> float:
        """The user's constant ``c`` in the canonical convention (``c + shift``)."""
        return float(c) + self.shift

    def to_user_log_weights(self, L: np.ndarray) -> np.ndarray:
        r"""The user's log-weights :math:`\log w_{ij}` from canonical ones (a new array)."""
        return L + self.shift


@dataclass(frozen=True)
class Shift(CanonicalShift):
    """A canonical shift on its own (a sub-problem's, whose constants are reported)."""

    shift: float


@dataclass(frozen=True, eq=False)
class Pairs:
    r"""The positive weights of a sparse weighting, off the diagonal, in row-major order.

    Attributes
    ----------
    n : int
        Number of samples.
    rows : ndarray of int64
        The rows ``i`` of the pairs ``(i, j)`` with :math:`w_{ij} > 0`, sorted by row then
        column, no duplicates.
    cols : ndarray of int64
        Their columns ``j``.
    logw : ndarray
        Their canonical log-weights :math:`\log w_{ij} - \mathrm{shift}` (the largest is 0).
    """

    n: int
    rows: np.ndarray
    cols: np.ndarray
    logw: np.ndarray

    def weights(self):
        """The canonical weights as a ``scipy.sparse`` CSR matrix (``N x N``, zero diagonal;
        only the pairs are stored)."""
        import scipy.sparse as sp

        return sp.csr_matrix((np.exp(self.logw), (self.rows, self.cols)),
                             shape=(self.n, self.n))


@dataclass(frozen=True, eq=False)
class LogWeights(CanonicalShift):
    r"""A validated weighting as canonical log-weights: what :func:`log_weights` makes from any
    accepted input, and what every caller (classification, metrics, plots, the CLI) receives.

    Attributes
    ----------
    L : ndarray, shape (N, N), or None
        :math:`\log w_{ij} - \mathrm{shift}` off the diagonal, :math:`-\infty` at zero weights
        and on the diagonal. Owned by the engine, which may overwrite it while it classifies
        (:meth:`copy` first to keep it). ``None`` when the weighting is kept as its ``pairs``.
    shift : float
        :math:`\log w_{\max}` (the largest log-weight off the diagonal); its inverse is
        :meth:`~CanonicalShift.to_user_c`.
    symmetric : bool
        Whether :math:`w_{ij} = w_{ji}` for all pairs.
    n_zero : int
        Number of zero weights off the diagonal.
    first_zero : tuple of int or None
        The first zero weight ``(i, j)`` in row-major order.
    unit_roundoff : float
        Unit roundoff of the input (float32 input carries fewer digits).
    warnings : tuple of str
        What looked suspicious in the input (also issued as :class:`dgp.errors.DgpWarning`).
    pairs : Pairs or None
        The positive pairs of a sparse weighting with zero weights, kept without an ``N x N``
        array (``L`` is then ``None``); ``None`` for the dense form.
    entropies : ndarray or None
        The row entropies :math:`H(p_i)`, when the validator found them on the way (dense
        weights without zeros whose ratios to the largest are normal floats: it then reads
        every weight once for both); ``None`` otherwise (:func:`entropic_bound` computes them
        from ``L``).
    first_empty_row : int or None
        The first row without a positive weight off the diagonal, where the validator accepted
        such rows (``log_weights(..., empty_rows=True)``, the batch paths: anchors without
        positives); ``None`` when every row has one. :func:`log_weights` refuses it again
        wherever empty rows are not accepted.
    magnitude : float
        The absolute precision of the log-weights as given, in unit roundoffs: for log-weights,
        their largest :math:`|\log w_{ij}|` (numbers of that size carry an error of one unit
        roundoff of it, about :math:`|\log\alpha|\,u` for the log-weights of
        :math:`\alpha W`, which the canonical shift does not remove); for weights, 0 when
        every positive weight is a normal float (the logarithms of their ratios to the largest,
        after an exact power-of-two normalisation where needed, are exact to a rounding of
        their own size, whatever the scale of ``W``), else the relative precision of the
        smallest subnormal weight over ``unit_roundoff``. The decisions widen their tolerance
        by it (:attr:`LogTarget.roundoff_factor`).
    """

    L: np.ndarray | None
    shift: float
    symmetric: bool
    n_zero: int
    first_zero: tuple[int, int] | None
    unit_roundoff: float
    warnings: tuple[str, ...] = ()
    pairs: Pairs | None = None
    entropies: np.ndarray | None = None
    magnitude: float = 0.0
    first_empty_row: int | None = None

    @property
    def n(self) -> int:
        """Number of samples."""
        return int(self.L.shape[0]) if self.L is not None else self.pairs.n

    @property
    def has_zeros(self) -> bool:
        """Whether some weight off the diagonal is zero."""
        return self.n_zero > 0

    def zero_mask(self) -> np.ndarray:
        """The zero weights off the diagonal, as an ``N x N`` boolean array (dense form).

        Raises
        ------
        InputError
            For the sparse form (its zeros are the pairs it does not hold).
        """
        if self.L is None:
            raise InputError("a sparse weighting holds its positive pairs, not an N x N mask "
                             "of its zero weights")
        mask = self.L == -np.inf
        np.fill_diagonal(mask, False)
        return mask

    def dense(self) -> LogWeights:
        """The dense form: a :meth:`copy` of a dense one, the ``N x N`` matrix of a sparse one
        (``-inf`` where it holds no pair)."""
        if self.pairs is None:
            return self.copy()
        p = self.pairs
        check_memory(dense_weighting_bytes(p.n), what=f"the {p.n} x {p.n} log-weights",
                     hint="keep the weighting sparse (a structured objective, or fewer samples)")
        L = np.full((p.n, p.n), -np.inf)
        L[p.rows, p.cols] = p.logw
        return replace(self, L=L, pairs=None)

    def weights(self, name: str = "W") -> np.ndarray:
        r"""The canonical weights :math:`w_{ij} / w_{\max} = e^{L_{ij}}` as a new dense
        ``N x N`` float array (zero diagonal, zero weights 0), for the programs that need dense
        weights (:func:`dgp.optimum`): every ``p_i``, hence every loss and optimum, is that of
        the user's ``W``. A sparse weighting (a ``scipy.sparse`` matrix, a graph) is densified
        here, after a memory check.

        Raises
        ------
        MemoryLimitError
            If the two ``N x N`` arrays (log-weights and weights) do not fit in memory.
        ParameterError
            If a positive weight is so far below the largest that its ratio underflows to zero
            (it would be read as a zero weight).
        """
        n = self.n
        check_memory(2 * 8.0 * n * n, what=f"the dense {n} x {n} weights",
                     hint="use fewer samples, or a weighting with class structure "
                     "(dgp.supcon_prototypes, --objective)")
        L = self.L if self.L is not None else self.dense().L
        with np.errstate(under="ignore"):
            A = np.exp(L)
        underflow = (A == 0.0) & np.isfinite(L)
        np.fill_diagonal(underflow, False)
        if underflow.any():
            i, j = first_bad(underflow, 0)
            raise ParameterError(name, f"[{i}, {j}] is a positive weight e^{L[i, j]:.4g} times "
                                 "the largest, below the smallest float: a dense program would "
                                 "read it as a zero weight (rescale or drop the tiny weights)")
        np.fill_diagonal(A, 0.0)
        return A

    def copy(self) -> LogWeights:
        """A copy whose ``L`` the engine may consume while this one stays as it is."""
        return replace(self, L=None if self.L is None else self.L.copy())


def first_bad(mask: np.ndarray, offset: int) -> tuple[int, int]:
    i, j = (int(k) for k in np.argwhere(mask)[0])
    return i + offset, j


def canonical(
    L: np.ndarray, *, shift: float = 0.0, unit_roundoff: float = float(np.finfo(float).eps)
) -> LogWeights:
    """:class:`LogWeights` from log-weights that dgp built itself (validated labels, or a
    block of weights already validated): no validation, only the canonical shift, added to
    ``shift`` (the shift the log-weights already carry). ``L`` is taken over (overwritten)."""
    n = L.shape[0]
    np.fill_diagonal(L, -np.inf)
    top = float(L.max())
    L -= top
    finite = np.isfinite(L)
    n_zero = int(n * n - finite.sum()) - n
    first = None
    if n_zero:
        off = ~finite
        np.fill_diagonal(off, False)
        first = tuple(int(k) for k in np.argwhere(off)[0])
    return LogWeights(L, shift + top, is_symmetric(L), n_zero, first, unit_roundoff)


def is_symmetric(L: np.ndarray) -> bool:
    """``L == L.T``, comparing each block of rows with its columns from the block's diagonal
    tile on (the tiles below were compared as the columns of earlier blocks), the blocks on
    every core (:func:`dgp._linalg.map_blocks`)."""
    n = L.shape[0]
    differ = threading.Event()  # a block that differs ends the search (the answer is known)

    def same(sl: slice) -> bool:
        if differ.is_set():
            return False
        if np.array_equal(L[sl, sl.start:], L[sl.start:, sl].T):
            return True
        differ.set()
        return False

    return all(map_blocks(same, list(row_blocks(n))))
