r"""Verdicts: is the entropic bound of a weighting attained, and by a unique geometry?

Given :math:`W`, a similarity, :math:`\tau` and a dimension :math:`d`:

- **realizable**: the bound is attained in :math:`\mathbb R^d` by a minimiser unique up to
  isometry (one admissible :math:`c` whose target has rank :math:`\le d`);
- **degenerate**: the bound is attained or approached without a unique geometry (an interval of
  admissible :math:`c`, two admissible end points, or only divergent minimising sequences);
- **inconsistent**: the bound can be neither attained nor approached in :math:`\mathbb R^d`
  (broken cycle condition, no PSD/EDM member, rank above :math:`d`, zero weights under the
  bounded cosine similarity).

Every verdict carries a certificate and the tolerance used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.sparse.csgraph import connected_components

from dgp.errors import check_choice, check_dim, check_positive, check_rtol, check_weights
from dgp.infonce import SIMILARITIES, row_entropies
from dgp.spectral import Family, cosine_family, euclidean_family
from dgp.target import log_target

__all__ = ["METHODS", "Classification", "classify"]

METHODS = ("spectral", "sdp")
VERDICTS = ("realizable", "degenerate", "inconsistent")


@dataclass
class Classification:
    """The verdict on a weighting, with its certificate.

    Attributes mirror the JSON fields of ``dgp classify --json`` (see :meth:`to_dict`); in
    addition ``c`` is the chosen constant when realizable, ``embedding`` the optimal embedding
    (``N x rank``, deterministic signs) when realizable, and ``method``/``rtol`` say how the
    verdict was reached.
    """

    verdict: str
    attainable: bool
    similarity: str
    n: int
    dim: int
    tau: float
    rank: int | None
    c_interval: list[float | None] | None
    entropic_bound: float
    reason: str
    certificate: dict[str, Any]
    method: str = "spectral"
    rtol: float = 1e-8
    c: float | None = None
    objective: str | None = None
    embedding: np.ndarray | None = field(default=None, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """The JSON fields of CONTRACT.md, plus ``method``, ``rtol``, ``c`` and ``objective``."""
        keys = (
            "verdict",
            "attainable",
            "similarity",
            "n",
            "dim",
            "tau",
            "rank",
            "c_interval",
            "entropic_bound",
            "reason",
            "certificate",
            "method",
            "rtol",
            "c",
            "objective",
        )
        return {k: getattr(self, k) for k in keys}


def classify(
    W: object,
    *,
    similarity: str = "cosine",
    tau: float,
    dim: int,
    rtol: float = 1e-8,
    method: str = "spectral",
) -> Classification:
    r"""Classify the target geometry of a weighting.

    The bound :math:`L(Z) \ge \sum_i H(p_i)` is attained iff
    :math:`s_{ij} = \log w_{ij} + c_i`; the admissible targets form the one-parameter family
    :math:`G(c)` (cosine) or :math:`D(c)` (Euclidean) of :mod:`dgp.target`.

    Parameters
    ----------
    W : array_like, shape (N, N)
        Weights, non-negative off the diagonal (the diagonal is ignored), every row with
        positive mass.
    similarity : {"cosine", "euclidean"}
        Latent similarity.
    tau : float
        Temperature, ``> 0``.
    dim : int
        Embedding dimension ``d >= 1``.
    rtol : float
        Relative tolerance for eigenvalue signs and ranks (scaled by each matrix's spectral
        norm) and for the cycle condition (scaled by ``max |log w|``); reported in the result.
    method : {"spectral", "sdp"}
        One tridiagonalisation (fast, default) or semidefinite programs with cvxpy.

    Returns
    -------
    Classification

    Raises
    ------
    ValueError
        If ``W`` is not a valid weighting, ``similarity`` or ``method`` is unknown, ``tau <= 0``,
        ``dim < 1`` or ``rtol`` is not in (0, 1).
    TypeError
        If ``tau`` or ``dim`` has the wrong type.
    NotImplementedError
        For a Euclidean weighting whose positive weights do not form disjoint complete blocks.

    Examples
    --------
    >>> import dgp
    >>> W = dgp.weights.soft_supcon_weights([0, 0, 1, 1, 2, 2], eps=0.1)
    >>> res = dgp.classify(W, similarity="cosine", tau=0.5, dim=3)
    >>> res.verdict, res.rank
    ('realizable', 3)
    """
    A = check_weights(W)
    check_choice(similarity, SIMILARITIES, "similarity")
    tau = check_positive(tau, "tau")
    dim = check_dim(dim)
    rtol = check_rtol(rtol)
    check_choice(method, METHODS, "method")
    n = A.shape[0]
    off = ~np.eye(n, dtype=bool)
    zero = (A == 0) & off
    with np.errstate(divide="ignore"):
        logA = np.log(A)  # -inf at zero weights and on the (zero) diagonal
    common = {
        "similarity": similarity,
        "n": n,
        "dim": dim,
        "tau": tau,
        "entropic_bound": float(row_entropies(A, None if zero.any() else logA).sum()),
        "method": method,
        "rtol": rtol,
    }
    if zero.any():
        return _classify_zero_weights(A, zero, common)
    tgt = log_target(A, rtol=rtol, logW=logA)
    if not tgt.consistent:
        return _cycle_broken(tgt, common)
    fam = _family(tgt.ell, similarity, tau, rtol, method)
    return _verdict(fam, common)


def _family(ell: np.ndarray, similarity: str, tau: float, rtol: float, method: str) -> Family:
    if method == "sdp":
        from dgp import sdp  # cvxpy is imported only when asked for

        return (sdp.cosine_family if similarity == "cosine" else sdp.euclidean_family)(
            ell, tau, rtol
        )
    return (cosine_family if similarity == "cosine" else euclidean_family)(ell, tau, rtol)


def _fmt(x: float | None) -> str:
    return "-inf" if x is None else f"{x:.6g}"


def _verdict(fam: Family, common: dict[str, Any]) -> Classification:
    dim = common["dim"]
    name = "G(c) PSD" if common["similarity"] == "cosine" else "D(c) an EDM"
    cert = dict(fam.certificate)
    if fam.empty:
        return Classification(
            verdict="inconsistent",
            attainable=False,
            rank=None,
            c_interval=None,
            reason=f"no constant c makes {name}: the target cannot be realised in any dimension",
            certificate=cert,
            **common,
        )
    cert["ranks"] = {"lo": fam.rank_lo, "hi": fam.rank_hi, "interior": fam.rank_interior}
    interval = [None if c is None else float(c) for c in (fam.lo, fam.hi)]
    if fam.point:
        c0, r = float(fam.hi), fam.rank_hi
        if r <= dim:
            return _realizable(fam, c0, r, interval, f"a single c = {c0:.6g} is admissible", common)
        return Classification(
            verdict="inconsistent",
            attainable=False,
            rank=None,
            c_interval=interval,
            reason=f"the only admissible target (c = {c0:.6g}) has rank {r} > dim = {dim}",
            certificate=cert,
            **common,
        )
    span = f"[{_fmt(fam.lo)}, {_fmt(fam.hi)}]"
    if fam.rank_interior <= dim:
        return Classification(
            verdict="degenerate",
            attainable=True,
            rank=None,
            c_interval=interval,
            reason=f"every c in {span} gives an optimum of rank <= {fam.rank_interior} <= dim = "
            f"{dim}: infinitely many non-isometric minimisers",
            certificate=cert,
            **common,
        )
    ends = [
        (float(c), r) for c, r in ((fam.lo, fam.rank_lo), (fam.hi, fam.rank_hi)) if c is not None
    ]
    ok = [(c, r) for c, r in ends if r <= dim]
    if len(ok) == 2:
        return Classification(
            verdict="degenerate",
            attainable=True,
            rank=None,
            c_interval=interval,
            reason=f"both end points of {span} have rank <= dim = {dim} "
            f"(ranks {fam.rank_lo} and {fam.rank_hi}): two non-isometric minimisers",
            certificate=cert,
            **common,
        )
    if len(ok) == 1:
        c0, r = ok[0]
        return _realizable(fam, c0, r, interval, f"the end point c = {c0:.6g} of {span}", common)
    ranks = " and ".join(str(r) for _, r in ends)
    return Classification(
        verdict="inconsistent",
        attainable=False,
        rank=None,
        c_interval=interval,
        reason=f"admissible targets (c in {span}) need dimension {ranks} at the end points and "
        f"{fam.rank_interior} inside, all above dim = {dim}",
        certificate=cert,
        **common,
    )


def _realizable(
    fam: Family, c0: float, r: int, interval: list, why: str, common: dict[str, Any]
) -> Classification:
    cert = dict(fam.certificate)
    cert["ranks"] = {"lo": fam.rank_lo, "hi": fam.rank_hi, "interior": fam.rank_interior}
    cert["c"] = c0
    return Classification(
        verdict="realizable",
        attainable=True,
        rank=r,
        c_interval=interval,
        reason=f"{why}; its target has rank {r} <= dim = {common['dim']}, unique up to isometry",
        certificate=cert,
        c=c0,
        embedding=fam.embed(c0, r) if fam.embed is not None else None,
        **common,
    )


def _cycle_broken(tgt, common: dict[str, Any]) -> Classification:
    i0, i, j = tgt.cycle
    return Classification(
        verdict="inconsistent",
        attainable=False,
        rank=None,
        c_interval=None,
        reason=f"W breaks the cycle condition: around the cycle {i0} -> {i} -> {j} -> {i0} the "
        f"weights multiply to exp({tgt.cycle_log_ratio:.3g}) times their reverses, so no "
        "symmetric similarity matches the row distributions",
        certificate={
            "kind": "cycle",
            "cycle": [i0, i, j, i0],
            "log_ratio": tgt.cycle_log_ratio,
            "tolerance": tgt.tolerance,
        },
        **common,
    )


NOT_BLOCKS = (
    "this Euclidean weighting has zero weights that do not split the samples into complete "
    "blocks (positive weights within, zero across); dgp decides zero weights under the "
    "Euclidean similarity only for such class-block supports"
)


def zero_weight_cosine(i: int, j: int, n_zero: int, common: dict[str, Any]) -> Classification:
    """The verdict on zero weights under the (bounded) cosine similarity."""
    return Classification(
        verdict="inconsistent",
        attainable=False,
        rank=None,
        c_interval=None,
        reason=f"W[{i}, {j}] = 0 needs s_ij = -inf, impossible for the bounded cosine "
        "similarity; the loss minimum lies strictly above the bound",
        certificate={"kind": "zero_weight", "entry": [i, j], "zero_weights": n_zero},
        **common,
    )


def blocks_verdict(
    n_blocks: int, failing: tuple[int, str] | None, cert: dict, common: dict[str, Any]
) -> Classification:
    """The verdict on Euclidean zero weights across complete blocks: degenerate when every block
    is realisable in ``dim`` (the blocks drift apart), else inconsistent (``failing`` says why)."""
    if failing is not None:
        return Classification(
            verdict="inconsistent",
            attainable=False,
            rank=None,
            c_interval=None,
            reason=f"zero weights split W into {n_blocks} blocks and block {failing[0]} "
            f"{failing[1]}, so the bound cannot even be approached",
            certificate=cert,
            **common,
        )
    return Classification(
        verdict="degenerate",
        attainable=False,
        rank=None,
        c_interval=None,
        reason=f"zero weights split W into {n_blocks} blocks; the bound is approached only as the "
        "blocks drift infinitely far apart (minimising sequences diverge, no minimiser)",
        certificate=cert,
        **common,
    )


def _classify_zero_weights(A: np.ndarray, zero: np.ndarray, common: dict[str, Any]):
    i, j = (int(k) for k in np.argwhere(zero)[0])
    n_zero = int(zero.sum())
    if common["similarity"] == "cosine":
        return zero_weight_cosine(i, j, n_zero, common)
    # Euclidean: bounded distances within a cluster force positive weights there, so the bound
    # can be approached only by clusters drifting apart; we decide it when the positive weights
    # form disjoint complete blocks (class-block support, as SupCon).
    support = ~zero & ~np.eye(A.shape[0], dtype=bool)
    n_blocks, label = connected_components(support, directed=False)
    for b in range(n_blocks):
        idx = np.flatnonzero(label == b)
        if not support[np.ix_(idx, idx)].sum() == idx.size * (idx.size - 1):
            raise NotImplementedError(NOT_BLOCKS)
    blocks = []
    failing = None
    for b in range(n_blocks):
        idx = np.flatnonzero(label == b)
        entry = {"members": idx.tolist()}
        tgt = log_target(A[np.ix_(idx, idx)], rtol=common["rtol"])
        if not tgt.consistent:
            entry.update(
                cycle=[int(idx[k]) for k in tgt.cycle], log_ratio=tgt.cycle_log_ratio, ok=False
            )
            failing = failing or (b, "breaks the cycle condition")
        else:
            fam = _family(tgt.ell, "euclidean", common["tau"], common["rtol"], common["method"])
            ok = fam.rank_hi <= common["dim"]
            entry.update(c_max=fam.hi, rank=fam.rank_hi, ok=ok)
            if not ok:
                failing = failing or (b, f"needs dimension {fam.rank_hi} > dim = {common['dim']}")
        blocks.append(entry)
    cert = {"kind": "blocks", "zero_weights": n_zero, "blocks": blocks}
    return blocks_verdict(n_blocks, failing, cert, common)
