"""dgp: weighted contrastive learning as a distance geometry problem.

Tell, before training, what geometry a weighted InfoNCE objective gives the embeddings, or that
no embedding reaches its optimum, with a certificate that can be re-checked.

Public names are imported lazily, so that ``import dgp`` stays light (no cvxpy, no torch).
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS = {
    "Classification": "dgp.result",
    "InvalidParameterError": "dgp.errors",
    "Problem": "dgp.problem",
    "classify": "dgp.classification",
    "classify_objective": "dgp.objectives",
    "deterministic": "dgp.resources",
    "entropic_bound": "dgp.infonce",
    "winfonce_loss": "dgp.infonce",
    "objective_weights": "dgp.weights",
    "loss_floors": "dgp.design",
    "phase": "dgp.design",
    "recommend": "dgp.design",
    "BatchOptimum": "dgp.solver",
    "Optimum": "dgp.optima",
    "optimum": "dgp.optima",
    "Prototypes": "dgp.prototypes",
    "supcon_prototypes": "dgp.prototypes",
}
# ``dgp.optimum`` is the function, like ``dgp.classify``; the subpackage that implements it is
# ``dgp.optima`` (a package attribute named like a submodule would be overwritten by the import
# system as soon as the submodule loads, so no public name shares a submodule's name).
_SUBMODULES = (
    "classification",
    "constants",
    "design",
    "display",
    "engine",
    "errors",
    "geometry",
    "infonce",
    "io",
    "metrics",
    "mplfigure",
    "objectives",
    "optima",
    "plots",
    "problem",
    "prototypes",
    "records",
    "result",
    "solver",
    "spec",
    "strategies",
    "symbolic",
    "tolerance",
    "torch",
    "weights",
)

__all__ = sorted([*_EXPORTS, *_SUBMODULES, "__version__"])


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    if name in _SUBMODULES:
        return importlib.import_module(f"dgp.{name}")
    raise AttributeError(f"module 'dgp' has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
