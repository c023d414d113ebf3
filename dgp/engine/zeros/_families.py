"""The diverging family :math:`Z(t)` of an approached pattern: its components placed apart,
the pure sources placed beyond their targets, and its entropic gap at a few ``t``."""

from __future__ import annotations

import itertools
import math

import numpy as np

from dgp.constants import ZERO_GAP, ZERO_GAP_DECAY
from dgp.engine.target import row_blocks
from dgp.engine.zeros._pattern import ComponentDecision, Peeled, ZeroPattern
from dgp.tolerance import NEAR, Margin, Tolerance

#: largest N whose family gaps are evaluated (an O(N^2) pass per t)
GAP_MAX_N = 20000
#: a candidate direction of a pure source counts when its norm is above this times the scale
#: of the coefficients (else it is the rounding of a difference of equal ones)
DIRECTION_RTOL = 1e-12
#: a projection on a direction is nonzero (not a tie) above this times the coefficient scale
TIE_RTOL = 1e-9


def pattern_gap(pattern: ZeroPattern, Z: np.ndarray, tau: float) -> float:
    r""":math:`\sum_i \mathrm{KL}(p_i \| q_i)` of embeddings ``Z`` (Euclidean similarity), in
    log space, by blocks of rows (from exact coordinate differences).

    Examples
    --------
    >>> pat = ZeroPattern.from_pairs(3, np.array([0, 1, 1, 2]), np.array([1, 0, 2, 1]),
    ...                              np.zeros(4))
    >>> pattern_gap(pat, np.array([[0.0], [10.0], [20.0]]), 1.0) < 1e-12
    True
    """
    from scipy.special import logsumexp

    n = pattern.n
    starts = np.searchsorted(pattern.rows, np.arange(n + 1))
    # log p on the positive pairs, row by row (segment reductions)
    seg = np.maximum.reduceat(pattern.logw, starts[:-1])
    shifted = np.exp(pattern.logw - seg[pattern.rows])
    lse = seg + np.log(np.add.reduceat(shifted, starts[:-1]))
    logp = pattern.logw - lse[pattern.rows]
    p = np.exp(logp)
    total = 0.0
    for sl in row_blocks(n):
        rows = np.arange(sl.start, sl.stop)
        D = np.zeros((rows.size, n))
        for k in range(Z.shape[1]):
            D += (Z[rows, k][:, None] - Z[None, :, k]) ** 2
        S = -D / (2.0 * tau)
        S[np.arange(rows.size), rows] = -np.inf
        logq = S - logsumexp(S, axis=1, keepdims=True)
        a, b = starts[sl.start], starts[sl.stop]
        lq = logq[pattern.rows[a:b] - sl.start, pattern.cols[a:b]]
        total += float(p[a:b] @ (logp[a:b] - lq))
    return max(total, 0.0)


def _coefficients(pattern: ZeroPattern, comps, dim: int, offset: float, n_pow: int):
    """Z(t) of the components as a polynomial in 1/t: ``C[v, k]`` multiplies ``t^-(p_k)``,
    powers ``p = n_pow + 2, ..., 2, 1, 0, -1`` (component shift, X0 of a scaled family, a
    fixed block, Y), and the mask of the samples placed."""
    C = np.zeros((pattern.n, n_pow + 4, dim))
    placed = np.zeros(pattern.n, dtype=bool)
    top = n_pow  # index of the power 2
    for k, c in enumerate(comps):
        m = c.members
        C[m, top, 0] = offset * k
        if c.kind == "scaled":
            C[m, top + 1] = c.X0
            C[m, top + 3] = c.Y
        else:
            C[m, top + 2] = c.X0
        placed[m] = True
    return C, placed


def _exposing_direction(C: np.ndarray, placed: np.ndarray, j: int, hint: list[np.ndarray]):
    """A unit vector u with <u, z_j(t) - z_l(t)> positive at leading order for every placed
    l != j (lexicographically over the powers of 1/t), from a few candidates, or ``None``."""
    others = np.flatnonzero(placed)
    others = others[others != j]
    if others.size == 0:
        return np.eye(C.shape[2])[0]
    diff = C[j][None] - C[others]  # (l, power, dim)
    scale = float(np.abs(C[placed]).max(initial=1.0))
    dim = C.shape[2]
    cands = [*hint]
    for k in range(dim):
        e = np.zeros(dim)
        e[k] = 1.0
        cands += [e, -e]
    for q in range(C.shape[1]):
        v = C[j, q] - C[placed, q].mean(axis=0)
        if np.linalg.norm(v) > DIRECTION_RTOL * scale:
            cands.append(v / np.linalg.norm(v))
    for u in cands:
        proj = diff @ u  # (l, power)
        nz = np.abs(proj) > TIE_RTOL * scale
        if not nz.any(axis=1).all():
            continue  # some l ties with j at every power
        lead = proj[np.arange(proj.shape[0]), nz.argmax(axis=1)]
        if (lead > 0).all():
            return u
    return None


def _place_sources(pattern, comps, peeled, dim: int, offset: float):
    """Each pure source i at z_j(t) + offset u / t^(3 + k) beyond its target j (placed in
    reverse peel order, k counting the sources placed before), or the first that cannot be
    placed."""
    order = [(i, j, pe) for pe in peeled for i, j in reversed(pe.sources)]
    if not order:
        return [], None
    C, placed = _coefficients(pattern, comps, dim, offset, len(order))
    out, direction = [], {}
    for k, (i, j, pe) in enumerate(order):
        hint = [direction[j]] if j in direction else []
        u = _exposing_direction(C, placed, j, hint)
        if u is None:
            return None, (i, j, pe)
        power = 3 + k
        C[i] = C[j]
        C[i, len(order) + 2 - power] += offset * u
        placed[i] = True
        direction[i] = u
        out.append({"sample": i, "target": j, "direction": u.tolist(), "radius": offset,
                    "power": power})
    return out, None


def vanishing(gaps: list[float], ts: list[float], *, n: int, tau: float,
              tol: Tolerance) -> tuple[bool, Margin]:
    """Whether the gaps decrease along the listed t until they are (numerically) zero, and the
    margin of the last one.

    Zero is :meth:`Tolerance.gap_atol` of the ``n`` rows at the size of the positive-pair
    similarities, ``1 / (2 tau t^2)`` at the last ``t`` (the rounding of a row grows with it);
    the last gap must fall below ``ZERO_GAP_DECAY`` times the first, up to ``1 / ZERO_GAP_DECAY``
    zero levels."""
    atol = tol.gap_atol(n, 1.0 / (2.0 * tau * ts[-1] ** 2))
    level = ZERO_GAP_DECAY * gaps[0] + atol / ZERO_GAP_DECAY
    margin = Margin("entropic gap of the family at the last listed t (accepted below atol, "
                    "decreasing along t down to its zero level)", gaps[-1], level,
                    bool(gaps[-1] > level / NEAR))
    ok = gaps[-1] <= level and all(b <= a * (1 + ZERO_GAP) or b <= atol
                                   for a, b in itertools.pairwise(gaps))
    return ok, margin


def source_of(peeled: tuple[Peeled, ...], i: int) -> tuple[int, int, Peeled]:
    """The peeled record and target of source ``i``."""
    pe = next(pe for pe in peeled if any(s == i for s, _ in pe.sources))
    return i, next(j for s, j in pe.sources if s == i), pe


def diverging_family(pattern: ZeroPattern, comps: tuple[ComponentDecision, ...], dim: int,
                     tau: float, tol: Tolerance, peeled: tuple[Peeled, ...] = ()):
    """The whole family Z(t) and its gaps at a few t; ``sources`` is ``None`` when a pure
    source cannot be placed (then ``failed`` names it). The scaled components' slack enters
    the listed t, floored at :meth:`Tolerance.slack_atol`."""
    diam = 1.0
    for c in comps:
        if c.X0 is not None and c.X0.size:
            diam = max(diam, float(np.ptp(c.X0, axis=0).max()))
        if c.Y is not None and c.Y.size:
            diam = max(diam, float(np.ptp(c.Y, axis=0).max()))
    offset = 4.0 * (diam + 1.0)
    slack = min([c.info.get("min_slack", 1.0) for c in comps if c.kind == "scaled"] + [1.0])
    slack = min(max(slack, tol.slack_atol()), 1.0)
    # t halves: the leakage onto the zero weights, ~exp(-slack / (2 tau t^2)), goes exp(-2),
    # exp(-8), exp(-32), ...; the O(t^2) error of the positive pairs costs O(t^4) in the gap
    ts = [math.sqrt(slack / (4.0 * tau)) / 2.0**k for k in range(5)]

    sources, failed = _place_sources(pattern, comps, peeled, dim, offset)
    if sources is None:
        return ts, [], offset, None, failed

    def Z(t: float) -> np.ndarray:
        out = np.zeros((pattern.n, dim))
        for k, c in enumerate(comps):
            if c.kind == "scaled":
                P = c.X0 / t + t * c.Y
            else:
                P = c.X0.copy()
            P[:, 0] += offset * k / t**2
            out[c.members] = P
        for src in sources:
            out[src["sample"]] = out[src["target"]] + (
                src["radius"] * np.asarray(src["direction"]) / t ** src["power"])
        return out

    gaps = [pattern_gap(pattern, Z(t), tau) for t in ts] if pattern.n <= GAP_MAX_N else []
    return ts, gaps, offset, sources, None
