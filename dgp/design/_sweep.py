"""Phase maps: the grid of a sweep, checked, its cells run (:mod:`dgp.design._cells`) and their
results gathered into a :class:`PhaseMap` (:mod:`dgp.design._phasemap`)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from dgp.design._cells import check_jobs, check_scheduler, dask_local_cluster, map_cells
from dgp.design._common import (
    DesignInput,
    closed_form_boundary,
    describe_input,
    design_input,
    fixed_parameters,
    imbalanced_sizes,
    needed_parameters,
    search_settings,
    tolerance,
)
from dgp.design._parameters import GRID_PARAMETERS, MAX_CELLS, check_value
from dgp.design._phasemap import PhaseMap
from dgp.errors import ParameterError, ParameterTypeError, check_choice, check_flag, describe
from dgp.problem import Problem
from dgp.spec import not_given

__all__ = [
    "PhaseMap",
    "dask_local_cluster",
    "phase",
]


def _axis_values(name: str, values: object) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1 or arr.size == 0:
        raise ParameterError(f"grid[{name!r}]", f"must be a non-empty 1-D sequence of values, got "
                             f"shape {arr.shape}")
    if arr.dtype.kind not in "iuf" or arr.dtype.kind == "b":
        raise ParameterTypeError(f"grid[{name!r}]", f"must hold numbers, got dtype {arr.dtype}")
    checked = [check_value(name, v.item(), f"grid[{name!r}]") for v in arr]
    if len(set(checked)) != len(checked):
        raise ParameterError(f"grid[{name!r}]", "holds a value twice")
    return np.array(checked, dtype=np.int64 if name == "dim" else float)


def _grid(grid: object) -> dict[str, np.ndarray]:
    if not isinstance(grid, Mapping) or not grid:
        raise ParameterError("grid", f"must map one or two parameter names to their values, such "
                             f"as {{'tau': taus, 'eps': epss}}; got {describe(grid)}")
    if len(grid) > 2:
        raise ParameterError("grid", f"sweeps at most two parameters, got {len(grid)}: "
                             f"{', '.join(map(str, grid))}")
    axes: dict[str, np.ndarray] = {}
    for name, values in grid.items():
        check_choice(name, GRID_PARAMETERS, "grid")
        axes[name] = _axis_values(name, values)
    cells = math.prod(a.size for a in axes.values())
    if cells > MAX_CELLS:
        raise ParameterError("grid", f"has {cells} cells, above the limit of {MAX_CELLS}")
    return axes


def phase(
    objective: str | Problem | None = None,
    labels: object = None,
    *,
    grid: Mapping[str, object],
    W: object = None,
    sizes: object = None,
    tau: float | None = None,
    dim: int | None = None,
    eps: float | None = None,
    sigma: float | None = None,
    label_tau: float | None = None,
    similarity: str | None = None,
    classes: int | None = None,
    majority: int | None = None,
    profile: str = "exponential",
    tol: float | None = None,
    excess: bool = True,
    jobs: int = 1,
    scheduler: str | None = None,
    progress: bool = False,
    starts: int | None = None,
    seed: int | None = None,
    rtol: object = not_given,
) -> PhaseMap:
    r"""The verdict map of an objective (or a weighting) over a grid of one or two parameters.

    Each cell is :func:`dgp.classify_objective` (or :func:`dgp.classify`) at the cell's
    parameters: verdict, rank, ``c`` interval, and where the bound

    .. math:: L(Z) \ge \sum_i H(p_i)

    is not attained in :math:`\mathbb R^d`, the excess :math:`\min_{Z \in \mathbb R^{N\times d}}
    L(Z) - \sum_i H(p_i)` of the optimum (:data:`EXCESS_SOURCES` says how each was obtained).

    Parameters
    ----------
    objective : dgp.Problem or {"supcon", "soft-supcon", "y-aware", "euclid-euclid", "x-clr", \
"y-aware-colnorm"}
        A :class:`dgp.Problem` (a weighting, or an objective with labels or sizes: its
        ``tau``, objective parameters and similarity are fixed values, a keyword may repeat
        them but not contradict them), or the objective; ``None`` with ``W``.
    labels : array_like, optional
        Class labels (class objectives) or ``N x p`` label values.
    grid : mapping
        One or two of ``tau``, ``dim``, ``eps``, ``sigma``, ``label_tau``, ``imbalance``, each
        with its values (a 1-D sequence). The first parameter varies slowest in ``cells`` and
        runs along the figure's x axis.
    W : array_like, optional
        A weight matrix instead of an objective (sweep ``tau`` and ``dim``).
    sizes : sequence of int, optional
        Class sizes instead of labels (class objectives).
    tau, dim, eps, sigma, label_tau : optional
        The fixed parameters: every parameter the objective needs is either fixed or swept.
    similarity : {"cosine", "euclidean"}, optional
        Latent similarity; the objective's own by default (cosine for ``W``).
    classes, majority : int, optional
        An ``imbalance`` sweep: the number of classes and the largest class size; the sizes of
        each cell are :func:`imbalanced_sizes` with ``profile``.
    profile : {"exponential", "step"}
    tol : float
        Relative tolerance of every classification (``rtol``: its deprecated name).
    excess : bool
        Compute the excess loss of inconsistent cells (the class objectives solve one
        prototype problem per cell; the verdicts do not need it).
    jobs : int
        Worker processes (joblib); ``-1`` for every core. With ``scheduler``, the number of
        workers of a ``"local"`` cluster.
    scheduler : str, optional
        ``"local"`` (a Dask ``LocalCluster`` on this machine, loopback only, stopped at the end)
        or the address of a running Dask scheduler (``"tcp://HOST:8786"``); needs the ``dask``
        extra. The cells are the same whichever runs them.
    progress : bool
        Report progress on stderr.
    starts, seed : int, optional
        Random starts and their seed of the search in ``R^dim`` of a general weighting's
        excess loss (:func:`dgp.optimum`'s defaults otherwise).

    Returns
    -------
    PhaseMap
        Always a :class:`PhaseMap`; its :meth:`~PhaseMap.to_frame` is a pandas DataFrame (when
        pandas is installed) and :meth:`~PhaseMap.to_arrays` a dict of numpy arrays.

    Raises
    ------
    ValueError
        If the input is not one of the modes above, a grid parameter is unknown, foreign to
        the objective, fixed as well, or has an invalid value (``dim`` must be integers), a
        needed parameter is missing, the grid has more than two parameters or
        :data:`MAX_CELLS` cells, ``jobs`` or ``scheduler`` is invalid.
    TypeError
        If a value has the wrong type.
    ImportError
        If ``jobs > 1`` or ``scheduler`` is asked for without joblib / dask.distributed.

    Examples
    --------
    >>> import numpy as np
    >>> pm = phase("soft-supcon", sizes=[4, 4, 4], grid={"tau": [0.3, 0.6, 0.9, 1.2]},
    ...            eps=0.1, dim=3)
    >>> [c["verdict"] for c in pm.cells]
    ['realizable', 'realizable', 'inconsistent', 'inconsistent']
    >>> b = pm.boundaries[0]
    >>> round(b.tau_c({"eps": 0.1}), 6), b.disagree
    (0.651442, 0)
    """
    axes = _grid(grid)
    rtol = tolerance(tol, rtol)
    problem, given = design_input(
        objective, labels, W=W, sizes=sizes, similarity=similarity, rtol=rtol, entry="phase",
        given={"tau": tau, "eps": eps, "sigma": sigma, "label_tau": label_tau},
        search=search_settings(starts, seed), classes=classes, majority=majority,
        profile=profile, sweeps_imbalance="imbalance" in axes)
    needed = needed_parameters(problem) + (("imbalance",) if "imbalance" in axes else ())
    if "imbalance" in axes and not problem.is_class:  # pragma: no cover - refused above
        raise ParameterError("grid", "sweeps imbalance, which needs a class objective")
    fixed = fixed_parameters(problem, {"tau": given["tau"], "dim": dim, "eps": given["eps"],
                             "sigma": given["sigma"], "label_tau": given["label_tau"]},
                             tuple(axes), needed, grid=True)
    for name in axes:
        if name not in needed:
            raise ParameterError("grid", f"sweeps {name!r}, which does not apply to "
                                 f"{describe_input(problem)} (it takes {', '.join(needed)})")
    jobs = check_jobs(jobs)
    sched = check_scheduler(scheduler)
    excess = check_flag(excess, "excess")
    names = tuple(axes)
    cells = [dict(fixed) | {p: _plain(v) for p, v in zip(names, combo, strict=True)}
             for combo in itertools.product(*(axes[p] for p in names))]
    # one key order in every cell: the swept parameters first, then the fixed ones
    cells = [{**{p: c[p] for p in names}, **{k: c[k] for k in fixed}} for c in cells]
    for v in axes.get("imbalance", ()):  # every ratio is checked before the sweep starts
        try:
            imbalanced_sizes(classes=problem.classes, majority=problem.majority,
                             ratio=float(v), profile=problem.profile)
        except ParameterError as exc:
            raise ParameterError("grid['imbalance']", exc.detail) from None
    results = map_cells(problem, cells, excess=excess, jobs=jobs, scheduler=sched,
                         progress=progress, what="dgp phase")
    results = [{k: v for k, v in r.items() if k not in fixed} for r in results]
    boundary = closed_form_boundary(problem, fixed, cells[0])
    boundaries = () if boundary is None else (boundary.checked(
        [{**fixed, **r} for r in results]),)
    n = None if problem.labels is None and problem.weights is None else (
        problem.weights.n if problem.weights is not None else problem.labels.n)
    return PhaseMap(problem.name, names, axes, fixed, problem.similarity, n, tuple(results),
                    boundaries, float(rtol), _inputs(problem))


def _inputs(problem: DesignInput) -> dict[str, Any]:
    if problem.weights is not None:
        return {}
    if problem.labels is None:
        return {"classes": problem.classes, "majority": problem.majority,
                "profile": problem.profile}
    if problem.labels.kind == "class":
        return {"sizes": problem.labels.sizes.tolist()}
    return {"labels_shape": list(problem.labels.values.shape)}


def _plain(v: Any) -> Any:
    return v.item() if hasattr(v, "item") else v


