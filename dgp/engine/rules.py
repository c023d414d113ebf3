r"""The verdict rules: the only place a :class:`~dgp.result.Classification` is built.

In dimension :math:`d`, from the admissible set of the target family:

- **realizable**: exactly one admissible constant has a target of rank :math:`\le d` (a single
  admissible ``c``, or one end point while the other end and the interior need more);
- **degenerate**: several do (the interior, i.e. :math:`d \ge N` cosine or :math:`d \ge N-1`
  Euclidean, or both end points), or the bound is only approached (Euclidean zero weights);
- **inconsistent**: none does (an empty family, every admissible rank above :math:`d`, a broken
  cycle condition, zero weights under the bounded cosine similarity).

Every builder takes the engine's family (or certificate) and a :class:`Context`, and returns a
finished, frozen result: nothing is patched afterwards. The rules on zero weights and the one
function that assembles a result (its certificate fields, the closed-form explanation, the loss
floor) live in private modules of the engine and are exported from here.
"""

from __future__ import annotations

import numpy as np

from dgp.engine._verdict_build import Context, Explanation, certificate_fields, decided
from dgp.engine._zero_rules import (
    blocks_verdict,
    zero_approached,
    zero_cycle_broken,
    zero_obstructed,
    zero_scale_order,
    zero_undecided,
    zero_weight_cosine,
)
from dgp.engine.certificates import (
    Certificate,
    CycleCertificate,
    FarkasCertificate,
    NearestTargetCertificate,
    SchoenbergCertificate,
    SpectrumCertificate,
)
from dgp.engine.family import End, Family
from dgp.result import Classification, format_c
from dgp.tolerance import Margin

__all__ = [
    "Context",
    "Explanation",
    "blocks_verdict",
    "cycle_broken",
    "verdict",
    "zero_approached",
    "zero_cycle_broken",
    "zero_obstructed",
    "zero_scale_order",
    "zero_undecided",
    "zero_weight_cosine",
]

_EPS = float(np.finfo(float).eps)


def _resolution(ctx: Context, fam: Family) -> float:
    """How close to zero a reported ``c`` is indistinguishable from zero (from the family
    before it is lifted: its canonical constants and the shift)."""
    atol = max((e.atol for e in fam.ends), default=fam.best_atol)
    if fam.similarity == "cosine":
        base = atol / (ctx.tau * max(1, ctx.n - 1))
    else:
        base = atol
    big = max([1.0, abs(ctx.shift)] + [abs(e.c) for e in fam.ends])
    return base + 8.0 * _EPS * big


def verdict(fam: Family, ctx: Context) -> Classification:
    """The verdict on a target family (cosine interval or point, Euclidean half-line)."""
    near = any(m.near for m in (*ctx.margins, *fam.margins))
    res = _resolution(ctx, fam)
    fam = fam.in_user_frame(ctx)  # every constant below is the user's (the one inverse)
    common = certificate_fields(ctx, fam.margins, fam.structure)
    if fam.status == "empty":
        return _empty(fam, ctx, near, common)
    if fam.similarity == "euclidean":
        return _euclidean(fam, ctx, near, res, common)
    return _cosine(fam, ctx, near, res, common)


def _empty(fam: Family, ctx: Context, near: bool, common: dict) -> Classification:
    # the maximiser of a concave function is located to the search's tolerance, not to the
    # last digit (the thread count moves it there): the sentence gives it to 3 digits, as the
    # value; the certificate keeps it in full (c_at_max)
    c0 = fam.best_c
    reason = (
        "no constant c makes G(c) = tau (log w_ij + c) (unit diagonal) positive semidefinite: "
        f"the smallest eigenvalue of G(c) is at most {fam.best_value:.3g} < 0 (reached at c = "
        f"{c0:.3g}), so the target cannot be realised in any dimension"
    )
    if fam.farkas is not None:
        fk = fam.farkas
        cert: Certificate = FarkasCertificate(
            statement=FarkasCertificate.TEXT,
            weights=fk.weights, vectors=fk.vectors,
            inner_ones_minus_identity=fk.inner_ones_minus_identity, inner_A=fk.inner_A,
            max_min_eigenvalue=fam.best_value, c_at_max=c0, atol=fam.best_atol,
            vectors_note=fk.vectors_note, **common,
        )
    else:
        near_t = fam.nearest or {}
        cert = NearestTargetCertificate(
            statement=NearestTargetCertificate.TEXT,
            solver_status=str(near_t.get("solver_status", "")),
            distance=float(near_t.get("distance", float("nan"))),
            c_nearest=float(near_t.get("c_nearest", float("nan"))),
            nearest_target=near_t.get("nearest_target"), **common,
        )
    return decided(ctx, "inconsistent", reason,
                  certificate=cert, near=near)


def _spectrum_cert(fam: Family, ctx: Context, common: dict) -> SpectrumCertificate:
    lo, hi = fam.lo, fam.hi
    return SpectrumCertificate(
        statement=(
            "G(c)_ij = tau (log w_ij + c) off the diagonal, 1 on it, is PSD exactly for c in "
            "c_interval; eigenvalues_lo/_hi are its smallest eigenvalues at the end points "
            "(the first of the `zeros` eigenvalues <= atol_lo/_hi, which count as zero, at "
            "least one at each end, then the next one), so each end's rank is N minus that "
            "count; strictly inside, every member has rank N"
        ),
        c_interval=(lo.c, hi.c),
        ranks={"lo": lo.rank, "hi": hi.rank, "interior": fam.interior_rank},
        zeros={"lo": lo.zeros, "hi": hi.zeros},
        eigenvalues_lo=lo.low, eigenvalues_hi=hi.low, atol_lo=lo.atol, atol_hi=hi.atol,
        max_min_eigenvalue=fam.best_value, c_at_max=fam.best_c,
        prototypes=fam.prototypes, **common,
    )


def _embedding(fam: Family, ctx: Context, end: End) -> np.ndarray | None:
    if not ctx.embed or fam.embed is None:
        return None
    return fam.embed(end.c, end.rank)


def _cosine(fam: Family, ctx: Context, near: bool, res: float, common: dict) -> Classification:
    d, n = ctx.dim, ctx.n
    cert = _spectrum_cert(fam, ctx, common)
    fc = lambda c: format_c(c, res)  # noqa: E731
    if fam.status == "point":
        end = fam.hi
        c0 = end.c
        if end.rank <= d:
            reason = (f"only c = {fc(end.c)} makes G(c) PSD; its target has rank {end.rank} <= "
                      f"dim = {d}, unique up to rotation")
            return decided(ctx, "realizable", reason,
                          certificate=cert, rank=end.rank, c_interval=(c0, c0), c=c0,
                          min_dim=max(1, end.rank), near=near,
                          embedding=_embedding(fam, ctx, end), c_resolution=res)
        reason = (f"only c = {fc(end.c)} makes G(c) PSD, and its target has rank {end.rank} > "
                  f"dim = {d}")
        return decided(ctx, "inconsistent", reason,
                      certificate=cert, c_interval=(c0, c0), min_dim=max(1, end.rank),
                      near=near, c_resolution=res)
    lo, hi = fam.lo, fam.hi
    interval = (lo.c, hi.c)
    span = f"[{fc(lo.c)}, {fc(hi.c)}]"
    min_dim = max(1, min(lo.rank, hi.rank))
    if n <= d:
        reason = (f"dim = {d} >= N = {n}: every c in {span} gives an optimal target (rank {n} "
                  "inside): infinitely many non-isometric minimisers")
        return decided(ctx, "degenerate", reason,
                      certificate=cert, c_interval=interval, min_dim=min_dim, near=near,
                      c_resolution=res)
    ok = [e for e in (lo, hi) if e.rank <= d]
    if len(ok) == 2:
        reason = (f"both end points c = {fc(lo.c)} and c = {fc(hi.c)} give optimal targets, of "
                  f"rank {lo.rank} and {hi.rank} <= dim = {d}: two non-isometric minimisers")
        return decided(ctx, "degenerate", reason,
                      certificate=cert, c_interval=interval, min_dim=min_dim, near=near,
                      c_resolution=res)
    if len(ok) == 1:
        end = ok[0]
        other = hi if end is lo else lo
        reason = (f"the end point c = {fc(end.c)} of {span} gives the only optimal target in "
                  f"dim = {d}: rank {end.rank} (the other end needs {other.rank}, the interior "
                  f"{n}), unique up to rotation")
        c0 = end.c
        return decided(ctx, "realizable", reason,
                      certificate=cert, rank=end.rank, c_interval=interval, c=c0,
                      min_dim=min_dim, near=near, embedding=_embedding(fam, ctx, end),
                      c_resolution=res)
    ends = (f"{lo.rank} at both end points" if lo.rank == hi.rank else
            f"{lo.rank} at the lower end point and {hi.rank} at the upper one")
    reason = (f"every admissible target (c in {span}) needs more than dim = {d} dimensions: "
              f"{ends}, {n} inside")
    return decided(ctx, "inconsistent", reason,
                  certificate=cert, c_interval=interval, min_dim=min_dim, near=near,
                  c_resolution=res)


def _euclidean(fam: Family, ctx: Context, near: bool, res: float, common: dict) -> Classification:
    d, n = ctx.dim, ctx.n
    end = fam.hi
    c_max = end.c
    cert = SchoenbergCertificate(
        statement=(
            "D(c)_ij = -2 tau (log w_ij + c) is a Euclidean distance matrix exactly for "
            "c <= c_max: on the complement of 1, -J D(c) J / 2 = tau (B - c I) with c_max the "
            "smallest eigenvalue of B; eigenvalues_at_c_max are the smallest eigenvalues of "
            "B - c_max I (the first of the zeros_at_c_max <= atol, which count as zero, then the "
            "next one), so the rank at c_max is N - 1 - zeros_at_c_max, and every c < c_max has "
            "rank N - 1"
        ),
        c_max=c_max, rank_at_c_max=end.rank, zeros_at_c_max=end.zeros,
        eigenvalues_at_c_max=end.low,
        largest_eigenvalue_at_c_max=fam.best_value, atol=end.atol, **common,
    )
    interval = (None, c_max)
    cm = format_c(c_max, res)
    min_dim = max(1, end.rank)
    if d >= n - 1:
        reason = (f"dim = {d} >= N - 1 = {n - 1}: every c <= c_max = {cm} gives an optimal "
                  "configuration: infinitely many non-congruent minimisers")
        return decided(ctx, "degenerate", reason,
                      certificate=cert, c_interval=interval, min_dim=min_dim, near=near,
                      c_resolution=res)
    if end.rank <= d:
        reason = (f"only c_max = {cm} gives an optimal configuration in dim = {d}: rank "
                  f"{end.rank} (every c < c_max needs N - 1 = {n - 1}), unique up to rigid "
                  "motion")
        return decided(ctx, "realizable", reason,
                      certificate=cert, rank=end.rank, c_interval=interval, c=c_max,
                      min_dim=min_dim, near=near, embedding=_embedding(fam, ctx, end),
                      c_resolution=res)
    reason = (f"the target at c_max = {cm} needs dimension {end.rank} > dim = {d} (and every "
              f"c < c_max needs N - 1 = {n - 1})")
    return decided(ctx, "inconsistent", reason,
                  certificate=cert, c_interval=interval, min_dim=min_dim, near=near,
                  c_resolution=res)


def cycle_broken(
    ctx: Context, *, cycle: tuple[int, ...], log_ratio: float, margin: Margin
) -> Classification:
    """The verdict on a weighting that breaks the cycle condition."""
    path = " -> ".join(str(v) for v in cycle)
    reason = (f"W breaks the cycle condition: around the cycle {path} the weights multiply to "
              f"exp({log_ratio:.3g}) times their reverses, so no symmetric similarity matches "
              "the row distributions")
    cert = CycleCertificate(
        statement=CycleCertificate.TEXT,
        cycle=tuple(cycle), log_ratio=float(log_ratio), tolerance=margin.atol,
        **certificate_fields(ctx, (margin,), None),
    )
    return decided(ctx, "inconsistent", reason,
                  certificate=cert, near=margin.near)


