r"""Every theorem dgp relies on, as an executable check.

One module per theorem (``tNN_<slug>.py``). Each module

- states the theorem in its docstring and in a module-level :class:`~dgp.proofs._theorem.Theorem`
  named ``THEOREM`` (``id``, ``statement``, ``method``);
- derives it symbolically with sympy where that is possible (functions ``test_symbolic_*``);
- property-tests it with hypothesis (functions ``test_property_*``, at least 100 examples each),
  comparing the package's closed forms and verdicts with *independent* reference computations
  (:mod:`dgp.proofs._reference`: definitions evaluated row by row, dense ``eigvalsh`` of
  explicitly built matrices, bisection, least squares) — never with the code path under test.

pytest collects the modules (``testpaths`` includes ``dgp/proofs``); ``dgp prove`` runs them
without pytest through :func:`run_theorems`, counting the hypothesis examples actually run.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import sys
import time
from dataclasses import dataclass, field
from types import ModuleType

from hypothesis.errors import HypothesisException

from dgp.errors import ParameterError
from dgp.proofs._theorem import Theorem

if sys.version_info >= (3, 11):
    _ExceptionGroup = ExceptionGroup  # noqa: F821 - a builtin from Python 3.11
else:  # pragma: no cover - hypothesis depends on the backport below 3.11
    from exceptiongroup import ExceptionGroup as _ExceptionGroup

__all__ = ["Theorem", "TheoremResult", "discover", "run_theorem", "run_theorems"]

_MODULE = re.compile(r"^t\d\d_\w+$")

# what a failing check may raise: a failed assertion, an error of the code under test, or
# hypothesis reporting several distinct failures / a flaky test
_FAILURES: tuple[type[BaseException], ...] = (
    AssertionError,
    ArithmeticError,
    LookupError,
    ValueError,
    TypeError,
    RuntimeError,
    AttributeError,
    ImportError,
    HypothesisException,
    _ExceptionGroup,
)


@dataclass
class TheoremResult:
    """Outcome of one theorem's checks.

    Attributes
    ----------
    id, statement, method : str
        From the module's ``THEOREM``.
    status : {"verified", "failed"}
    examples : int
        Hypothesis examples run to completion (over all property tests of the theorem).
    seconds : float
        Wall time.
    failures : list of str
        ``"<check>: <error>"`` for each failed check.
    """

    id: str
    statement: str
    method: str
    status: str
    examples: int
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """The fields of one theorem in ``dgp prove --json``, exactly."""
        return {
            "id": self.id,
            "statement": self.statement,
            "status": self.status,
            "method": self.method,
            "examples": self.examples,
        }


def discover() -> list[ModuleType]:
    """Import and return the theorem modules of this package, in file order."""
    names = sorted(m.name for m in pkgutil.iter_modules(__path__) if _MODULE.match(m.name))
    return [importlib.import_module(f"{__name__}.{name}") for name in names]


def checks(module: ModuleType) -> list[tuple[str, object]]:
    """The ``test_symbolic_*`` and ``test_property_*`` functions of a module, in source order."""
    found = [
        (name, fn)
        for name, fn in vars(module).items()
        if callable(fn) and (name.startswith("test_symbolic_") or name.startswith("test_property_"))
    ]

    def line(item: tuple[str, object]) -> int:
        fn = inspect.unwrap(item[1])
        code = getattr(fn, "__code__", None)
        return code.co_firstlineno if code is not None else 0

    return sorted(found, key=line)


def _run_property(fn) -> int:
    """Run a hypothesis test, counting the examples that ran to completion."""
    handle = fn.hypothesis
    inner = handle.inner_test
    count = 0

    def counting(*args, **kwargs):
        nonlocal count
        out = inner(*args, **kwargs)
        count += 1
        return out

    handle.inner_test = counting
    try:
        fn()
    finally:
        handle.inner_test = inner
    return count


def run_theorem(module: ModuleType) -> TheoremResult:
    """Run every check of one theorem module; never raises for a failed check."""
    thm: Theorem = module.THEOREM
    start = time.perf_counter()
    examples = 0
    failures: list[str] = []
    for name, fn in checks(module):
        try:
            if hasattr(fn, "hypothesis"):
                examples += _run_property(fn)
            else:
                fn()
        except _FAILURES as exc:
            msg = str(exc).strip().splitlines()
            failures.append(f"{name}: {type(exc).__name__}: {msg[0] if msg else ''}")
    return TheoremResult(
        id=thm.id,
        statement=thm.statement,
        method=thm.method,
        status="failed" if failures else "verified",
        examples=examples,
        seconds=time.perf_counter() - start,
        failures=failures,
    )


def run_theorems(
    modules: list[ModuleType] | None = None,
    *,
    only: list[str] | None = None,
    progress=None,
):
    """Run the theorems (all of :func:`discover` by default), optionally only the given ids.

    ``progress(k, total, result)``, when given, is called after each theorem (``k`` from 1).

    Raises
    ------
    ValueError
        If ``only`` names an unknown theorem id.
    """
    mods = discover() if modules is None else modules
    if only:
        ids = {m.THEOREM.id for m in mods}
        unknown = [t for t in only if t not in ids]
        if unknown:
            raise ParameterError(
                "only", f"names an unknown theorem id {unknown[0]!r}; known ids: "
                f"{', '.join(sorted(ids))}"
            )
        mods = [m for m in mods if m.THEOREM.id in only]
    results = []
    for k, m in enumerate(mods, start=1):
        results.append(run_theorem(m))
        if progress is not None:
            progress(k, len(mods), results[-1])
    return results
