"""Result classes of the classification: frozen, with ``to_dict()``, a readable ``str`` and a
notebook display."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dgp.display import SUMMARY_WIDTH, format_rows, html_rows
from dgp.records import CertificateProtocol, Record, skip

__all__ = ["VERDICTS", "Classification", "format_c"]

VERDICTS = ("realizable", "degenerate", "inconsistent")


def format_c(x: float | None, resolution: float = 0.0) -> str:
    """A constant ``c`` for people: ``-inf`` for an unbounded side, ``0`` within
    ``resolution`` of zero, else 6 significant digits."""
    if x is None:
        return "-inf"
    if abs(x) <= resolution:
        return "0"
    return f"{x:.6g}"


@dataclass(frozen=True, eq=False)
class Classification(Record):
    """The verdict on a weighting, with its certificate.

    Attributes
    ----------
    verdict : {"realizable", "degenerate", "inconsistent"}
        Realizable: the entropic bound is attained in ``R^dim`` by a minimiser unique up to
        isometry. Degenerate: attained or approached, but without a unique geometry.
        Inconsistent: neither attained nor approached in ``R^dim``.
    attainable : bool
        Whether the entropic bound is attained (by some embedding) in ``R^dim``.
    similarity : {"cosine", "euclidean"}
        The latent similarity.
    n : int
        Number of samples.
    dim : int
        Embedding dimension the verdict is for.
    tau : float
        Temperature.
    rank : int or None
        Dimension of the optimal target when realizable, else ``None``.
    c_interval : tuple or None
        Admissible constants ``(lo, hi)`` in the convention :math:`s^*_{ij} = \\log w_{ij} + c`
        (``None`` for an unbounded side); ``None`` when no constant works.
    entropic_bound : float or None
        :math:`\\sum_i H(p_i)` in nats (``None`` when not computed; the certificate says why).
    reason : str
        One sentence: why this verdict, with the computed numbers.
    certificate : Certificate
        A :class:`dgp.engine.certificates.Certificate` (it follows
        :class:`dgp.records.CertificateProtocol`): what to re-check (eigenvalues and tolerances,
        the offending cycle, the Farkas matrix...).
    min_dim : int or None
        Smallest dimension in which the bound is attained (``None`` when none attains it).
    near_threshold : bool
        Whether the verdict is decided within the reported tolerance of a critical value (the
        margins are in ``certificate.margins``): nearby parameters may give another verdict.
    tolerance : dict
        The tolerance policy used (``rtol``, unit roundoff of the input, effective ``relative``).
    method : {"spectral", "structured", "sdp"}
        How the family was computed.
    c : float or None
        The constant of the optimal target when realizable.
    objective : str or None
        The named objective, when built from labels.
    embedding : ndarray or None
        ``N x rank`` optimal embedding when realizable (when built), deterministic signs.
    loss_floor : float or None
        For inconsistent cosine verdicts, the optimum's excess over the entropic bound in
        ``R^dim`` in nats, when computed.
    warnings : tuple of str
        What looked suspicious in the input.
    """

    verdict: str
    attainable: bool
    similarity: str
    n: int
    dim: int
    tau: float
    rank: int | None
    c_interval: tuple[float | None, float | None] | None
    entropic_bound: float | None
    reason: str
    certificate: CertificateProtocol
    min_dim: int | None
    near_threshold: bool
    tolerance: dict[str, Any]
    method: str = "spectral"
    c: float | None = None
    objective: str | None = None
    embedding: np.ndarray | None = skip(default=None, repr=False)
    loss_floor: float | None = None
    warnings: tuple[str, ...] = ()
    c_resolution: float = 0.0

    #: ``to_dict(embedding=True)`` also gives the embedding (``N x rank`` list, or ``None``)
    JSON_OPTIONS: ClassVar[dict[str, Any]] = {"embedding": False}
    _JSON_ORDER = ("verdict", "attainable", "similarity", "n", "dim", "tau", "rank", "c_interval",
                   "entropic_bound", "reason", "certificate", "min_dim", "near_threshold",
                   "loss_floor", "method")

    def json_items(self, options):
        """The JSON fields of ``dgp classify --json`` (CONTRACT order), ``rtol`` beside the
        tolerance policy."""
        for key in self._JSON_ORDER:
            yield key, getattr(self, key)
        yield "rtol", self.tolerance["rtol"]
        yield from (("tolerance", self.tolerance), ("c", self.c), ("objective", self.objective),
                    ("warnings", self.warnings))
        if options["embedding"]:
            yield "embedding", self.embedding

    # -- display ---------------------------------------------------------------------------

    def _rows(self) -> list[tuple[str, str]]:
        rows = [("verdict", self.verdict + (f" (rank {self.rank})" if self.rank is not None
                                            else ""))]
        if self.near_threshold:
            rows.append(("caution", "decided within tolerance of a critical value"))
        rows.append(("reason", self.reason))
        what = f"N = {self.n}"
        if self.objective:
            what += f", objective {self.objective}"
        what += f", {self.similarity} similarity, tau = {self.tau:g}, dim = {self.dim}"
        rows.append(("weighting", what))
        if self.entropic_bound is not None and math.isfinite(self.entropic_bound):
            rows.append(("bound", f"sum_i H(p_i) = {self.entropic_bound:.6g} nats"
                         + ("" if self.attainable else " (not attained)")))
        else:
            why = (self.certificate.notes or {}).get("entropic_bound", "not computed")
            rows.append(("bound", str(why)))
        if self.c_interval is not None:
            lo, hi = self.c_interval
            res = self.c_resolution
            rows.append(("c interval", f"[{format_c(lo, res)}, {format_c(hi, res)}]  "
                         "(s*_ij = log w_ij + c)"))
        if self.min_dim is not None:
            rows.append(("min dim", f"{self.min_dim} (smallest dimension attaining the bound)"))
        if self.loss_floor is not None:
            rows.append(("loss floor", f"{self.loss_floor:.6g} nats above the bound in "
                         f"dim = {self.dim}"))
        rows.append(("certificate", f"{self.certificate.kind}; method {self.method}, "
                     f"rtol {self.tolerance['rtol']:g}"))
        for w in self.warnings:
            rows.append(("warning", w))
        return rows

    def __str__(self) -> str:
        return format_rows(self._rows(), width=SUMMARY_WIDTH)

    def _repr_html_(self) -> str:
        return html_rows(self._rows())
