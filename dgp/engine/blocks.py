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

from dataclasses import replace
from typing import Any

import numpy as np

from dgp.engine import rules
from dgp.engine._block_model import (
    BlockTarget,
    BlockWeights,
    block_entropic_bound,
    block_log_target,
    block_weights,
)
from dgp.engine._block_spectra import (
    VECTORS_MAX_N,
    BlockEuclideanSpectrum,
    BlockSpectrum,
    block_embedding,
    dense_blocks,
)
from dgp.engine._reduction_base import Located, LogShift
from dgp.engine._reductions import ClassBlocks, ClassData, ClassProblem, choose_reductions
from dgp.engine.family import (
    check_cosine_scale,
    check_tau_inverse,
    cosine_family,
    euclidean_family,
)
from dgp.engine.groups import classify_grouped
from dgp.engine.rules import Context, Explanation
from dgp.engine.target import Shift
from dgp.result import Classification
from dgp.tolerance import Tolerance

__all__ = [
    "BlockEuclideanSpectrum",
    "BlockSpectrum",
    "BlockTarget",
    "BlockWeights",
    "block_embedding",
    "block_entropic_bound",
    "block_log_target",
    "block_weights",
    "classify_blocks",
    "dense_blocks",
]


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
    ``floor``: what an inconsistent cosine verdict says of the loss floor (a value, see
    :class:`~dgp.engine.rules.Context`). The class level is the reduction chosen for it
    (:func:`dgp.engine._reductions.choose_reductions`: grouped for one cross-class weight and
    many classes), whose inverse names the samples a verdict is about."""
    check_tau_inverse(tau)
    chain = choose_reductions(bw, similarity=similarity)
    reduced, inverse = chain.apply(bw)
    (blocks, data), = inverse
    if blocks.grouped:
        ctx = Context(
            similarity=similarity, tau=tau, dim=dim, n=bw.n, tol=tol, method="structured",
            entropic_bound=block_entropic_bound(bw), objective=objective,
            structure={"classes": bw.K}, explanation=explanation, embed=embed, floor=floor,
        )
        return classify_grouped(bw.sizes, bw.log_within, float(bw.cross_value), ctx,
                                first_other=data.first_other())
    bw, M, used = reduced.weights, reduced.log_weights, reduced.used
    # the class quotient's way back to the samples, for the spectra's vectors
    members = data.members.members if (embed or bw.n <= VECTORS_MAX_N) else None
    structure = {"classes": bw.classes.tolist(), "sizes": bw.sizes.tolist()}
    base = {
        "similarity": similarity, "tau": tau, "dim": dim, "n": bw.n, "tol": tol,
        "method": "structured", "entropic_bound": block_entropic_bound(bw),
        "objective": objective, "structure": structure, "explanation": explanation,
        "embed": embed, "floor": floor,
    }
    zero = ~np.isfinite(M) & used
    if zero.any():
        return _blocks_zero(reduced, data, zero, Context(**base))
    tgt, shift, margin, bad = block_log_target(bw, tol, used)
    if bad is not None:
        k, l, val = bad  # the class pair that closes the broken cycle, lifted to its samples
        cycle = chain.invert(Located(samples=(k, l), kind="cycle"), inverse).samples
        return rules.cycle_broken(Context(**base, shift=shift), cycle=cycle, log_ratio=val,
                                  margin=margin)
    ctx = Context(**base, shift=shift, margins=(margin,) if margin.near else ())
    if similarity == "cosine":
        vals = M[used]
        check_cosine_scale(tau, float(vals.max() - vals.min()))
        fam = cosine_family(BlockSpectrum(tgt, tau, members), tau=tau, tol=tol)
    else:
        fam = euclidean_family(BlockEuclideanSpectrum(tgt, members), tau=tau, tol=tol)
    return rules.verdict(fam, ctx)


def _blocks_zero(cp: ClassProblem, data: ClassData, zero: np.ndarray,
                 ctx: Context) -> Classification:
    """Zero weights, decided as :mod:`dgp.engine.zeros` does for dense weightings.

    Complete blocks (positive within, zero across) whose blocks meet their cycle condition are
    decided at the class level, for any N; every other class pattern is expanded to its
    sample-level sparse graph (never an N x N matrix) and decided by
    :func:`dgp.engine.zeros.classify_pattern`, the dense path's own procedure.
    """
    from scipy.sparse.csgraph import connected_components

    from dgp.engine.zeros import classify_pattern

    bw, used = cp.weights, cp.used
    sizes, K = bw.sizes, bw.K
    first = data.first
    n_zero = int(sum(sizes[k] * (sizes[l] - (k == l)) for k in range(K) for l in range(K)
                     if zero[k, l]))
    # the first zero entry in row-major order, as the dense path reports it
    k = min((r for r in range(K) if zero[r].any()), key=lambda r: first[r])
    lifted = (ClassBlocks().invert(Located(samples=(k, int(l)), kind="entry"), data).samples
              for l in np.flatnonzero(zero[k]))
    entry = min(lifted, key=lambda e: e[1])
    if ctx.similarity == "cosine":
        return rules.zero_weight_cosine(ctx, entry=entry, n_zero=n_zero)
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
    # the class level cannot decide: back to the samples through the reduction's inverse
    pattern, top = ClassBlocks().sample_pattern(cp, pos)
    return classify_pattern(pattern, replace(ctx, shift=top))


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
        # the block's constant through the inverse of its own canonical shift
        c_max = LogShift().invert(Located(c=end.c), Shift(shift)).c
        entry.update(c_max=c_max, rank=end.rank, ok=ok)
        margins.extend(fam.margins)
        if not ok:
            failing = failing or (pos_b, f"needs dimension {end.rank} > dim = {ctx.dim}")
        blocks.append(entry)
    return rules.blocks_verdict(ctx, n_blocks=n_comp, failing=failing, blocks=tuple(blocks),
                                n_zero=n_zero, margins=tuple(margins))
