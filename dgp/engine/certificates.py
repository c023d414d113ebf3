r"""Typed, frozen certificates: what a user re-checks to trust a verdict.

Every engine (dense, structured, SDP) returns the same certificate class for the same kind of
verdict, with ``to_dict()`` giving plain JSON values. Each certificate states in ``statement``
how it is checked. Fields common to all: ``margins`` (the decisive comparisons and their
tolerances, see :class:`dgp.engine.tolerance.Margin`), ``structure`` (what a structured engine
reduced the problem to), ``conditions`` (the closed-form conditions of a named objective) and
``notes`` (anything else worth saying, e.g. why a number was not computed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

import numpy as np

from dgp.engine.tolerance import Margin

__all__ = [
    "BlocksCertificate",
    "Certificate",
    "CycleCertificate",
    "FarkasCertificate",
    "NearestTargetCertificate",
    "SchoenbergCertificate",
    "SpectrumCertificate",
    "ZeroWeightCertificate",
    "plain",
]


def plain(value: Any) -> Any:
    """A JSON-ready copy: numpy scalars and arrays become Python numbers and lists, non-finite
    floats become ``None``, nested certificates and margins their dicts."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, np.bool_ | bool):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        f = float(value)
        return f if math.isfinite(f) else None
    return value


@dataclass(frozen=True, kw_only=True)
class Certificate:
    """Base class: the fields every certificate carries."""

    kind: ClassVar[str] = "certificate"
    statement: str
    margins: tuple[Margin, ...] = ()
    structure: dict[str, Any] | None = None
    conditions: dict[str, Any] | None = None
    notes: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready fields, ``kind`` first."""
        out: dict[str, Any] = {"kind": self.kind}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None and f.name in ("structure", "conditions", "notes"):
                continue
            out[f.name] = plain(value)
        return out


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
