"""Named objectives built from labels: the registry, their classification at any scale, and
the closed-form conditions that explain the verdicts.

>>> from dgp.objectives import OBJECTIVE_NAMES
>>> OBJECTIVE_NAMES[:2]
('supcon', 'soft-supcon')
"""

from dgp.objectives.classify import ENGINES, EXACT_SUMS_MAX_N, classify_objective
from dgp.objectives.conditions import colnorm_distortion, gaussian_explanation
from dgp.objectives.registry import OBJECTIVE_NAMES, OBJECTIVES, Labels, Objective, get
from dgp.objectives.spheres import SphereFit, fit_sphere

__all__ = [
    "ENGINES",
    "EXACT_SUMS_MAX_N",
    "OBJECTIVES",
    "OBJECTIVE_NAMES",
    "Labels",
    "Objective",
    "SphereFit",
    "classify_objective",
    "colnorm_distortion",
    "fit_sphere",
    "gaussian_explanation",
    "get",
]
