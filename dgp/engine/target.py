r"""Canonical log-weights, the cycle condition and the symmetric log-target.

A weighting enters dgp once, through :func:`log_weights` (the one validator of dense arrays,
``scipy.sparse`` matrices, networkx graphs and log-weights), as :class:`LogWeights`: the matrix
:math:`L_{ij} = \log w_{ij} - \log w_{\max}` off the diagonal (:math:`-\infty` at zero weights
and on the ignored diagonal), computed from the mantissa and exponent of each weight
(:func:`numpy.frexp`), so that nothing underflows or overflows and :math:`W` and
:math:`\alpha W` give the same matrix up to rounding of the last bit, for every
:math:`\alpha > 0`; a sparse weighting with zero weights keeps only its positive pairs
(:class:`Pairs`), never an ``N x N`` array. The shift :math:`\log w_{\max}` is recorded once:
a constant ``c`` of the canonical target is ``c - shift`` in the user's convention
:math:`s^*_{ij} = \log w_{ij} + c` (:meth:`CanonicalShift.to_user_c`, the one inverse).

Gibbs' inequality gives :math:`L(Z) \ge \sum_i H(p_i)` with equality iff
:math:`s_{ij} = \log w_{ij} + c_i` for all :math:`j \ne i`. Since :math:`s` is symmetric this
needs :math:`\log w_{ij} + c_i = \log w_{ji} + c_j`, solvable iff every cycle has
:math:`\prod w_{ij} = \prod w_{ji}` (Kolmogorov's criterion). On a complete graph the triangles
through one vertex generate the cycle space, so the potentials :math:`c_j = \log w_{0j} -
\log w_{j0}` are the only candidates and the residuals
:math:`r_{ij} = \log w_{ij} - \log w_{ji} - (c_j - c_i)` are the log-ratios of the triangles
:math:`0 \to i \to j \to 0`. The symmetric target :math:`\ell_{ij} = \log w_{ij} + c_i`
(offsets of mean zero) is then unique up to one global constant.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from dgp._linalg import map_blocks
from dgp.constants import RATIO_NORMAL_MIN
from dgp.engine._canonical import (
    CanonicalShift,
    LogWeights,
    Pairs,
    Shift,
    canonical,
    first_bad,
    is_symmetric,
    row_blocks,
)
from dgp.engine._dense_input import as_matrix, log_ratios_entropies
from dgp.engine._sparse_input import (
    empty_row_error,
    graph_weights,
    is_graph,
    no_positive_weight_error,
    sparse_log_weights,
    sparse_size,
)
from dgp.errors import DgpWarning, InputError, ParameterError
from dgp.resources import check_memory, dense_weighting_bytes
from dgp.tolerance import Margin, Tolerance

__all__ = [
    "CanonicalShift",
    "LogTarget",
    "LogWeights",
    "Pairs",
    "Shift",
    "canonical",
    "check_weights",
    "entropic_bound",
    "graph_weights",
    "is_graph",
    "log_target",
    "log_weights",
    "offdiag_range",
    "row_blocks",
    "row_entropies",
    "row_log_distribution",
    "sparse_log_weights",
    "target_edm",
    "target_gram",
]

_LN2 = math.log(2.0)
_UNDERFLOW_HINT = (" (if W holds kernel values, they may have underflowed to zero: pass their "
                   "logarithms instead, log_weights=...)")


def log_weights(W: object = None, *, log_weights: object = None, name: str = "W",
                sparse_above: int | None = None, empty_rows: bool = False) -> LogWeights:
    r"""Validate a weighting (weights, or log-weights) and canonicalise it: the one validator.

    Exactly one of ``W`` (weights :math:`w_{ij} \ge 0`) and ``log_weights``
    (:math:`\log w_{ij}`, :math:`-\infty` for a zero weight) must be given. The diagonal is
    ignored, whatever it holds. Every row needs a positive weight (a finite log-weight) off the
    diagonal. Accepts numpy arrays of any real dtype, ``scipy.sparse`` matrices (missing
    entries are zero weights), networkx graphs (:func:`graph_weights`: edge attribute
    ``weight``, missing edges are zero weights, a ``DiGraph`` is an asymmetric weighting) and
    :class:`LogWeights` already made here (returned as a :meth:`~LogWeights.copy`, not
    validated again). A sparse matrix or graph with zero weights and more than ``sparse_above``
    samples is kept as its positive pairs (:func:`sparse_log_weights`, no ``N x N`` array); by
    default (``None``) every weighting is dense. ``empty_rows=True`` (the batch paths of
    :func:`dgp.optimum`) accepts rows without a positive weight, anchors without positives in
    every batch, as long as one row has one.
    Warns (:class:`dgp.errors.DgpWarning`) when zeros sit beside weights near the smallest
    positive float (underflowed kernel values, pass log-weights instead) and for float32 input
    (its tolerances are those of float32).

    Raises
    ------
    ParameterError
        If neither or both are given; if the input is not a real square matrix with at least 2
        rows; if an off-diagonal entry is NaN, infinite (``+inf`` for log-weights) or negative;
        if a row has no positive weight. The message names the entry or row.

    Examples
    --------
    >>> lw = log_weights(np.array([[0.0, 2.0], [2.0, 0.0]]) * 1e-300)
    >>> float(lw.L[0, 1]), round(lw.shift, 6) == round(math.log(2e-300), 6)
    (0.0, True)
    """
    if (W is None) == (log_weights is None):
        raise ParameterError(
            name, "or log_weights: give exactly one (the weights, or their logarithms)"
        )
    is_log = log_weights is not None
    given = log_weights if is_log else W
    if isinstance(given, LogWeights):
        if given.first_empty_row is not None and not empty_rows:  # made for a batch path
            raise empty_row_error(name, given.first_empty_row)
        return given.copy()
    if not is_log and sparse_above is not None and sparse_size(W) > sparse_above:
        kept = sparse_log_weights(W, name, empty_rows=empty_rows)
        if kept is not None:
            return kept
    label = "log_weights" if is_log else name
    src, u = as_matrix(given, label)
    n = src.shape[0]
    notes: list[str] = []
    if src.dtype.kind == "f" and src.dtype.itemsize < 8:
        notes.append(
            f"{label} is {src.dtype}: it carries {np.finfo(src.dtype).precision} significant "
            f"digits, so the tolerances are those of {src.dtype} (unit roundoff {u:.2g})"
        )
    check_memory(dense_weighting_bytes(n), what=f"the {n} x {n} log-weights",
                 hint="use a structured objective (dgp.classify_objective) or fewer samples")
    L = np.empty((n, n), dtype=np.float64)
    blocks = list(row_blocks(n))

    def check(sl: slice) -> tuple[float, int, tuple[int, int] | None, float, float, int | None]:
        # pass 1, one block of rows: copy it once into L, validate it there, find its largest
        # entry; returns (smallest weight if the block has no zero else inf, zeros, first zero,
        # smallest positive weight of a block with zeros, largest entry, first empty row or None)
        blk = L[sl]
        blk[...] = src[sl]
        k = np.arange(sl.stop - sl.start)
        diag = (k, k + sl.start)
        blk[diag] = -np.inf if is_log else 0.0  # ignored, whatever it held
        low = np.inf
        if is_log:
            row_top = blk.max(axis=1)  # NaN if the row holds one, +inf if it holds one
            # the smallest finite log-weight (the largest |log w| is at one end or the other)
            low = float(np.min(blk, where=np.isfinite(blk), initial=np.inf))
            if np.isnan(row_top).any():
                i, j = first_bad(np.isnan(blk), sl.start)
                raise ParameterError(label, f"[{i}, {j}] is NaN; log-weights must be numbers "
                                     "(-inf for a zero weight)")
            if (row_top == np.inf).any():
                i, j = first_bad(blk == np.inf, sl.start)
                raise ParameterError(label, f"[{i}, {j}] is +inf; log-weights must be finite "
                                     "or -inf")
            zero = blk == -np.inf
            zero[diag] = False
        else:
            blk[diag] = np.inf  # the smallest entry off the diagonal, in one pass
            low = float(blk.min())
            blk[diag] = 0.0
            row_top = blk.max(axis=1)
            # NaN propagates through min and max, -inf is the minimum, +inf a row's maximum:
            # both finite iff every weight is (no pass of its own)
            if not (math.isfinite(low) and np.isfinite(row_top).all()):
                i, j = first_bad(~np.isfinite(blk), sl.start)
                raise ParameterError(label, f"[{i}, {j}] is {src[i, j]}; all weights must be "
                                     "finite")
            if low < 0:
                i, j = first_bad(blk < 0, sl.start)
                raise ParameterError(label, f"[{i}, {j}] = {float(src[i, j]):g} is negative; "
                                     "weights must be >= 0")
            if low > 0:  # no zero weight in the block: no mask to build
                zero = None
            else:
                zero = blk == 0
                zero[diag] = False
                low = np.inf
        empty = row_top == (-np.inf if is_log else 0.0)
        first_empty = int(sl.start + np.flatnonzero(empty)[0]) if empty.any() else None
        if first_empty is not None and not empty_rows:
            raise empty_row_error(label, first_empty, "" if is_log else _UNDERFLOW_HINT)
        nz = 0 if zero is None else int(zero.sum())
        first, smallest = None, np.inf
        if nz:
            first = first_bad(zero, sl.start)
            if not is_log:
                smallest = float(np.min(blk, where=blk > 0, initial=np.inf))  # inf if none
        return low, nz, first, smallest, float(row_top.max()), first_empty

    # the blocks run on every core (dgp._linalg.map_blocks): each result is its block's alone,
    # combined below in block order by exact operations (min, max, integer sums), so nothing
    # depends on the number of threads; a bad entry is the first of the first bad block
    stats = map_blocks(check, blocks)
    top = max(s[4] for s in stats)  # the largest weight (log-weight) off the diagonal
    if top == (-np.inf if is_log else 0.0):  # every row empty (empty_rows=True)
        raise no_positive_weight_error(label, "" if is_log else _UNDERFLOW_HINT)
    n_zero = sum(s[1] for s in stats)
    first_zero = next((s[2] for s in stats if s[2] is not None), None)
    first_empty_row = next((s[5] for s in stats if s[5] is not None), None)
    smallest_positive = min(s[3] for s in stats)
    # the smallest weight of the blocks without zeros (log-weights: the smallest finite one)
    positive_low = min(s[0] for s in stats)
    entropies = None  # the row entropies, when the logarithms give them on the way
    magnitude = 0.0
    if not is_log and src.dtype.kind == "f":
        low_positive = min(smallest_positive, positive_low)
        if low_positive < float(np.finfo(src.dtype).tiny):  # subnormal: fewer digits
            step = float(np.finfo(src.dtype).smallest_subnormal)  # (half of it underflows)
            magnitude = step / low_positive / (2.0 * u)
    # pass 2, in place: canonical log-weights from mantissa and exponent (no overflow, no
    # underflow): log w - log w_max = (log m - log m_max) + (e - e_max) log 2, e integers
    if is_log:
        def shifted(sl: slice) -> None:
            L[sl] -= top

        map_blocks(shifted, blocks)
        shift = top
        magnitude = max(abs(top), abs(positive_low)) if math.isfinite(positive_low) else abs(top)
    elif min(smallest_positive, positive_low) / top > RATIO_NORMAL_MIN:
        # the ratios w / w_max are normal floats: log of the ratio, exact to one rounding
        if n_zero == 0:
            entropies = log_ratios_entropies(L, top)
        else:
            def ratio_logs(sl: slice) -> None:
                blk = L[sl]
                with np.errstate(divide="ignore"):
                    blk /= top
                    np.log(blk, out=blk)  # log 0 = -inf: zero weights and the diagonal

            map_blocks(ratio_logs, blocks)
        shift = math.log(top)
    else:
        m_max, e_max = np.frexp(np.float64(top))
        log_m_max = math.log(float(m_max))

        def frexp_logs(sl: slice) -> None:
            blk = L[sl]
            with np.errstate(divide="ignore"):
                m, e = np.frexp(blk)
                np.log(m, out=blk)  # log 0 = -inf: zero weights and the diagonal
            e -= int(e_max)
            blk += e * _LN2
            blk -= log_m_max

        map_blocks(frexp_logs, blocks)
        shift = log_m_max + int(e_max) * _LN2
        tiny = float(np.finfo(src.dtype).tiny) if src.dtype.kind == "f" else 0.0
        if n_zero and smallest_positive < 1e6 * tiny:
            notes.append(
                f"{label} has {n_zero} zero weights beside positive weights as small as "
                f"{smallest_positive:.3g}, near the smallest {src.dtype} ({tiny:.3g}): the zeros "
                "may be underflowed kernel values; if they are, pass the log-weights "
                "(log_weights=...) so that they are not read as zero weights"
            )
    np.fill_diagonal(L, -np.inf)
    symmetric = is_symmetric(L)
    for note in notes:
        warnings.warn(note, DgpWarning, stacklevel=3)
    return LogWeights(L, float(shift), symmetric, n_zero, first_zero, u, tuple(notes),
                      entropies=entropies, magnitude=float(magnitude),
                      first_empty_row=first_empty_row)


def check_weights(W: object, name: str = "W", *, empty_rows: bool = False) -> np.ndarray:
    r"""Return ``W`` as a validated dense float ``N x N`` weight matrix (a new array, zero
    diagonal), for the callers that need the weights themselves rather than their
    :class:`LogWeights`.

    The validation is that of :func:`log_weights` (one place decides what a weighting is), so
    ``W`` may be anything it accepts: an array, a ``scipy.sparse`` matrix (e.g. a k-NN graph of
    :func:`sklearn.neighbors.kneighbors_graph`), a networkx graph, or :class:`LogWeights`. The
    weights returned are the canonical ones, :math:`w_{ij} / w_{\max}`
    (:meth:`LogWeights.weights`): the row distributions :math:`p_i`, and so every loss, are
    those of ``W``.

    Raises
    ------
    ParameterError
        As :func:`log_weights` (``empty_rows`` as there) and :meth:`LogWeights.weights`.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> check_weights(sp.csr_matrix(np.array([[0.0, 4.0], [2.0, 0.0]])))
    array([[0. , 1. ],
           [0.5, 0. ]])
    """
    return log_weights(W, name=name, empty_rows=empty_rows).weights(name)


# ----------------------------------------------------------------------------------------------
# the entropic bound, in log space
# ----------------------------------------------------------------------------------------------


def row_entropies(L: np.ndarray) -> np.ndarray:
    r""":math:`H(p_i) = \mathrm{lse}_i - \sum_j p_{ij} L_{ij}` for canonical log-weights (rows
    over :math:`j \ne i`, :math:`-\infty` entries contribute nothing), in blocks of rows."""
    n = L.shape[0]
    H = np.empty(n)
    for sl in row_blocks(n, L.shape[1]):
        blk = L[sl]
        top = blk.max(axis=1, keepdims=True)
        X = blk - top
        E = np.exp(X)
        X[E == 0.0] = 0.0  # -inf entries (and underflowed ones) weigh nothing: 0 * x
        tot = E.sum(axis=1)
        H[sl] = np.log(tot) - np.einsum("ij,ij->i", E, X) / tot
    return H


def row_log_distribution(L: np.ndarray) -> np.ndarray:
    r""":math:`\log p_{ij} = L_{ij} - \log\sum_{k \ne i} e^{L_{ik}}` (a new array; ``-inf`` stays
    ``-inf``), by blocks of rows."""
    out = np.empty_like(L)
    for sl in row_blocks(L.shape[0], L.shape[1]):
        blk = L[sl]
        top = blk.max(axis=1, keepdims=True)
        lse = top + np.log(np.exp(blk - top).sum(axis=1, keepdims=True))
        out[sl] = blk - lse
    return out


def entropic_bound(weights: LogWeights) -> float:
    r"""The entropic bound :math:`\sum_i H(p_i)` in nats (:math:`0 \log 0 = 0`), in log space
    (or from the row entropies the validator found, :attr:`LogWeights.entropies`)."""
    if weights.entropies is not None:
        return float(weights.entropies.sum())
    return float(row_entropies(weights.L).sum())


# ----------------------------------------------------------------------------------------------
# the cycle condition and the symmetric target
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class LogTarget:
    """The symmetric log-target of a weighting with all weights positive.

    Attributes
    ----------
    ell : ndarray
        Symmetric :math:`\\ell_{ij} = L_{ij} + c_i` (canonical units: the user's
        :math:`\\log w_{ij} + c_i` minus ``shift``), zero diagonal; may share memory with
        the :class:`LogWeights` it came from.
    offsets : ndarray
        Row offsets :math:`c_i` (mean zero; all zero for a symmetric ``W``).
    consistent : bool
        Whether the cycle condition holds within ``margin.atol``.
    cycle : tuple of int or None
        A triangle ``(0, i, j)`` with the largest log-ratio when the condition fails.
    cycle_log_ratio : float
        :math:`\\log \\prod_{cycle} w_{ab} / \\prod_{cycle} w_{ba}` around that triangle.
    margin : Margin
        The cycle decision: the largest triangle log-ratio against its tolerance.
    lowest : float
        Smallest :math:`\\ell_{ij}` off the diagonal.
    highest : float
        Largest :math:`\\ell_{ij}` off the diagonal (:attr:`spread` is ``highest - lowest``).
    roundoff_factor : float
        How much the representation of the weighting amplifies its rounding, ``>= 1``: the
        canonical :math:`L_{ij}` carry an error of one unit roundoff of their size
        :math:`\\max|L|`, which row offsets (a row-rescaled ``W``) may make much larger than
        the target :math:`\\ell` they cancel down to; the factor is
        :math:`\\max(1, \\max|L| / (1 + \\mathrm{spread}))` (1 for a symmetric ``W``; the
        precision of the numbers as given, :attr:`LogWeights.magnitude`, counts as
        :math:`\\max|L|` when larger), and
        the eigenvalue decisions widen their tolerance by it (:meth:`Tolerance.widened`), so
        that ``diag(a) W`` is decided as ``W`` is.
    """

    ell: np.ndarray
    offsets: np.ndarray
    consistent: bool
    cycle: tuple[int, int, int] | None
    cycle_log_ratio: float
    margin: Margin
    lowest: float
    highest: float
    roundoff_factor: float = 1.0

    @property
    def spread(self) -> float:
        """:math:`\\max \\ell - \\min \\ell` off the diagonal (nats)."""
        return self.highest - self.lowest


def offdiag_range(M: np.ndarray) -> tuple[float, float]:
    """Smallest and largest entry of a square float ``M`` off the diagonal, by blocks of rows
    on every core (two reductions of each block: its diagonal is set aside meanwhile, then
    restored; the minimum and maximum of the blocks' are exact, whatever the threads)."""
    n = M.shape[0]
    if n < 2:
        return np.inf, -np.inf
    saved = M.diagonal().copy()

    def block(sl: slice) -> tuple[float, float]:
        blk = M[sl]
        k = np.arange(sl.stop - sl.start)
        diag = (k, k + sl.start)
        blk[diag] = np.inf
        lo = float(blk.min())
        blk[diag] = -np.inf
        hi = float(blk.max())
        blk[diag] = saved[sl]
        return lo, hi

    try:
        ranges = map_blocks(block, list(row_blocks(n)))
    finally:
        np.fill_diagonal(M, saved)
    lo, hi = np.inf, -np.inf
    for b_lo, b_hi in ranges:  # in block order, as a serial loop combines them
        lo, hi = min(lo, b_lo), max(hi, b_hi)
    return lo, hi


def log_target(weights: LogWeights, tol: Tolerance) -> LogTarget:
    """Cycle condition and symmetric log-target of a weighting without zero weights.

    Overwrites ``weights.L`` (the target shares its memory): call it once per classification.

    Raises
    ------
    ValueError
        If the weighting has zero weights (their target is :math:`-\\infty`).
    """
    if weights.has_zeros:
        raise InputError("log_target needs positive weights; zero weights have no finite target")
    L = weights.L
    n = L.shape[0]
    np.fill_diagonal(L, 0.0)
    lo, hi = offdiag_range(L)
    # log-weights given as large numbers carry an absolute error of u times their size, which
    # the canonical shift keeps: the cycle tolerance and the eigenvalue decisions widen by it
    given = max(1.0, weights.magnitude / (1.0 + (hi - lo)))
    if weights.symmetric:
        m = tol.margin("largest triangle log-ratio (W is symmetric)", 0.0,
                       tol.widened(given).log_atol(hi - lo), zero_is_near=False)
        return LogTarget(L, np.zeros(n), True, None, 0.0, m, lo, hi, given)
    atol = tol.widened(given).log_atol(hi - lo)
    lo_in, hi_in = lo, hi
    # potentials along the root edges: c_j - c_0 = L_0j - L_j0
    c = L[0] - L[:, 0]

    def residuals(sl: slice) -> np.ndarray:
        # r_ij = (L_ij - L_ji) - (c_j - c_i): log-ratios of the triangles 0 -> i -> j -> 0,
        # antisymmetric, so only j > i is looked at
        r = L[sl] - L[:, sl].T
        r -= c[None, :]
        r += c[sl, None]
        rows = np.arange(sl.start, sl.stop)
        r[np.arange(n)[None, :] <= rows[:, None]] = 0.0
        return r

    top = max(float(np.abs(residuals(sl)).max()) for sl in row_blocks(n))
    # the first triangle (row-major) within tolerance of the largest: a choice that rounding
    # noise and rescaling cannot flip
    worst_val, worst = 0.0, (0, 0)
    for sl in row_blocks(n):
        r = residuals(sl)
        hits = np.argwhere(np.abs(r) >= top - atol)
        if hits.size:
            i, j = (int(k) for k in hits[0])
            worst_val, worst = float(r[i, j]), (i + sl.start, j)
            break
    consistent = abs(worst_val) <= atol
    margin = tol.margin("largest triangle log-ratio (cycle condition)", worst_val, atol,
                        zero_is_near=False)
    c -= c.mean()
    # ell_ij = ((L_ij + c_i) + (L_ji + c_j)) / 2, in place by pairs of blocks
    blocks = list(row_blocks(n))
    for a, I in enumerate(blocks):
        for J in blocks[a:]:
            X = L[I, J] + L[J, I].T
            X += c[I, None]
            X += c[None, J]
            X *= 0.5
            if I == J:  # a diagonal block: mirror one triangle, for exact symmetry
                X = np.triu(X) + np.triu(X, 1).T
            L[I, J] = X
            L[J, I] = X.T
    np.fill_diagonal(L, 0.0)
    # the largest |L_ij| before the offsets cancel (or |log w_ij| as given, if larger)
    size = max(abs(lo_in), abs(hi_in), weights.magnitude)
    lo, hi = offdiag_range(L)
    cycle = None if consistent else (0, int(worst[0]), int(worst[1]))
    factor = max(1.0, size / (1.0 + (hi - lo)))
    return LogTarget(L, c, consistent, cycle, worst_val, margin, lo, hi, factor)


def _user_target(W: object, log_w: object, tau: object) -> tuple[np.ndarray, float]:
    from dgp.errors import check_positive
    from dgp.tolerance import DEFAULT_RTOL

    tau = check_positive(tau, "tau")
    lw = log_weights(W, log_weights=log_w)
    if lw.has_zeros:
        i, j = lw.first_zero
        raise ParameterError("W", f"[{i}, {j}] = 0: a zero weight has no finite target "
                             "(s = -inf)")
    tgt = log_target(lw, Tolerance.make(DEFAULT_RTOL, n=lw.n, unit_roundoff=lw.unit_roundoff))
    if not tgt.consistent:
        raise ParameterError("W", f"breaks the cycle condition around {tgt.cycle} (log-ratio "
                             f"{tgt.cycle_log_ratio:.3g}); no symmetric target exists")
    return lw.to_user_log_weights(tgt.ell), tau


def target_gram(W: object = None, *, log_weights: object = None, tau: float,
                c: float) -> np.ndarray:
    r"""The cosine target :math:`G(c)`: :math:`\tau(\ell_{ij} + c)` off the diagonal, 1 on it
    (:math:`\ell_{ij} = \log w_{ij} + c_i`, offsets of mean zero; :math:`\log w_{ij}` for a
    symmetric ``W``).

    Raises
    ------
    ValueError
        If the weighting is invalid, has a zero weight, breaks the cycle condition, or
        ``tau <= 0``.

    Examples
    --------
    >>> float(target_gram(np.ones((3, 3)), tau=0.5, c=-1.0)[0, 1])
    -0.5
    """
    ell, tau = _user_target(W, log_weights, tau)
    G = tau * (ell + float(c))
    np.fill_diagonal(G, 1.0)
    return G


def target_edm(W: object = None, *, log_weights: object = None, tau: float,
               c: float) -> np.ndarray:
    r"""The Euclidean target :math:`D(c)_{ij} = -2\tau(\ell_{ij} + c)` (zero diagonal).

    Raises
    ------
    ValueError
        As :func:`target_gram`.
    """
    ell, tau = _user_target(W, log_weights, tau)
    D = -2.0 * tau * (ell + float(c))
    np.fill_diagonal(D, 0.0)
    return D
