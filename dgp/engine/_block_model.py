"""Class-block weightings and targets: the validated log-weights per pair of classes
(:class:`BlockWeights`), the block-constant symmetric target (:class:`BlockTarget`), the entropic
bound in :math:`O(K^2)` and the cycle condition on the class graph (the model of
:mod:`dgp.engine.blocks`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dgp.tolerance import Tolerance


@dataclass(frozen=True, eq=False)
class BlockWeights:
    """A validated class-block weighting, as log-weights per pair of classes.

    Attributes
    ----------
    sizes : ndarray of int, shape (K,)
        Class sizes ``n_k >= 1`` (sorted label order).
    log_within : ndarray, shape (K,)
        Log-weight between two samples of class ``k`` (unused for singletons).
    log_cross : ndarray, shape (K, K), or None
        Log-weight from an anchor of class ``k`` to a sample of class ``l`` (diagonal ignored);
        ``-inf`` for a zero weight. ``None`` when every pair has ``cross_value``.
    inverse : ndarray of int, shape (N,)
        Class index of each sample.
    classes : ndarray
        The class labels, sorted.
    cross_value : float or None
        The one cross-class log-weight when ``log_cross`` is ``None`` (SupCon: ``-inf``, Soft
        SupCon: ``log eps``): never a ``K x K`` array, whatever ``K``.
    """

    sizes: np.ndarray
    log_within: np.ndarray
    log_cross: np.ndarray | None
    inverse: np.ndarray
    classes: np.ndarray
    cross_value: float | None = None

    def expanded(self) -> BlockWeights:
        """The same weighting with ``log_cross`` as a ``K x K`` array."""
        if self.log_cross is not None:
            return self
        return BlockWeights(self.sizes, self.log_within,
                            np.full((self.K, self.K), float(self.cross_value)), self.inverse,
                            self.classes)

    @property
    def n(self) -> int:
        """Number of samples."""
        return int(self.sizes.sum())

    @property
    def K(self) -> int:
        """Number of classes."""
        return int(self.sizes.size)

    def pair_log_weights(self) -> np.ndarray:
        """``K x K`` log-weights: ``log_cross`` with ``log_within`` on the diagonal."""
        M = self.log_cross.astype(float).copy()
        np.fill_diagonal(M, self.log_within)
        return M

    def counts(self) -> np.ndarray:
        """``counts[k, l]``: number of samples of class ``l`` an anchor of class ``k`` weighs."""
        c = np.tile(self.sizes.astype(float), (self.K, 1))
        c[np.diag_indices(self.K)] -= 1.0
        return c

    def first_members(self) -> np.ndarray:
        """The smallest sample index of each class."""
        first = np.full(self.K, self.n)
        np.minimum.at(first, self.inverse, np.arange(self.n))
        return first

    def members(self) -> list[np.ndarray]:
        """Sample indices of each class."""
        order = np.argsort(self.inverse, kind="stable")
        return np.split(order, np.cumsum(self.sizes)[:-1])


def block_weights(labels: object, *, within: object, cross: object) -> BlockWeights:
    """Validate a class-block weighting: ``within[k]`` between two samples of class ``k``,
    ``cross[k, l]`` from an anchor of class ``k`` to a sample of class ``l`` (sorted label
    order; weights, not logarithms; zeros allowed; the diagonal of ``cross`` is ignored).

    Raises
    ------
    ParameterError, ParameterTypeError
        If the labels are not class labels, ``within``/``cross`` have the wrong shape or a
        negative or non-finite entry, or a class has no positive weight to another sample.
    """
    from dgp.errors import ParameterError, class_codes

    codes, classes = class_codes(labels, "labels", min_count=1)
    sizes = np.bincount(codes, minlength=classes.size)
    K = classes.size
    a = np.asarray(within, dtype=float).reshape(-1)
    B = np.array(cross, dtype=float)
    if a.shape != (K,) or B.shape != (K, K):
        raise ParameterError(
            "within", f"and cross must have shapes ({K},) and ({K}, {K}) for {K} classes; got "
            f"{a.shape} and {B.shape}"
        )
    np.fill_diagonal(B, 0.0)
    if not (np.isfinite(a).all() and np.isfinite(B).all()) or (a < 0).any() or (B < 0).any():
        raise ParameterError("within", "and cross must be finite and non-negative")
    with np.errstate(divide="ignore"):
        la, lB = np.log(a), np.log(B)
    bw = BlockWeights(sizes, la, lB, codes, classes)
    mass = (bw.counts() * np.exp(bw.pair_log_weights())).sum(axis=1)
    if (mass <= 0).any():
        k = int(np.flatnonzero(mass <= 0)[0])
        raise ParameterError("labels", f"class {classes[k].item()!r} has no positive weight to "
                             "any other sample")
    return bw


@dataclass(frozen=True, eq=False)
class BlockTarget:
    r"""A block-constant symmetric target (canonical units).

    Attributes
    ----------
    sizes : ndarray of int, shape (K,)
    within : ndarray, shape (K,)
        :math:`\lambda_k` (unused when :math:`n_k = 1`).
    cross : ndarray, shape (K, K)
        :math:`\Lambda_{kl}` across classes (symmetric; the diagonal is ignored).
    spread : float
        Max minus min of the target over the pairs that occur.
    """

    sizes: np.ndarray
    within: np.ndarray
    cross: np.ndarray
    spread: float

    def quotient_base(self) -> np.ndarray:
        """:math:`\\Lambda` with :math:`\\lambda_k` on the diagonal."""
        M = self.cross.copy()
        np.fill_diagonal(M, self.within)
        return M


def block_entropic_bound(bw: BlockWeights) -> float:
    r""":math:`\sum_i H(p_i)` of a block weighting in :math:`O(K^2)` (:math:`O(K)` with one
    cross value), in log space."""
    if bw.log_cross is None:
        n = bw.sizes.astype(float)
        N = n.sum()
        logs = np.stack([bw.log_within, np.full(bw.K, float(bw.cross_value))], axis=1)
        counts = np.stack([n - 1.0, N - n], axis=1)
        return _entropies(logs, counts, bw.sizes)
    M = bw.pair_log_weights()
    return _entropies(M, bw.counts(), bw.sizes)


def _entropies(M: np.ndarray, counts: np.ndarray, sizes: np.ndarray) -> float:
    """Sum over anchors of the entropy of rows that weigh ``counts[k, l]`` samples with
    log-weight ``M[k, l]``."""
    used = (counts > 0) & np.isfinite(M)
    X = np.where(used, M + np.log(np.where(counts > 0, counts, 1.0)), -np.inf)
    top = X.max(axis=1, keepdims=True)
    E = np.exp(X - top)
    tot = E.sum(axis=1)
    lse = top[:, 0] + np.log(tot)
    H = lse - (E * np.where(used, M, 0.0)).sum(axis=1) / tot
    return float((sizes * H).sum())


def block_log_target(bw: BlockWeights, tol: Tolerance, used: np.ndarray):
    """Cycle condition on the class graph; the symmetric block target with offsets of mean zero
    over samples (as the dense engine), in canonical units.

    Returns ``(target, shift, margin, bad)``: ``bad`` is ``(k, l, log_ratio)`` when the cycle
    condition fails (``target`` is then ``None``).
    """
    L = bw.pair_log_weights()
    finite = used & np.isfinite(L)
    shift = float(L[finite].max())
    L = np.where(used, L - shift, 0.0)
    vals = L[finite]
    atol = tol.log_atol(float(vals.max() - vals.min()))
    k0 = int(bw.inverse[0])
    A = L - L.T
    c = A[k0].copy()
    resid = A - c[None, :] + c[:, None]
    resid[~(used & used.T)] = 0.0
    worst = np.unravel_index(int(np.argmax(np.abs(resid))), resid.shape)
    val = float(resid[worst])
    margin = tol.margin("largest triangle log-ratio (cycle condition)", val, atol,
                        zero_is_near=False)
    if abs(val) > atol:
        return None, shift, margin, (int(worst[0]), int(worst[1]), val)
    sizes = bw.sizes.astype(float)
    c -= (sizes * c).sum() / sizes.sum()
    ell = L + c[:, None]
    ell = 0.5 * (ell + ell.T)
    within = np.diag(ell).copy()
    cross = ell.copy()
    np.fill_diagonal(cross, 0.0)
    occurring = ell[used & used.T]
    spread = float(occurring.max() - occurring.min()) if occurring.size else 0.0
    return BlockTarget(bw.sizes, within, cross, spread), shift, margin, None
