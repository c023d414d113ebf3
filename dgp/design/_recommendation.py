"""The question and the answer of :func:`dgp.design.recommend`: ``want`` parsed, and the
:class:`Recommendation` with its certificate, its bracket and what to ask next."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from dgp.display import distinct_digits, format_rows, html_rows
from dgp.errors import (
    ParameterError,
    describe,
)
from dgp.records import Convergence, Record


def parse_want(want: object) -> tuple[str, float | None]:
    """Split ``want`` into the question and its threshold (``"minority-cosine<=0.2"``).

    Raises
    ------
    ValueError
        If ``want`` is not one of :data:`WANTS` (the threshold a number in ``[-1, 1]``).

    >>> parse_want("minority-cosine<=0.25")
    ('minority-cosine', 0.25)
    """
    choices = "realizable, simplex, minority-cosine<=X (X a cosine), min-dim"
    if not isinstance(want, str):
        raise ParameterError("want", f"must be one of {choices}; got {describe(want)}")
    text = want.strip()
    if text in ("realizable", "simplex", "min-dim"):
        return text, None
    head, sep, tail = text.partition("<=")
    if head.strip() == "minority-cosine" and sep:
        try:
            x = float(tail)
        except ValueError:
            x = float("nan")
        if not (-1.0 <= x <= 1.0):
            raise ParameterError("want", f"minority-cosine<=X needs a cosine X in [-1, 1], got "
                                 f"{tail.strip()!r}")
        return "minority-cosine", x
    raise ParameterError("want", f"must be one of {choices}; got {describe(want)}")


@dataclass(frozen=True, eq=False)
class Recommendation(Record):
    """The answer of :func:`recommend`, with its certificate.

    Attributes
    ----------
    objective : str
        The objective, or ``"weights"``.
    want : str
        The question, as asked.
    parameter : str
        The parameter found: ``"tau"``, ``"eps"`` or ``"dim"``.
    value : float or int or None
        Its value; ``None`` when none exists in the searched range (``reason`` says why).
    reason : str
        One sentence: the answer and why it holds.
    certificate : dict
        What to re-check: the common certificate block first (``kind`` ``"bracket"``,
        ``statement``, ``certified``: the answer is bracketed by evaluated points on both
        sides), then ``method``, the verdicts (or cosines) on both sides of ``value``
        (``bracket``), the bracket's relative width, the scan, and the closed form where one
        exists.
    given : dict
        The fixed parameters of the question.
    """

    objective: str
    want: str
    parameter: str
    value: float | int | None
    reason: str
    certificate: dict[str, Any]
    given: dict[str, Any]

    def __post_init__(self) -> None:
        # the one certificate block (kind, statement, certified) opens the certificate, said
        # from the value (also when dataclasses.replace gives another)
        rest = {k: v for k, v in self.certificate.items()
                if k not in ("kind", "statement", "certified")}
        object.__setattr__(self, "certificate", {
            "kind": "bracket", "statement": _BRACKET_STATEMENT,
            "certified": self.value is not None, **rest})

    @property
    def convergence(self) -> Convergence:
        """How the scan and bisection ended (:class:`dgp.records.Convergence`): ``nit`` the
        evaluations, ``residual`` the bracket's relative width (``None`` where no bisection
        ran), ``certified`` when an answer is bracketed."""
        cert = self.certificate
        return Convergence(
            success=self.value is not None,
            status=cert.get("status", "found" if self.value is not None else "never"),
            nit=cert.get("evaluations"), residual=cert.get("relative_width"),
            certified=bool(cert["certified"]),
            certifies="the answer: the request holds at one end of the bracket and not at the "
            "other, both evaluated",
        )

    def json_items(self, options):
        """The JSON of ``dgp recommend --json``: ``objective``, ``want``, the parameter found
        (e.g. ``"tau"``) with its value, ``certificate``, ``reason`` and ``given`` (``next``
        when nothing was found), and ``convergence``."""
        yield from (("objective", self.objective), ("want", self.want),
                    (self.parameter, self.value), ("certificate", self.certificate),
                    ("reason", self.reason), ("given", self.given))
        if self.value is None:
            yield "next", self.next_question
        yield "convergence", self.convergence

    @property
    def next_question(self) -> str | None:
        """When nothing was found, the question to ask next (keyword arguments as
        ``name=value``; the command line says them as flags); ``None`` otherwise."""
        if self.value is not None:
            return None
        return _NEXT.get(self.want.partition("<=")[0], _NEXT["minority-cosine"])

    def _rows(self, words: Callable[[str], str] = str) -> list[tuple[str, str]]:
        br = self.certificate.get("bracket") or {}
        sides = [s for s in ("below", "above") if br.get(s)]
        # enough digits that the two ends of the bracket (and the value) print differently
        ends = [br[s][k] for s in sides for k in ("tau", "eps") if isinstance(br[s].get(k),
                                                                              float)]
        digits = distinct_digits(*ends, *([self.value] if isinstance(self.value, float)
                                          else []), minimum=12)
        shown = "none" if self.value is None else (
            str(self.value) if isinstance(self.value, int) else f"{self.value:.{digits}g}")
        rows = [("want", self.want), ("objective", self.objective),
                (self.parameter, shown), ("reason", words(self.reason))]
        for side in sides:
            rows.append((side, _describe_point(br[side], digits)))
        if self.value is None:
            rows.append(("next", words(self.next_question or "")))
        cf = self.certificate.get("closed_form")
        if cf:
            rows.append(("closed form", f"{cf['formula']} = {cf['value']:.12g} (relative "
                         f"difference {cf['relative_difference']:.1e})"))
        return rows

    def summary(self, words: Callable[[str], str] | None = None) -> str:
        """The short form (what ``str`` shows): one row per item. ``words`` rephrases the
        sentences that quote keyword arguments (``reason``, ``next``); the command line passes
        one that says them as its flags."""
        return format_rows(self._rows(words or str))

    def __str__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:
        return html_rows(self._rows())


#: the statement of a recommendation's certificate (kind ``"bracket"``)
_BRACKET_STATEMENT = (
    "the request holds at bracket.below (or bracket.at for min-dim) and fails at the other end "
    "of the bracket, both evaluated by the engine (re-evaluate them to check); certified when "
    "an answer was bracketed, relative_width the bracket's width"
)

#: what to ask when a question has no answer in the searched range (by ``want``)
_NEXT = {
    "realizable": "the bound is not attained in this dimension at any scanned tau: ask "
    "want='min-dim' at one tau=T (the smallest dimension that attains it there), a larger "
    "dim=D, or a wider search=(lo, hi)",
    "min-dim": "the bound is attained in no dimension at this tau: ask want='realizable' with "
    "dim=D (the temperatures at which it is attained, if any), or ask what training reaches "
    "instead: the loss floor in your dimension (dgp floors, with dim=D) and the optimal "
    "geometry (dgp optimum for a weight matrix, dgp supcon for class objectives)",
    "simplex": "the target is not the simplex in the searched range: try a wider "
    "search=(lo, hi), or ask want='realizable' with dim=D (where the bound is attained)",
    "minority-cosine": "no tau in the searched range keeps the minority cosines below the "
    "threshold: ask a larger threshold (want='minority-cosine<=X'), a wider search=(lo, hi), or "
    "see the prototypes at one tau=T (dgp supcon)",
}


def _describe_point(p: Mapping[str, Any], digits: int = 12) -> str:
    parts = [f"{k} = {p[k]:.{digits}g}" if isinstance(p[k], float) else f"{k} = {p[k]}"
             for k in ("tau", "eps", "dim") if k in p]
    if "verdict" in p:
        parts.append(p["verdict"] + (f" (rank {p['rank']})" if p.get("rank") is not None
                                     else ""))
        if p.get("near_threshold"):
            parts.append("near threshold")
    if "max_cosine" in p:
        parts.append(f"largest minority cosine {p['max_cosine']:.10g}")
    return ", ".join(parts)
