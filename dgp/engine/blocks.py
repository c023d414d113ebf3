r"""Class-block weightings in :math:`O(K^3)` time and :math:`O(N + K^2)` memory, never an
:math:`N \times N` matrix.

Classes :math:`k = 1..K` with sizes :math:`n_k`, membership matrix :math:`E` (:math:`N \times K`),
and a block-constant symmetric target: :math:`\ell_{ij} = \lambda_k` for :math:`i \ne j` in class
:math:`k`, :math:`\ell_{ij} = \Lambda_{kl}` across. With :math:`\mu = \tau c`,

.. math::

    G(\mu) = \operatorname{diag}(\delta_{k(i)}) + E\,\hat G(\mu)\,E^\top,\qquad
    \delta_k = 1 - \tau\lambda_k - \mu,\quad
    \hat G_{kk} = \tau\lambda_k + \mu,\ \hat G_{kl} = \tau\Lambda_{kl} + \mu .

A vector supported on class :math:`k` with zero sum is killed by :math:`E^\top`, so it is an
eigenvector with eigenvalue :math:`\delta_k` (multiplicity :math:`n_k - 1`). On the class-constant
vectors, with the orthonormal basis :math:`E\,\mathrm{diag}(n)^{-1/2}`, :math:`G` acts as the
:math:`K \times K` quotient :math:`Q(\mu) = \operatorname{diag}(\delta) + \mathrm{diag}(\sqrt n)
\,\hat G(\mu)\,\mathrm{diag}(\sqrt n)`. The :math:`\sum_k (n_k - 1) + K = N` eigenvalues are all
there is. Euclidean: :math:`B = V^\top\ell V` has the eigenvalue :math:`-\lambda_k` on the
zero-sum vectors of class :math:`k` and, on the :math:`K - 1` class-constant vectors orthogonal
to :math:`1`, the compression of :math:`\mathrm{diag}(\sqrt n)\Lambda'\mathrm{diag}(\sqrt n) -
\mathrm{diag}(\lambda)` (:math:`\Lambda'` with :math:`\lambda_k` on its diagonal) to
:math:`\sqrt n^\perp`.

These are exactly the spectra the dense engine computes, so both feed the same decisions
(:mod:`dgp.engine.family`) and verdict rules.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dgp._linalg import fix_signs, helmert
from dgp.engine import rules
from dgp.engine.family import (
    CosineSpectrum,
    EuclideanSpectrum,
    FarkasData,
    check_cosine_scale,
    check_tau_inverse,
    combine_farkas,
    cosine_family,
    euclidean_family,
    farkas_offset,
)
from dgp.engine.groups import GROUPED_MIN_K, classify_grouped
from dgp.engine.rules import Context, Explanation
from dgp.engine.target import Shift
from dgp.result import Classification
from dgp.tolerance import Tolerance

__all__ = [
    "BlockSpectrum",
    "BlockTarget",
    "BlockWeights",
    "block_weights",
    "classify_blocks",
    "dense_blocks",
]

#: largest N for which certificate vectors (Farkas) are listed sample by sample
VECTORS_MAX_N = 2000


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


def dense_blocks(ell: np.ndarray, spread: float) -> tuple[BlockTarget, list[np.ndarray]] | None:
    r"""The twin classes of a dense symmetric target ``ell`` (zero diagonal), as a block target,
    or ``None`` when it has too little of that structure to be worth it.

    Samples ``i`` and ``j`` are twins when :math:`\ell_{im} = \ell_{jm}` for every
    :math:`m \notin \{i, j\}` (for a symmetric target: swapping them leaves it unchanged). Twinship
    is an equivalence relation and its classes make ``ell`` block-constant (within class ``k``
    every pair has one value :math:`\lambda_k`, across classes ``k, l`` one value
    :math:`\Lambda_{kl}`), so each class is found by comparing the remaining samples with one
    of its members, exactly (no hashing, no tolerance: equal floats or not). The search costs
    :math:`O(N^2)` per class and stops as soon as the classes found average fewer than
    :data:`~dgp.constants.TWIN_MIN_MEAN_SIZE` samples or the work exceeds
    :data:`~dgp.constants.TWIN_WORK_BUDGET` :math:`N^2` comparisons: on a matrix without twins
    it costs one pass.

    The block target and the sample indices of each class (classes by first member) give the
    same spectrum as ``ell`` (module docstring) in :math:`O(K^3)` per evaluation.
    """
    from dgp.constants import TWIN_MIN_MEAN_SIZE, TWIN_SCREEN, TWIN_WORK_BUDGET

    n = ell.shape[0]
    if n < 2 * TWIN_MIN_MEAN_SIZE:
        return None
    left = np.arange(n)
    members: list[np.ndarray] = []
    work, budget = 0, TWIN_WORK_BUDGET * float(n) * float(n)
    step = max(1, (1 << 20) // n)
    while left.size:
        ref = int(left[0])
        # a cheap screen on a few columns first (a sample in them is kept: its own column
        # holds its diagonal), then the exact comparison of the candidates' whole rows
        screen = np.array([j for j in range(min(n, TWIN_SCREEN + 1)) if j != ref][:TWIN_SCREEN])
        cand = left[(ell[np.ix_(left, screen)] == ell[ref, screen]).all(axis=1)
                    | np.isin(left, screen)]
        twin = np.zeros(cand.size, dtype=bool)
        for s in range(0, cand.size, step):
            rows = cand[s : s + step]
            differ = ell[rows] != ell[ref]
            k = np.arange(rows.size)
            # positions ref and i hold the diagonal of one row each: not compared
            count = differ.sum(axis=1) - differ[k, ref] - differ[k, rows]
            twin[s : s + step] = count == 0
        work += cand.size * n + left.size * screen.size
        members.append(cand[twin])
        left = np.setdiff1d(left, cand[twin], assume_unique=True)
        if (n - left.size) < TWIN_MIN_MEAN_SIZE * len(members) or (left.size and work > budget):
            return None
    reps = np.array([int(m[0]) for m in members])
    sizes = np.array([m.size for m in members], dtype=np.int64)
    within = np.array([float(ell[m[0], m[1]]) if m.size >= 2 else 0.0 for m in members])
    cross = ell[np.ix_(reps, reps)].copy()
    np.fill_diagonal(cross, 0.0)
    return BlockTarget(sizes, within, cross, spread), members


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


def _merge(values: np.ndarray, mults: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` smallest of ``values`` repeated ``mults`` times, ascending."""
    order = np.argsort(values, kind="stable")
    out, left = [], k
    for i in order:
        take = int(min(left, mults[i]))
        if take:
            out.append(np.full(take, values[i]))
            left -= take
        if left == 0:
            break
    return np.concatenate(out) if out else np.zeros(0)


class BlockSpectrum(CosineSpectrum):
    """:math:`G(\\mu)` of a block target from its quotient (module docstring)."""

    def __init__(self, t: BlockTarget, tau: float, members: list[np.ndarray] | None) -> None:
        self.t, self.tau, self.members = t, tau, members
        self.n = int(t.sizes.sum())
        self.s = np.sqrt(t.sizes.astype(float))
        self.base = tau * t.quotient_base()
        self.lam_w = tau * t.within
        self.multi = t.sizes >= 2
        self._cache: tuple[float, Any] | None = None
        offvals = [t.within[self.multi]] if self.multi.any() else []
        if t.sizes.size > 1:
            offvals.append(t.cross[~np.eye(t.sizes.size, dtype=bool)])
        allv = np.concatenate(offvals)
        box_lo, box_hi = -1.0 - tau * float(allv.min()), 1.0 - tau * float(allv.max())
        self._box = (min(box_lo, box_hi) - 1.0, max(box_lo, box_hi) + 1.0)

    def parts(self, mu: float):
        """Quotient eigenpairs and within-class eigenvalues at ``mu`` (cached)."""
        if self._cache is not None and self._cache[0] == mu:
            return self._cache[1]
        delta = 1.0 - self.lam_w - mu
        Q = np.outer(self.s, self.s) * (self.base + mu)
        Q[np.diag_indices_from(Q)] += delta
        lam, vec = np.linalg.eigh(0.5 * (Q + Q.T))
        out = (lam, vec, delta)
        self._cache = (mu, out)
        return out

    def _values(self, mu: float) -> tuple[np.ndarray, np.ndarray]:
        lam, _, delta = self.parts(mu)
        vals = np.concatenate([lam, delta[self.multi]])
        mults = np.concatenate([np.ones(lam.size), (self.t.sizes - 1)[self.multi]])
        return vals, mults

    def box(self) -> tuple[float, float]:
        return self._box

    def lam_min_slope(self, mu: float) -> tuple[float, float]:
        lam, vec, delta = self.parts(mu)
        if self.multi.any() and delta[self.multi].min() < lam[0]:
            return float(delta[self.multi].min()), -1.0  # zero-sum vectors: 1^T x = 0
        return float(lam[0]), float((self.s @ vec[:, 0]) ** 2 - 1.0)

    def lam_max(self, mu: float) -> float:
        vals, _ = self._values(mu)
        return float(vals.max())

    def smallest(self, mu: float, k: int) -> np.ndarray:
        vals, mults = self._values(mu)
        return _merge(vals, mults, k)

    def count_at_most(self, mu: float, x: float) -> int:
        vals, mults = self._values(mu)
        return int(mults[vals <= x].sum())

    def smallest_slopes(self, mu: float, k: int) -> tuple[np.ndarray, np.ndarray]:
        lam, vec, delta = self.parts(mu)
        vals = np.concatenate([lam, delta[self.multi]])
        mults = np.concatenate([np.ones(lam.size), (self.t.sizes - 1)[self.multi]])
        slopes = np.concatenate([(self.s @ vec) ** 2 - 1.0, -np.ones(int(self.multi.sum()))])
        order = np.argsort(vals, kind="stable")
        reps = np.minimum(mults[order].astype(np.int64), k)
        return (np.repeat(vals[order], reps)[:k], np.repeat(slopes[order], reps)[:k])

    def structure(self, mu: float) -> dict[str, Any]:
        lam, _, delta = self.parts(mu)
        return {"quotient_eigenvalues": lam.tolist(), "within_class_eigenvalues": delta.tolist(),
                "multiplicities": (self.t.sizes - 1).tolist(), "at_c": mu / self.tau}

    def prototypes(self, mu: float, atol: float) -> list[list[float]] | None:
        lam, vec, delta = self.parts(mu)
        if (delta[self.multi] > atol).any():
            return None  # classes spread out: no prototype description
        keep = lam > atol
        P = vec[:, keep][:, ::-1] / self.s[:, None]
        return (fix_signs(P) * np.sqrt(np.clip(lam[keep][::-1], 0.0, None))).tolist()

    def _vector(self, mu: float) -> tuple[np.ndarray | None, float, float]:
        """Bottom eigenvector at ``mu`` (``N``-vector when small), its slope and ``x^T A x``."""
        lam, vec, delta = self.parts(mu)
        members = self.members
        if self.multi.any() and delta[self.multi].min() < lam[0]:
            k = int(np.flatnonzero(self.multi)[np.argmin(delta[self.multi])])
            value, slope = float(delta[k]), -1.0
            x = None
            if members is not None and self.n <= VECTORS_MAX_N:
                x = np.zeros(self.n)
                x[members[k]] = helmert(int(self.t.sizes[k]))[:, 0]
        else:
            v = vec[:, 0]
            value, slope = float(lam[0]), float((self.s @ v) ** 2 - 1.0)
            x = None
            if members is not None and self.n <= VECTORS_MAX_N:
                x = np.empty(self.n)
                for k, idx in enumerate(members):
                    x[idx] = v[k] / self.s[k]
        return x, slope, value - mu * slope

    def farkas(self, mu_star: float, phi_star: float) -> FarkasData:
        delta = farkas_offset(mu_star, phi_star, self.n)
        return combine_farkas(
            (self._vector(mu_star - delta), self._vector(mu_star + delta)),
            note="vectors not listed (N above the listing limit, or classes not given): each is "
            "constant on classes (a bottom quotient eigenvector divided by sqrt(n_k)) or a "
            "zero-sum vector within one class",
        )

    def embedding(self, mu: float, r: int) -> np.ndarray:
        lam, vec, delta = self.parts(mu)
        order = np.argsort(-lam)
        return block_embedding(self.members, self.n, self.t.sizes, lam[order], vec[:, order],
                               delta, r)


def block_embedding(
    members: list[np.ndarray] | None,
    n: int,
    sizes: np.ndarray,
    q_lam: np.ndarray,
    q_vec: np.ndarray,
    delta: np.ndarray,
    r: int,
) -> np.ndarray:
    """The ``N x r`` embedding from the top ``r`` eigenpairs of a block spectrum.

    ``members`` lists each class's sample indices (``None``: classes are contiguous in order).
    """
    cand = [(float(q_lam[i]), "q", i) for i in range(q_lam.size)]
    cand += [(float(delta[k]), "w", k) for k in range(sizes.size) if sizes[k] >= 2]
    cand.sort(key=lambda t: -t[0])
    if members is None:
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        members = [np.arange(s, s + m) for s, m in zip(starts, sizes, strict=True)]
    cols: list[np.ndarray] = []
    for val, kind, i in cand:
        if len(cols) >= r:
            break
        scale = np.sqrt(max(val, 0.0))
        if kind == "q":
            x = np.empty(n)
            v = q_vec[:, i] / np.sqrt(sizes)
            for k, idx in enumerate(members):
                x[idx] = v[k]
            cols.append(x * scale)
        else:
            H = helmert(int(sizes[i]))
            for j in range(H.shape[1]):
                if len(cols) >= r:
                    break
                x = np.zeros(n)
                x[members[i]] = H[:, j]
                cols.append(x * scale)
    Z = np.column_stack(cols) if cols else np.zeros((n, 0))
    return fix_signs(Z)


class BlockEuclideanSpectrum(EuclideanSpectrum):
    """:math:`B = V^\\top\\ell V` of a block target (module docstring)."""

    def __init__(self, t: BlockTarget, members: list[np.ndarray] | None) -> None:
        self.t, self.members = t, members
        sizes = t.sizes.astype(float)
        self.n = int(t.sizes.sum())
        self.spread = t.spread
        K = sizes.size
        s = np.sqrt(sizes)
        M = np.outer(s, s) * t.quotient_base()
        M[np.diag_indices_from(M)] -= t.within
        # orthonormal basis of s-perp (s is the image of 1): Householder sending s/|s| to e_1
        v = -s / np.sqrt(self.n)
        v[0] += 1.0
        Hs = np.eye(K) - 2.0 * np.outer(v, v) / float(v @ v) if float(v @ v) > 0 else np.eye(K)
        self.P = Hs[:, 1:]
        Bq = self.P.T @ M @ self.P
        self.q_lam, self.q_vec = (np.linalg.eigh(0.5 * (Bq + Bq.T)) if K > 1
                                  else (np.zeros(0), np.zeros((0, 0))))
        self.w_lam = -t.within
        self.multi = t.sizes >= 2
        self.vals = np.concatenate([self.q_lam, self.w_lam[self.multi]])
        self.mults = np.concatenate([np.ones(self.q_lam.size), (t.sizes - 1)[self.multi]])

    def extremes(self) -> tuple[float, float]:
        return float(self.vals.min()), float(self.vals.max())

    def smallest(self, k: int) -> np.ndarray:
        return _merge(self.vals, self.mults, k)

    def count_at_most(self, x: float) -> int:
        return int(self.mults[self.vals <= x].sum())

    def structure(self) -> dict[str, Any]:
        return {"quotient_eigenvalues": self.q_lam.tolist(),
                "within_class_eigenvalues": self.w_lam.tolist(),
                "multiplicities": (self.t.sizes - 1).tolist()}

    def embedding(self, c: float, r: int, tau: float) -> np.ndarray:
        if r == 0:
            return np.zeros((self.n, 0))
        ql = self.q_lam - c
        order = np.argsort(-ql)
        Z = block_embedding(self.members, self.n, self.t.sizes, ql[order],
                            (self.P @ self.q_vec)[:, order], self.w_lam - c, r)
        return np.sqrt(tau) * Z


def classify_blocks(
    bw: BlockWeights,
    *,
    similarity: str,
    tau: float,
    dim: int,
    tol: Tolerance,
    objective: str | None = None,
    explanation: Explanation | None = None,
    embed: bool = False,
    floor: Any = None,
) -> Classification:
    """Classify a validated block weighting (structured path of the class objectives).
    ``floor`` computes the loss floor of an inconsistent cosine verdict (see
    :class:`~dgp.engine.rules.Context`)."""
    check_tau_inverse(tau)
    if bw.log_cross is None and bw.K >= GROUPED_MIN_K:
        ctx = Context(
            similarity=similarity, tau=tau, dim=dim, n=bw.n, tol=tol, method="structured",
            entropic_bound=block_entropic_bound(bw), objective=objective,
            structure={"classes": bw.K}, explanation=explanation, embed=embed, floor=floor,
        )
        first_other = int(np.flatnonzero(bw.inverse != bw.inverse[0])[0])
        return classify_grouped(bw.sizes, bw.log_within, float(bw.cross_value), ctx,
                                first_other=first_other)
    bw = bw.expanded()
    K = bw.K
    counts = bw.counts()
    used = counts > 0  # pairs of classes that actually occur off the diagonal
    M = bw.pair_log_weights()
    members = bw.members() if (embed or bw.n <= VECTORS_MAX_N) else None
    structure = {"classes": bw.classes.tolist(), "sizes": bw.sizes.tolist()}
    base = {
        "similarity": similarity, "tau": tau, "dim": dim, "n": bw.n, "tol": tol,
        "method": "structured", "entropic_bound": block_entropic_bound(bw),
        "objective": objective, "structure": structure, "explanation": explanation,
        "embed": embed, "floor": floor,
    }
    zero = ~np.isfinite(M) & used
    if zero.any():
        return _blocks_zero(bw, zero, used, Context(**base))
    tgt, shift, margin, bad = block_log_target(bw, tol, used)
    if bad is not None:
        first = bw.first_members()
        k, l, val = bad
        cycle = (0, int(first[k]), int(first[l]), 0)
        return rules.cycle_broken(Context(**base, shift=shift), cycle=cycle, log_ratio=val,
                                  margin=margin)
    ctx = Context(**base, shift=shift, margins=(margin,) if margin.near else ())
    if similarity == "cosine":
        vals = M[used]
        check_cosine_scale(tau, float(vals.max() - vals.min()))
        fam = cosine_family(BlockSpectrum(tgt, tau, members), tau=tau, tol=tol)
    else:
        fam = euclidean_family(BlockEuclideanSpectrum(tgt, members), tau=tau, tol=tol)
    del K
    return rules.verdict(fam, ctx)


def _blocks_zero(bw: BlockWeights, zero: np.ndarray, used: np.ndarray,
                 ctx: Context) -> Classification:
    """Zero weights, decided as :mod:`dgp.engine.zeros` does for dense weightings.

    Complete blocks (positive within, zero across) whose blocks meet their cycle condition are
    decided at the class level, for any N; every other class pattern is expanded to its
    sample-level sparse graph (never an N x N matrix) and decided by
    :func:`dgp.engine.zeros.classify_pattern`, the dense path's own procedure.
    """
    from scipy.sparse.csgraph import connected_components

    from dgp.engine.zeros import classify_pattern

    sizes, K = bw.sizes, bw.K
    first = bw.first_members()
    n_zero = int(sum(sizes[k] * (sizes[l] - (k == l)) for k in range(K) for l in range(K)
                     if zero[k, l]))
    # the first zero entry in row-major order, as the dense path reports it
    k = min((r for r in range(K) if zero[r].any()), key=lambda r: first[r])
    i = int(first[k])
    cands = []
    for l in np.flatnonzero(zero[k]):
        if l != k:
            cands.append(int(first[l]))
        else:  # the first member of class k other than i
            idx = np.flatnonzero(bw.inverse == k)
            cands.append(int(idx[idx != i][0]))
    j = min(cands)
    if ctx.similarity == "cosine":
        return rules.zero_weight_cosine(ctx, entry=(i, j), n_zero=n_zero)
    pos = ~zero & used
    support = pos & pos.T
    np.fill_diagonal(support, False)
    n_comp, comp = connected_components(support, directed=False)
    complete = all(
        (pos[np.ix_(ks, ks)] | ~used[np.ix_(ks, ks)]).all()
        for ks in (np.flatnonzero(comp == b) for b in range(n_comp))
    )
    if complete:
        out = _complete_blocks(bw, used, comp, n_comp, first, n_zero, ctx)
        if out is not None:
            return out
    return classify_pattern(_block_pattern(bw, pos), replace(ctx, shift=_top_log_weight(bw, pos)))


def _top_log_weight(bw: BlockWeights, pos: np.ndarray) -> float:
    M = bw.pair_log_weights()
    return float(M[pos & (bw.counts() > 0)].max())


def _block_pattern(bw: BlockWeights, pos: np.ndarray):
    """The sample-level positive pairs of a class pattern (sparse; memory checked)."""
    from dgp.engine.zeros import ZeroPattern
    from dgp.resources import check_memory

    counts = bw.counts()
    live = pos & (counts > 0)
    nnz = float((bw.sizes[:, None] * counts * live).sum())
    check_memory(24.0 * nnz, what=f"the {int(nnz)} positive pairs of the class pattern",
                 hint="use fewer samples per class")
    M = bw.pair_log_weights()
    members = bw.members()
    rows, cols, vals = [], [], []
    for k, l in zip(*np.nonzero(live), strict=True):
        a, b = members[k], members[l]
        r = np.repeat(a, b.size)
        c = np.tile(b, a.size)
        keep = r != c
        rows.append(r[keep])
        cols.append(c[keep])
        vals.append(np.full(int(keep.sum()), M[k, l]))
    return ZeroPattern.from_pairs(bw.n, np.concatenate(rows), np.concatenate(cols),
                                  np.concatenate(vals))


def _complete_blocks(bw, used, comp, n_comp, first, n_zero, ctx) -> Classification | None:
    """Complete blocks at the class level: degenerate iff every block's own target fits
    (``None`` when a block breaks its cycle condition: the sample-level path reports it)."""
    sizes = bw.sizes
    blocks, failing, margins = [], None, []
    order = np.argsort([first[np.flatnonzero(comp == b)].min() for b in range(n_comp)])
    for pos_b, b in enumerate(order):
        ks = np.flatnonzero(comp == b)
        entry: dict[str, Any] = {"classes": bw.classes[ks].tolist(),
                                 "size": int(sizes[ks].sum())}
        if int(sizes[ks].sum()) < 2:  # pragma: no cover - validation keeps rows with mass
            entry.update(c_max=None, rank=0, ok=True)
            blocks.append(entry)
            continue
        sub = BlockWeights(sizes[ks], bw.log_within[ks], bw.log_cross[np.ix_(ks, ks)],
                           np.zeros(int(sizes[ks].sum()), dtype=int), bw.classes[ks])
        sub_used = used[np.ix_(ks, ks)]
        tol = Tolerance(ctx.tol.rtol, ctx.tol.unit_roundoff, int(sizes[ks].sum()))
        tgt, shift, _margin, bad = block_log_target(sub, tol, sub_used)
        if bad is not None:
            return None
        fam = euclidean_family(BlockEuclideanSpectrum(tgt, None), tau=ctx.tau, tol=tol)
        end = fam.hi
        ok = end.rank <= ctx.dim
        entry.update(c_max=Shift(shift).to_user_c(end.c), rank=end.rank, ok=ok)
        margins.extend(fam.margins)
        if not ok:
            failing = failing or (pos_b, f"needs dimension {end.rank} > dim = {ctx.dim}")
        blocks.append(entry)
    return rules.blocks_verdict(ctx, n_blocks=n_comp, failing=failing, blocks=tuple(blocks),
                                n_zero=n_zero, margins=tuple(margins))
