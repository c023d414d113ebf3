r"""Metrics of a learned embedding ``Z`` against a reference ``Zref`` (numpy only).

- :func:`entropic_gap`: :math:`L(Z) - \sum_i H(p_i) = \sum_i \mathrm{KL}(p_i \,\|\, q_i)` in nats
  summed over anchors; zero exactly at an optimum that attains the entropic bound, positive
  elsewhere.
- :func:`similarity_r2`: squared Pearson correlation of the off-diagonal pairwise similarities.
- :func:`procrustes_r2`:
  :math:`1 - \min_{Q, t} \|ZQ + t - Z_{ref}\|^2 / \|Z_{ref} - \bar Z_{ref}\|^2` over
  orthogonal ``Q`` and translations ``t``; rigid (no scaling), the narrower input is padded with
  zero columns.

Every metric holds at any magnitude a float can store (``|Z|`` from 1e-300 to 1e300, weights from
subnormal to 1e308): inputs are rescaled by powers of two (exact) before any product is formed,
the row distributions are formed in log space, and the gap is a sum of KL terms rather than the
difference of two large numbers. Each metric is scale-aware only where its definition is:
similarity :math:`r^2` is invariant to scaling either input, Procrustes :math:`r^2` compares
magnitudes (it is invariant only to scaling both inputs by one factor), and the gap is invariant
to scaling ``W`` (and, for the cosine similarity, ``Z``). Pairwise matrices are formed in blocks
of rows, so memory stays :math:`O(N)` rows of work beyond the inputs.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse
from scipy.special import logsumexp

from dgp.errors import InputError, InputTypeError, check_choice, check_positive
from dgp.infonce import SIMILARITIES
from dgp.resources import check_memory

__all__ = ["entropic_gap", "pairwise_similarities", "procrustes_r2", "similarity_r2"]

_EPS = float(np.finfo(np.float64).eps)
_BLOCK_ENTRIES = 1 << 21  # entries of one block of a pairwise matrix (16 MiB of float64)
#: float64 blocks alive at once in the entropic gap (log p, similarities, log q, their
#: logsumexp temporaries and the terms): 8.2 measured with tracemalloc, counted with slack
_GAP_BLOCK_TEMPORARIES = 10


# ----------------------------------------------------------------------------------------------
# validation
# ----------------------------------------------------------------------------------------------


def _real_array(x: object, name: str) -> np.ndarray:
    """``x`` as an array of booleans, integers or floats (a view when it already is one);
    complex, dates, strings, objects and sparse matrices are refused."""
    if scipy.sparse.issparse(x):
        raise InputTypeError(
            f"{name} is a scipy.sparse matrix; pass a dense array ({name}.toarray())"
        )
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be a rectangular array of real numbers ({exc})") from None
    kind = arr.dtype.kind
    if kind == "c":
        raise InputTypeError(
            f"{name} holds complex numbers (dtype {arr.dtype}); the metrics need real values "
            f"(pass {name}.real if the imaginary part is meaningless)"
        )
    if kind in "mM":
        raise InputTypeError(f"{name} holds dates or times (dtype {arr.dtype}), not real numbers")
    if kind in "US":
        raise InputTypeError(f"{name} holds strings (dtype {arr.dtype}), not real numbers")
    if kind not in "biuf":
        raise InputTypeError(
            f"{name} has dtype {arr.dtype}; convert it to a real array first "
            f"(numpy.asarray({name}, dtype=float) if it holds numbers)"
        )
    return arr


def _check_embedding(Z: object, name: str, *, min_rows: int = 2) -> np.ndarray:
    arr = _real_array(Z, name).astype(np.float64, copy=True)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[1] < 1:
        raise InputError(f"{name} must be an N x d array, got shape {arr.shape}")
    if arr.shape[0] < min_rows:
        raise InputError(f"{name} must have at least {min_rows} rows, got {arr.shape[0]}")
    bad = ~np.isfinite(arr)
    if bad.any():
        i = int(np.argwhere(bad)[0][0])
        raise InputError(f"row {i} of {name} holds a NaN or infinite value")
    return arr


def _check_pair(Z: object, Zref: object, *, min_rows: int = 2) -> tuple[np.ndarray, np.ndarray]:
    A = _check_embedding(Z, "Z", min_rows=min_rows)
    B = _check_embedding(Zref, "Zref", min_rows=min_rows)
    if A.shape[0] != B.shape[0]:
        raise InputError(
            f"Z and Zref must have the same number of rows (one per sample); got Z with "
            f"{A.shape[0]} and Zref with {B.shape[0]}"
        )
    return A, B


def _cosine_ready(A: np.ndarray, name: str) -> np.ndarray:
    """Unit rows of ``A``; each row is first scaled by a power of two (exact), so norms never
    overflow or underflow."""
    peak = np.abs(A).max(axis=1)
    if (peak == 0).any():
        i = int(np.flatnonzero(peak == 0)[0])
        raise InputError(
            f"row {i} of {name} is zero and has no direction for the cosine similarity"
        )
    U = np.ldexp(A, -np.frexp(peak)[1][:, None])
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    return U


# ----------------------------------------------------------------------------------------------
# exact rescaling
# ----------------------------------------------------------------------------------------------


def _exponent(value: float) -> int:
    """``e`` with ``value = f 2**e``, ``0.5 <= f < 1`` (0 for ``value == 0``)."""
    return math.frexp(value)[1] if value > 0 else 0


def _centred_unit(A: np.ndarray) -> tuple[np.ndarray, int, float]:
    """``(A - mean) 2**-e`` with its largest row norm in ``[0.5, 1)``, ``e``, and the spread
    ``max |A - mean| / max |A|`` (0 when every row is the same).

    Scaled by a power of two before centring (no overflow in the mean) and after (full precision
    for the squares), so ``A`` and ``2**k A`` give bit-identical results.
    """
    peak = float(np.abs(A).max())
    e0 = _exponent(peak)
    X = np.ldexp(A, -e0)
    X -= X.mean(axis=0)
    spread = float(np.abs(X).max()) / math.ldexp(peak, -e0) if peak > 0 else 0.0
    e1 = _exponent(float(np.sqrt(np.einsum("ij,ij->i", X, X).max())))
    return np.ldexp(X, -e1), e0 + e1, spread


def _sq_dist_block(X: np.ndarray, sq: np.ndarray, rows: slice) -> np.ndarray:
    """Squared distances of rows ``rows`` of ``X`` to every row (clipped at 0, zero diagonal)."""
    D = X[rows] @ X.T
    D *= -2.0
    D += sq[rows, None]
    D += sq[None, :]
    np.maximum(D, 0.0, out=D)
    idx = np.arange(rows.start, rows.stop)
    D[idx - rows.start, idx] = 0.0
    return D


def _blocks(n: int) -> list[slice]:
    step = max(1, min(n, _BLOCK_ENTRIES // max(n, 1)))
    return [slice(i, min(n, i + step)) for i in range(0, n, step)]


class _Similarities:
    """Blocks of rows of the pairwise similarity matrix of a validated embedding, in units where
    the embedding has unit scale (cosine: exactly the cosines; Euclidean: ``-D 4**-e``)."""

    def __init__(self, A: np.ndarray, similarity: str, name: str) -> None:
        self.n = A.shape[0]
        if similarity == "cosine":
            self.X, self.exponent = _cosine_ready(A, name), 0
            self.sq = None
        else:
            self.X, self.exponent, _ = _centred_unit(A)
            self.sq = np.einsum("ij,ij->i", self.X, self.X)

    def block(self, rows: slice) -> np.ndarray:
        if self.sq is None:
            return self.X[rows] @ self.X.T
        D = _sq_dist_block(self.X, self.sq, rows)
        np.negative(D, out=D)
        return D


# ----------------------------------------------------------------------------------------------
# Procrustes r²
# ----------------------------------------------------------------------------------------------


def _pad(A: np.ndarray, width: int) -> np.ndarray:
    if A.shape[1] == width:
        return A
    return np.hstack([A, np.zeros((A.shape[0], width - A.shape[1]))])


def procrustes_r2(Z: object, Zref: object) -> float:
    r"""Rigid Procrustes :math:`r^2` of ``Z`` against ``Zref``.

    .. math::

        r^2 = 1 - \frac{\min_{Q^\top Q = I,\ t} \|Z Q + t - Z_{ref}\|_F^2}
                       {\|Z_{ref} - \mathbf{1}\bar z_{ref}^\top\|_F^2}

    No scaling is allowed, so a scaled copy of ``Zref`` scores below 1: the metric compares
    magnitudes. It is invariant to rigid motions of ``Z``, to a common permutation of the samples
    and to scaling *both* inputs by one factor. It is computed as

    .. math::

        r^2 = 2\rho\nu - \rho^2, \qquad
        \rho = \frac{\|Z_c\|_F}{\|Z_{ref,c}\|_F}, \qquad
        \nu = \frac{\|Z_c^\top Z_{ref,c}\|_*}{\|Z_c\|_F \|Z_{ref,c}\|_F} \in [0, 1]

    (centred inputs, nuclear norm), from inputs each brought to unit scale by a power of two, so
    it holds for data anywhere from 1e-300 to 1e300. The narrower of the two inputs is padded
    with zero columns. The value is 1 exactly when ``Z`` is a rigid motion of ``Zref``, 0 when
    ``Z`` has all rows equal, and negative when ``Z`` is far off (``-inf`` when ``Z`` is spread
    more than ~1e154 times as widely as ``Zref``, where :math:`\rho^2` exceeds the float range).

    Parameters
    ----------
    Z, Zref : array_like, shape (N, d) and (N, d')
        Learned and reference embeddings; row ``i`` of both describes sample ``i``. Integers,
        booleans and any float precision are read as float64.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        If an input is not real-valued (complex, dates, strings, objects, sparse).
    ValueError
        If an input is not 2-D, has fewer than 2 rows, holds a NaN/infinity, the row counts
        differ, or ``Zref`` has all its rows equal up to rounding (zero spread, so :math:`r^2` is
        undefined).

    Examples
    --------
    >>> import numpy as np
    >>> Y = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    >>> R = np.array([[0.0, -1.0], [1.0, 0.0]])
    >>> round(procrustes_r2(Y @ R + 3.0, Y), 12)
    1.0
    >>> round(procrustes_r2(1e-200 * (Y @ R + 3.0), 1e-200 * Y), 12)  # any common scale
    1.0
    """
    A, B = _check_pair(Z, Zref)
    width = max(A.shape[1], B.shape[1])
    B, e_b, spread_b = _centred_unit(B)
    if spread_b <= 16.0 * _EPS:
        raise InputError(
            "Zref has all rows equal (zero spread, up to rounding); Procrustes r² is undefined"
        )
    A, e_a, _ = _centred_unit(A)
    norm_a = float(np.sqrt(np.einsum("ij,ij->", A, A)))
    if norm_a == 0.0:  # Z has all rows equal: the best fit is the mean, r² = 0
        return 0.0
    norm_b = float(np.sqrt(np.einsum("ij,ij->", B, B)))
    # r² = 2 rho nu - rho², rho = |A| / |B| (centred), nu = nuclear norm of A^T B / (|A| |B|)
    nu = float(np.linalg.svd(_pad(A, width).T @ _pad(B, width), compute_uv=False).sum())
    nu /= norm_a * norm_b
    with np.errstate(over="ignore"):
        rho = float(np.ldexp(norm_a / norm_b, e_a - e_b))
        r2 = rho * (2.0 * min(nu, 1.0) - rho)
    return min(r2, 1.0)


# ----------------------------------------------------------------------------------------------
# similarity r²
# ----------------------------------------------------------------------------------------------


def pairwise_similarities(Z: object, *, similarity: str = "cosine") -> np.ndarray:
    r"""The off-diagonal pairwise similarities of ``Z`` (upper triangle, row-major).

    Cosine: :math:`\langle z_i, z_j\rangle / (\|z_i\|\|z_j\|)`; Euclidean:
    :math:`-\|z_i - z_j\|^2`. No temperature: the squared correlation does not depend on it.
    Computed at unit scale and scaled back exactly (a power of two).

    Raises
    ------
    TypeError
        If ``Z`` is not real-valued.
    ValueError
        If ``Z`` is invalid, ``similarity`` is unknown, a cosine embedding has a zero row, a
        Euclidean one has squared distances beyond the float range (above ~1.8e308), or the
        ``N (N - 1) / 2`` values exceed the memory budget.

    Examples
    --------
    >>> pairwise_similarities([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]], similarity="euclidean")
    array([-25.,  -1., -18.])
    """
    check_choice(similarity, SIMILARITIES, "similarity")
    A = _check_embedding(Z, "Z")
    n = A.shape[0]
    check_memory(
        8.0 * n * (n - 1) / 2 + 8.0 * _BLOCK_ENTRIES,
        what=f"the {n * (n - 1) // 2} pairwise similarities of {n} samples",
        hint="similarity_r2 needs no such list (it works in blocks)",
    )
    sims = _Similarities(A, similarity, "Z")
    out = np.empty(n * (n - 1) // 2)
    pos = 0
    for rows in _blocks(n):
        S = sims.block(rows)
        for k, i in enumerate(range(rows.start, rows.stop)):
            out[pos : pos + n - 1 - i] = S[k, i + 1 :]
            pos += n - 1 - i
    if similarity == "euclidean" and sims.exponent:
        with np.errstate(over="ignore"):
            out = np.ldexp(out, 2 * sims.exponent)
        if not np.isfinite(out).all():
            raise InputError(
                "the squared distances of Z exceed the float range (about 1.8e308); "
                "similarity_r2 is scale-invariant and needs no such values"
            )
    return out


def similarity_r2(Z: object, Zref: object, *, similarity: str = "cosine") -> float:
    r"""Squared Pearson correlation between the off-diagonal pairwise similarities of ``Z`` and
    of ``Zref``.

    .. math::

        r^2 = \operatorname{corr}\big((s_{ij}(Z))_{i<j},\ (s_{ij}(Z_{ref}))_{i<j}\big)^2

    Invariant to rotations (and, for the Euclidean similarity, translations) of either input, to
    a common permutation of the samples, and to scaling either input by any factor (for the
    cosine similarity also each row): inputs are brought to unit scale by powers of two before
    any product, so the value is the same for data anywhere from 1e-300 to 1e300. Computed in
    two passes over blocks of rows (means, then centred sums): memory :math:`O(N)` rows.

    Parameters
    ----------
    Z, Zref : array_like, shape (N, d) and (N, d')
        Learned and reference embeddings, ``N >= 3`` (at least three pairs are needed for a
        correlation to mean anything).
    similarity : {"cosine", "euclidean"}
        Cosine similarity, or minus the squared Euclidean distance.

    Returns
    -------
    float
        In ``[0, 1]``. When the similarities of one input are all equal (e.g. a regular simplex,
        or any equiangular set) the correlation is undefined: the result is 1.0 if those of the
        other input are all equal too (up to a relative 1e-12), else ``nan``.

    Raises
    ------
    TypeError
        If an input is not real-valued (complex, dates, strings, objects, sparse).
    ValueError
        If an input is invalid (shape, NaN, fewer than 3 rows, zero row for cosine), the row counts
        differ, or ``similarity`` is unknown.

    Examples
    --------
    >>> import numpy as np
    >>> Y = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0], [2.0, -1.0]])
    >>> round(similarity_r2(1e250 * Y + 3e250, Y, similarity="euclidean"), 12)
    1.0
    """
    check_choice(similarity, SIMILARITIES, "similarity")
    A, B = _check_pair(Z, Zref, min_rows=3)
    sa, sb = _Similarities(A, similarity, "Z"), _Similarities(B, similarity, "Zref")
    n = A.shape[0]
    m = n * (n - 1)  # off-diagonal entries (both triangles: the same correlation)
    blocks = _blocks(n)

    def pair(rows: slice) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        idx = np.arange(rows.start, rows.stop)
        return sa.block(rows), sb.block(rows), (idx - rows.start, idx)

    total_a = total_b = peak_a = peak_b = 0.0
    for rows in blocks:
        a, b, diag = pair(rows)
        a[diag] = 0.0
        b[diag] = 0.0
        total_a += float(a.sum())
        total_b += float(b.sum())
        peak_a = max(peak_a, float(np.abs(a).max()))
        peak_b = max(peak_b, float(np.abs(b).max()))
    mean_a, mean_b = total_a / m, total_b / m
    saa = sbb = sab = 0.0
    for rows in blocks:
        a, b, diag = pair(rows)
        a -= mean_a
        b -= mean_b
        a[diag] = 0.0
        b[diag] = 0.0
        saa += float(np.einsum("ij,ij->", a, a))
        sbb += float(np.einsum("ij,ij->", b, b))
        sab += float(np.einsum("ij,ij->", a, b))
    flat_a = math.sqrt(saa / m) <= 1e-12 * max(peak_a, abs(mean_a))
    flat_b = math.sqrt(sbb / m) <= 1e-12 * max(peak_b, abs(mean_b))
    if flat_a or flat_b:
        return 1.0 if (flat_a and flat_b) else float("nan")
    r = sab / math.sqrt(saa * sbb)
    return min(1.0, r * r)


# ----------------------------------------------------------------------------------------------
# entropic gap
# ----------------------------------------------------------------------------------------------


def entropic_gap(Z: object, W: object, *, tau: float, similarity: str = "cosine") -> float:
    r"""The entropic gap: the loss above the entropic bound, as a sum of KL divergences.

    .. math::

        L(Z) - \sum_i H(p_i) = \sum_i \mathrm{KL}(p_i \,\|\, q_i)
        = \sum_i \sum_{j \ne i,\ w_{ij} > 0} p_{ij} \log\frac{p_{ij}}{q_{ij}},
        \qquad p_{ij} = \frac{w_{ij}}{\sum_{k \ne i} w_{ik}},\quad
        q_{ij} = \frac{e^{s_{ij}}}{\sum_{k \ne i} e^{s_{ik}}}

    in nats, summed over anchors. It is ``>= 0`` for every ``Z`` (Gibbs' inequality), and zero
    exactly when every softmax row :math:`q_i` equals the target row :math:`p_i`, i.e. at an
    optimum that attains the entropic bound. Both rows are formed in log space with
    ``logsumexp`` (weights from subnormal to 1e308 give the right finite value); zero weights
    contribute nothing (:math:`0 \log 0 = 0`); the gap is never formed as the difference of the
    loss and the bound. Invariant to scaling ``W``; for the cosine similarity to scaling each
    row of ``Z``; for the Euclidean one, ``(Z, tau)`` and ``(a Z, a^2 tau)`` give the same gap.

    Parameters
    ----------
    Z : array_like, shape (N, d)
        Embeddings (rows are normalised for the cosine similarity).
    W : array_like, shape (N, N), scipy.sparse matrix or networkx graph
        Weighting; the diagonal is ignored; see :func:`dgp.engine.target.log_weights`. A sparse
        matrix (e.g. :func:`sklearn.neighbors.kneighbors_graph`) has zero weights where it holds
        no entry; a networkx graph is its weight matrix (edge attribute ``weight``, default 1;
        missing edges are zero weights; a ``DiGraph`` is asymmetric).
    tau : float
        Temperature ``> 0``.
    similarity : {"cosine", "euclidean"}
        ``s_ij = <z_i, z_j> / (|z_i| |z_j| tau)``, or ``-|z_i - z_j|^2 / (2 tau)``.

    Returns
    -------
    float
        The gap in nats; ``inf`` only when the true value exceeds the float range (a positive
        weight on a pair whose softmax probability is below ~1e-308**N).

    Raises
    ------
    TypeError
        If an input is not real-valued (complex, dates, strings, objects).
    ValueError
        If ``W`` is invalid, ``Z`` is not ``N x d`` with finite entries, a cosine embedding has
        a zero row, ``tau <= 0``, or ``similarity`` is unknown.

    Examples
    --------
    >>> import numpy as np
    >>> Z = np.eye(3) - 1 / 3  # a regular simplex: every softmax row is uniform
    >>> entropic_gap(Z, np.ones((3, 3)), tau=0.5)
    0.0
    >>> entropic_gap(Z, 1e308 * np.ones((3, 3)), tau=0.5)
    0.0
    """
    tau = check_positive(tau, "tau")
    check_choice(similarity, SIMILARITIES, "similarity")
    log_w = _log_weights(W)
    A = _check_embedding(Z, "Z")
    n = log_w.shape[0]
    if A.shape[0] != n:
        raise InputError(f"Z must be an N x d array with N = {n}, got shape {A.shape}")
    return _kl_gap(log_w, _Similarities(A, similarity, "Z"), tau)


def _log_weights(W: object) -> np.ndarray:
    r"""The canonical log-weights :math:`\log w_{ij} - \log w_{\max}` of the one validator
    (:func:`dgp.engine.target.log_weights`; the shift leaves every ``p_i`` unchanged),
    ``-inf`` for zero weights and on the diagonal, as an ``N x N`` array. A ``scipy.sparse``
    matrix (a k-NN graph) or a networkx graph is validated there and densified from its
    validated log-weights (one ``N x N`` array, after a memory check)."""
    from dgp.engine.target import is_graph, log_weights

    if is_graph(W) or scipy.sparse.issparse(W):
        n = W.number_of_nodes() if is_graph(W) else int(W.shape[0])
    else:
        W = _real_array(W, "W")  # the metrics' own messages for complex, dates, strings
        n = W.shape[0] if W.ndim == 2 else 0
    if n:
        check_memory(  # the copy, and the gap's temporaries: about 8 blocks measured, 10 counted
            8.0 * n * n + 8.0 * _GAP_BLOCK_TEMPORARIES * _BLOCK_ENTRIES,
            what=f"the entropic gap of a {n} x {n} weighting (one float64 copy of W)",
            hint="compute the gap on a subsample of the rows",
        )
    lw = log_weights(W, name="W")
    return lw.L if lw.L is not None else lw.dense().L  # dense: its own array, not a second copy


def _kl_gap(log_w: np.ndarray, sims: _Similarities, tau: float) -> float:
    r""":math:`\sum_i \mathrm{KL}(p_i \| q_i)` from log-weights (``-inf`` for zero weights and
    on the diagonal) and the similarities, one block of rows at a time, all in log space.

    With :math:`s_{ij} = \kappa\, t_{ij}` (:math:`t` the unit-scale similarities of ``sims``,
    :math:`\kappa > 0` the factor back to :math:`s`), :math:`\log q_{ij} = \kappa (t_{ij} -
    \max_k t_{ik}) - \mathrm{lse}_k(\cdot)`: the exponent is :math:`\le 0`, so nothing
    overflows even when :math:`\kappa` does.
    """
    # kappa = 1 / tau (cosine) or 4**e / (2 tau) (Euclidean); it may overflow to inf or underflow
    # to 0, and both are the right limits below
    with np.errstate(over="ignore", divide="ignore", under="ignore"):
        if sims.sq is None:
            kappa = float(np.float64(1.0) / np.float64(tau))
        else:
            kappa = float(np.ldexp(np.float64(0.5) / np.float64(tau), 2 * sims.exponent))
    total = 0.0
    for rows in _blocks(log_w.shape[0]):
        lw = log_w[rows]
        log_p = lw - logsumexp(lw, axis=1, keepdims=True)
        t = sims.block(rows)
        diag = (np.arange(rows.stop - rows.start), np.arange(rows.start, rows.stop))
        t[diag] = -np.inf
        t -= t.max(axis=1, keepdims=True)  # <= 0, with 0 at each row's maximum
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            s = t * kappa
        s[t == 0.0] = 0.0  # the maximum stays at 0 whatever kappa is
        s[diag] = -np.inf
        log_q = s - logsumexp(s, axis=1, keepdims=True)
        pos = np.isfinite(lw)
        with np.errstate(invalid="ignore", over="ignore"):
            terms = np.where(pos, np.exp(log_p) * (log_p - log_q), 0.0)
        kl = terms.sum(axis=1)
        total += float(np.maximum(kl, 0.0).sum())  # each KL >= 0: clip rounding below zero
    return total
