r"""Class-block weightings with one cross-class weight (SupCon, Soft SupCon) at any number of
classes: the :math:`K \times K` quotient reduced to the groups of identical classes.

With the same cross-class target :math:`\beta` for every pair of classes, the quotient of
:mod:`dgp.engine.blocks` is diagonal plus rank one,

.. math:: Q(\mu) = \mathrm{diag}(d_k) + \rho\, s s^\top, \qquad
    d_k = 1 - \tau\lambda_k - \mu + n_k\tau(\lambda_k - \beta),\quad \rho = \tau\beta + \mu,
    \quad s_k = \sqrt{n_k}.

Classes with the same size and within-class target (a group :math:`i` of :math:`g_i` classes)
share :math:`d_i`; the zero-sum vectors over a group's classes are eigenvectors with eigenvalue
:math:`d_i` (multiplicity :math:`g_i - 1`), and on the group-constant vectors :math:`Q` acts as
the :math:`m \times m` matrix :math:`\mathrm{diag}(d_i) + \rho\,\omega\omega^\top`,
:math:`\omega_i = \sqrt{g_i n_i}`. With the within-class eigenvalues
:math:`1 - \tau\lambda_k - \mu` (multiplicity :math:`n_k - 1`) that is the whole spectrum of
:math:`G(\mu)`, in :math:`O(K + m^3)` per member, :math:`m` the number of distinct classes
(one for balanced classes). Euclidean: :math:`B = V^\top\ell V` has :math:`-\lambda_k` within
classes, :math:`e_i = n_i(\lambda_i - \beta) - \lambda_i` on the zero-sum vectors of a group,
and the compression of :math:`\mathrm{diag}(e_i)` to :math:`\omega^\perp` on the rest.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dgp.engine import rules
from dgp.engine._spectra import FarkasSide
from dgp.engine.family import (
    MultiplicityEuclideanSpectrum,
    MultiplicitySpectrum,
    cosine_family,
    euclidean_family,
    psd_box,
    repeat_smallest,
)
from dgp.engine.rules import Context
from dgp.engine.tridiag import complement_basis

__all__ = ["GROUPED_MIN_K", "Groups", "classify_grouped"]

#: from this many classes on, a constant cross weight goes through the grouped quotient
GROUPED_MIN_K = 64


class Groups:
    """The groups of identical classes of a block target with one cross value (canonical)."""

    def __init__(self, sizes: np.ndarray, within: np.ndarray, cross: float) -> None:
        multi = sizes >= 2
        lam = np.where(multi, within, cross)  # a singleton's within value is never used
        keys = np.stack([sizes.astype(float), lam], axis=1)
        uniq, inverse, counts = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
        self.n = uniq[:, 0].astype(np.int64)  # class size of each group
        self.lam = uniq[:, 1]  # within-class target of each group
        self.g = counts.astype(np.int64)  # classes in each group
        self.of_class = inverse.reshape(-1)
        self.beta = float(cross)
        self.N = int((self.n * self.g).sum())
        self.omega = np.sqrt(self.g * self.n.astype(float))
        self.spread = float(max(self.lam.max(), cross) - min(self.lam.min(), cross))

    def structure(self) -> dict[str, Any]:
        """What the quotient was reduced to."""
        return {"groups": int(self.n.size), "classes": int(self.g.sum()),
                "group_sizes": self.n.tolist(), "classes_per_group": self.g.tolist()}


def _values(parts: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
    """The parts' values, multiplicities (and slopes, where given) side by side."""
    return tuple(np.concatenate(column) for column in zip(*parts, strict=True))


class GroupedSpectrum(MultiplicitySpectrum):
    """:math:`G(\\mu)` of a constant-cross block target (module docstring)."""

    def __init__(self, gr: Groups, tau: float) -> None:
        self.gr, self.tau, self.n = gr, tau, gr.N
        offvals = np.r_[gr.lam[gr.n >= 2], gr.beta] if gr.g.sum() > 1 else gr.lam[gr.n >= 2]
        self._box = psd_box(tau, float(offvals.min()), float(offvals.max()))

    def decompose(self, mu: float):
        """Reduced eigenpairs, group values and within-class values at ``mu``."""
        gr, tau = self.gr, self.tau
        within = 1.0 - tau * gr.lam - mu
        d = within + gr.n * tau * (gr.lam - gr.beta)
        R = np.diag(d) + (tau * gr.beta + mu) * np.outer(gr.omega, gr.omega)
        lam, vec = np.linalg.eigh(0.5 * (R + R.T))
        return lam, vec, d, within

    def eigenvalues(self, mu: float) -> tuple[np.ndarray, np.ndarray]:
        lam, _, d, within = self.parts(mu)
        gr = self.gr
        vals, mults = _values([(lam, np.ones(lam.size, dtype=np.int64)), (d, gr.g - 1),
                               (within, gr.g * (gr.n - 1))])
        return vals, mults

    def box(self) -> tuple[float, float]:
        return self._box

    def _bottom(self, mu: float) -> tuple[float, float, np.ndarray | None]:
        lam, vec, d, within = self.parts(mu)
        gr = self.gr
        best, slope, y = float(lam[0]), float((gr.omega @ vec[:, 0]) ** 2 - 1.0), vec[:, 0]
        for vals, mult in ((d, gr.g - 1), (within, gr.g * (gr.n - 1))):
            if (mult > 0).any() and float(vals[mult > 0].min()) < best:
                best, slope, y = float(vals[mult > 0].min()), -1.0, None  # orthogonal to 1
        return best, slope, y

    def lam_min_slope(self, mu: float) -> tuple[float, float]:
        best, slope, _ = self._bottom(mu)
        return best, slope

    def smallest_slopes(self, mu: float, k: int) -> tuple[np.ndarray, np.ndarray]:
        lam, vec, d, within = self.parts(mu)
        gr = self.gr
        vals, mults, slopes = _values([
            (lam, np.ones(lam.size, dtype=np.int64), (gr.omega @ vec) ** 2 - 1.0),
            (d, gr.g - 1, -np.ones(d.size)), (within, gr.g * (gr.n - 1), -np.ones(d.size))])
        bottom, bottom_slopes = repeat_smallest(k, vals, mults, slopes)
        return bottom, bottom_slopes

    def structure(self, mu: float) -> dict[str, Any]:
        lam, _, d, within = self.parts(mu)
        return {**self.gr.structure(), "reduced_eigenvalues": lam.tolist(),
                "group_eigenvalues": d.tolist(), "within_class_eigenvalues": within.tolist(),
                "at_c": mu / self.tau}

    def farkas_side(self, mu: float) -> FarkasSide:
        value, slope, _ = self._bottom(mu)
        return None, slope, value - mu * slope

    def farkas_note(self, delta: float) -> str:
        return ("vectors not listed (grouped classes): each is constant on classes (a bottom "
                "eigenvector of the reduced quotient) or orthogonal to 1")

    def embedding(self, mu: float, r: int) -> np.ndarray:
        from dgp.errors import ParameterError

        raise ParameterError("embed", f"is not available for {int(self.gr.g.sum())} classes "
                             f"(above {GROUPED_MIN_K}, grouped): the embedding has N x rank "
                             "entries; use the prototypes of dgp.supcon_prototypes instead")


class GroupedEuclideanSpectrum(MultiplicityEuclideanSpectrum):
    """:math:`B = V^\\top\\ell V` of a constant-cross block target (module docstring)."""

    def __init__(self, gr: Groups) -> None:
        self.gr, self.n, self.spread = gr, gr.N, gr.spread
        e = gr.n * (gr.lam - gr.beta) - gr.lam
        m = gr.n.size
        parts = [(-gr.lam, gr.g * (gr.n - 1)), (e, gr.g - 1)]
        if m > 1:
            P = complement_basis(gr.omega / np.linalg.norm(gr.omega))
            C = P.T @ np.diag(e) @ P
            parts.append((np.linalg.eigvalsh(0.5 * (C + C.T)), np.ones(m - 1, dtype=np.int64)))
        self.vals, self.mults = _values(parts)

    def structure(self) -> dict[str, Any]:
        return self.gr.structure()

    def embedding(self, c: float, r: int, tau: float) -> np.ndarray:
        from dgp.errors import ParameterError

        raise ParameterError("embed", f"is not available for {int(self.gr.g.sum())} classes "
                             f"(above {GROUPED_MIN_K}, grouped)")


def classify_grouped(
    sizes: np.ndarray,
    log_within: np.ndarray,
    log_cross: float,
    ctx: Context,
    *,
    first_other: int,
) -> Any:
    """Classify a block weighting with one cross value (validated arguments; the weighting is
    symmetric, so no cycle can break). ``first_other`` is the first sample outside the class of
    sample 0 (where a zero cross weight is first met in row-major order)."""
    from dataclasses import replace

    multi = sizes >= 2
    if not np.isfinite(log_cross) or (~np.isfinite(log_within[multi])).any():
        return _zeros(sizes, log_within, ctx, first_other)
    vals = np.r_[log_within[multi], log_cross]
    shift = float(vals.max())
    gr = Groups(sizes, np.where(multi, log_within - shift, 0.0), log_cross - shift)
    ctx = replace(ctx, shift=shift)
    if ctx.similarity == "cosine":
        fam = cosine_family(GroupedSpectrum(gr, ctx.tau), tau=ctx.tau, tol=ctx.tol)
    else:
        fam = euclidean_family(GroupedEuclideanSpectrum(gr), tau=ctx.tau, tol=ctx.tol)
    return rules.verdict(fam, ctx)


def _zeros(sizes: np.ndarray, log_within: np.ndarray, ctx: Context, first_other: int):
    """Zero cross weights (SupCon): inconsistent under the cosine similarity; under the
    Euclidean one every class is a complete block of equal weights (rank 0 at its own c_max),
    so the bound is approached as the classes drift apart (degenerate)."""
    if (~np.isfinite(log_within[sizes >= 2])).any():
        from dgp.errors import ParameterError

        raise ParameterError("within", "zero within-class weights with a constant cross "
                             "weight are not a grouped weighting")
    N = int(sizes.sum())
    n_zero = int((sizes * (N - sizes)).sum())
    if ctx.similarity == "cosine":
        # the first zero in row-major order: row 0 against the first sample of another class
        return rules.zero_weight_cosine(ctx, entry=(0, int(first_other)), n_zero=n_zero)
    blocks = ({"blocks": int(sizes.size), "sizes": "every class is one block",
               "rank": 0, "ok": True},)
    return rules.blocks_verdict(ctx, n_blocks=int(sizes.size), failing=None, blocks=blocks,
                                n_zero=n_zero)
