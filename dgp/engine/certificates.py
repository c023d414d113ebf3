r"""Typed, frozen certificates: what a user re-checks to trust a verdict.

Every engine (dense, structured, SDP) returns the same certificate class for the same kind of
verdict, with ``to_dict()`` giving plain JSON values. Each certificate states in ``statement``
how it is checked. Fields common to all: ``margins`` (the decisive comparisons and their
tolerances, see :class:`dgp.tolerance.Margin`), ``structure`` (what a structured engine
reduced the problem to), ``conditions`` (the closed-form conditions of a named objective) and
``notes`` (anything else worth saying, e.g. why a number was not computed).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from dgp.records import CertificateProtocol, omit_none
from dgp.tolerance import NEAR, Margin

__all__ = [
    "BlocksCertificate",
    "Certificate",
    "CycleCertificate",
    "DivergingFamilyCertificate",
    "FarkasCertificate",
    "NearestTargetCertificate",
    "ScaleOrderCertificate",
    "SchoenbergCertificate",
    "SpectrumCertificate",
    "ZeroObstructionCertificate",
    "ZeroUndecidedCertificate",
    "ZeroWeightCertificate",
]


@dataclass(frozen=True, kw_only=True)
class Certificate(CertificateProtocol):
    """Base class of the engine's certificates: the fields every one carries (the protocol of
    :class:`dgp.records.CertificateProtocol`)."""

    kind: ClassVar[str] = "certificate"
    statement: str
    margins: tuple[Margin, ...] = ()
    structure: dict[str, Any] | None = omit_none()
    conditions: dict[str, Any] | None = omit_none()
    notes: dict[str, Any] | None = omit_none()

    def claims(self) -> Iterator[tuple[str, bool]]:
        for m in self.margins:
            yield (f"margin {m.quantity!r} marked near lies within {NEAR:g} tolerances",
                   not m.near or abs(m.value) <= NEAR * m.atol)


def _zeros_claims(side: str, ev: tuple[float, ...], zeros: int, atol: float
                  ) -> Iterator[tuple[str, bool]]:
    """The first ``zeros`` of the ascending eigenvalues ``ev`` are zero within ``atol``, the
    next one is above it."""
    yield (f"the first {zeros} eigenvalues at {side} are zero within atol",
           all(abs(v) <= atol for v in ev[:zeros]))
    yield (f"the eigenvalue after them at {side} is above atol",
           len(ev) <= zeros or ev[zeros] > atol)


@dataclass(frozen=True, kw_only=True)
class SpectrumCertificate(Certificate):
    r"""The cosine family :math:`G(c)` has admissible constants ``c_interval`` (a point when both
    ends coincide), with these eigenvalues at the end points.

    ``eigenvalues_lo``/``eigenvalues_hi`` are the smallest eigenvalues of :math:`G(c)` at the end
    points (the first ``zeros`` of them are zero within ``atol_*``); the ranks are ``N`` minus
    those counts; strictly inside the interval every member has full rank ``N`` (theorem:
    :math:`\det(A + t(11^\top - I))` is a non-zero polynomial and :math:`\lambda_{\min}` is
    concave).
    """

    kind: ClassVar[str] = "spectrum"
    c_interval: tuple[float | None, float | None]
    ranks: dict[str, int | None]
    zeros: dict[str, int]
    eigenvalues_lo: tuple[float, ...]
    eigenvalues_hi: tuple[float, ...]
    atol_lo: float
    atol_hi: float
    max_min_eigenvalue: float
    c_at_max: float
    prototypes: dict[str, Any] | None = None

    def claims(self) -> Iterator[tuple[str, bool]]:
        yield from super().claims()
        lo, hi = self.c_interval
        yield ("c_at_max lies in c_interval", (lo is None or lo <= self.c_at_max)
               and (hi is None or self.c_at_max <= hi))
        yield ("the member at c_at_max is PSD", self.max_min_eigenvalue >= -max(self.atol_lo,
                                                                               self.atol_hi))
        n = self.ranks.get("interior")
        for side, end, ev, atol in (("lo", lo, self.eigenvalues_lo, self.atol_lo),
                                    ("hi", hi, self.eigenvalues_hi, self.atol_hi)):
            if end is None or not ev:
                continue
            z = self.zeros[side]
            yield from _zeros_claims(f"c_{side}", ev, z, atol)
            if n is not None and self.ranks.get(side) is not None:
                yield f"rank at c_{side} is N minus the zeros", self.ranks[side] == n - z


@dataclass(frozen=True, kw_only=True)
class SchoenbergCertificate(Certificate):
    r"""The Euclidean family :math:`D(c)` is an EDM exactly for :math:`c \le c_{\max}`: on
    :math:`1^\perp`, :math:`-\tfrac12 J D(c) J = \tau(B - cI)` with ``c_max`` the smallest
    eigenvalue of :math:`B`; ``eigenvalues_at_c_max`` are the smallest eigenvalues of
    :math:`B - c_{\max} I` (the first ``zeros`` within ``atol``), so the rank at ``c_max`` is
    :math:`N - 1` minus their count, and every :math:`c < c_{\max}` has rank :math:`N - 1`.
    """

    kind: ClassVar[str] = "schoenberg"
    c_max: float
    rank_at_c_max: int
    zeros_at_c_max: int
    eigenvalues_at_c_max: tuple[float, ...]
    largest_eigenvalue_at_c_max: float
    atol: float

    def claims(self) -> Iterator[tuple[str, bool]]:
        yield from super().claims()
        ev = self.eigenvalues_at_c_max
        yield from _zeros_claims("c_max", ev, self.zeros_at_c_max, self.atol)
        yield ("the largest eigenvalue at c_max is at least the listed ones",
               all(v <= self.largest_eigenvalue_at_c_max + self.atol for v in ev))


@dataclass(frozen=True, kw_only=True)
class FarkasCertificate(Certificate):
    r"""No constant makes :math:`G(c)` PSD: :math:`Y = \sum_k w_k x_k x_k^\top \succeq 0` has
    :math:`\langle Y, 11^\top - I\rangle = 0` and :math:`\langle Y, G(c)\rangle = \langle Y,
    A\rangle < 0` for every ``c`` (``A = G(0)``). ``vectors`` are the :math:`x_k` (``None``
    above a size limit, then ``vectors_note`` says how to rebuild them)."""

    kind: ClassVar[str] = "farkas"
    TEXT: ClassVar[str] = (
        "Y = sum_k weights[k] outer(vectors[k], vectors[k]) is PSD, <Y, 11^T - I> = 0 and "
        "<Y, G(c)> = <Y, A> = inner_A < 0 for every c, so no G(c) is PSD"
    )
    weights: tuple[float, ...]
    vectors: tuple[tuple[float, ...], ...] | None
    inner_ones_minus_identity: float
    inner_A: float
    max_min_eigenvalue: float
    c_at_max: float
    atol: float
    vectors_note: str | None = None

    def claims(self) -> Iterator[tuple[str, bool]]:
        yield from super().claims()
        yield "every weight of Y is non-negative", all(w >= 0 for w in self.weights)
        yield "<Y, 11^T - I> = 0 within atol", abs(self.inner_ones_minus_identity) <= self.atol
        yield "<Y, A> < 0", self.inner_A < -self.atol
        yield "no member of the family is PSD", self.max_min_eigenvalue < 0


@dataclass(frozen=True, kw_only=True)
class NearestTargetCertificate(Certificate):
    """No constant makes :math:`G(c)` PSD (decided by semidefinite programs); the nearest
    realizable target (unit diagonal, PSD) is at Frobenius distance ``distance`` from the
    family member with constant ``c_nearest``."""

    kind: ClassVar[str] = "nearest_target"
    TEXT: ClassVar[str] = (
        "semidefinite programs find no c with G(c) PSD; the nearest unit-diagonal PSD matrix "
        "is at Frobenius distance `distance` from G(c_nearest)"
    )
    solver_status: str
    distance: float
    c_nearest: float
    nearest_target: tuple[tuple[float, ...], ...] | None


@dataclass(frozen=True, kw_only=True)
class CycleCertificate(Certificate):
    r"""Around ``cycle`` the weights multiply to :math:`e^{\mathrm{log\_ratio}}` times their
    reverses (:math:`|\mathrm{log\_ratio}| >` ``tolerance``), so no symmetric similarity matches
    the row distributions."""

    kind: ClassVar[str] = "cycle"
    TEXT: ClassVar[str] = (
        "around `cycle` the weights multiply to exp(log_ratio) times their reverses, with "
        "|log_ratio| > tolerance, so no symmetric similarity matches the row distributions"
    )
    cycle: tuple[int, ...]
    log_ratio: float
    tolerance: float

    def claims(self) -> Iterator[tuple[str, bool]]:
        yield from super().claims()
        yield "|log_ratio| exceeds the tolerance", abs(self.log_ratio) > self.tolerance
        c = self.cycle
        yield ("the cycle is closed through at least three distinct samples",
               len(c) >= 4 and c[0] == c[-1] and len(set(c[:-1])) == len(c) - 1)


@dataclass(frozen=True, kw_only=True)
class ZeroWeightCertificate(Certificate):
    """``W[entry] = 0`` needs :math:`s_{ij} = -\\infty`, impossible for the bounded cosine
    similarity."""

    kind: ClassVar[str] = "zero_weight"
    TEXT: ClassVar[str] = (
        "W[entry] = 0 needs s_ij = -inf, impossible for the bounded cosine similarity"
    )
    entry: tuple[int, int]
    zero_weights: int


@dataclass(frozen=True, kw_only=True)
class BlocksCertificate(Certificate):
    """Zero weights split the samples into blocks with positive weights within and zero weights
    across; ``blocks`` lists each block's decision (Euclidean similarity)."""

    kind: ClassVar[str] = "blocks"
    TEXT: ClassVar[str] = (
        "zero weights split the samples into blocks, positive weights within and zero "
        "weights across; `blocks` lists the decision on each block (Euclidean similarity)"
    )
    zero_weights: int
    blocks: tuple[dict[str, Any], ...] = field(default_factory=tuple)


# ----------------------------------------------------------------------------------------------
# zero-weight patterns under the Euclidean similarity (dgp.engine.zeros)
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ScaleOrderCertificate(Certificate):
    r"""Row scales that cannot be ordered: along ``cycle`` each step ``i -> j`` is a positive
    weight of row ``i``. Any sequence approaching the bound has
    :math:`D_{ij} = a_i - 2\tau\log w_{ij} + o(1)` for every positive weight of row ``i``
    (one scale :math:`a_i` per row), so a ``"mutual"`` step (:math:`w_{ji} > 0` too) keeps
    :math:`a_i - a_j` bounded and a ``"one-way"`` step (:math:`w_{ji} = 0`, so :math:`j` must
    see :math:`i` infinitely farther than its own positives) sends :math:`a_i - a_j \to +\infty`.
    Summed around the cycle the differences give :math:`0 = +\infty`.
    """

    kind: ClassVar[str] = "scale_order"
    TEXT: ClassVar[str] = (
        "every step i -> j of `cycle` is a positive weight w_ij; approaching the bound needs one "
        "scale a_i per row with D_ij = a_i - 2 tau log w_ij + o(1) on row i's positive weights, "
        "so a 'mutual' step (w_ji > 0) keeps a_i - a_j bounded and a 'one-way' step (w_ji = 0) "
        "sends a_i - a_j to +inf; around the cycle they sum to 0, a contradiction"
    )
    cycle: tuple[int, ...]
    steps: tuple[str, ...]
    zero_weights: int


@dataclass(frozen=True, kw_only=True)
class DivergingFamilyCertificate(Certificate):
    r"""The bound is approached, never attained: an explicit family of embeddings :math:`Z(t)`
    whose entropic gap tends to zero as :math:`t \to 0` while :math:`Z(t)` diverges.

    Each support component (samples joined by positive weights) is listed in ``components``
    with its own family: ``"scaled"`` components are :math:`X_0 / t + t\,Y` where
    :math:`X_0` has unit squared distance on every positive pair and squared distance at least
    ``1 + min_slack`` on every other pair, and :math:`Y` solves the linear system
    :math:`2\langle x_i - x_j, y_i - y_j\rangle = \delta_{ij}` (the prescribed log-ratios,
    :math:`\delta_{ij} = -2\tau\ell_{ij}`), so :math:`D_{ij}(t) = t^{-2} + \delta_{ij} +
    t^2|y_i - y_j|^2` on positive pairs and :math:`\ge (1 + \mathrm{slack})\,t^{-2} + O(1)` on
    the others; ``"fixed"`` components (complete blocks whose own target fits) keep one
    optimal configuration. Component ``k`` is translated by ``offset_scale * k / t^2`` along
    the first axis. ``sources``, in order, are the pure sources (samples no other sample gives
    positive weight to, each with one positive): sample ``i`` sits at
    :math:`z_j(t) + \rho\,u/t^{q}` (``target`` ``j``, ``direction`` ``u``, ``radius``
    :math:`\rho`, ``power`` :math:`q \ge 3`, larger than every power placed before), with
    ``j`` exposed in direction ``u`` at leading order, so every other sample is farther from
    ``i`` than ``j`` by a diverging amount and ``i`` is beyond every other row's scale.
    ``gaps`` are the entropic gaps of :math:`Z(t)` at the listed ``t``.
    """

    kind: ClassVar[str] = "diverging_family"
    TEXT: ClassVar[str] = (
        "Z(t) = per component X0 / t + t Y (or a fixed optimal block), component k shifted by "
        "offset_scale * k / t^2 along the first axis: positive pairs get D_ij = t^-2 + delta_ij "
        "+ O(t^2), every other pair at least (1 + min_slack) t^-2; each listed pure source i at "
        "z_j(t) + radius * direction / t^power beyond its one positive j; so the gap (listed at "
        "each t) tends to 0 as t -> 0 while Z(t) diverges"
    )
    zero_weights: int
    components: tuple[dict[str, Any], ...]
    t: tuple[float, ...]
    gaps: tuple[float, ...]
    offset_scale: float
    sources: tuple[dict[str, Any], ...] = ()
    decided: bool = True


@dataclass(frozen=True, kw_only=True)
class ZeroObstructionCertificate(Certificate):
    r"""The bound cannot be approached in :math:`\mathbb R^d`: an obstruction that every
    approaching sequence would have to violate.

    Approaching the bound with zero weights forces, inside a support component without one-way
    weights and not complete, one diverging scale :math:`\alpha`: rescaled by
    :math:`\alpha^{-1/2}` every limit configuration has unit distance on the positive pairs and
    distance at least 1 on every other pair (the *leading-order* problem). ``obstruction``
    names what makes it (or the next order) impossible, on the samples ``vertices``:
    ``"line"`` (dim 1: a vertex with three neighbours or a cycle forces two samples to
    coincide), ``"simplex"`` (``k`` pairwise-positive samples need dimension ``k - 1``),
    ``"kissing"`` (a sample's neighbours lie on a unit sphere around it pairwise at least 1
    apart: at most the kissing number of :math:`\mathbb R^d`), ``"planar_neighbourhood"`` (in
    the plane those neighbours sit 60 degrees apart when positive to each other and more than
    60 degrees otherwise), ``"wheel_stress"`` (six neighbours close a hexagon whose angles must
    sum to 360 degrees at the next order, a linear condition on the log-weights),
    ``"common_neighbours"`` (the points at unit distance from two points of the plane, or three
    of space, are at most two), ``"common_circle"`` (the common neighbours of two points of
    :math:`\mathbb R^3` lie on a circle of radius at most :math:`\sqrt3/2`, at most five of
    them pairwise 1 apart), ``"packing"`` (the samples within ``h`` steps of a sample lie in a
    ball of radius ``h``, pairwise at least 1 apart: at most :math:`(2h+1)^d`), or
    ``"clique_rank"`` (a complete block whose own targets :math:`D(c)` all need more than
    ``dim`` dimensions). ``detail`` holds the numbers.
    """

    kind: ClassVar[str] = "zero_obstruction"
    TEXT: ClassVar[str] = (
        "every sequence approaching the bound would have to satisfy the leading-order problem "
        "(unit distance on positive pairs, at least 1 elsewhere, after rescaling) on the "
        "component `members`; `obstruction` on `vertices` makes that impossible in dim "
        "dimensions (see `detail`)"
    )
    zero_weights: int
    obstruction: str
    vertices: tuple[int, ...]
    members: tuple[int, ...]
    dim: int
    detail: dict[str, Any] = field(default_factory=dict)
    decided: bool = True


@dataclass(frozen=True, kw_only=True)
class ZeroUndecidedCertificate(Certificate):
    r"""Not decided exactly: dgp found neither an obstruction nor an approaching family for the
    component ``members``.

    Deciding whether a zero pattern is approached contains hard geometric problems (for
    uniform weights on a symmetric support, whether the graph is a unit-ball contact graph of
    :math:`\mathbb R^d`, i.e. a penny graph in the plane, which is NP-hard to recognise; a
    star is approached exactly when its leaves fit as a strict kissing configuration, an open
    problem in most dimensions), so no polynomial procedure decides every pattern. ``tried``
    lists what was attempted; ``evidence`` the smallest entropic gap a numerical minimisation of
    the loss reached (when run), which the verdict follows: a gap below ``evidence_threshold``
    reads as degenerate, otherwise inconsistent. Neither is proven.
    """

    kind: ClassVar[str] = "zero_undecided"
    TEXT: ClassVar[str] = (
        "not decided exactly: no obstruction and no approaching family were found for the "
        "component `members`; the verdict follows the numerical `evidence` (the smallest gap "
        "found) and is not proven"
    )
    zero_weights: int
    members: tuple[int, ...]
    dim: int
    tried: tuple[str, ...]
    evidence: float | None
    evidence_threshold: float
    decided: bool = False
