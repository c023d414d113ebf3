r"""The verdict rules: the only place a :class:`~dgp.result.Classification` is built.

In dimension :math:`d`, from the admissible set of the target family:

- **realizable**: exactly one admissible constant has a target of rank :math:`\le d` (a single
  admissible ``c``, or one end point while the other end and the interior need more);
- **degenerate**: several do (the interior, i.e. :math:`d \ge N` cosine or :math:`d \ge N-1`
  Euclidean, or both end points), or the bound is only approached (Euclidean zero weights);
- **inconsistent**: none does (an empty family, every admissible rank above :math:`d`, a broken
  cycle condition, zero weights under the bounded cosine similarity).

Every builder takes the engine's family (or certificate) and a :class:`Context`, and returns a
finished, frozen result: nothing is patched afterwards.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dgp.engine.certificates import (
    BlocksCertificate,
    Certificate,
    CycleCertificate,
    DivergingFamilyCertificate,
    FarkasCertificate,
    NearestTargetCertificate,
    ScaleOrderCertificate,
    SchoenbergCertificate,
    SpectrumCertificate,
    ZeroObstructionCertificate,
    ZeroUndecidedCertificate,
    ZeroWeightCertificate,
)
from dgp.engine.family import End, Family
from dgp.engine.target import CanonicalShift
from dgp.result import Classification, format_c
from dgp.tolerance import Margin, Tolerance

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
NEAR_NOTE = " (decided within tolerance of a critical value: see near_threshold and the margins)"


@dataclass(frozen=True)
class Explanation:
    """A closed-form prediction of a named objective, used as the reason when it agrees.

    Attributes
    ----------
    verdict : str
        The predicted verdict.
    rank : int or None
        The predicted rank.
    sentence : str
        The closed-form reason, with its numbers.
    applies : bool
        Whether the closed form's hypotheses hold (else it only explains).
    details : dict
        The conditions and their numbers (reported in ``certificate.conditions``).
    summary : str
        A short clause added to the engine's reason when the prediction does not apply.
    """

    verdict: str
    rank: int | None
    sentence: str
    applies: bool
    details: dict[str, Any]
    summary: str = ""


@dataclass(frozen=True)
class Context(CanonicalShift):
    """Everything a verdict needs besides the family.

    Attributes
    ----------
    similarity : str
        The latent similarity.
    tau : float
        Temperature.
    dim : int
        Embedding dimension.
    n : int
        Number of samples.
    tol : Tolerance
    method : str
    entropic_bound : float or None
    shift : float
        Canonical constant ``c`` minus the user's ``c`` (see :mod:`dgp.engine.target`); its
        inverse is :meth:`~dgp.engine.target.CanonicalShift.to_user_c`.
    objective : str or None
    warnings : tuple of str
    structure : dict or None
        Added to the certificate (what a structured engine reduced the problem to).
    notes : dict or None
        Added to the certificate (anything else worth saying).
    explanation : Explanation or None
        A closed-form prediction (named objectives).
    margins : tuple of Margin
        Decisions made before the family (the cycle condition), reported with its own.
    floor : callable or None
        Computes the loss floor in dimension ``dim`` (a :class:`dgp.optima.LossFloor`) for an
        inconsistent cosine verdict; called only then.
    suffix : str
        Appended to the reason (e.g. the column-normalisation diagnosis).
    embed : bool
        Build the embedding of a realizable verdict.
    """

    similarity: str
    tau: float
    dim: int
    n: int
    tol: Tolerance
    method: str
    entropic_bound: float | None
    shift: float = 0.0
    objective: str | None = None
    warnings: tuple[str, ...] = ()
    structure: dict[str, Any] | None = None
    notes: dict[str, Any] | None = None
    explanation: Explanation | None = None
    suffix: str = ""
    embed: bool = True
    margins: tuple[Margin, ...] = ()
    floor: Callable[[], Any] | None = None


def _build(
    ctx: Context,
    *,
    verdict: str,
    attainable: bool,
    reason: str,
    certificate: Certificate,
    rank: int | None = None,
    c_interval: tuple[float | None, float | None] | None = None,
    c: float | None = None,
    min_dim: int | None = None,
    near: bool = False,
    embedding: np.ndarray | None = None,
    c_resolution: float = 0.0,
) -> Classification:
    if near:
        reason += NEAR_NOTE
    ex = ctx.explanation
    if ex is not None:
        agrees = bool(ex.applies and ex.verdict == verdict and ex.rank == rank)
        certificate = replace(certificate,
                              conditions={**ex.details, "agrees_with_engine": agrees})
    loss_floor = None
    if verdict == "inconsistent" and ctx.similarity == "cosine":
        loss_floor, note = _loss_floor(ctx)
        certificate = replace(certificate, notes={**(certificate.notes or {}), "loss_floor": note})
    return Classification(
        verdict=verdict,
        attainable=attainable,
        similarity=ctx.similarity,
        n=ctx.n,
        dim=ctx.dim,
        tau=ctx.tau,
        rank=rank,
        c_interval=c_interval,
        entropic_bound=ctx.entropic_bound,
        reason=reason + ctx.suffix,
        certificate=certificate,
        min_dim=min_dim,
        near_threshold=bool(near),
        tolerance=ctx.tol.to_dict(),
        method=ctx.method,
        c=c,
        objective=ctx.objective,
        embedding=embedding,
        loss_floor=loss_floor,
        warnings=ctx.warnings,
        c_resolution=c_resolution,
    )


def _loss_floor(ctx: Context) -> tuple[float | None, Any]:
    """The optimum's excess over the bound in ``R^dim`` when certified, and what was found."""
    from dgp.errors import ParameterError, SolverError

    if ctx.floor is None:
        return None, "not computed for this size (use dgp.optima.loss_floor or dgp optimum)"
    try:
        lf = ctx.floor()
    except (ParameterError, SolverError) as exc:
        return None, f"not computed: {exc}"
    note = lf.to_dict()
    if not lf.certified:
        note["statement"] = (f"the loss floor in dim = {ctx.dim} lies in [{lf.lower:.6g}, "
                             f"{lf.upper:.6g}] nats above the bound (not certified)")
        return None, note
    return float(lf.upper), note


def _common(ctx: Context, margins: tuple[Margin, ...], structure: dict | None) -> dict:
    merged = dict(ctx.structure or {})
    merged.update(structure or {})
    return {
        "margins": (*ctx.margins, *margins),
        "structure": merged or None,
        "conditions": None if ctx.explanation is None else ctx.explanation.details,
        "notes": ctx.notes,
    }


def _decided(
    ctx: Context, verdict: str, reason: str, *, attainable: bool | None = None,
    rank: int | None = None, **fields: Any,
) -> Classification:
    """The result of one verdict: the closed-form reason when it agrees, then :func:`_build`.
    ``attainable`` defaults to "the verdict is not inconsistent"."""
    return _build(ctx, verdict=verdict,
                  attainable=verdict != "inconsistent" if attainable is None else attainable,
                  reason=_explained(ctx, verdict, rank, reason), rank=rank, **fields)


def _explained(ctx: Context, verdict: str, rank: int | None, reason: str) -> str:
    """The closed-form sentence when it applies and agrees, else the engine's reason."""
    ex = ctx.explanation
    if ex is None:
        return reason
    if ex.applies and ex.verdict == verdict and ex.rank == rank:
        return ex.sentence
    return f"{reason} ({ex.summary})" if ex.summary else reason


def _resolution(ctx: Context, fam: Family) -> float:
    """How close to zero a reported ``c`` is indistinguishable from zero."""
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
    common = _common(ctx, fam.margins, fam.structure)
    if fam.status == "empty":
        return _empty(fam, ctx, near, common)
    if fam.similarity == "euclidean":
        return _euclidean(fam, ctx, near, res, common)
    return _cosine(fam, ctx, near, res, common)


def _empty(fam: Family, ctx: Context, near: bool, common: dict) -> Classification:
    # the maximiser of a concave function is located to the search's tolerance, not to the
    # last digit (the thread count moves it there): the sentence gives it to 3 digits, as the
    # value; the certificate keeps it in full (c_at_max)
    c0 = ctx.to_user_c(fam.best_c)
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
            c_nearest=float(ctx.to_user_c(near_t.get("c_nearest", float("nan")))),
            nearest_target=near_t.get("nearest_target"), **common,
        )
    return _decided(ctx, "inconsistent", reason,
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
        c_interval=(ctx.to_user_c(lo.c), ctx.to_user_c(hi.c)),
        ranks={"lo": lo.rank, "hi": hi.rank, "interior": fam.interior_rank},
        zeros={"lo": lo.zeros, "hi": hi.zeros},
        eigenvalues_lo=lo.low, eigenvalues_hi=hi.low, atol_lo=lo.atol, atol_hi=hi.atol,
        max_min_eigenvalue=fam.best_value, c_at_max=ctx.to_user_c(fam.best_c),
        prototypes=fam.prototypes, **common,
    )


def _embedding(fam: Family, ctx: Context, end: End) -> np.ndarray | None:
    if not ctx.embed or fam.embed is None:
        return None
    return fam.embed(end.c, end.rank)


def _cosine(fam: Family, ctx: Context, near: bool, res: float, common: dict) -> Classification:
    d, n = ctx.dim, ctx.n
    cert = _spectrum_cert(fam, ctx, common)
    fc = lambda c: format_c(ctx.to_user_c(c), res)  # noqa: E731
    if fam.status == "point":
        end = fam.hi
        c0 = ctx.to_user_c(end.c)
        if end.rank <= d:
            reason = (f"only c = {fc(end.c)} makes G(c) PSD; its target has rank {end.rank} <= "
                      f"dim = {d}, unique up to rotation")
            return _decided(ctx, "realizable", reason,
                          certificate=cert, rank=end.rank, c_interval=(c0, c0), c=c0,
                          min_dim=max(1, end.rank), near=near,
                          embedding=_embedding(fam, ctx, end), c_resolution=res)
        reason = (f"only c = {fc(end.c)} makes G(c) PSD, and its target has rank {end.rank} > "
                  f"dim = {d}")
        return _decided(ctx, "inconsistent", reason,
                      certificate=cert, c_interval=(c0, c0), min_dim=max(1, end.rank),
                      near=near, c_resolution=res)
    lo, hi = fam.lo, fam.hi
    interval = (ctx.to_user_c(lo.c), ctx.to_user_c(hi.c))
    span = f"[{fc(lo.c)}, {fc(hi.c)}]"
    min_dim = max(1, min(lo.rank, hi.rank))
    if n <= d:
        reason = (f"dim = {d} >= N = {n}: every c in {span} gives an optimal target (rank {n} "
                  "inside): infinitely many non-isometric minimisers")
        return _decided(ctx, "degenerate", reason,
                      certificate=cert, c_interval=interval, min_dim=min_dim, near=near,
                      c_resolution=res)
    ok = [e for e in (lo, hi) if e.rank <= d]
    if len(ok) == 2:
        reason = (f"both end points c = {fc(lo.c)} and c = {fc(hi.c)} give optimal targets, of "
                  f"rank {lo.rank} and {hi.rank} <= dim = {d}: two non-isometric minimisers")
        return _decided(ctx, "degenerate", reason,
                      certificate=cert, c_interval=interval, min_dim=min_dim, near=near,
                      c_resolution=res)
    if len(ok) == 1:
        end = ok[0]
        other = hi if end is lo else lo
        reason = (f"the end point c = {fc(end.c)} of {span} gives the only optimal target in "
                  f"dim = {d}: rank {end.rank} (the other end needs {other.rank}, the interior "
                  f"{n}), unique up to rotation")
        c0 = ctx.to_user_c(end.c)
        return _decided(ctx, "realizable", reason,
                      certificate=cert, rank=end.rank, c_interval=interval, c=c0,
                      min_dim=min_dim, near=near, embedding=_embedding(fam, ctx, end),
                      c_resolution=res)
    ends = (f"{lo.rank} at both end points" if lo.rank == hi.rank else
            f"{lo.rank} at the lower end point and {hi.rank} at the upper one")
    reason = (f"every admissible target (c in {span}) needs more than dim = {d} dimensions: "
              f"{ends}, {n} inside")
    return _decided(ctx, "inconsistent", reason,
                  certificate=cert, c_interval=interval, min_dim=min_dim, near=near,
                  c_resolution=res)


def _euclidean(fam: Family, ctx: Context, near: bool, res: float, common: dict) -> Classification:
    d, n = ctx.dim, ctx.n
    end = fam.hi
    c_max = ctx.to_user_c(end.c)
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
        return _decided(ctx, "degenerate", reason,
                      certificate=cert, c_interval=interval, min_dim=min_dim, near=near,
                      c_resolution=res)
    if end.rank <= d:
        reason = (f"only c_max = {cm} gives an optimal configuration in dim = {d}: rank "
                  f"{end.rank} (every c < c_max needs N - 1 = {n - 1}), unique up to rigid "
                  "motion")
        return _decided(ctx, "realizable", reason,
                      certificate=cert, rank=end.rank, c_interval=interval, c=c_max,
                      min_dim=min_dim, near=near, embedding=_embedding(fam, ctx, end),
                      c_resolution=res)
    reason = (f"the target at c_max = {cm} needs dimension {end.rank} > dim = {d} (and every "
              f"c < c_max needs N - 1 = {n - 1})")
    return _decided(ctx, "inconsistent", reason,
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
        **_common(ctx, (margin,), None),
    )
    return _decided(ctx, "inconsistent", reason,
                  certificate=cert, near=margin.near)


def zero_weight_cosine(ctx: Context, *, entry: tuple[int, int], n_zero: int) -> Classification:
    """The verdict on zero weights under the (bounded) cosine similarity."""
    i, j = entry
    reason = (f"W[{i}, {j}] = 0 needs s_ij = -inf, impossible for the bounded cosine "
              "similarity; the loss minimum lies strictly above the bound")
    cert = ZeroWeightCertificate(
        statement=ZeroWeightCertificate.TEXT,
        entry=(int(i), int(j)), zero_weights=int(n_zero), **_common(ctx, (), None),
    )
    return _decided(ctx, "inconsistent", reason,
                  certificate=cert)


def blocks_verdict(
    ctx: Context,
    *,
    n_blocks: int,
    failing: tuple[int, str] | None,
    blocks: tuple[dict[str, Any], ...],
    n_zero: int,
    margins: tuple[Margin, ...] = (),
) -> Classification:
    """The verdict on Euclidean zero weights across complete blocks: degenerate when every block
    is realisable in ``dim`` (the blocks drift apart), else inconsistent."""
    cert = BlocksCertificate(
        statement=BlocksCertificate.TEXT,
        zero_weights=int(n_zero), blocks=blocks, **_common(ctx, margins, None),
    )
    near = any(m.near for m in margins)
    if failing is not None:
        reason = (f"zero weights split W into {n_blocks} blocks and block {failing[0]} "
                  f"{failing[1]}, so the bound cannot even be approached")
        return _decided(ctx, "inconsistent", reason,
                      certificate=cert, near=near)
    reason = (f"zero weights split W into {n_blocks} blocks; the bound is approached only as the "
              "blocks drift infinitely far apart (minimising sequences diverge, no minimiser)")
    return _decided(ctx, "degenerate", reason, attainable=False, certificate=cert,
                  near=near)


# ----------------------------------------------------------------------------------------------
# zero-weight patterns under the Euclidean similarity (decided in dgp.engine.zeros)
# ----------------------------------------------------------------------------------------------


def _path(cycle: tuple[int, ...]) -> str:
    shown = cycle if len(cycle) <= 12 else (*cycle[:10], "...", cycle[-1])
    return " -> ".join(str(v) for v in shown)


def zero_cycle_broken(
    ctx: Context, *, cycle: tuple[int, ...], log_ratio: float, margin: Margin, n_zero: int
) -> Classification:
    """Zero weights whose positive weights break the cycle condition on the mutual graph."""
    reason = (f"the positive weights break the cycle condition: around the cycle "
              f"{_path(cycle)} (pairs weighted both ways) they multiply to exp({log_ratio:.3g}) "
              "times their reverses, so not even a diverging sequence matches every row "
              "distribution; the loss minimum lies strictly above the bound")
    cert = CycleCertificate(
        statement=CycleCertificate.TEXT + " (a fundamental cycle of the pairs weighted both "
        "ways; the other pairs include zero weights)",
        cycle=tuple(int(v) for v in cycle), log_ratio=float(log_ratio), tolerance=margin.atol,
        **_common(ctx, (margin,), {"zero_weights": int(n_zero)}),
    )
    return _decided(ctx, "inconsistent", reason, certificate=cert, near=margin.near)


def zero_scale_order(
    ctx: Context, *, cycle: tuple[int, ...], steps: tuple[str, ...], n_zero: int
) -> Classification:
    """Zero weights whose one-way positive weights cannot be ordered by row scale."""
    reason = (f"the zero weights cannot be approached in any dimension: along {_path(cycle)} "
              "every step is a positive weight, and a one-way step (w_ij > 0 = w_ji) needs the "
              "row scale a_i infinitely above a_j while a mutual step keeps them within a "
              "constant, which cannot close around a cycle; the loss minimum lies strictly "
              "above the bound")
    cert = ScaleOrderCertificate(
        statement=ScaleOrderCertificate.TEXT, cycle=tuple(int(v) for v in cycle),
        steps=tuple(steps), zero_weights=int(n_zero), **_common(ctx, (), None),
    )
    return _decided(ctx, "inconsistent", reason, certificate=cert)


def zero_obstructed(ctx: Context, *, component: Any, n_zero: int) -> Classification:
    """Zero weights with a geometric obstruction in dimension ``dim`` (a component of
    :mod:`dgp.engine.zeros`)."""
    info = dict(component.info)
    detail = {k: v for k, v in info.items()
              if k not in ("members", "obstruction", "vertices", "reason", "X0", "Y")}
    if "c_max" in detail:
        detail["c_max"] = ctx.to_user_c(detail["c_max"])
    near = any(m.near for m in component.margins)
    vs = tuple(int(v) for v in component.vertices)
    shown = ", ".join(str(v) for v in vs[:8]) + (", ..." if len(vs) > 8 else "")
    reason = (f"the zero weights cannot be approached in dim = {ctx.dim}: "
              f"{info.get('reason', component.kind)} (samples {shown}); the loss minimum lies "
              "strictly above the bound")
    cert = ZeroObstructionCertificate(
        statement=ZeroObstructionCertificate.TEXT, zero_weights=int(n_zero),
        obstruction=component.kind, vertices=vs,
        members=tuple(int(v) for v in component.members), dim=ctx.dim, detail=detail,
        **_common(ctx, tuple(component.margins), None),
    )
    return _decided(ctx, "inconsistent", reason, certificate=cert, near=near)


def zero_undecided(
    ctx: Context, *, component: Any, n_zero: int, threshold: float
) -> Classification:
    """Zero weights dgp could not decide exactly: the verdict follows the numerical evidence
    (stated as such in the reason and in ``certificate.decided``)."""
    ev = component.evidence
    approached = ev is not None and ev < threshold
    verdict = "degenerate" if approached else "inconsistent"
    if ev is None:
        why = ("no numerical evidence was computed (component too large), so dgp reports "
               "inconsistent")
    else:
        why = (f"a numerical minimisation of the loss reached a gap of {ev:.2g} nats per "
               f"sample, {'below' if approached else 'above'} {threshold:g}, so dgp reports "
               f"{verdict}")
    members = component.members
    reason = (f"not decided exactly: for the {members.size} samples joined by positive weights "
              f"from sample {int(members[0])}, dgp found neither an obstruction nor a family "
              f"approaching the bound in dim = {ctx.dim}; {why} (unproven)")
    cert = ZeroUndecidedCertificate(
        statement=ZeroUndecidedCertificate.TEXT, zero_weights=int(n_zero),
        members=tuple(int(v) for v in members), dim=ctx.dim, tried=tuple(component.tried),
        evidence=ev, evidence_threshold=float(threshold), **_common(ctx, (), None),
    )
    return _decided(ctx, verdict, reason, attainable=False, certificate=cert)


def zero_approached(
    ctx: Context, *, components: tuple[Any, ...], t: list[float], gaps: list[float],
    offset: float, n_zero: int, sources: tuple[dict[str, Any], ...] = (),
) -> Classification:
    """Zero weights approached by an explicit diverging family (degenerate, never attained)."""
    entries = []
    margins: list[Margin] = []
    for c in components:
        e = dict(c.info)
        for key in ("c_max", "c"):
            if key in e:
                e[key] = ctx.to_user_c(e[key])
        e["family"] = "X0 / t + t Y" if c.kind == "scaled" else "X0 (fixed)"
        entries.append(e)
        margins.extend(c.margins)
    near = any(m.near for m in margins)
    if gaps:
        shown = ", ".join(f"{g:.2g}" for g in gaps)
        ts = ", ".join(f"{x:.3g}" for x in t)
        tail = f"its entropic gap is {shown} at t = {ts}, tending to 0"
    else:
        tail = "its gap tends to 0 (not evaluated: N is above the listing limit)"
    reason = (f"the zero weights are approached, never attained: an explicit family Z(t) of "
              f"embeddings in dim = {ctx.dim} diverges as t -> 0 and {tail}; minimising "
              "sequences diverge (no minimiser)")
    cert = DivergingFamilyCertificate(
        statement=DivergingFamilyCertificate.TEXT, zero_weights=int(n_zero),
        components=tuple(entries), t=tuple(float(x) for x in t),
        gaps=tuple(float(g) for g in gaps), offset_scale=float(offset), sources=sources,
        **_common(ctx, tuple(margins), None),
    )
    return _decided(ctx, "degenerate", reason, attainable=False, certificate=cert, near=near)
