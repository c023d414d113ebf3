r"""The structured engine: target families of class-block and label-kernel weightings in
:math:`O(K^3 + N)` or :math:`O(Np^2)` time and :math:`O(N + Np)` memory, never an
:math:`N \times N` matrix.

Both paths compute exactly the spectra that :mod:`dgp.spectral` computes densely, so they feed the
same :class:`dgp.spectral.Family` and the same verdict rules (:func:`dgp.classification._verdict`).

Class blocks
------------
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
:math:`K \times K` quotient

.. math:: Q(\mu) = \operatorname{diag}(\delta) + \mathrm{diag}(\sqrt n)\,\hat G(\mu)\,
    \mathrm{diag}(\sqrt n).

The :math:`\sum_k (n_k - 1) + K = N` eigenvalues are all there is. Euclidean: with
:math:`D_0 = -2\tau\ell` (zero diagonal), :math:`-\tfrac12 J D_0 J` has the eigenvalue
:math:`-\tau\lambda_k` on the zero-sum vectors of class :math:`k` and, on the :math:`K - 1`
class-constant vectors orthogonal to :math:`1`, the compression
:math:`-\tfrac12 P^\top(\mathrm{diag}(2\tau\lambda) + \mathrm{diag}(\sqrt n)(-2\tau\Lambda)
\mathrm{diag}(\sqrt n))P` with :math:`P` an orthonormal basis of :math:`\sqrt n^{\perp}`.

Low-rank label kernels
----------------------
A target :math:`\ell_{ij} = (UCU^\top)_{ij}` for :math:`i \ne j`, with :math:`U` an
:math:`N \times k` matrix whose first column is :math:`1`, :math:`C` symmetric
:math:`k \times k`, and a constant diagonal :math:`(UCU^\top)_{ii} = h`. Then

.. math:: G(\mu) = I + \tau\ell + \mu(11^\top - I)
    = (1 - \tau h - \mu)\,I + U(\tau C + \mu e_1e_1^\top)U^\top .

With a Householder QR :math:`U = QR` (:math:`Q` orthonormal :math:`N \times m`,
:math:`m = \min(N, k)`, exact even when :math:`U` is rank deficient), the spectrum is
:math:`\{1 - \tau h - \mu\}` with multiplicity :math:`N - m` on :math:`\mathrm{range}(Q)^\perp`,
plus the eigenvalues of the :math:`m \times m` capacitance matrix
:math:`(1 - \tau h - \mu)I + R(\tau C + \mu e_1e_1^\top)R^\top`. Euclidean: on
:math:`1^\perp`, :math:`-\tfrac12 J D(c) J = \tau\tilde U C'\tilde U^\top - \tau(h + c)I` with
:math:`\tilde U` the centred columns :math:`2..k` of :math:`U` and :math:`C'` the trailing block of
:math:`C`, decided the same way. Gaussian kernels (y-Aware, Euclidean–Euclidean) have
:math:`U = [1, q, X]`, :math:`q_i = |x_i|^2`, :math:`C = \begin{pmatrix}0&-1/2\sigma^2&0\\
-1/2\sigma^2&0&0\\0&0&I/\sigma^2\end{pmatrix}`, :math:`h = 0`; X-CLR has :math:`U = [1, \hat Y]`,
:math:`C = \mathrm{diag}(-\overline{\log Z}, I/\tau_y)`, :math:`h = 1/\tau_y - \overline{\log Z}`.

Cost: one QR of :math:`N \times k` (:math:`O(Nk^2)`), then every evaluation along the family is a
:math:`k \times k` eigenproblem.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from dgp._tridiag import ones_reflector_vectors
from dgp.classification import (
    NOT_BLOCKS,
    Classification,
    _verdict,
    blocks_verdict,
    zero_weight_cosine,
)
from dgp.errors import check_choice, check_dim, check_positive, check_rtol
from dgp.geometry import fix_signs
from dgp.infonce import SIMILARITIES
from dgp.spectral import (
    Family,
    _norm_tol,
    argmax_concave_values,
    concave_family,
    schoenberg_end_tolerance,
)

__all__ = [
    "BlockTarget",
    "LowRankTarget",
    "block_cosine_family",
    "block_euclidean_family",
    "centre_points",
    "classify_blocks",
    "classify_lowrank",
    "gaussian_target",
    "kernel_row_statistics",
    "lowrank_cosine_family",
    "lowrank_euclidean_family",
]

#: largest N for which an embedding that needs the complement of range(U) is built (N x N QR)
COMPLEMENT_EMBED_MAX_N = 4096


# --------------------------------------------------------------------------------------------
# shared root finding along a concave lambda_min
# --------------------------------------------------------------------------------------------


def _concave_family(
    lam_min, tol_at, rank_at, a: float, b: float, tau: float, embed, extra_cert
) -> Family:
    """The decisions of :func:`dgp.spectral.concave_family` for a value-only ``lam_min(mu)``."""

    def empty(mu_star: float, phi_star: float, atol: float) -> dict:
        return {
            "kind": "spectrum",
            "statement": "max over c of the smallest eigenvalue of G(c) is negative",
            "max_min_eigenvalue": phi_star,
            "at_c": mu_star / tau,
            "atol": atol,
            **extra_cert(mu_star),
        }

    mu_star = argmax_concave_values(lam_min, a, b)
    return concave_family(
        lam_min, tol_at, rank_at, mu_star, a, b, tau, embed=embed, empty_certificate=empty
    )


def _sym(M: np.ndarray) -> np.ndarray:
    return 0.5 * (M + M.T)


def tall_r(M: np.ndarray, *, block: int = 65536) -> np.ndarray:
    r"""The triangular factor :math:`R` of a Householder QR of a tall matrix, by blocks (TSQR).

    :math:`R` of the stacked block factors is an :math:`R` of ``M`` (``M = QR`` with orthonormal
    ``Q``, exact even when ``M`` is rank deficient); ``Q`` is never formed. :math:`O(Nk^2)` time,
    :math:`O(\text{block}\cdot k)` extra memory. Shape ``(min(N, k), k)``.
    """
    n = M.shape[0]
    if n <= block:
        return np.linalg.qr(M, mode="r")
    parts = [np.linalg.qr(M[s : s + block], mode="r") for s in range(0, n, block)]
    return tall_r(np.vstack(parts), block=block)


# --------------------------------------------------------------------------------------------
# class blocks
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BlockTarget:
    r"""A block-constant symmetric target.

    Attributes
    ----------
    sizes : ndarray of int, shape (K,)
        Class sizes :math:`n_k \ge 1`.
    within : ndarray, shape (K,)
        :math:`\lambda_k`, the target within class :math:`k` (unused when :math:`n_k = 1`).
    cross : ndarray, shape (K, K)
        :math:`\Lambda_{kl}` across classes (symmetric; the diagonal is ignored).
    """

    sizes: np.ndarray
    within: np.ndarray
    cross: np.ndarray

    def quotient_base(self, tau: float) -> np.ndarray:
        """:math:`\\tau\\Lambda` with :math:`\\tau\\lambda_k` on the diagonal."""
        M = tau * self.cross.copy()
        np.fill_diagonal(M, tau * self.within)
        return M


def _helmert(n: int) -> np.ndarray:
    """Orthonormal basis (``n x (n-1)``) of the zero-sum vectors of :math:`\\mathbb R^n`."""
    H = np.zeros((n, n - 1))
    for j in range(1, n):
        H[:j, j - 1] = 1.0 / np.sqrt(j * (j + 1))
        H[j, j - 1] = -j / np.sqrt(j * (j + 1))
    return H


def _block_embedding(
    members: list[np.ndarray] | None,
    n: int,
    sizes: np.ndarray,
    q_lam: np.ndarray,
    q_vec: np.ndarray,
    delta: np.ndarray,
    r: int,
) -> np.ndarray:
    """The ``N x r`` embedding from the top ``r`` eigenpairs of the block spectrum.

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
            H = _helmert(int(sizes[i]))
            for j in range(H.shape[1]):
                if len(cols) >= r:
                    break
                x = np.zeros(n)
                x[members[i]] = H[:, j]
                cols.append(x * scale)
    Z = np.column_stack(cols) if cols else np.zeros((n, 0))
    return fix_signs(Z)


def block_cosine_family(
    target: BlockTarget,
    tau: float,
    rtol: float,
    *,
    members: list[np.ndarray] | None = None,
    embed: bool = False,
) -> Family:
    """Admissible interval and ranks of the cosine :math:`G(c)` of a block target.

    Parameters
    ----------
    target : BlockTarget
    tau, rtol : float
    members : list of ndarray, optional
        Sample indices of each class (only for the embedding).
    embed : bool
        Attach an ``N x rank`` embedding builder.

    Returns
    -------
    Family
        With ``certificate["prototypes"]`` (``K x rank``) when every class collapses to a point.
    """
    sizes = target.sizes.astype(float)
    n = int(target.sizes.sum())
    s = np.sqrt(sizes)
    base = target.quotient_base(tau)
    lam_w = tau * target.within
    multi = target.sizes >= 2

    def parts(mu: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        delta = 1.0 - lam_w - mu
        Q = np.outer(s, s) * (base + mu)
        Q[np.diag_indices_from(Q)] += delta
        lam, vec = np.linalg.eigh(_sym(Q))
        return lam, vec, delta

    def lam_min(mu: float) -> float:
        lam, _, delta = parts(mu)
        return float(min(lam[0], delta[multi].min())) if multi.any() else float(lam[0])

    def tol_at(mu: float) -> float:
        lam, _, delta = parts(mu)
        lo, hi = lam[0], lam[-1]
        if multi.any():
            lo, hi = min(lo, delta[multi].min()), max(hi, delta[multi].max())
        return _norm_tol(float(lo), float(hi), rtol)

    def rank_at(mu: float) -> int:
        lam, _, delta = parts(mu)
        t = tol_at(mu)
        return int((lam >= t).sum() + ((target.sizes - 1) * (delta >= t)).sum())

    offvals = [target.within[multi]] if multi.any() else []
    if target.sizes.size > 1:
        offvals.append(target.cross[~np.eye(target.sizes.size, dtype=bool)])
    allv = np.concatenate(offvals)
    box_lo, box_hi = -1.0 - tau * float(allv.min()), 1.0 - tau * float(allv.max())
    a, b = min(box_lo, box_hi) - 1.0, max(box_lo, box_hi) + 1.0

    def embed_fn(c: float, r: int) -> np.ndarray:
        lam, vec, delta = parts(tau * c)
        order = np.argsort(-lam)
        return _block_embedding(members, n, target.sizes, lam[order], vec[:, order], delta, r)

    def extra(mu: float) -> dict[str, Any]:
        lam, _, delta = parts(mu)
        return {
            "quotient_eigenvalues": lam.tolist(),
            "within_class_eigenvalues": delta.tolist(),
            "multiplicities": (target.sizes - 1).tolist(),
        }

    fam = _concave_family(lam_min, tol_at, rank_at, a, b, tau, embed_fn if embed else None, extra)
    return _with_prototypes(fam, parts, tau, target.sizes)


def _with_prototypes(fam: Family, parts, tau: float, sizes: np.ndarray) -> Family:
    """Add prototype vectors (``K x rank``) at each admissible end point where classes collapse."""
    if fam.empty:
        return fam
    cert = dict(fam.certificate)
    protos = {}
    for tag, c in (("lo", fam.lo), ("hi", fam.hi)):
        if c is None or tag in protos:
            continue
        lam, vec, delta = parts(tau * c)
        if (delta[sizes >= 2] > fam.atol).any():
            continue  # classes spread out: no prototype description
        keep = lam >= fam.atol
        P = vec[:, keep][:, ::-1] / np.sqrt(sizes)[:, None]
        P = fix_signs(P) * np.sqrt(np.clip(lam[keep][::-1], 0.0, None))
        protos[tag] = P.tolist()
    if protos:
        cert["prototypes"] = protos
        cert["prototypes_note"] = (
            "each class collapses to one point: z_i = prototypes[end][class of i] (rows follow "
            "the sorted class labels)"
        )
    return replace(fam, certificate=cert)


def block_euclidean_family(
    target: BlockTarget,
    tau: float,
    rtol: float,
    *,
    members: list[np.ndarray] | None = None,
    embed: bool = False,
) -> Family:
    """Admissible half-line ``c <= c_max`` of the Euclidean :math:`D(c)` of a block target."""
    sizes = target.sizes.astype(float)
    n = int(target.sizes.sum())
    K = sizes.size
    s = np.sqrt(sizes)
    multi = target.sizes >= 2
    # D0 restricted to class-constant vectors (orthonormal basis E diag(n)^-1/2)
    QD = np.outer(s, s) * (-2.0 * tau * target.quotient_base(1.0))
    QD[np.diag_indices_from(QD)] += 2.0 * tau * target.within
    # orthonormal basis of s-perp (s is the image of 1): Householder sending s/|s| to e_1
    v = -s / np.sqrt(n)
    v[0] += 1.0
    if float(v @ v) > 0:
        Hs = np.eye(K) - 2.0 * np.outer(v, v) / float(v @ v)
    else:
        Hs = np.eye(K)
    P = Hs[:, 1:]
    Bq = _sym(-0.5 * P.T @ QD @ P)
    q_lam, q_vec = np.linalg.eigh(Bq) if K > 1 else (np.zeros(0), np.zeros((0, 0)))
    w_lam = -tau * target.within
    allv = np.concatenate([q_lam, w_lam[multi]])
    lam_min, lam_max = float(allv.min()), float(allv.max())
    c_max = lam_min / tau + 0.0
    atol = schoenberg_end_tolerance(lam_min, lam_max, rtol)
    shifted_q, shifted_w = q_lam - lam_min, w_lam - lam_min
    r_hi = int((shifted_q >= atol).sum() + ((target.sizes - 1) * (shifted_w >= atol)).sum())

    def embed_fn(c: float, r: int) -> np.ndarray:
        if r == 0:
            return np.zeros((n, 0))
        ql = q_lam - tau * c
        order = np.argsort(-ql)
        # class-constant eigenvectors P q_vec, in the basis diag(n)^-1/2
        return _block_embedding(
            members, n, target.sizes, ql[order], (P @ q_vec)[:, order], w_lam - tau * c, r
        )

    low = np.sort(allv - lam_min)[:3]
    cert = {
        "kind": "schoenberg",
        "c_max": c_max,
        "smallest_eigenvalues_at_c_max": low.tolist(),
        "largest_eigenvalue_at_c_max": lam_max - lam_min,
        "atol": atol,
        "quotient_eigenvalues": q_lam.tolist(),
        "within_class_eigenvalues": w_lam.tolist(),
        "multiplicities": (target.sizes - 1).tolist(),
    }
    return Family(
        None, c_max, False, False, None, r_hi, n - 1, atol, cert, embed_fn if embed else None
    )


def _block_entropies(sizes: np.ndarray, within: np.ndarray, cross: np.ndarray) -> float:
    """:math:`\\sum_i H(p_i)` of a block weighting (``0 log 0 = 0``), in :math:`O(K^2)`."""
    K = sizes.size
    Wk = cross.astype(float).copy()
    np.fill_diagonal(Wk, within)
    counts = np.tile(sizes.astype(float), (K, 1))
    counts[np.diag_indices(K)] -= 1.0  # an anchor does not weigh itself
    with np.errstate(divide="ignore", invalid="ignore"):
        wlogw = np.where(Wk > 0, Wk * np.log(np.where(Wk > 0, Wk, 1.0)), 0.0)
    mass = (counts * Wk).sum(axis=1)
    H = np.log(mass) - (counts * wlogw).sum(axis=1) / mass
    return float((sizes * H).sum())


def classify_blocks(
    labels: object,
    *,
    within: object,
    cross: object,
    similarity: str = "cosine",
    tau: float,
    dim: int,
    rtol: float = 1e-8,
    embed: bool = False,
) -> Classification:
    r"""Classify a block-constant weighting :math:`w_{ij} = a_k` (same class :math:`k`),
    :math:`B_{kl}` (classes :math:`k \ne l`) without building it.

    The cycle condition reduces to the class graph: :math:`\log B_{kl} - \log B_{lk} =
    c_l - c_k`; offsets are then constant on classes and normalised to mean zero over samples,
    as the dense path does, so ``c_interval`` is the same number.

    Parameters
    ----------
    labels : array_like, shape (N,)
        Integer class labels (every class at least 2 samples), in any order.
    within : array_like, shape (K,)
        Within-class weights, one per class in sorted label order, ``>= 0``.
    cross : array_like, shape (K, K)
        Cross-class weights ``B[k, l]`` (row: the anchor's class), ``>= 0``; diagonal ignored.
    similarity : {"cosine", "euclidean"}
    tau : float
        Temperature ``> 0``.
    dim : int
        Embedding dimension ``>= 1``.
    rtol : float
        Relative eigenvalue tolerance, as :func:`dgp.classify`.
    embed : bool
        Build the ``N x rank`` embedding when realizable (prototypes are always reported in the
        certificate when classes collapse).

    Returns
    -------
    Classification
        ``method`` is ``"structured"``.

    Raises
    ------
    ValueError
        If the labels are invalid, ``within``/``cross`` have the wrong shape, a negative or
        non-finite entry, or a class has no positive mass, and as :func:`dgp.classify`.
    TypeError
        If ``tau`` or ``dim`` has the wrong type.
    NotImplementedError
        For Euclidean zero weights whose support is not a union of complete class blocks.
    """
    from dgp.errors import check_labels_class

    y = check_labels_class(labels)
    check_choice(similarity, SIMILARITIES, "similarity")
    tau = check_positive(tau, "tau")
    dim = check_dim(dim)
    rtol = check_rtol(rtol)
    classes, inv, sizes = np.unique(y, return_inverse=True, return_counts=True)
    K = classes.size
    a = np.asarray(within, dtype=float).reshape(-1)
    B = np.array(cross, dtype=float)
    if a.shape != (K,) or B.shape != (K, K):
        raise ValueError(
            f"within must have shape ({K},) and cross ({K}, {K}) for {K} classes; got "
            f"{a.shape} and {B.shape}"
        )
    np.fill_diagonal(B, 0.0)
    if not (np.isfinite(a).all() and np.isfinite(B).all()) or (a < 0).any() or (B < 0).any():
        raise ValueError("block weights must be finite and non-negative")
    n = int(y.size)
    counts = np.tile(sizes.astype(float), (K, 1))
    counts[np.diag_indices(K)] -= 1.0
    Wk = B.copy()
    np.fill_diagonal(Wk, a)
    if ((counts * Wk).sum(axis=1) <= 0).any():
        k = int(np.flatnonzero((counts * Wk).sum(axis=1) <= 0)[0])
        raise ValueError(f"class {classes[k]} has no positive weight to any other sample")
    common: dict[str, Any] = {
        "similarity": similarity,
        "n": n,
        "dim": dim,
        "tau": tau,
        "entropic_bound": _block_entropies(sizes, a, B),
        "method": "structured",
        "rtol": rtol,
    }
    first = np.full(K, n)
    np.minimum.at(first, inv, np.arange(n))
    members = None
    if embed:
        order = np.argsort(inv, kind="stable")
        members = np.split(order, np.cumsum(sizes)[:-1])
    used = counts > 0  # pairs of classes that actually occur off the diagonal
    zero = (Wk == 0) & used
    if zero.any():
        return _blocks_zero(classes, inv, first, sizes, a, B, zero, used, common, members, embed)
    L = np.log(Wk)
    tgt, bad = _block_log_target(L, sizes, inv[0], rtol, used)
    if bad is not None:
        return _block_cycle_broken(bad, first, inv, common)
    fam_fn = block_cosine_family if similarity == "cosine" else block_euclidean_family
    fam = fam_fn(tgt, tau, rtol, members=members, embed=embed)
    res = _verdict(fam, common)
    res.certificate["classes"] = classes.tolist()
    res.certificate["sizes"] = sizes.tolist()
    return res


def _block_log_target(L: np.ndarray, sizes: np.ndarray, k0: int, rtol: float, used: np.ndarray):
    """Cycle condition on the class graph; the symmetric block target with mean-zero offsets."""
    K = sizes.size
    tol = rtol * max(1.0, float(np.abs(L[used]).max()))
    A = L - L.T
    c = A[k0].copy()
    resid = A - c[None, :] + c[:, None]
    resid[~(used & used.T)] = 0.0
    worst = np.unravel_index(int(np.argmax(np.abs(resid))), resid.shape)
    if abs(float(resid[worst])) > tol:
        return None, (int(worst[0]), int(worst[1]), float(resid[worst]), tol)
    c -= (sizes * c).sum() / sizes.sum()
    ell = L + c[:, None]
    ell = 0.5 * (ell + ell.T)
    within = np.diag(ell).copy()
    cross = ell.copy()
    np.fill_diagonal(cross, 0.0)
    del K
    return BlockTarget(sizes, within, cross), None


def _block_cycle_broken(bad, first: np.ndarray, inv: np.ndarray, common) -> Classification:
    k, l, val, tol = bad
    i, j = int(first[k]), int(first[l])
    i0 = 0
    return Classification(
        verdict="inconsistent",
        attainable=False,
        rank=None,
        c_interval=None,
        reason=f"W breaks the cycle condition: around the cycle {i0} -> {i} -> {j} -> {i0} the "
        f"weights multiply to exp({val:.3g}) times their reverses, so no symmetric similarity "
        "matches the row distributions",
        certificate={"kind": "cycle", "cycle": [i0, i, j, i0], "log_ratio": val, "tolerance": tol},
        **common,
    )


def _blocks_zero(classes, inv, first, sizes, a, B, zero, used, common, members, embed):
    """Zero weights, decided like :func:`dgp.classification._classify_zero_weights`."""
    K = sizes.size
    n_zero = int(
        sum(sizes[k] * (sizes[l] - (k == l)) for k in range(K) for l in range(K) if zero[k, l])
    )
    # the first zero entry in row-major order, as the dense path reports it
    rows = [k for k in range(K) if zero[k].any()]
    k = min(rows, key=lambda r: first[r])
    i = int(first[k])
    cands = []
    for l in np.flatnonzero(zero[k]):
        if l != k:
            cands.append(int(first[l]))
        else:  # the first member of class k other than i
            idx = np.flatnonzero(inv == k)
            cands.append(int(idx[idx != i][0]))
    j = min(cands)
    if common["similarity"] == "cosine":
        return zero_weight_cosine(i, j, n_zero, common)
    from scipy.sparse.csgraph import connected_components

    pos = ~zero & used
    support = pos & pos.T
    np.fill_diagonal(support, False)
    n_comp, comp = connected_components(support, directed=False)
    for b in range(n_comp):
        ks = np.flatnonzero(comp == b)
        if not (pos[np.ix_(ks, ks)] | ~used[np.ix_(ks, ks)]).all():
            raise NotImplementedError(NOT_BLOCKS)
    blocks, failing = [], None
    order = np.argsort([first[np.flatnonzero(comp == b)].min() for b in range(n_comp)])
    for pos_b, b in enumerate(order):
        ks = np.flatnonzero(comp == b)
        entry: dict[str, Any] = {"classes": classes[ks].tolist(), "size": int(sizes[ks].sum())}
        Wk = B[np.ix_(ks, ks)].copy()
        np.fill_diagonal(Wk, a[ks])
        sub_used = used[np.ix_(ks, ks)]
        if int(sizes[ks].sum()) < 2:
            entry.update(c_max=None, rank=0, ok=True)
            blocks.append(entry)
            continue
        L = np.log(np.where(sub_used, Wk, 1.0))
        tgt, bad = _block_log_target(L, sizes[ks], 0, common["rtol"], sub_used)
        if bad is not None:
            kk, ll, val, _ = bad
            entry.update(cycle=[int(first[ks[kk]]), int(first[ks[ll]])], log_ratio=val, ok=False)
            failing = failing or (pos_b, "breaks the cycle condition")
        else:
            fam = block_euclidean_family(tgt, common["tau"], common["rtol"])
            ok = fam.rank_hi <= common["dim"]
            entry.update(c_max=fam.hi, rank=fam.rank_hi, ok=ok)
            if not ok:
                failing = failing or (
                    pos_b,
                    f"needs dimension {fam.rank_hi} > dim = {common['dim']}",
                )
        blocks.append(entry)
    cert = {"kind": "blocks", "zero_weights": n_zero, "blocks": blocks}
    return blocks_verdict(n_comp, failing, cert, common)


# --------------------------------------------------------------------------------------------
# low-rank label kernels
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LowRankTarget:
    r"""A target :math:`\ell_{ij} = (UCU^\top)_{ij}` (:math:`i \ne j`) with constant diagonal
    :math:`(UCU^\top)_{ii} = h`.

    Attributes
    ----------
    U : ndarray, shape (N, k)
        First column all ones.
    C : ndarray, shape (k, k)
        Symmetric.
    h : float
        The diagonal of :math:`UCU^\top`.
    ell_bounds : tuple of float
        Bounds ``(lo, hi)`` with ``lo <= ell_ij <= hi`` off the diagonal (any valid bounds).
    """

    U: np.ndarray
    C: np.ndarray
    h: float
    ell_bounds: tuple[float, float]
    info: dict = field(default_factory=dict)

    def dense_ell(self) -> np.ndarray:
        """The ``N x N`` target (tests and small cases only)."""
        L = self.U @ self.C @ self.U.T
        np.fill_diagonal(L, 0.0)
        return L


def centre_points(y: np.ndarray) -> np.ndarray:
    """Points centred at their mean, computed as ``(y - y_0) - mean(y - y_0)``.

    Differences to the first point are exact for repeated labels, so identical labels give
    exactly zero (a plain ``y - mean(y)`` leaves rounding noise that relative tolerances would
    read as structure).
    """
    x = y - y[0]
    x -= x.mean(axis=0)
    return x


def gaussian_target(x: np.ndarray, sigma2: float, *, shift: float = 0.0) -> LowRankTarget:
    r"""The Gaussian-kernel target :math:`\ell_{ij} = -|x_i - x_j|^2/(2\sigma^2) + \mathrm{shift}`.

    ``x`` should be centred (translation does not change the target, and centring avoids the
    cancellation in :math:`|x_i|^2 + |x_j|^2 - 2x_i\cdot x_j`).
    """
    n, p = x.shape
    q = np.einsum("ij,ij->i", x, x)
    U = np.empty((n, p + 2))
    U[:, 0] = 1.0
    U[:, 1] = q
    U[:, 2:] = x
    C = np.zeros((p + 2, p + 2))
    C[0, 0] = shift
    C[0, 1] = C[1, 0] = -0.5 / sigma2
    C[2:, 2:] = np.eye(p) / sigma2
    r2 = float(q.max())
    return LowRankTarget(U, C, shift, (shift - 2.0 * r2 / sigma2, shift))


def _bound_from_C(U: np.ndarray, C: np.ndarray, h: float) -> tuple[float, float]:
    norm_c = float(np.abs(np.linalg.eigvalsh(_sym(C))).max())
    b = norm_c * float(np.einsum("ij,ij->i", U, U).max())
    return (-b, b)


def lowrank_cosine_family(t: LowRankTarget, tau: float, rtol: float, *, embed: bool = False):
    """Admissible interval and ranks of the cosine :math:`G(c)` of a low-rank target."""
    n, k = t.U.shape
    R = tall_r(t.U)
    m = R.shape[0]
    n_comp = n - m

    def capacitance(Rm: np.ndarray, mu: float) -> np.ndarray:
        S = tau * (Rm @ t.C @ Rm.T) + mu * np.outer(Rm[:, 0], Rm[:, 0])
        S[np.diag_indices(Rm.shape[0])] += 1.0 - tau * t.h - mu
        return _sym(S)

    def parts(mu: float) -> tuple[np.ndarray, np.ndarray, float]:
        lam, vec = np.linalg.eigh(capacitance(R, mu))
        return lam, vec, 1.0 - tau * t.h - mu

    def lam_min(mu: float) -> float:
        lam, _, alpha = parts(mu)
        return float(min(lam[0], alpha)) if n_comp else float(lam[0])

    def tol_at(mu: float) -> float:
        lam, _, alpha = parts(mu)
        lo, hi = float(lam[0]), float(lam[-1])
        if n_comp:
            lo, hi = min(lo, alpha), max(hi, alpha)
        return _norm_tol(lo, hi, rtol)

    def rank_at(mu: float) -> int:
        lam, _, alpha = parts(mu)
        tt = tol_at(mu)
        return int((lam >= tt).sum() + (n_comp if alpha >= tt else 0))

    lo_b, hi_b = t.ell_bounds
    box_lo, box_hi = -1.0 - tau * lo_b, 1.0 - tau * hi_b
    a, b = min(box_lo, box_hi) - 1.0, max(box_lo, box_hi) + 1.0

    def embed_fn(c: float, r: int) -> np.ndarray:
        lam, vec, alpha = parts(tau * c)
        # the top r eigenvalues: capacitance ones, then (if larger) the complement value
        n_big = int((lam > alpha).sum()) if n_comp else m
        n_small = min(r, n_big)
        need_comp = min(r - n_small, n_comp)
        n_small = r - need_comp
        Q, RQ = np.linalg.qr(t.U)  # Q with its own R (row signs may differ from tall_r's)
        lam, vec = np.linalg.eigh(capacitance(RQ, tau * c))
        X = Q @ vec[:, ::-1][:, :n_small]
        cols = [X * np.sqrt(np.clip(lam[::-1][:n_small], 0.0, None))]
        if need_comp > 0:
            if n > COMPLEMENT_EMBED_MAX_N:
                raise ValueError(
                    f"the embedding needs {need_comp} directions outside the label span; built "
                    f"only for N <= {COMPLEMENT_EMBED_MAX_N}"
                )
            Qf, _ = np.linalg.qr(t.U, mode="complete")
            cols.append(Qf[:, m : m + need_comp] * np.sqrt(max(alpha, 0.0)))
        return fix_signs(np.column_stack(cols))

    def extra(mu: float) -> dict[str, Any]:
        lam, _, alpha = parts(mu)
        return {
            "capacitance_eigenvalues": lam.tolist(),
            "complement_eigenvalue": alpha,
            "complement_multiplicity": n_comp,
        }

    fam = _concave_family(lam_min, tol_at, rank_at, a, b, tau, embed_fn if embed else None, extra)
    cert = dict(fam.certificate)
    cert["structure"] = {
        "label_rank": k,
        "complement_multiplicity": n_comp,
        "statement": "G(c) = (1 - tau h - tau c) I + U (tau C + tau c e1 e1^T) U^T",
    }
    return replace(fam, certificate=cert)


def lowrank_euclidean_family(t: LowRankTarget, tau: float, rtol: float, *, embed: bool = False):
    r"""Admissible half-line ``c <= c_max`` of the Euclidean :math:`D(c)` of a low-rank target."""
    n = t.U.shape[0]
    # columns 2..k in the orthonormal basis (1/sqrt N, V): reflect, drop the first coordinate
    V = ones_reflector_vectors(t.U[:, 1:])[1:]
    R = tall_r(V)
    m = R.shape[0]
    n_comp = (n - 1) - m
    lam_s = np.linalg.eigvalsh(_sym(tau * (R @ t.C[1:, 1:] @ R.T)))
    lam_s = lam_s - tau * t.h
    comp = -tau * t.h
    allv = np.concatenate([lam_s, [comp] if n_comp else []])
    lam_min, lam_max = float(allv.min()), float(allv.max())
    c_max = lam_min / tau + 0.0
    atol = schoenberg_end_tolerance(lam_min, lam_max, rtol)
    r_hi = int((lam_s - lam_min >= atol).sum() + (n_comp if comp - lam_min >= atol else 0))

    def embed_fn(c: float, r: int) -> np.ndarray:
        if r == 0:
            return np.zeros((n, 0))
        Q, RQ = np.linalg.qr(V)
        lam_q, vec_q = np.linalg.eigh(_sym(tau * (RQ @ t.C[1:, 1:] @ RQ.T)))
        lam = lam_q - tau * t.h - tau * c
        order = np.argsort(-lam)
        n_small = min(r, m)
        Y = Q @ vec_q[:, order[:n_small]]
        cols = [Y * np.sqrt(np.clip(lam[order[:n_small]], 0.0, None))]
        if r > n_small:
            if n > COMPLEMENT_EMBED_MAX_N:
                raise ValueError(
                    f"the embedding needs {r - n_small} directions outside the label span; "
                    f"built only for N <= {COMPLEMENT_EMBED_MAX_N}"
                )
            Qf, _ = np.linalg.qr(V, mode="complete")
            cols.append(Qf[:, m : m + r - n_small] * np.sqrt(max(comp - tau * c, 0.0)))
        Yfull = np.vstack([np.zeros((1, r)), np.column_stack(cols)])
        return fix_signs(ones_reflector_vectors(Yfull))

    low = np.sort(allv - lam_min)[:3]
    cert = {
        "kind": "schoenberg",
        "c_max": c_max,
        "smallest_eigenvalues_at_c_max": low.tolist(),
        "largest_eigenvalue_at_c_max": lam_max - lam_min,
        "atol": atol,
        "capacitance_eigenvalues": lam_s.tolist(),
        "complement_eigenvalue": comp,
        "complement_multiplicity": n_comp,
    }
    return Family(
        None, c_max, False, False, None, r_hi, n - 1, atol, cert, embed_fn if embed else None
    )


def classify_lowrank(
    t: LowRankTarget,
    *,
    similarity: str,
    tau: float,
    dim: int,
    rtol: float,
    entropic_bound: float,
    embed: bool = False,
) -> Classification:
    """Verdict on a low-rank target (validated arguments; see :mod:`dgp.objectives`).

    Raises
    ------
    ValueError
        If an embedding is requested that needs an ``N x N`` basis for a large ``N``.
    """
    common: dict[str, Any] = {
        "similarity": similarity,
        "n": int(t.U.shape[0]),
        "dim": dim,
        "tau": tau,
        "entropic_bound": entropic_bound,
        "method": "structured",
        "rtol": rtol,
    }
    fam_fn = lowrank_cosine_family if similarity == "cosine" else lowrank_euclidean_family
    return _verdict(fam_fn(t, tau, rtol, embed=embed), common)


# --------------------------------------------------------------------------------------------
# exact row statistics of a low-rank logit matrix, in blocks (O(N^2 k) time, O(N) memory)
# --------------------------------------------------------------------------------------------


def kernel_row_statistics(
    U: np.ndarray,
    C: np.ndarray,
    *,
    col_offset: np.ndarray | None = None,
    block_bytes: int = 64 * 2**20,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Row log-partition functions and entropies of the logits
    :math:`a_{ij} = (UCU^\top)_{ij} + o_j` over :math:`j \ne i`.

    Returns ``(lse, H)`` with :math:`\mathrm{lse}_i = \log\sum_{j\ne i} e^{a_{ij}}` and
    :math:`H_i = \mathrm{lse}_i - \sum_{j \ne i} p_{ij}a_{ij}` (the entropy of the row
    distribution :math:`p_i = \mathrm{softmax}_{j \ne i}(a_{ij})`). Exact summation in blocks of
    rows: :math:`O(N^2 k)` time, :math:`O(N \cdot \text{block})` memory, no ``N x N`` matrix.
    """
    n = U.shape[0]
    UC = U @ C
    rows = max(1, int(block_bytes // (8 * 3 * n)))
    lse = np.empty(n)
    H = np.empty(n)
    for s in range(0, n, rows):
        e = min(n, s + rows)
        A = UC[s:e] @ U.T
        if col_offset is not None:
            A += col_offset[None, :]
        A[np.arange(e - s), np.arange(s, e)] = -np.inf
        mx = A.max(axis=1, keepdims=True)
        E = np.exp(A - mx)
        tot = E.sum(axis=1)
        A[np.arange(e - s), np.arange(s, e)] = 0.0
        lse[s:e] = np.log(tot) + mx[:, 0]
        H[s:e] = lse[s:e] - (E * A).sum(axis=1) / tot
    return lse, H
