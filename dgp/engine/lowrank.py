r"""Low-rank label kernels in :math:`O(Nk^2)` time and :math:`O(Nk)` memory.

A target :math:`\ell_{ij} = (UCU^\top)_{ij}` for :math:`i \ne j`, with :math:`U` an
:math:`N \times k` matrix whose first column is :math:`1`, :math:`C` symmetric
:math:`k \times k`, and a constant diagonal :math:`(UCU^\top)_{ii} = h`. Then

.. math:: G(\mu) = I + \tau\ell + \mu(11^\top - I)
    = (1 - \tau h - \mu)\,I + U(\tau C + \mu e_1e_1^\top)U^\top .

With a Householder QR :math:`U = QR` (:math:`Q` orthonormal :math:`N \times m`,
:math:`m = \min(N, k)`, exact even when :math:`U` is rank deficient), the spectrum is
:math:`\{1 - \tau h - \mu\}` with multiplicity :math:`N - m` on :math:`\mathrm{range}(Q)^\perp`,
plus the eigenvalues of the :math:`m \times m` capacitance matrix
:math:`(1 - \tau h - \mu)I + R(\tau C + \mu e_1e_1^\top)R^\top`; since :math:`1 = QR e_1`, the
bottom eigenvector :math:`Qy` has :math:`1^\top Qy = (Re_1)^\top y`. Euclidean: on
:math:`1^\perp`, :math:`B = V^\top\ell V = \tilde U C'\tilde U^\top - hI` with :math:`\tilde U`
the columns :math:`2..k` of :math:`U` in the basis :math:`V` and :math:`C'` the trailing block of
:math:`C`, decided the same way. Gaussian kernels (y-Aware, Euclidean–Euclidean) have
:math:`U = [1, q, X]`, :math:`q_i = |x_i|^2`; X-CLR has :math:`U = [1, \hat Y]`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dgp._linalg import fix_signs
from dgp.engine import rules
from dgp.engine._lowrank_model import LowRankTarget
from dgp.engine._reductions import LabelSpan, Located, SpanData, SpanProblem, choose_reductions
from dgp.engine._spectra import FarkasSide
from dgp.engine.family import (
    MultiplicityEuclideanSpectrum,
    MultiplicitySpectrum,
    check_cosine_scale,
    check_tau_inverse,
    cosine_family,
    euclidean_family,
    psd_box,
    repeat_smallest,
)
from dgp.engine.rules import Context, Explanation
from dgp.result import Classification
from dgp.tolerance import Tolerance

__all__ = [
    "COMPLEMENT_EMBED_MAX_N",
    "LowRankTarget",
    "classify_lowrank",
    "gaussian_target",
    "row_statistics",
]

#: largest N for which an embedding that needs the complement of range(U) is built (N x N QR)
COMPLEMENT_EMBED_MAX_N = 4096


def gaussian_target(x: np.ndarray, kappa: float, *, shift: float = 0.0) -> LowRankTarget:
    r"""The Gaussian-kernel target :math:`\ell_{ij} = -\kappa|x_i - x_j|^2 + \mathrm{shift}`
    (:math:`\kappa = 1/2\sigma^2`).

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
    C[0, 1] = C[1, 0] = -kappa
    C[2:, 2:] = 2.0 * kappa * np.eye(p)
    r2 = float(q.max())
    return LowRankTarget(U, C, shift, (shift - 4.0 * kappa * r2, shift))


class LowRankSpectrum(MultiplicitySpectrum):
    """:math:`G(\\mu)` of a low-rank target from its capacitance matrix (module docstring)."""

    def __init__(self, t: LowRankTarget, tau: float,
                 span: tuple[SpanProblem, SpanData] | None = None) -> None:
        """``span``: the target reduced to its label span (:class:`LabelSpan`, as
        :func:`~dgp.engine._reductions.choose_reductions` picks it), applied here if not
        given."""
        self.t, self.tau = t, tau
        self.n = int(t.U.shape[0])
        reduced, self.span = span if span is not None else LabelSpan().apply(t)
        self.Q, self.R = self.span.Q, reduced.R
        self.m = self.R.shape[0]
        self.n_comp = reduced.n_comp
        self.r1 = self.R[:, 0]  # Q^T 1
        lo_b, hi_b = t.ell_bounds
        self._box = psd_box(tau, lo_b, hi_b)

    def capacitance(self, R: np.ndarray, mu: float) -> np.ndarray:
        """:math:`(1 - \\tau h - \\mu)I + R(\\tau C + \\mu e_1e_1^\\top)R^\\top`."""
        S = self.tau * (R @ self.t.C @ R.T) + mu * np.outer(R[:, 0], R[:, 0])
        S[np.diag_indices(R.shape[0])] += 1.0 - self.tau * self.t.h - mu
        return 0.5 * (S + S.T)

    def decompose(self, mu: float):
        """Capacitance eigenpairs and the complement eigenvalue at ``mu``."""
        lam, vec = np.linalg.eigh(self.capacitance(self.R, mu))
        return lam, vec, 1.0 - self.tau * self.t.h - mu

    def eigenvalues(self, mu: float) -> tuple[np.ndarray, np.ndarray]:
        lam, _, alpha = self.parts(mu)
        if self.n_comp:
            return np.append(lam, alpha), np.append(np.ones(lam.size), self.n_comp)
        return lam, np.ones(lam.size)

    def box(self) -> tuple[float, float]:
        return self._box

    def lam_min_slope(self, mu: float) -> tuple[float, float]:
        lam, vec, alpha = self.parts(mu)
        if self.n_comp and alpha < lam[0]:
            return float(alpha), -1.0  # the complement is orthogonal to 1
        return float(lam[0]), float((self.r1 @ vec[:, 0]) ** 2 - 1.0)

    def smallest_slopes(self, mu: float, k: int) -> tuple[np.ndarray, np.ndarray]:
        _, vec, _ = self.parts(mu)
        vals, mults = self.eigenvalues(mu)
        slopes = (self.r1 @ vec) ** 2 - 1.0
        if self.n_comp:
            slopes = np.append(slopes, -1.0)
        bottom, bottom_slopes = repeat_smallest(k, vals, mults, slopes)
        return bottom, bottom_slopes

    def structure(self, mu: float) -> dict[str, Any]:
        lam, _, alpha = self.parts(mu)
        return {
            "capacitance_eigenvalues": lam.tolist(), "complement_eigenvalue": alpha,
            "complement_multiplicity": self.n_comp, "label_rank": int(self.t.U.shape[1]),
            "at_c": mu / self.tau, **self.t.info,
            "statement": "G(c) = (1 - tau h - tau c) I + U (tau C + tau c e1 e1^T) U^T",
        }

    def farkas_side(self, mu: float) -> FarkasSide:
        lam, vec, alpha = self.parts(mu)
        if self.n_comp and alpha < lam[0]:
            return None, -1.0, float(alpha) + mu
        y = vec[:, 0]
        slope = float((self.r1 @ y) ** 2 - 1.0)
        x = LabelSpan().invert(Located(vectors=y), self.span).vectors  # Q y, when Q was kept
        x = None if x is None else fix_signs(x[:, None])[:, 0]
        return x, slope, float(lam[0]) - mu * slope

    def farkas_note(self, delta: float) -> str:
        return ("vectors not listed: each is Q y for a bottom capacitance eigenvector y "
                "(U = Q R), or a vector orthogonal to the columns of U")

    def embedding(self, mu: float, r: int) -> np.ndarray:
        n, m = self.n, self.m
        lam, _, alpha = self.parts(mu)
        n_big = int((lam > alpha).sum()) if self.n_comp else m
        need_comp = min(max(0, r - n_big), self.n_comp)
        n_small = r - need_comp
        Q, RQ = (self.Q, self.R) if self.Q is not None else self.span.factors()
        lam, vec = np.linalg.eigh(self.capacitance(RQ, mu))
        X = LabelSpan().invert(Located(vectors=vec[:, ::-1][:, :n_small]), self.span,
                               Q=Q).vectors
        cols = [X * np.sqrt(np.clip(lam[::-1][:n_small], 0.0, None))]
        if need_comp > 0:
            if n > COMPLEMENT_EMBED_MAX_N:
                from dgp.errors import ParameterError

                raise ParameterError(
                    "embed", f"needs {need_comp} directions outside the label span; they are "
                    f"built only for N <= {COMPLEMENT_EMBED_MAX_N} (got N = {n})"
                )
            Qf, _ = np.linalg.qr(self.t.U, mode="complete")
            cols.append(Qf[:, m : m + need_comp] * np.sqrt(max(alpha, 0.0)))
        return fix_signs(np.column_stack(cols))


class LowRankEuclideanSpectrum(MultiplicityEuclideanSpectrum):
    """:math:`B = V^\\top\\ell V` of a low-rank target (module docstring)."""

    def __init__(self, t: LowRankTarget, spread: float,
                 span: tuple[SpanProblem, SpanData] | None = None) -> None:
        """``span``: the target reduced to its label span within :math:`1^\\perp`
        (:class:`LabelSpan` with ``centred``), applied here if not given."""
        self.t = t
        self.n = int(t.U.shape[0])
        self.spread = spread
        reduced, self.span = span if span is not None else LabelSpan(centred=True).apply(t)
        self.V = self.span.basis  # columns 2..k in the orthonormal basis (1/sqrt N, V)
        self.R = reduced.R
        self.m = self.R.shape[0]
        self.n_comp = reduced.n_comp
        lam_s = np.linalg.eigvalsh(0.5 * (self.R @ t.C[1:, 1:] @ self.R.T
                                          + (self.R @ t.C[1:, 1:] @ self.R.T).T))
        self.lam_s = lam_s - t.h
        self.comp = -t.h
        if self.n_comp:
            self.vals = np.append(self.lam_s, self.comp)
            self.mults = np.append(np.ones(self.lam_s.size), self.n_comp)
        else:
            self.vals, self.mults = self.lam_s, np.ones(self.lam_s.size)

    def structure(self) -> dict[str, Any]:
        return {"capacitance_eigenvalues": self.lam_s.tolist(),
                "complement_eigenvalue": self.comp, "complement_multiplicity": self.n_comp,
                "label_rank": int(self.t.U.shape[1]), **self.t.info}

    def embedding(self, c: float, r: int, tau: float) -> np.ndarray:
        n, m = self.n, self.m
        if r == 0:
            return np.zeros((n, 0))
        Q, RQ = self.span.factors()
        M = RQ @ self.t.C[1:, 1:] @ RQ.T
        lam_q, vec_q = np.linalg.eigh(0.5 * (M + M.T))
        lam = lam_q - self.t.h - c
        order = np.argsort(-lam)
        n_small = min(r, m)
        Y = Q @ vec_q[:, order[:n_small]]
        cols = [Y * np.sqrt(np.clip(lam[order[:n_small]], 0.0, None))]
        if r > n_small:
            if n > COMPLEMENT_EMBED_MAX_N:
                from dgp.errors import ParameterError

                raise ParameterError(
                    "embed", f"needs {r - n_small} directions outside the label span; they are "
                    f"built only for N <= {COMPLEMENT_EMBED_MAX_N} (got N = {n})"
                )
            Qf, _ = np.linalg.qr(self.V, mode="complete")
            cols.append(Qf[:, m : m + r - n_small] * np.sqrt(max(self.comp - c, 0.0)))
        # on the coordinates of 1^perp: back to the samples through the span's inverse
        lifted = LabelSpan(centred=True).invert(Located(vectors=np.column_stack(cols)),
                                                self.span, on_span=False).vectors
        return np.sqrt(tau) * fix_signs(lifted)


def classify_lowrank(
    t: LowRankTarget,
    *,
    similarity: str,
    tau: float,
    dim: int,
    tol: Tolerance,
    entropic_bound: float | None,
    shift: float = 0.0,
    objective: str | None = None,
    explanation: Explanation | None = None,
    notes: dict[str, Any] | None = None,
    embed: bool = False,
    floor: Any = None,
) -> Classification:
    """Classify a low-rank target (validated arguments; see :mod:`dgp.objectives`).

    ``shift`` is the canonical constant minus the user's, as for dense weightings.
    """
    check_tau_inverse(tau)
    lo, hi = t.ell_bounds
    if similarity == "cosine":
        check_cosine_scale(tau, hi - lo)
    # the label span, chosen once (centred within 1^perp for the Euclidean similarity)
    reduced, ((_, data),) = choose_reductions(t, similarity=similarity).apply(t)
    ctx = Context(
        similarity=similarity, tau=tau, dim=dim, n=int(t.U.shape[0]), tol=tol,
        method="structured", entropic_bound=entropic_bound, shift=shift, objective=objective,
        notes=notes, explanation=explanation, embed=embed, floor=floor,
    )
    if similarity == "cosine":
        fam = cosine_family(LowRankSpectrum(t, tau, (reduced, data)), tau=tau, tol=tol)
    else:
        fam = euclidean_family(LowRankEuclideanSpectrum(t, hi - lo, (reduced, data)), tau=tau,
                               tol=tol)
    return rules.verdict(fam, ctx)


def row_statistics(
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
