r"""Independent reference computations for the proofs.

Nothing here calls the code the proofs check (``dgp.infonce``, ``dgp.engine``,
``dgp.classification``, ``dgp.objectives``, ``dgp.metrics``, ``dgp.prototypes``): losses are
evaluated row by row from their definition, targets are built entry by entry, spectra come from
dense :func:`numpy.linalg.eigvalsh` of explicitly built matrices, admissible intervals from
bisection on those spectra, and the cycle potentials from a least-squares fit over *all* pairs
(the package roots them at vertex 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

#: relative eigenvalue tolerance deciding PSD-ness and ranks of the reference: well above the
#: rounding noise of a dense eigvalsh, so that what it calls zero is zero; eigenvalues within a
#: factor 100 of it are reported ambiguous and not compared
RTOL = 1e-11


# ----------------------------------------------------------------------------------------------
# losses and entropies, from the definitions
# ----------------------------------------------------------------------------------------------


def similarities(Z: np.ndarray, tau: float, similarity: str) -> np.ndarray:
    """``s_ij`` from its definition: cosine of normalised rows over ``tau``, or minus half the
    squared distance (by explicit differences) over ``tau``."""
    Z = np.asarray(Z, float)
    if similarity == "cosine":
        U = Z / np.sqrt((Z**2).sum(axis=1))[:, None]
        return np.array([[float(np.dot(a, b)) for b in U] for a in U]) / tau
    diff = Z[:, None, :] - Z[None, :, :]
    return -(diff**2).sum(axis=2) / (2.0 * tau)


def loss_from_similarities(S: np.ndarray, W: np.ndarray) -> float:
    """``sum_i sum_{j != i} p_ij (-s_ij + log sum_{k != i} exp s_ik)``, one row at a time."""
    n = S.shape[0]
    total = 0.0
    for i in range(n):
        others = [j for j in range(n) if j != i]
        s = np.array([S[i, j] for j in others])
        w = np.array([W[i, j] for j in others], float)
        top = s.max()
        lse = top + math.log(float(np.exp(s - top).sum()))
        p = w / w.sum()
        total += float(np.sum(p * (lse - s)))
    return total


def loss(Z: np.ndarray, W: np.ndarray, tau: float, similarity: str = "cosine") -> float:
    """The w-InfoNCE loss of ``Z`` under ``W`` from its definition (nats, summed over rows)."""
    return loss_from_similarities(similarities(Z, tau, similarity), W)


def loss_from_gram(G: np.ndarray, W: np.ndarray, tau: float) -> float:
    """Cosine w-InfoNCE loss of a unit-diagonal Gram matrix ``G`` (``s = G / tau``)."""
    return loss_from_similarities(np.asarray(G, float) / tau, W)


def bound(W: np.ndarray) -> float:
    """Entropic bound ``sum_i H(p_i)`` with ``0 log 0 = 0``, one row at a time."""
    n = W.shape[0]
    total = 0.0
    for i in range(n):
        w = np.array([W[i, j] for j in range(n) if j != i], float)
        p = w[w > 0] / w.sum()
        total -= float(np.sum(p * np.log(p)))
    return total


def kl_rows(S: np.ndarray, W: np.ndarray) -> np.ndarray:
    """``KL(p_i || q_i)`` of every row (zero weights contribute nothing)."""
    n = S.shape[0]
    out = np.zeros(n)
    for i in range(n):
        others = [j for j in range(n) if j != i]
        s = np.array([S[i, j] for j in others])
        w = np.array([W[i, j] for j in others], float)
        q = np.exp(s - s.max())
        q /= q.sum()
        p = w / w.sum()
        pos = p > 0
        out[i] = float(np.sum(p[pos] * np.log(p[pos] / q[pos])))
    return out


# ----------------------------------------------------------------------------------------------
# targets, entry by entry
# ----------------------------------------------------------------------------------------------


def potentials(W: np.ndarray) -> tuple[np.ndarray, float]:
    r"""Least-squares potentials :math:`c` with :math:`\log w_{ij} - \log w_{ji} \approx
    c_j - c_i` over all pairs ``i < j`` (mean zero), and the largest residual."""
    n = W.shape[0]
    rows, rhs = [], []
    for i in range(n):
        for j in range(i + 1, n):
            r = np.zeros(n)
            r[j], r[i] = 1.0, -1.0
            rows.append(r)
            rhs.append(math.log(W[i, j]) - math.log(W[j, i]))
    A = np.vstack([*rows, np.ones(n)])
    b = np.array([*rhs, 0.0])
    c = np.linalg.lstsq(A, b, rcond=None)[0]
    resid = float(np.abs(A[:-1] @ c - b[:-1]).max()) if rows else 0.0
    return c, resid


def triangle_log_ratio(W: np.ndarray, a: int, b: int, c: int) -> float:
    r""":math:`\log(w_{ab} w_{bc} w_{ca} / (w_{ba} w_{cb} w_{ac}))` around ``a -> b -> c -> a``."""
    fwd = W[a, b] * W[b, c] * W[c, a]
    rev = W[b, a] * W[c, b] * W[a, c]
    return math.log(fwd) - math.log(rev)


def log_target(W: np.ndarray) -> np.ndarray:
    r"""Symmetric :math:`\ell_{ij} = \log w_{ij} + c_i` (least-squares potentials), zero
    diagonal."""
    c, _ = potentials(W)
    n = W.shape[0]
    ell = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if i != j:
                ell[i, j] = 0.5 * (math.log(W[i, j]) + c[i] + math.log(W[j, i]) + c[j])
    return ell


def gram(ell: np.ndarray, tau: float, c: float) -> np.ndarray:
    """Cosine target ``G(c)``: ``tau * (ell_ij + c)`` off the diagonal, 1 on it."""
    n = ell.shape[0]
    return np.array(
        [[1.0 if i == j else tau * (ell[i, j] + c) for j in range(n)] for i in range(n)]
    )


def edm(ell: np.ndarray, tau: float, c: float) -> np.ndarray:
    """Euclidean target ``D(c) = -2 tau (ell_ij + c)`` off the diagonal, 0 on it."""
    n = ell.shape[0]
    return np.array(
        [[0.0 if i == j else -2.0 * tau * (ell[i, j] + c) for j in range(n)] for i in range(n)]
    )


def centring(n: int) -> np.ndarray:
    """``J = I - 11^T / n``."""
    return np.eye(n) - np.full((n, n), 1.0 / n)


def complement_basis(n: int) -> np.ndarray:
    """An orthonormal basis of the complement of ``1`` (``n x (n-1)``, from an SVD)."""
    return sla.null_space(np.ones((1, n)))


def schoenberg_spectrum(D: np.ndarray) -> np.ndarray:
    r"""Eigenvalues of :math:`-\tfrac12 V^\top D V` on :math:`1^\perp` (``D`` an EDM iff all
    are :math:`\ge 0`)."""
    V = complement_basis(D.shape[0])
    M = -0.5 * V.T @ D @ V
    return np.linalg.eigvalsh(0.5 * (M + M.T))


# ----------------------------------------------------------------------------------------------
# spectra, ranks, admissible sets
# ----------------------------------------------------------------------------------------------


def lam_min(M: np.ndarray) -> float:
    """Smallest eigenvalue of a symmetric matrix."""
    return float(np.linalg.eigvalsh(0.5 * (M + M.T))[0])


@dataclass(frozen=True)
class Rank:
    """A numerical rank and whether it is ambiguous (an eigenvalue near the tolerance)."""

    rank: int
    ambiguous: bool


def rank(eigenvalues: np.ndarray, rtol: float = RTOL) -> Rank:
    """Eigenvalues above ``rtol * max|eigenvalue|``; ambiguous if one lies within a factor 100 of
    the tolerance (on either side)."""
    lam = np.asarray(eigenvalues, float)
    scale = float(np.abs(lam).max()) if lam.size else 0.0
    tol = rtol * scale if scale > 0 else rtol
    r = int(np.count_nonzero(lam > tol))
    amb = bool(np.any((np.abs(lam) > tol / 100) & (np.abs(lam) < tol * 100)))
    return Rank(r, amb)


def rank_at_end(spectrum: np.ndarray, rtol: float = RTOL, *, unit: float = 0.0) -> Rank:
    r"""Rank at the end point of a shifted spectrum: eigenvalues ``spectrum - min(spectrum)``
    above ``rtol`` times the spectral norm of the *unshifted* matrix, or ``unit`` if larger (so
    that a spectrum with all eigenvalues equal has rank 0 at its end point, not a rank decided
    by rounding noise; ``unit`` is the size of the matrix's entries, for spectra that are all
    rounding noise)."""
    lam = np.sort(np.asarray(spectrum, float))
    scale = max(float(np.abs(lam).max()), float(lam[-1] - lam[0]), unit)
    tol = rtol * scale if scale > 0 else rtol
    shifted = lam - lam[0]
    r = int(np.count_nonzero(shifted > tol))
    amb = bool(np.any((shifted > tol / 100) & (shifted < tol * 100)))
    return Rank(r, amb)


def euclidean_end_rank(ell: np.ndarray, tau: float, rtol: float = RTOL) -> Rank:
    r"""Rank of :math:`D(c_{\max})` from the Schoenberg spectrum at ``c = 0`` (a shift of it),
    relative to the larger of its spectral norm and :math:`\tau\max(1, \max|\ell|)`, the size
    of the entries of :math:`-2\tau\ell` (a constant weighting has a spectrum of pure rounding
    noise: rank 0)."""
    off = ell[np.isfinite(ell)]
    unit = tau * max(1.0, float(np.abs(off).max()) if off.size else 1.0)
    return rank_at_end(schoenberg_spectrum(edm(ell, tau, 0.0)), rtol, unit=unit)


def gram_rank(G: np.ndarray) -> Rank:
    """Numerical rank of a symmetric matrix."""
    return rank(np.linalg.eigvalsh(0.5 * (G + G.T)))


@dataclass(frozen=True)
class CosineInterval:
    """Admissible constants ``[lo, hi]`` of ``G(c)`` (``None`` when empty) and the best
    ``lambda_min`` found."""

    lo: float | None
    hi: float | None
    best_c: float
    best_lam: float


def cosine_interval(ell: np.ndarray, tau: float) -> CosineInterval:
    r"""Admissible ``c`` of ``G(c)`` by a dense scan of :math:`\lambda_{\min}` (eigvalsh), a
    bounded scalar maximisation around the best grid point, and bisection for both roots.

    A PSD member needs every off-diagonal entry in ``[-1, 1]``, which bounds the search box.
    """
    n = ell.shape[0]
    off = np.array([ell[i, j] for i in range(n) for j in range(n) if i != j])
    lo_box = (-1.0 - tau * off.min()) / tau
    hi_box = (1.0 - tau * off.max()) / tau
    a, b = min(lo_box, hi_box) - 1e-3, max(lo_box, hi_box) + 1e-3
    grid = np.linspace(a, b, 101)
    vals = np.array([lam_min(gram(ell, tau, c)) for c in grid])
    k = int(np.argmax(vals))
    left, right = grid[max(k - 1, 0)], grid[min(k + 1, grid.size - 1)]
    best_c, best_lam = float(grid[k]), float(vals[k])
    # golden-section refinement of the concave lambda_min on the bracket
    g = (math.sqrt(5.0) - 1.0) / 2.0
    x1, x2 = right - g * (right - left), left + g * (right - left)
    f1, f2 = lam_min(gram(ell, tau, x1)), lam_min(gram(ell, tau, x2))
    for _ in range(120):
        if f1 < f2:
            left, x1, f1 = x1, x2, f2
            x2 = left + g * (right - left)
            f2 = lam_min(gram(ell, tau, x2))
        else:
            right, x2, f2 = x2, x1, f1
            x1 = right - g * (right - left)
            f1 = lam_min(gram(ell, tau, x1))
    for x, f in ((x1, f1), (x2, f2)):
        if f > best_lam:
            best_c, best_lam = float(x), float(f)
    # PSD within a tolerance relative to the norm of the best member (a tangent point counts)
    atol = 1e-9 * max(1.0, float(np.abs(gram(ell, tau, best_c)).sum(axis=1).max()))
    if best_lam < -atol:
        return CosineInterval(None, None, best_c, best_lam)

    def root(inside: float, outside: float) -> float:
        for _ in range(200):
            mid = 0.5 * (inside + outside)
            if mid in (inside, outside):
                break
            if lam_min(gram(ell, tau, mid)) >= -atol:
                inside = mid
            else:
                outside = mid
        return inside

    return CosineInterval(root(best_c, a), root(best_c, b), best_c, best_lam)


def euclidean_c_max(ell: np.ndarray, tau: float) -> float:
    r"""Largest ``c`` with ``D(c)`` an EDM: :math:`\lambda_{\min}` of the Schoenberg matrix of
    ``D(0)`` on :math:`1^\perp`, over ``tau`` (bisection-free: the shift is exact)."""
    return float(schoenberg_spectrum(edm(ell, tau, 0.0))[0]) / tau


# ----------------------------------------------------------------------------------------------
# the verdict rules (realizable, degenerate, inconsistent), re-implemented on dense spectra
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """A reference verdict; ``ambiguous`` when a rank or sign sits at the tolerance."""

    verdict: str
    rank: int | None
    c: float | None
    ambiguous: bool


def verdict(W: np.ndarray, similarity: str, tau: float, dim: int) -> Verdict:
    """The verdict rules from dense eigenvalues (positive weights only), written anew."""
    n = W.shape[0]
    _, resid = potentials(W)
    scale = max(1.0, max(abs(math.log(W[i, j])) for i in range(n) for j in range(n) if i != j))
    if resid > 1e-6 * scale:
        return Verdict("inconsistent", None, None, resid < 1e-4 * scale)
    ell = log_target(W)
    if similarity == "euclidean":
        c_max = euclidean_c_max(ell, tau)
        # rank at c_max, with the tolerance of the unshifted spectrum (rounding noise scale)
        r_end = euclidean_end_rank(ell, tau)
        if dim >= n - 1:
            return Verdict("degenerate", None, None, False)
        if r_end.rank <= dim:
            return Verdict("realizable", r_end.rank, c_max, r_end.ambiguous)
        return Verdict("inconsistent", None, None, r_end.ambiguous)
    iv = cosine_interval(ell, tau)
    G_scale = max(1.0, float(np.abs(gram(ell, tau, iv.best_c)).sum(axis=1).max()))
    if iv.lo is None:
        return Verdict("inconsistent", None, None, abs(iv.best_lam) < 1e-5 * G_scale)
    width = iv.hi - iv.lo
    point = width <= 1e-7 * max(1.0, abs(iv.hi))
    r_lo, r_hi = gram_rank(gram(ell, tau, iv.lo)), gram_rank(gram(ell, tau, iv.hi))
    amb = r_lo.ambiguous or r_hi.ambiguous or (1e-10 < width <= 1e-5 * max(1.0, abs(iv.hi)))
    if point:
        if r_hi.rank <= dim:
            return Verdict("realizable", r_hi.rank, iv.hi, amb or iv.best_lam > 1e-9)
        return Verdict("inconsistent", None, None, amb)
    r_mid = gram_rank(gram(ell, tau, 0.5 * (iv.lo + iv.hi)))
    amb = amb or r_mid.ambiguous
    if r_mid.rank <= dim:
        return Verdict("degenerate", None, None, amb)
    ok = [(c, r.rank) for c, r in ((iv.lo, r_lo), (iv.hi, r_hi)) if r.rank <= dim]
    if len(ok) == 2:
        return Verdict("degenerate", None, None, amb)
    if len(ok) == 1:
        return Verdict("realizable", ok[0][1], ok[0][0], amb)
    return Verdict("inconsistent", None, None, amb)


# ----------------------------------------------------------------------------------------------
# embeddings and alignment
# ----------------------------------------------------------------------------------------------


def procrustes_residual(Z: np.ndarray, Zref: np.ndarray, *, translate: bool = True) -> float:
    r"""Relative residual :math:`\min_{Q,t}\|ZQ + t - Z_{ref}\|/\|Z_{ref} - \bar Z_{ref}\|`
    (:func:`scipy.linalg.orthogonal_procrustes`; narrower input padded with zeros)."""
    A, B = np.asarray(Z, float), np.asarray(Zref, float)
    w = max(A.shape[1], B.shape[1])
    A = np.hstack([A, np.zeros((A.shape[0], w - A.shape[1]))])
    B = np.hstack([B, np.zeros((B.shape[0], w - B.shape[1]))])
    if translate:
        A, B = A - A.mean(axis=0), B - B.mean(axis=0)
    Q, _ = sla.orthogonal_procrustes(A, B)
    den = float(np.linalg.norm(B)) or 1.0
    return float(np.linalg.norm(A @ Q - B)) / den


def random_orthogonal(d: int, seed: int) -> np.ndarray:
    """A Haar-random orthogonal ``d x d`` matrix (QR with sign fix)."""
    rng = np.random.default_rng(seed)
    Q, R = np.linalg.qr(rng.standard_normal((d, d)))
    return Q * np.sign(np.diag(R))


def embedding_from_psd(G: np.ndarray, r: int | None = None) -> np.ndarray:
    """Points with Gram ``G`` from a dense eigendecomposition (top ``r`` eigenpairs)."""
    lam, U = np.linalg.eigh(0.5 * (G + G.T))
    lam, U = lam[::-1], U[:, ::-1]
    if r is None:
        r = rank(lam).rank
    return U[:, :r] * np.sqrt(np.clip(lam[:r], 0.0, None))


def mds(D: np.ndarray) -> np.ndarray:
    """Classical MDS of a squared-distance matrix (explicit double centring)."""
    J = centring(D.shape[0])
    return embedding_from_psd(-0.5 * J @ D @ J)


def class_weights(labels: np.ndarray, eps: float | None = None) -> np.ndarray:
    """SupCon (``eps=None``) or Soft SupCon weights, entry by entry."""
    n = labels.size
    off = 0.0 if eps is None else eps
    return np.array(
        [
            [0.0 if i == j else (1.0 if labels[i] == labels[j] else off) for j in range(n)]
            for i in range(n)
        ]
    )


def block_average(G: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Average of ``G`` over all within-class permutations: block means off the diagonal, 1 on
    it (for a unit-diagonal ``G``)."""
    n = labels.size
    out = np.empty_like(G)
    classes = np.unique(labels)
    for a in classes:
        ia = np.flatnonzero(labels == a)
        for b in classes:
            ib = np.flatnonzero(labels == b)
            block = G[np.ix_(ia, ib)]
            if a == b:
                m = ia.size
                mean = (block.sum() - np.trace(block)) / (m * (m - 1))
            else:
                mean = block.mean()
            out[np.ix_(ia, ib)] = mean
    out[np.arange(n), np.arange(n)] = 1.0
    return out


def collapse(G: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Set every within-class entry to 1 (each class on one point), keep the rest."""
    same = labels[:, None] == labels[None, :]
    return np.where(same, 1.0, G)


def gaussian_weights(Y: np.ndarray, sigma: float) -> np.ndarray:
    """``exp(-|y_i - y_j|^2 / (2 sigma^2))`` entry by entry, zero diagonal."""
    Y = np.asarray(Y, float)
    n = Y.shape[0]
    return np.array(
        [
            [
                0.0 if i == j else math.exp(-float(np.sum((Y[i] - Y[j]) ** 2)) / (2 * sigma**2))
                for j in range(n)
            ]
            for i in range(n)
        ]
    )


def xclr_weights(Y: np.ndarray, label_tau: float) -> np.ndarray:
    """Row softmax over ``k != i`` of ``<y_i/|y_i|, y_k/|y_k|> / label_tau``, entry by entry."""
    U = np.asarray(Y, float) / np.linalg.norm(Y, axis=1, keepdims=True)
    n = U.shape[0]
    W = np.zeros((n, n))
    for i in range(n):
        logits = {k: float(U[i] @ U[k]) / label_tau for k in range(n) if k != i}
        top = max(logits.values())
        Z = sum(math.exp(v - top) for v in logits.values())
        for k, v in logits.items():
            W[i, k] = math.exp(v - top) / Z
    return W


def supcon_prototype_optimum(sizes, tau: float, *, iters: int = 3000) -> np.ndarray:
    r"""Minimise the SupCon prototype objective over unit vectors (Burer–Monteiro, L-BFGS).

    ``F(G) = sum_c n_c log((n_c - 1) + sum_{c' != c} n_c' e^{(G_cc' - 1)/tau})`` is evaluated
    scaled by its leading exponential :math:`t = e^{-\kappa/\tau}`, :math:`\kappa = K/(K-1)`:
    ``sum_c n_c log1p(y_c t) / t`` with ``y_c = sum n_c' e^{(G_cc' - 1 + kappa)/tau}/(n_c - 1)``,
    started from the regular simplex. Written independently of :mod:`dgp.prototypes`.
    """
    from scipy.optimize import minimize

    n = np.asarray(sizes, float)
    K = n.size
    kappa = K / (K - 1)
    t = math.exp(-kappa / tau)
    off = ~np.eye(K, dtype=bool)

    def fg(v):
        V = v.reshape(K, K)
        norms = np.linalg.norm(V, axis=1, keepdims=True)
        X = V / norms
        G = X @ X.T
        E = np.where(off, np.exp((G - 1.0 + kappa) / tau), 0.0) * n[None, :]
        y = E.sum(axis=1) / (n - 1.0)
        f = float(np.sum(n * np.log1p(y * t) / t))
        dy = n / (1.0 + y * t)  # d f / d y_c
        Gam = (dy / (n - 1.0))[:, None] * E / tau
        gX = (Gam + Gam.T) @ X
        gV = (gX - np.sum(gX * X, axis=1, keepdims=True) * X) / norms
        return f, gV.ravel()

    S = np.full((K, K), -1.0 / (K - 1))
    np.fill_diagonal(S, 1.0)
    lam, U = np.linalg.eigh(S)
    X0 = U * np.sqrt(np.clip(lam, 0, None)) + 1e-3 * np.eye(K)
    res = minimize(
        fg,
        X0.ravel(),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": iters, "gtol": 1e-10, "ftol": 1e-14, "maxcor": 30},
    )
    V = res.x.reshape(K, K)
    X = V / np.linalg.norm(V, axis=1, keepdims=True)
    return X @ X.T
