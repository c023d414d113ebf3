"""The decision on a whole pattern: the cycle condition, the scale order, then each support
component."""

from __future__ import annotations

import numpy as np

from dgp.engine.zeros._components import asymmetric_component, symmetric_component
from dgp.engine.zeros._order import potentials, scale_order
from dgp.engine.zeros._pattern import (
    ComponentDecision,
    PatternDecision,
    Peeled,
    ZeroPattern,
    mutual_pairs,
)
from dgp.engine.zeros._split import SplitPattern, as_split
from dgp.tolerance import Tolerance


def decide_pattern(pattern: ZeroPattern | SplitPattern, *, dim: int, tau: float,
                   tol: Tolerance, seed: int = 0) -> PatternDecision:
    """Decide a zero pattern under the Euclidean similarity (module docstring): the cycle
    condition and scale order on the whole pattern, then each support component as a problem
    of its own (the parts of :class:`~dgp.engine.zeros._split.SplitPattern`, split here when
    ``pattern`` is not split yet)."""
    split = as_split(pattern)
    pattern = split.pattern
    mutual, rev, _ = mutual_pairs(pattern)
    psi, cycle, log_ratio, margin, label = potentials(pattern, mutual, rev, tol)
    if cycle:
        return PatternDecision("cycle", cycle=cycle, log_ratio=log_ratio, margin=margin)
    bad, _height = scale_order(pattern, mutual, label)
    if bad is not None:
        return PatternDecision("order", cycle=bad[0], steps=bad[1])
    rng = np.random.default_rng(seed)
    out: list[ComponentDecision] = []
    peeled: list[Peeled] = []
    for part in split.parts:
        one_way = bool((~mutual[part.sel]).any())
        if one_way:
            decs, peel = asymmetric_component(pattern, part, mutual, psi, dim=dim,
                                               tau=tau, tol=tol, rng=rng)
            if peel is not None:
                peeled.append(peel)
        else:
            decs = [symmetric_component(pattern, part, psi, dim=dim, tau=tau, tol=tol,
                                         rng=rng)]
        out.extend(decs)
        if decs[-1].status == "obstructed":
            break
    kinds = {d.kind for d in out}
    if all(d.status == "approached" for d in out) and kinds <= {"fixed"} and \
            not (~mutual).any():
        return PatternDecision("blocks", components=tuple(out))
    return PatternDecision("components", components=tuple(out), peeled=tuple(peeled))
