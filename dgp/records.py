r"""The one protocol of dgp's results and certificates: frozen records that turn into JSON from
their fields.

Every result class (``Classification``, ``Prototypes``, ``Optimum``, the phase and audit
results...) and every certificate derives from :class:`Record`, so they all behave alike:

* ``summary()`` is the short form in words (what the command line prints);
* ``to_dict(**options)`` gives plain JSON values (numpy scalars and arrays become Python numbers
  and lists, non-finite floats ``None``), built from the dataclass fields in their declared
  order; a field declared with :func:`skip` is not exported, one declared with
  :func:`omit_none` only when it is not ``None``; a class adds computed entries by overriding
  :meth:`Record.json_items`. The options a class understands are declared once in
  ``JSON_OPTIONS`` (name -> default); an unknown option is a :class:`~dgp.errors.ParameterError`,
  and each nested record receives the options it declares (``gram=True`` on a ``Prototypes``
  reaches its batch and approximation records).
Certificates add the :class:`CertificateProtocol`: a ``kind``, a ``statement`` (how to check
it, in words), ``certified`` (bool; these three open every certificate's ``to_dict``), its
decisive ``margins`` and :meth:`CertificateProtocol.check`, which re-derives
what the certificate claims from the numbers it carries and returns the claims that fail
(nothing here reads a solver status). Solvers report one frozen :class:`Convergence` block, like
scipy's ``OptimizeResult`` fields.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from dgp.errors import ParameterError

__all__ = [
    "CertificateProtocol",
    "Chain",
    "Convergence",
    "Record",
    "Reduction",
    "closing_items",
    "gram_included",
    "gram_omitted",
    "omit_none",
    "plain",
    "skip",
]

#: field metadata: the field is not exported by ``to_dict``
_SKIP = {"json": "skip"}
#: field metadata: the field is exported only when it is not ``None``
_OMIT_NONE = {"json": "omit_none"}


def skip(**kwargs: Any) -> Any:
    """A dataclass field that ``to_dict`` does not export (arrays behind an accessor, caches)."""
    return field(metadata=_SKIP, **kwargs)


def omit_none(**kwargs: Any) -> Any:
    """A dataclass field that ``to_dict`` exports only when it is not ``None``."""
    kwargs.setdefault("default", None)
    return field(metadata=_OMIT_NONE, **kwargs)


def plain(value: Any, options: Mapping[str, Any] | None = None) -> Any:
    """A JSON-ready copy: numpy scalars and arrays become Python numbers and lists, non-finite
    floats become ``None``, nested records their dicts (with the ``options`` they declare).

    >>> plain({"a": np.float64(np.inf), "b": np.arange(2), "c": (np.int64(3), True)})
    {'a': None, 'b': [0, 1], 'c': [3, True]}
    """
    if isinstance(value, Record):
        opts = options or {}
        return value.to_dict(**{k: v for k, v in opts.items() if k in value.JSON_OPTIONS})
    if isinstance(value, dict):
        return {str(k): plain(v, options) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v, options) for v in value]
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


def gram_included(size: int, limit: int, option: bool | None) -> bool:
    """Whether a result's ``to_dict`` holds its ``size x size`` Gram: as the ``gram`` option
    says when it is given, else when ``size <= limit``.

    >>> gram_included(600, 500, None), gram_included(600, 500, True), gram_included(3, 500, False)
    (False, True, False)
    """
    return size <= limit if option is None else bool(option)


def gram_omitted(size: int, symbol: str, limit: int, detail: str = "") -> str:
    """The ``gram_omitted`` entry of a result whose ``size x size`` Gram ``to_dict`` left out
    above ``symbol = limit`` (:func:`gram_included`): what was left out, ``detail`` on it, and
    how to get it.

    >>> gram_omitted(600, "N", 500, " (about 20 bytes per entry as JSON)")[:64]
    'the 600 x 600 Gram is left out above N = 500 (about 20 bytes per'
    """
    return (f"the {size} x {size} Gram is left out above {symbol} = {limit}{detail}; ask for it "
            "with gram=True (CLI: --gram) or write it with --save-gram FILE")


def closing_items(result: Any, options: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """The entries that close the ``json_items`` of a solved result (``dgp.Optimum``,
    ``dgp.Prototypes``): ``rank_d`` when the rank-d search ran, ``convergence``, and
    ``embedding`` when the ``embedding`` option asks for it."""
    if result.rank_d is not None:
        yield "rank_d", result.rank_d
    yield "convergence", result.convergence
    if options["embedding"]:
        yield "embedding", result.embedding


class Record:
    """Base of every frozen result and certificate of dgp (module docstring).

    Subclasses are frozen dataclasses. ``JSON_OPTIONS`` maps each option of :meth:`to_dict` to
    its default.
    """

    JSON_OPTIONS: ClassVar[Mapping[str, Any]] = {}

    def to_dict(self, **options: Any) -> dict[str, Any]:
        """Plain JSON-ready fields (see the class's ``JSON_OPTIONS`` for its options).

        Raises
        ------
        ParameterError
            For an option the class does not declare.
        """
        for name in options:
            if name not in self.JSON_OPTIONS:
                allowed = ", ".join(self.JSON_OPTIONS) or "none"
                raise ParameterError(
                    name, f"is not an option of {type(self).__name__}.to_dict (options: "
                    f"{allowed})"
                )
        opts = {**self.JSON_OPTIONS, **options}
        return {key: plain(value, opts) for key, value in self.json_items(opts)}

    def summary(self) -> str:
        """The short form the command line prints (no required arguments on any result): here
        ``str(self)``; a result whose ``str`` holds more (a table) says less here."""
        return str(self)

    def json_items(self, options: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
        """The ``(key, value)`` pairs of :meth:`to_dict`, before conversion: the dataclass fields
        in order, less those declared with :func:`skip` (and :func:`omit_none` ones that are
        ``None``). Override to add computed entries."""
        for f in fields(self):  # type: ignore[arg-type]
            how = f.metadata.get("json")
            if how == "skip":
                continue
            value = getattr(self, f.name)
            if how == "omit_none" and value is None:
                continue
            yield f.name, value


@dataclass(frozen=True)
class Convergence(Record):
    """How an iterative solver ended, the same fields for every solver (scipy's
    ``OptimizeResult`` names, frozen).

    Attributes
    ----------
    success : bool
        The result is accepted: its certificate's residual is within the acceptance rule (or it
        is a closed form, which needs no iteration).
    status : str
        Why it stopped, in words (``"closed form: ..."``, ``"gradient below tolerance"``...).
    nit : int or None
        Iterations taken (``None`` for closed forms).
    residual : float or None
        The residual the acceptance rule reads (KKT residual; ``None`` for closed forms).
    certified : bool
        The result carries a certificate that was checked from its numbers (not from a solver
        status); ``certifies`` says of what.
    certifies : str
        What ``certified`` is about, in words: the global optimum, an interval, or only a
        (first- and second-order) critical point of a non-convex problem; what would be
        certified when ``certified`` is false.
    """

    success: bool
    status: str
    nit: int | None = None
    residual: float | None = None
    certified: bool = False
    certifies: str = "nothing"


class CertificateProtocol(Record):
    """What every certificate has: ``kind`` (a class constant), ``statement`` (how it is
    checked, in words), ``margins`` (the decisive comparisons with their tolerances) and
    :meth:`check`.

    Subclasses say what to re-derive in :meth:`claims`; the protocol checks the margins."""

    kind: ClassVar[str] = "certificate"

    def json_items(self, options: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
        """``kind``, ``statement`` and ``certified`` first (the one certificate block every
        ``to_dict`` carries), then the fields.

        ``certified`` is the class's own ``certified`` (a field or a property saying the
        conclusion of its statement: a point globally optimal, a bound met) where it declares
        one, else whether its own numbers support its ``statement``: every margin and every
        claim of :meth:`check` holds."""
        names = {f.name for f in fields(self)}  # type: ignore[arg-type]
        yield "kind", self.kind
        if "statement" not in names:
            yield "statement", self.statement  # type: ignore[attr-defined]
        if "certified" not in names:
            own = getattr(self, "certified", None)
            yield "certified", bool(own) if own is not None else not self.check()
        yield from super().json_items(options)

    def claims(self) -> Iterator[tuple[str, bool]]:
        """``(claim, holds)`` pairs re-derived from the certificate's own numbers."""
        return iter(())

    def check(self) -> tuple[str, ...]:
        """The claims of this certificate that its own numbers do not support (empty: it checks).

        Every margin's tolerance must be a finite non-negative number and every claim of
        :meth:`claims` must hold."""
        failed = []
        for m in getattr(self, "margins", ()):
            if not (math.isfinite(m.atol) and m.atol >= 0):
                failed.append(f"margin {m.quantity!r} has tolerance {m.atol!r}")
        failed += [claim for claim, holds in self.claims() if not holds]
        return tuple(failed)


@runtime_checkable
class Reduction(Protocol):
    """A reduction of a problem, which owns its inverse (as cvxpy's ``reductions/``): whether it
    applies, the reduced problem with the data its inverse needs, and the inverse, which maps
    what is known of the reduced problem (a solution, a located verdict) back to the original.
    The engine's reductions (:mod:`dgp.engine._reductions`) and the optimum's
    (:mod:`dgp.optima._reductions`) follow it, each on its own kind of problem."""

    name: str

    def applies(self, problem: Any) -> bool:
        """Whether :meth:`apply` may be used on ``problem``."""

    def apply(self, problem: Any) -> tuple[Any, Any]:
        """The reduced problem and the data :meth:`invert` needs."""

    def invert(self, result: Any, inverse_data: Any) -> Any:
        """What ``result`` says of the reduced problem, said of the original one."""


@dataclass(frozen=True)
class Chain:
    """Reductions applied in order and inverted in reverse (the one chain of the engine's and
    the optimum's reductions).

    Attributes
    ----------
    reductions : tuple of Reduction
    """

    reductions: tuple = ()

    @property
    def names(self) -> tuple[str, ...]:
        """The reductions' names, in order."""
        return tuple(r.name for r in self.reductions)

    def apply(self, problem: Any) -> tuple[Any, list[tuple[Any, Any]]]:
        """The problem after every reduction that applies, and the inverse data of each
        (the reductions that do not apply are skipped and not inverted)."""
        inverse = []
        for r in self.reductions:
            if r.applies(problem):
                problem, data = r.apply(problem)
                inverse.append((r, data))
        return problem, inverse

    def invert(self, result: Any, inverse: list[tuple[Any, Any]]) -> Any:
        """What ``result`` says of the original problem, inverting the applied reductions in
        reverse order."""
        for r, data in reversed(inverse):
            result = r.invert(result, data)
        return result

    def without(self, kind: type) -> Chain:
        """The chain without its reductions of type ``kind``."""
        return Chain(tuple(r for r in self.reductions if not isinstance(r, kind)))
