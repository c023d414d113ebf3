r"""Zero weights: the bound needs :math:`q_{ij} \to 0` where :math:`w_{ij} = 0`.

Cosine: the similarity is bounded, so :math:`q_{ij} \ge e^{-2/\tau}/(N-1) > 0`: the bound is
neither attained nor approached (inconsistent).

Euclidean: :math:`q_{ij} \to 0` needs distances that diverge. When the positive weights form
disjoint complete blocks (positive within, zero across; class-block supports such as SupCon),
the bound is approached exactly when every block attains its own bound in :math:`\mathbb R^d`,
by sending the blocks infinitely far apart: degenerate (minimising sequences diverge, there is
no minimiser). Otherwise the blocks cannot all be realised and the bound is not even approached.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse.csgraph import connected_components

from dgp.engine import rules
from dgp.engine.dense import DenseEuclideanSpectrum
from dgp.engine.family import euclidean_family
from dgp.engine.rules import Context
from dgp.engine.target import LogWeights, log_target
from dgp.engine.tolerance import Tolerance
from dgp.result import Classification

__all__ = ["NOT_BLOCKS", "classify_zeros", "sub_weights"]

NOT_BLOCKS = (
    "this Euclidean weighting has zero weights that do not split the samples into complete "
    "blocks (positive weights within, zero across); dgp decides zero weights under the "
    "Euclidean similarity only for such class-block supports"
)


def sub_weights(weights: LogWeights, idx: np.ndarray) -> LogWeights:
    """The canonical log-weights of the samples ``idx`` (a copy, re-canonicalised)."""
    L = weights.L[np.ix_(idx, idx)]
    np.fill_diagonal(L, -np.inf)
    top = float(L.max())
    L -= top
    finite = np.isfinite(L)
    n_zero = int((~finite).sum()) - idx.size
    first = None
    if n_zero:
        off = ~finite
        np.fill_diagonal(off, False)
        first = tuple(int(k) for k in np.argwhere(off)[0])
    return LogWeights(L, weights.shift + top, bool(np.array_equal(L, L.T)), n_zero, first,
                      weights.unit_roundoff, ())


def classify_zeros(weights: LogWeights, ctx: Context) -> Classification:
    """The verdict on a weighting with zero weights (module docstring).

    Raises
    ------
    NotImplementedError
        For a Euclidean weighting whose positive weights do not form complete blocks.
    """
    if ctx.similarity == "cosine":
        return rules.zero_weight_cosine(ctx, entry=weights.first_zero, n_zero=weights.n_zero)
    support = np.isfinite(weights.L)
    np.fill_diagonal(support, False)
    n_blocks, label = connected_components(support, directed=False)
    members = [np.flatnonzero(label == b) for b in range(n_blocks)]
    for idx in members:
        if support[np.ix_(idx, idx)].sum() != idx.size * (idx.size - 1):
            raise NotImplementedError(NOT_BLOCKS)
    blocks, failing, margins = [], None, []
    for b, idx in enumerate(members):
        entry: dict = {"members": idx.tolist()}
        sub = sub_weights(weights, idx)
        tol = Tolerance(ctx.tol.rtol, ctx.tol.unit_roundoff, idx.size)
        tgt = log_target(sub, tol)
        if not tgt.consistent:
            entry.update(cycle=[int(idx[k]) for k in tgt.cycle], log_ratio=tgt.cycle_log_ratio,
                         ok=False)
            failing = failing or (b, "breaks the cycle condition")
            margins.append(tgt.margin)
        else:
            fam = euclidean_family(DenseEuclideanSpectrum(tgt), tau=ctx.tau, tol=tol)
            end = fam.hi
            ok = end.rank <= ctx.dim
            entry.update(c_max=end.c - sub.shift, rank=end.rank, ok=ok)
            margins.extend(fam.margins)
            if not ok:
                failing = failing or (b, f"needs dimension {end.rank} > dim = {ctx.dim}")
        blocks.append(entry)
    return rules.blocks_verdict(ctx, n_blocks=n_blocks, failing=failing, blocks=tuple(blocks),
                                n_zero=weights.n_zero, margins=tuple(margins))
