"""The verdicts on zero weights: under the bounded cosine similarity, across complete blocks, and
the Euclidean zero-weight patterns decided in :mod:`dgp.engine.zeros`."""

from __future__ import annotations

from typing import Any

from dgp.engine._verdict_build import Context, certificate_fields, decided
from dgp.engine.certificates import (
    BlocksCertificate,
    CycleCertificate,
    DivergingFamilyCertificate,
    ScaleOrderCertificate,
    ZeroObstructionCertificate,
    ZeroUndecidedCertificate,
    ZeroWeightCertificate,
)
from dgp.result import Classification
from dgp.tolerance import Margin


def zero_weight_cosine(ctx: Context, *, entry: tuple[int, int], n_zero: int) -> Classification:
    """The verdict on zero weights under the (bounded) cosine similarity."""
    i, j = entry
    reason = (f"W[{i}, {j}] = 0 needs s_ij = -inf, impossible for the bounded cosine "
              "similarity; the loss minimum lies strictly above the bound")
    cert = ZeroWeightCertificate(
        statement=ZeroWeightCertificate.TEXT,
        entry=(int(i), int(j)), zero_weights=int(n_zero), **certificate_fields(ctx, (), None),
    )
    return decided(ctx, "inconsistent", reason,
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
        zero_weights=int(n_zero), blocks=blocks, **certificate_fields(ctx, margins, None),
    )
    near = any(m.near for m in margins)
    if failing is not None:
        reason = (f"zero weights split W into {n_blocks} blocks and block {failing[0]} "
                  f"{failing[1]}, so the bound cannot even be approached")
        return decided(ctx, "inconsistent", reason,
                      certificate=cert, near=near)
    reason = (f"zero weights split W into {n_blocks} blocks; the bound is approached only as the "
              "blocks drift infinitely far apart (minimising sequences diverge, no minimiser)")
    return decided(ctx, "degenerate", reason, attainable=False, certificate=cert,
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
        **certificate_fields(ctx, (margin,), {"zero_weights": int(n_zero)}),
    )
    return decided(ctx, "inconsistent", reason, certificate=cert, near=margin.near)


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
        steps=tuple(steps), zero_weights=int(n_zero), **certificate_fields(ctx, (), None),
    )
    return decided(ctx, "inconsistent", reason, certificate=cert)


def zero_obstructed(ctx: Context, *, component: Any, n_zero: int) -> Classification:
    """Zero weights with a geometric obstruction in dimension ``dim`` (a component of
    :mod:`dgp.engine.zeros`)."""
    info = dict(component.info)
    detail = {k: v for k, v in info.items()
              if k not in ("members", "obstruction", "vertices", "reason", "X0", "Y")}
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
        **certificate_fields(ctx, tuple(component.margins), None),
    )
    return decided(ctx, "inconsistent", reason, certificate=cert, near=near)


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
        evidence=ev, evidence_threshold=float(threshold), **certificate_fields(ctx, (), None),
    )
    return decided(ctx, verdict, reason, attainable=False, certificate=cert)


def zero_approached(
    ctx: Context, *, components: tuple[Any, ...], t: list[float], gaps: list[float],
    offset: float, n_zero: int, sources: tuple[dict[str, Any], ...] = (),
) -> Classification:
    """Zero weights approached by an explicit diverging family (degenerate, never attained)."""
    entries = []
    margins: list[Margin] = []
    for c in components:
        e = dict(c.info)  # in the user's constants (ComponentDecision.in_user_frame)
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
        **certificate_fields(ctx, tuple(margins), None),
    )
    return decided(ctx, "degenerate", reason, attainable=False, certificate=cert, near=near)
