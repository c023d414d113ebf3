"""The verdict on a zero pattern: the decision turned into a classification (dense and
class-block paths)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from dgp.engine import rules
from dgp.engine.rules import Context
from dgp.engine.target import LogWeights
from dgp.engine.zeros._components import clique
from dgp.engine.zeros._decide import decide_pattern
from dgp.engine.zeros._families import diverging_family, source_of, vanishing
from dgp.engine.zeros._pattern import ZeroPattern, mutual_pairs
from dgp.engine.zeros._search import undecided_component
from dgp.engine.zeros._split import Component, SplitPattern, ZeroComponents, as_split
from dgp.result import Classification


def classify_pattern(pattern: ZeroPattern | SplitPattern, ctx: Context, *,
                     seed: int = 0) -> Classification:
    """The verdict on a zero pattern (module docstring), split into its support components
    (:class:`~dgp.engine.zeros._split.ZeroComponents`) unless it comes split; the dense, sparse
    and class-block paths all come here."""
    if ctx.similarity == "cosine":
        whole = pattern.pattern if isinstance(pattern, SplitPattern) else pattern
        return rules.zero_weight_cosine(ctx, entry=whole.first_zero, n_zero=whole.n_zero)
    split = as_split(pattern)
    pattern = split.pattern
    dec = decide_pattern(split, dim=ctx.dim, tau=ctx.tau, tol=ctx.tol, seed=seed)
    if dec.kind == "cycle":
        return rules.zero_cycle_broken(ctx, cycle=dec.cycle, log_ratio=dec.log_ratio,
                                       margin=dec.margin, n_zero=pattern.n_zero)
    if dec.kind == "order":
        return rules.zero_scale_order(ctx, cycle=dec.cycle, steps=dec.steps,
                                      n_zero=pattern.n_zero)
    comps = dec.components
    # what the verdict reports of each component, in the user's constants (the one inverse);
    # the diverging family below places the canonical ones
    shown = tuple(c.in_user_frame(ctx) for c in comps)
    if dec.kind == "blocks":
        blocks = tuple({"members": c.info["members"], "c_max": c.info["c_max"],
                        "rank": c.info["rank"], "ok": True} for c in shown)
        margins = tuple(m for c in shown for m in c.margins)
        return rules.blocks_verdict(ctx, n_blocks=len(comps), failing=None, blocks=blocks,
                                    n_zero=pattern.n_zero, margins=margins)
    failing = next((c for c in shown if c.status == "obstructed"), None)
    if failing is not None:
        if failing.kind == "clique_rank" and all(c.kind in ("fixed", "clique_rank")
                                                 for c in shown) and \
                _all_cliques(split):
            return _blocks_failure(split, shown, ctx)
        return rules.zero_obstructed(ctx, component=failing, n_zero=pattern.n_zero)
    undecided = [c for c in shown if c.status == "undecided"]
    if undecided:
        return rules.zero_undecided(ctx, component=undecided[0], n_zero=pattern.n_zero,
                                    threshold=ctx.tol.evidence_threshold)
    ts, gaps, offset, sources, failed = diverging_family(pattern, comps, ctx.dim, ctx.tau,
                                                         ctx.tol, dec.peeled)
    if sources and gaps:  # the placement's own check, never silent
        ok, margin = vanishing(gaps, ts, n=pattern.n, tau=ctx.tau, tol=ctx.tol)
        ctx = replace(ctx, margins=(*ctx.margins, margin))
        if not ok:
            sources, failed = None, (*source_of(dec.peeled, sources[-1]["sample"]),
                                     "the family's gap does not vanish at the listed t")
    if sources is None:
        i, j, pe, *why = failed
        why = why[0] if why else f"no direction found in which {j} is exposed"
        tried = [*pe.base["tried"], f"pure source {i} placed beyond its positive {j}: {why}"]
        base = {k: v for k, v in pe.base.items() if k != "tried"}
        comp = undecided_component(pattern, Component(pe.members, pe.sel, pattern), base,
                                   tried, dim=ctx.dim, tau=ctx.tau, tol=ctx.tol)
        return rules.zero_undecided(ctx, component=comp, n_zero=pattern.n_zero,
                                    threshold=ctx.tol.evidence_threshold)
    return rules.zero_approached(ctx, components=shown, t=ts, gaps=gaps, offset=offset,
                                 n_zero=pattern.n_zero, sources=tuple(sources))


def _all_cliques(split: SplitPattern) -> bool:
    """Whether the support is a union of complete blocks (symmetric): every sample has a
    positive weight to every other member of its component (the split's own parts)."""
    pattern = split.pattern
    mutual, _, _ = mutual_pairs(pattern)
    if not mutual.all():
        return False
    per_row = np.bincount(pattern.rows, minlength=pattern.n)
    return all(bool((per_row[p.members] == p.members.size - 1).all()) for p in split.parts)


def _blocks_failure(split: SplitPattern, comps, ctx) -> Classification:
    """Complete blocks with a block whose own target does not fit (as before); ``comps`` in
    the user's constants."""
    pattern, parts = split.pattern, split.parts
    done = {int(c.members[0]): c for c in comps}
    blocks, failing, margins = [], None, []
    for b, part in enumerate(parts):
        idx = part.members
        c = done.get(int(idx[0]))
        if c is None:  # not examined (after the first failing block): decide it now
            c = clique(pattern, part, dim=ctx.dim, tau=ctx.tau, tol=ctx.tol,
                        base={"members": idx.tolist()}).in_user_frame(ctx)
        ok = c.kind == "fixed"
        blocks.append({"members": idx.tolist(), "c_max": c.info["c_max"],
                       "rank": c.info["rank"], "ok": ok})
        margins.extend(c.margins)
        if not ok and failing is None:
            failing = (b, f"needs dimension {c.info['rank']} > dim = {ctx.dim}")
    return rules.blocks_verdict(ctx, n_blocks=len(parts), failing=failing, blocks=tuple(blocks),
                                n_zero=pattern.n_zero, margins=tuple(margins))


def classify_zeros(weights: LogWeights, ctx: Context) -> Classification:
    """The verdict on a dense weighting with zero weights (see :func:`classify_pattern`)."""
    if ctx.similarity == "cosine":
        return rules.zero_weight_cosine(ctx, entry=weights.first_zero, n_zero=weights.n_zero)
    return classify_pattern(ZeroComponents().apply(weights)[0], ctx)
