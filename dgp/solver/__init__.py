r"""The certified log-space solver: one floor under :mod:`dgp.prototypes` and
:mod:`dgp.optima`, which stand side by side on it and do not import each other.

* :mod:`~dgp.solver._program`: the convex program of every solver in dgp, a weighted sum of
  log-sum-exp rows over a Gram matrix, scaled by its leading exponential (log space);
* :mod:`~dgp.solver._solve`: Burer–Monteiro with L-BFGS, a Riemannian trust region and a dual
  Newton polish (:func:`solve_rows`), the Frank–Wolfe lower bound, and BLAS pinned to one
  thread (:func:`single_threaded`);
* :mod:`~dgp.solver._trust_region`: the one Riemannian trust region (:func:`rtr`, truncated CG,
  optionally preconditioned) and its stopping criteria (:class:`TrustRegionStop`);
* :mod:`~dgp.solver._kkt` and :mod:`~dgp.solver._lift`: KKT certificates computed from the
  solution alone, and the lift of a class-level solution to the samples (optimality and
  uniqueness of the collapsed configuration);
* :mod:`~dgp.solver._batch`: the compositions of mini-batches of a sampler and the rows of the
  expected batch loss;
* :mod:`~dgp.solver._nonnegative`: non-negative (ReLU-head) factors and the certified lower
  bound of the doubly non-negative relaxation;
* :mod:`~dgp.solver._blockfactor`: the full-batch class-block objective evaluated on a
  factor with ``O(K)`` tables and reused ``K x K`` buffers (rank-``d`` solves of many classes);
* :mod:`~dgp.solver._rowfactor`: the factor-objective protocol (value, gradient, Hessian and
  scale at a factor) that :class:`~dgp.solver.BlockFactor` and :class:`~dgp.solver.RowFactor`
  (a row problem through its Gram) implement, the one interface of the factor solvers;
* :mod:`~dgp.solver._rank`: the first- and second-order certificates of a point at a fixed
  rank ``d`` (Riemannian gradient and Hessian) and the global one of its dual;
* :mod:`~dgp.solver._policy`: the one rank-``d`` solver (:func:`solve_rank_d`): its search
  policy and default budget, nested candidates (a larger budget is never worse), the
  certificate on every result;
* :mod:`~dgp.solver._stochastic`, :mod:`~dgp.solver._finite` (with its optimum,
  :mod:`~dgp.solver._exact_batch`) and :mod:`~dgp.solver._expected`:
  the expected mini-batch loss of any weighting at dataset scale: optimised on fresh batches
  (a Riemannian Adam) and reported on others with a 95% interval and a lower bound, or summed
  exactly over every batch when few; one driver (:func:`batch_optimum`) and its result; their
  names are one list, :mod:`dgp.solver.batches`'s ``__all__``, re-exported here;
* :mod:`~dgp.solver._full_batch_chunks`: the full-batch loss read in row chunks (never
  ``N x N``) and a critical point of it in a fixed dimension (:func:`chunked_full_batch`), the
  full-batch prediction beside the expected-batch one above a few thousand samples;
* :mod:`~dgp.solver._sphere_lbfgs`: L-BFGS on the product of unit spheres (rows normalised
  inside the objective), the one descent of the finite sum and the per-batch relaxation;
* :mod:`~dgp.solver._guards`: the time budget of a solve, the largest temperature it resolves.

A solve is accepted by the one rule of the tolerance policy,
:meth:`dgp.tolerance.Tolerance.accepts`.
"""

from dgp.solver import _full_batch_chunks, batches
from dgp.solver._batch import (
    EXACT_RANK_D_MAX_S,
    NO_POSITIVE,
    REDUCTIONS,
    ROW_BUDGET,
    SAMPLERS,
    BatchPrediction,
    BatchSpec,
    Compositions,
    batch_rows,
    check_batch,
    check_full_batch,
    composition_count,
    compositions,
    enumerable,
    exact_rows_fit,
    positive_pair_probability,
    row_budget_samples,
    rows_rank_d_seconds,
)
from dgp.solver._blockfactor import BLOCK_FACTOR_BUFFERS, BlockFactor
from dgp.solver._conic import solve_conic
from dgp.solver._full_batch_chunks import *  # noqa: F403  (its __all__, listed once there)
from dgp.solver._guards import check_solver_tau, check_time, time_budget, validated_tau
from dgp.solver._kkt import KKTCertificate, row_certificate
from dgp.solver._lift import LiftCertificate, face_uniqueness, lift_certificate
from dgp.solver._nonnegative import (
    DNNBound,
    dnn_lower_bound,
    nonnegative_cost,
    nonnegative_factor,
    nonnegative_starts,
    nonnegative_stationarity,
)
from dgp.solver._policy import RankDSolution, rank_d_solve, solve_rank_d, spectral_start
from dgp.solver._program import BlockForm, RowProblem, block_problem, scaled_softplus
from dgp.solver._rank import (
    RankDCertificate,
    rank_d_certificate,
    set_factor_scale,
    stationarity,
    truncate,
)
from dgp.solver._rank_d_budget import RankDPolicy, rank_d_cost, rank_d_policy, rank_d_starts
from dgp.solver._rowfactor import FactorObjective, RowFactor
from dgp.solver._solve import (
    SolveResult,
    bm_lbfgs,
    bm_lbfgs_linear,
    factor,
    frank_wolfe_bound,
    lbfgs,
    oblique_hessian,
    single_threaded,
    solve_rows,
)
from dgp.solver._stochastic import Z95
from dgp.solver._trust_region import TrustRegionStop, rtr
from dgp.solver.batches import *  # noqa: F403  (the expected-batch names: batches.__all__)

__all__ = [
    "EXACT_RANK_D_MAX_S",
    "BLOCK_FACTOR_BUFFERS",
    "NO_POSITIVE",
    "REDUCTIONS",
    "ROW_BUDGET",
    "SAMPLERS",
    "Z95",
    "BatchPrediction",
    "BatchSpec",
    "BlockFactor",
    "BlockForm",
    "Compositions",
    "DNNBound",
    "FactorObjective",
    "KKTCertificate",
    "LiftCertificate",
    "RankDCertificate",
    "RankDPolicy",
    "RankDSolution",
    "RowFactor",
    "RowProblem",
    "SolveResult",
    "TrustRegionStop",
    "batch_rows",
    "block_problem",
    "bm_lbfgs",
    "bm_lbfgs_linear",
    "check_batch",
    "check_full_batch",
    "exact_rows_fit",
    "rows_rank_d_seconds",
    "check_solver_tau",
    "check_time",
    "composition_count",
    "compositions",
    "dnn_lower_bound",
    "enumerable",
    "face_uniqueness",
    "factor",
    "frank_wolfe_bound",
    "lbfgs",
    "lift_certificate",
    "nonnegative_cost",
    "nonnegative_factor",
    "nonnegative_starts",
    "nonnegative_stationarity",
    "oblique_hessian",
    "positive_pair_probability",
    "rank_d_certificate",
    "rank_d_cost",
    "rank_d_policy",
    "rank_d_solve",
    "rank_d_starts",
    "row_budget_samples",
    "row_certificate",
    "rtr",
    "scaled_softplus",
    "set_factor_scale",
    "single_threaded",
    "solve_conic",
    "solve_rank_d",
    "solve_rows",
    "spectral_start",
    "stationarity",
    "time_budget",
    "truncate",
    "validated_tau",
    *_full_batch_chunks.__all__,
    *batches.__all__,
]
