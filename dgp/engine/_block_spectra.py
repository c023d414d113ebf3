"""The spectra of a block target from its :math:`K \times K` quotient (cosine and Euclidean, the
module docstring of :mod:`dgp.engine.blocks`), the embedding they give, and the twin classes that
make a dense target a block target (:func:`dense_blocks`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dgp._linalg import fix_signs, helmert
from dgp.engine._block_model import BlockTarget
from dgp.engine._reduction_base import ClassMembers
from dgp.engine._spectra import FarkasSide
from dgp.engine.family import (
    MultiplicityEuclideanSpectrum,
    MultiplicitySpectrum,
    psd_box,
    repeat_smallest,
)
from dgp.engine.tridiag import complement_basis

#: largest N for which certificate vectors (Farkas) are listed sample by sample
VECTORS_MAX_N = 2000


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


class BlockSpectrum(MultiplicitySpectrum):
    """:math:`G(\\mu)` of a block target from its quotient (module docstring)."""

    def __init__(self, t: BlockTarget, tau: float, members: list[np.ndarray] | None) -> None:
        self.t, self.tau, self.members = t, tau, members
        self.n = int(t.sizes.sum())
        self.s = np.sqrt(t.sizes.astype(float))
        self.base = tau * t.quotient_base()
        self.lam_w = tau * t.within
        self.multi = t.sizes >= 2
        offvals = [t.within[self.multi]] if self.multi.any() else []
        if t.sizes.size > 1:
            offvals.append(t.cross[~np.eye(t.sizes.size, dtype=bool)])
        allv = np.concatenate(offvals)
        self._box = psd_box(tau, float(allv.min()), float(allv.max()))

    def decompose(self, mu: float):
        """Quotient eigenpairs and within-class eigenvalues at ``mu``."""
        delta = 1.0 - self.lam_w - mu
        Q = np.outer(self.s, self.s) * (self.base + mu)
        Q[np.diag_indices_from(Q)] += delta
        lam, vec = np.linalg.eigh(0.5 * (Q + Q.T))
        return lam, vec, delta

    def eigenvalues(self, mu: float) -> tuple[np.ndarray, np.ndarray]:
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

    def smallest_slopes(self, mu: float, k: int) -> tuple[np.ndarray, np.ndarray]:
        _, vec, _ = self.parts(mu)
        vals, mults = self.eigenvalues(mu)
        slopes = np.concatenate([(self.s @ vec) ** 2 - 1.0, -np.ones(int(self.multi.sum()))])
        bottom, bottom_slopes = repeat_smallest(k, vals, mults, slopes)
        return bottom, bottom_slopes

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

    def farkas_side(self, mu: float) -> FarkasSide:
        """Bottom eigenvector at ``mu`` (``N``-vector when small), its slope and ``x^T A x``."""
        lam, vec, delta = self.parts(mu)
        members = self.members
        if self.multi.any() and delta[self.multi].min() < lam[0]:
            k = int(np.flatnonzero(self.multi)[np.argmin(delta[self.multi])])
            value, slope = float(delta[k]), -1.0
            x = None
            if members is not None and self.n <= VECTORS_MAX_N:
                x = ClassMembers(members, self.n).within(k, helmert(int(self.t.sizes[k]))[:, 0])
        else:
            v = vec[:, 0]
            value, slope = float(lam[0]), float((self.s @ v) ** 2 - 1.0)
            x = None
            if members is not None and self.n <= VECTORS_MAX_N:
                x = ClassMembers(members, self.n).constant(v / self.s)
        return x, slope, value - mu * slope

    def farkas_note(self, delta: float) -> str:
        return ("vectors not listed (N above the listing limit, or classes not given): each is "
                "constant on classes (a bottom quotient eigenvector divided by sqrt(n_k)) or a "
                "zero-sum vector within one class")

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
    classes = ClassMembers.of(members, sizes)  # the way back from classes to samples
    cols: list[np.ndarray] = []
    for val, kind, i in cand:
        if len(cols) >= r:
            break
        scale = np.sqrt(max(val, 0.0))
        if kind == "q":
            cols.append(classes.constant(q_vec[:, i] / np.sqrt(sizes)) * scale)
        else:
            H = helmert(int(sizes[i]))
            for j in range(H.shape[1]):
                if len(cols) >= r:
                    break
                cols.append(classes.within(i, H[:, j]) * scale)
    Z = np.column_stack(cols) if cols else np.zeros((n, 0))
    return fix_signs(Z)


class BlockEuclideanSpectrum(MultiplicityEuclideanSpectrum):
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
        # orthonormal basis of s-perp (s is the image of 1; |s|^2 = N)
        self.P = complement_basis(s / np.sqrt(self.n))
        Bq = self.P.T @ M @ self.P
        self.q_lam, self.q_vec = (np.linalg.eigh(0.5 * (Bq + Bq.T)) if K > 1
                                  else (np.zeros(0), np.zeros((0, 0))))
        self.w_lam = -t.within
        self.multi = t.sizes >= 2
        self.vals = np.concatenate([self.q_lam, self.w_lam[self.multi]])
        self.mults = np.concatenate([np.ones(self.q_lam.size), (t.sizes - 1)[self.multi]])

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
