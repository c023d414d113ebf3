"""The named parameters and limits of the design tools: what a map sweeps, the questions
:func:`dgp.design.recommend` answers, the loss conventions, the cell limits and what each cell's
excess source means."""

from __future__ import annotations

from dgp.errors import ParameterError, check_dim, check_positive, describe
from dgp.problem import PARAMETER_CONSTRAINTS

#: parameters a phase map can sweep (``imbalance``: the ratio of the largest class size to the
#: smallest, for the class objectives)
GRID_PARAMETERS = ("tau", "dim", "eps", "sigma", "label_tau", "imbalance")
#: how :func:`imbalanced_sizes` spreads the class sizes
PROFILES = ("exponential", "step")
#: the questions :func:`recommend` answers (``minority-cosine<=X`` takes a threshold)
WANTS = ("realizable", "simplex", "minority-cosine<=X", "min-dim")
#: reduction conventions of a per-anchor loss (:class:`LossFloors`)
CONVENTIONS = ("sum", "pml", "supcontrast")
#: largest number of cells of one map
MAX_CELLS = 1_000_000
#: largest N for which the general optimum (``dgp.optimum``) is asked for
GENERAL_OPTIMUM_MAX_N = 300
#: ``dgp.supcon_prototypes`` documents that its certified solver refuses ``tau < 0.004``
PROTOTYPES_TAU_MIN = 4e-3
#: SupContrast's default base temperature (``SupConLoss(temperature=0.07, base_temperature=0.07)``)
SUPCONTRAST_BASE_TEMPERATURE = 0.07

#: what each cell's ``excess_source`` means
EXCESS_SOURCES = {
    "attained": "the entropic bound is attained (or approached) in R^dim: the excess is 0",
    "prototypes": "loss of the optimal class prototypes (dgp.supcon_prototypes: closed form or "
    "certified solver) minus the bound; their rank fits in dim",
    "optimum": "dgp.optimum(W, tau, dim): the optimum in R^dim minus the bound",
    "prototypes-dim": "the free optimum (class prototypes) has rank above dim: loss of the best "
    "prototypes in R^dim (dgp.supcon_prototypes with dim, the one rank-d solver of optimum and "
    "loss_floors; certified globally optimal where its dual is PSD) minus the bound",
    "not-computed-solver": "not computed: this version of dgp.optimum has no dim "
    "argument, so no certified optimum in R^dim is available for this weighting",
    "not-computed-euclidean": "not computed: there is no optimum solver for the Euclidean latent",
    "not-computed-size": f"not computed: N > {GENERAL_OPTIMUM_MAX_N} for the general optimum",
    "not-computed-tau": f"not computed: tau < {PROTOTYPES_TAU_MIN} or tau > 2^53, outside "
    "the range of the certified prototype solver (beyond 2^53 the loss is flat)",
    "not-computed-singletons": "not computed: a singleton class has no prototype problem",
    "skipped": "not asked for (excess=False)",
}

OBJECTIVE_PARAMETERS = ("eps", "sigma", "label_tau")


def check_value(name: str, value: object, label: str | None = None) -> float | int:
    """Validate one value of a parameter; errors name ``label`` (default: the parameter).

    ``tau`` and the objectives' parameters are checked against their one declaration,
    :data:`dgp.problem.PARAMETER_CONSTRAINTS`; ``dim`` (a keyword, not a field of a problem)
    and ``imbalance`` (the design tools' own) here.
    """
    label = name if label is None else label
    if name == "dim":
        return check_dim(value, label)
    if name == "imbalance":
        v = check_positive(value, label)
        if v < 1.0:
            raise ParameterError(label, f"is the ratio n_max / n_min and must be >= 1, got "
                                 f"{describe(value)}")
        return v
    return PARAMETER_CONSTRAINTS[name].check(value, label, None)
