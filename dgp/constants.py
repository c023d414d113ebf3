"""The named numerical constants of dgp, in one place, each with what it is and why its value.

A threshold that decides something about the data (the rank of a Gram, whether a matrix is PSD,
whether a solver's answer is accepted) is applied by the policy :class:`dgp.tolerance.Tolerance`,
relative to the data's scale; the constants it reads are here. The rest are the inner settings
of the numerical algorithms (line searches, stopping rules, rank guesses of the polish steps),
floors that keep a division defined, search ranges, and display resolutions. This module is
on the ground floor: it imports nothing, so every floor (the solver included) may read it.
"""

from __future__ import annotations

# ----------------------------------------------------------------------------------------------
# the tolerance policy (read by dgp.tolerance)
# ----------------------------------------------------------------------------------------------

#: default relative tolerance per sample of a classification: about 4.5 units of float64
#: roundoff, so a verdict is exact wherever floating point can resolve it
DEFAULT_RTOL = 1e-15
#: a decisive number within NEAR * atol of its threshold is reported as near the threshold
NEAR = 100.0
#: eigenvalues of a solver's Gram below this fraction of the largest count as zero: the
#: certified solver stops at KKT residuals near 1e-10, so its Grams are resolved to about 1e-9
#: of their scale (one rule for every Gram rank: certificates, prototypes, figures, scoring)
GRAM_RANK_RTOL = 1e-9
#: a certified solve is accepted when its KKT residual is at most
#: ``max(ACCEPT_FACTOR * tol, ACCEPT_FLOOR)`` for the solver's target ``tol``: three digits of
#: slack for the last polish step, never asking for less than the floor
ACCEPT_FACTOR = 1e3
#: the largest KKT residual an accepted solve may have, whatever its target
ACCEPT_FLOOR = 1e-6
#: the default target KKT residual of the certified solver (relative to the gradient scale):
#: two orders above the rounding floor of the loss, reached in a few polish steps
SOLVER_TOL = 1e-10
#: temperatures on which the certified solver of ``dgp.optimum`` is validated (seeded checks on
#: dense, kernel and class weightings): a failure outside this range is reported against the
#: temperature (bad input), inside it against dgp (its own failure). Measured: class quotients
#: overflow below about 3e-3, kernel weightings stop converging above about 1e9.
SOLVER_TAU_RANGE = (4e-3, 1e9)

# ----------------------------------------------------------------------------------------------
# floating point
# ----------------------------------------------------------------------------------------------

#: a relative change at the rounding level of float64 (about 4.5 u): a step, width or decrease
#: below this fraction of its scale is noise
ROUNDOFF_RTOL = 1e-15
#: the smallest positive scale dgp uses, far below any scale a float64 computation of dgp
#: reaches: the floor under a divisor (keeps 0/0 at 0 for an all-zero input without a warning),
#: the absolute tolerance of a root search meant to stop at its relative tolerance only, and the
#: low end of a range of positive numbers
SCALE_FLOOR = 1e-300
#: below this x, ``log1p(x) / x`` is evaluated by its series ``1 - x/2`` (exact to x^2 / 3,
#: under float64 roundoff), above it by ``log1p``
LOG1P_SERIES_BELOW = 1e-8
#: the rows of a target distribution must sum to 1 within this (rounding of a normalised row)
PROBABILITY_ATOL = 1e-12

# ----------------------------------------------------------------------------------------------
# the certified solver (dgp.solver)
# ----------------------------------------------------------------------------------------------

#: Armijo sufficient-decrease constant of the L-BFGS and Newton line searches (the usual 1e-4)
ARMIJO = 1e-4
#: the L-BFGS line search gives up halving below this step (the direction is at the rounding
#: floor)
LINE_SEARCH_MIN_STEP = 1e-12
#: an L-BFGS pair (s, y) is stored only when s.y exceeds this fraction of |s||y|: positive
#: curvature beyond rounding, so the inverse-Hessian estimate stays positive definite
CURVATURE_FLOOR = 1e-16
#: Burer-Monteiro L-BFGS stops when the gradient falls to this fraction of the first one
BM_GTOL = 1e-13
#: L-BFGS gradient tolerance of the linear (Frank-Wolfe) subproblem, whose answer only has to
#: be a good direction
LINEAR_GTOL = 1e-10
#: size of the deterministic perturbation (relative to the unit columns) that lifts a rank-
#: deficient start to full rank
START_PERTURBATION = 1e-3
#: truncated CG treats curvature below this fraction of the first direction's as rounding (a
#: symmetry direction of the factor, not negative curvature)
TCG_CURVATURE_FLOOR = 1e-8
#: the trust region stops when the Riemannian gradient is this fraction of the gradient's parts
RTR_GTOL = 1e-12
#: after a few Newton steps the residual must have fallen by this factor, else the start is not
#: in Newton's quadratic regime (a wrong rank guess)
NEWTON_QUADRATIC_DROP = 1e-3
#: Newton on the reduced KKT system stops at a residual this fraction of ``1 + |delta|``
NEWTON_RTOL = 1e-14
#: singular values below this fraction of the largest are cut in the least-squares Newton step
NEWTON_LSTSQ_RCOND = 1e-13
#: the Newton line search gives up below this step length
NEWTON_MIN_STEP = 1e-4
#: candidate dual ranks of the Newton polish: eigenvalues of S above these fractions of the top
DUAL_RANK_CUTS = (1e-2, 1e-5)
#: candidate primal ranks of the trust-region polish: eigenvalues of G above these fractions
PRIMAL_RANK_CUTS = (1e-3, 1e-6, 1e-9)
#: the largest spectral gap is looked for among eigenvalues above this fraction of the top
#: (dual spectrum of the Newton polish, scaled by the gradient)
DUAL_GAP_CUT = 1e-4
#: the largest spectral gap is looked for among eigenvalues above this fraction of the top
#: (primal spectrum of the trust-region polish)
PRIMAL_GAP_CUT = 1e-10
#: a dual matrix whose top eigenvalue (scaled by the gradient) is below this is zero: an
#: interior optimum, S = 0
INTERIOR_DUAL = 1e-10
#: the margin of a lifted class within which it sits at its collapse threshold: ``1e3`` times
#: the quotient's KKT residual, clipped to this range
COLLAPSE_TOL_RANGE = (1e-8, 1e-4)
#: the face test calls uniqueness undecided within this fraction (times N) of ``s = 1``
FACE_UNIQUENESS_TOL = 1e-8

# ----------------------------------------------------------------------------------------------
# prototypes and optimum
# ----------------------------------------------------------------------------------------------

#: ``rho = 1 + tau log eps`` counts as the simplex cosine ``-1/(K-1)`` (Soft SupCon at tau*)
#: within this: the rounding of ``tau log eps`` (a few 1e-16) with four digits of room
EQUIANGULAR_ATOL = 1e-12
#: default largest entrywise difference between the batch and the full-batch prototype Grams
#: that ``batch_size_for_tolerance`` accepts (two decimals of a cosine)
BATCH_GRAM_TOL = 1e-2
#: the nearest-elliptope projection (Dykstra) stops when a sweep moves the point by less than
#: this, relative: far below the accuracy a start or a figure needs, reached in few sweeps
NEAREST_ELLIPTOPE_TOL = 1e-12
#: a deterministic perturbation of the spectral start of the rank-d optimum, so that no column
#: is zero (small enough not to move the start's geometry)
SPECTRAL_START_PERTURBATION = 1e-6
#: gradient tolerance of the rank-d polish of the optimum in R^d (relative, as ``bm_lbfgs``)
RANK_D_GTOL = 1e-9
#: a square ``prototypes`` array given to ``dgp.torch.GeometryMonitor`` is read as a Gram when it
#: is symmetric with unit diagonal within this (the rounding of a Gram saved in float32, with
#: room); otherwise its rows are read as prototype vectors
MONITOR_GRAM_ATOL = 1e-6

# ----------------------------------------------------------------------------------------------
# parameter searches (dgp.design)
# ----------------------------------------------------------------------------------------------

#: default range of tau searched by ``recommend`` for a realizable or attainable verdict
TAU_SEARCH = (1e-4, 1e4)
#: default range of tau searched for a minority cosine (prototype solves, slower below 0.01)
MINORITY_TAU_SEARCH = (0.01, 10.0)
#: default range of eps searched: every eps in (0, 1) float64 resolves away from 1
EPS_SEARCH = (1e-300, 1.0 - 1e-12)
#: a verdict-flip search in t = log tau stops at this width (classification is exact, so it
#: goes to the rounding of t)
TAU_T_TOL = 1e-13
#: the same in t = log(-log eps)
EPS_T_TOL = 1e-14
#: the same for a minority cosine, whose solves are resolved to about the solver tolerance
PROTOTYPE_T_TOL = 1e-11
#: absolute step of a root search in t, relative to ``max(1, |t|)``: below the float64
#: spacing, so that the search stops at its relative tolerance (4 eps)
ROOT_XTOL = 1e-16
#: a cell within this relative distance of a closed form's critical tau gets no prediction
#: from it: the verdict flips there, and the closed form's constants carry rounding
CLOSED_FORM_BOUNDARY_RTOL = 1e-9
#: a grid of values is geometric (drawn on a log axis) when its log-steps agree to this
#: relative tolerance (a grid typed in decimals, e.g. 0.1, 0.2, 0.4, has more)
GEOMETRIC_GRID_RTOL = 1e-6

# ----------------------------------------------------------------------------------------------
# display (figures and tables)
# ----------------------------------------------------------------------------------------------

#: a number within this fraction of the plotted range is drawn as 0 (rounding noise next to
#: the range), and an interval this narrow relative to its end is drawn as a point
PLOT_ZERO_RTOL = 1e-9
#: the smallest half-height of an eigenvalue axis, relative to the largest eigenvalue drawn
PLOT_MIN_SPAN = 1e-6
#: log-weights whose spread is below this fraction of their size are drawn as constant
PLOT_VARIES_RTOL = 1e-12
#: an embedding whose row norms are 1 within this is drawn on the unit circle or sphere
UNIT_NORM_ATOL = 1e-6

# ----------------------------------------------------------------------------------------------
# validation of a weighting (dgp.engine.target)
# ----------------------------------------------------------------------------------------------

#: the smallest ratio w / w_max taken directly as a float quotient (above it the quotient is a
#: normal float, so its logarithm is exact to one rounding); below it, the logarithms come from
#: mantissas and exponents
RATIO_NORMAL_MIN = 1e-290

# ----------------------------------------------------------------------------------------------
# the engine (decisions along a family)
# ----------------------------------------------------------------------------------------------

#: two eigenvector slopes (in [-1, N - 1]) closer than this are one: the Farkas combination of
#: the two sides is then taken from the flatter one
SLOPE_GAP = 1e-12
#: the two bottom eigenvectors of a Farkas certificate are taken at most this far (relative to
#: ``max(1, |mu*|)``) on each side of the maximiser
FARKAS_OFFSET_RTOL = 1e-7
#: a floor under the smallest slope of a vanishing eigenvalue when widening the end-point
#: window by the noise it amplifies
SLOPE_FLOOR = 1e-8
#: the window of near-zero eigenvalues fitted at an end point is at most this fraction of the
#: member's scale
CLUSTER_WINDOW_RTOL = 1e-6
#: the concave search of the maximiser stops at this fraction of the tolerance at a lower bound
#: of the spectral norm at its best point (the spectrum's norm_floor), far inside the band the
#: verdict tolerates there
SEARCH_RESOLUTION = 1e-2
#: when the concave search's bracket stops halving (one end creeps up to a kink), it probes just
#: past the latest cut, a few ulps away, the offset growing by this factor at each such probe
PROBE_GROWTH = 16.0

# ----------------------------------------------------------------------------------------------
# the loss audit (dgp.torch.audit)
# ----------------------------------------------------------------------------------------------

#: default relative tolerance of the audit's gradient model and of a match with a registered
#: objective (``--match-rtol``)
MATCH_RTOL = 1e-6
#: the relative accuracy of the audit's float64 probes: an asymmetry, a similarity residual or
#: an anchor spread above it is a property of the loss, not rounding
PROBE_RTOL = 1e-6
#: a fit or objective error below this is close: the report suggests a larger --match-rtol
NEAR_MATCH = 1e-3
#: a fitted weight below this fraction of the largest is zero (the fits are least squares of
#: float64 gradients, exact to about 1e-13 of their scale)
FIT_ZERO_RTOL = 1e-9
#: the least relative residual a fit of the audit is credited with (float64 least squares)
FIT_RESIDUAL_FLOOR = 1e-13
#: gradient tolerance of the minimisation of the predicted geometry (N x d embeddings)
GEOMETRY_GTOL = 1e-10
#: gradient tolerance of torch's L-BFGS on the K x K prototype problem of the audit
TORCH_LBFGS_GTOL = 1e-13
#: torch's L-BFGS stops when a step changes the loss by less: below float64 resolution, so
#: that the gradient test decides
LBFGS_CHANGE_TOL = 1e-16
#: a learned and a predicted geometry equal up to a common shift within this fraction of
#: their size count as identical (R^2 = 1)
GEOMETRY_MATCH_RTOL = 1e-9
#: range of eps searched when fitting an audited loss to Soft SupCon
EPS_FIT_RANGE = (1e-6, 1.0 - 1e-9)
#: range of a label temperature searched when fitting an audited loss
LABEL_TAU_FIT_RANGE = (1e-2, 1e2)
#: absolute tolerance (in the log of the parameter) of the fit of an objective's parameter
PARAM_FIT_XATOL = 1e-11
#: temperatures searched when the audit estimates a loss's temperature from its probes
TAU_SEARCH_RANGE = (1e-3, 1e2)
#: grid points (log-spaced over TAU_SEARCH_RANGE) before the temperature is refined
TAU_SEARCH_POINTS = 41
#: temperature used to place the probes when the loss's own is not known (the probes' scale
#: cancels: the temperature is estimated from them)
AUDIT_PROBE_TAU = 0.1
#: an estimated and a given temperature that differ by more than this fraction disagree
TAU_AGREE_RTOL = 1e-4

# ----------------------------------------------------------------------------------------------
# shared numerics, objectives and experiments
# ----------------------------------------------------------------------------------------------

#: the sign of an eigenvector is fixed by its largest entry, "largest" within this relative
#: slack, so that rounding between two equal-magnitude entries of opposite sign cannot flip it
SIGN_FIX_SLACK = 1e-6
#: accuracy asked of SCS, the fallback of the reference SDP engine (Clarabel failed)
SCS_EPS = 1e-10
#: default relative tolerance of ``fit_sphere`` (points on a sphere or an affine subspace)
SPHERE_FIT_RTOL = 1e-10
#: the sphere fit behind a label condition is never asked for more than this (float64 least
#: squares on squared coordinates resolve no further)
SPHERE_FIT_RTOL_FLOOR = 1e-12
#: labels lie on a sphere when the fit's residual is at most ``sqrt(max(rtol, this))``: the
#: residual of exact spherical labels is float64 noise of order 1e-8
SPHERE_RESIDUAL_RTOL_FLOOR = 1e-16
#: a Gram given to the experiments' scoring is symmetric within this (learned embeddings are
#: float32 products)
SYMMETRY_ATOL = 1e-8

# ----------------------------------------------------------------------------------------------
# property-testing strategies (dgp.strategies)
# ----------------------------------------------------------------------------------------------

#: the near-critical strategies draw a relative distance ``|delta|`` to the critical value of
#: at least this (or exactly 0): closer, a test's closed form rounds as much as the engine
NEAR_CRITICAL_MIN_REL = 1e-3
#: labels "on no sphere" leave a least-squares residual of at least this fraction of
#: ``| |y|^2 |`` in the sphere fit
OFF_SPHERE_MIN_RESIDUAL = 1e-2
#: range of eps drawn for Soft SupCon near its critical temperature
SOFT_SUPCON_EPS_RANGE = (1e-3, 0.9)

# ---- zero-weight patterns (dgp.engine.zeros) ----------------------------------------------
# The leading-order problem of a zero pattern is solved in float64 on a configuration X0 whose
# positive pairs are at unit distance (its limit is defined up to scale), whatever the input's
# precision: the tolerances of that computation are relative to its unit scale (edges, slack)
# or to its size (a family's gap), with float64's roundoff. The data enter through the
# log-ratio terms delta = -2 tau ell, whose tolerance follows rtol (Tolerance.delta_atol).
#: accepted residual of the unit-length equations |x_i - x_j|^2 = 1 of a constructed X0
ZERO_EDGE_RTOL = 1e-12
#: least slack (squared distance minus 1) of the non-positive pairs of a strict X0
ZERO_SLACK = 1e-6
#: relative residual to which the rigidity system 2<x_i - x_j, y_i - y_j> = delta_ij is solved
ZERO_RESIDUAL_RTOL = 1e-9
#: a family's entropic gap below this reads as zero (float64 log-softmax rows of moderate size,
#: measured ~1e-14), and it is known to this relative accuracy
ZERO_GAP = 1e-9
#: relative accuracy of one float64 operation of the construction (4 units of roundoff)
ZERO_ARITH = 4.0 * 2.0**-52
#: a vanishing family's gap falls by at least this factor from the first listed t to the last
ZERO_GAP_DECAY = 1e-3
#: an undecided component reads as approached when a loss minimisation reaches a gap below this
#: (nats per sample, unchanged by W -> alpha W): minimisations of approached patterns with
#: nested scales stall near 1e-5, the loss floors of patterns that are not approached seen on
#: small supports are above 4e-2
ZERO_EVIDENCE = 1e-3

# ---- twin classes found in a dense weighting (dgp.engine.blocks.dense_blocks) ----------------
#: the search stops (the dense engine runs) when the classes found so far average fewer samples
TWIN_MIN_MEAN_SIZE = 8
#: columns compared first, to screen the candidates of a class before comparing whole rows
TWIN_SCREEN = 16
#: the search stops once it has compared this many times N^2 entries
TWIN_WORK_BUDGET = 6.0

# ---- non-negative (ReLU-head) prototypes (dgp.prototypes._nonnegative, dgp.solver._nonnegative)

#: entries of a non-negative factor at or below this are its zeros (the support polish and the
#: first-order residual read the support from it); starts are lifted by it off exact zeros
NONNEG_SUPPORT_TOL = 1e-8
#: a rank-d inequality w^T M w >= 1/d (w on the simplex) violated by less than this over d is
#: not added as a cut (it would not move the bound)
NONNEG_CUT_VIOLATION = 1e-7
#: gap and feasibility tolerances handed to Clarabel for the doubly non-negative relaxation (the
#: bound is made rigorous afterwards, whatever the solver reached)
DNN_SOLVER_TOL = 1e-10
#: a non-negative prototype Gram is certified optimal when its loss exceeds the certified lower
#: bound by at most this fraction of its excess over the entropic bound (the accuracy the
#: semidefinite solver reaches on the scaled objective, with margin)
NONNEG_GAP_RTOL = 1e-6

# ---- the extremes of temperatures (issue 27) ---------------------------------------------
#: the largest temperature the certified solver takes: above 2^53 (about 9.0e15), exp(G/tau) is
#: 1 to double precision for every cosine G in [-1, 1] (2/tau is below the unit roundoff), so
#: the loss is flat and no minimiser can be resolved
SOLVER_TAU_MAX = 2.0**53
#: the largest tau times the spread of the log-weights that the structured cosine engines (label
#: kernels, class blocks) take: their family's constants (tau c, the box of c) reach that size,
#: and float64 ends at 1.8e308
COSINE_TAU_SPREAD_MAX = 1e300
#: the smallest temperature of the mini-batch prototype prediction: its certified solver's scaled
#: objective overflows below about 2.5e-3 (measured: sizes 5,3,2 and 30,30, batch sizes 4 and 8)
BATCH_TAU_MIN = 4e-3

# ----------------------------------------------------------------------------------------------
# class prototypes in a fixed dimension (dgp.solver._rank, dgp.prototypes)
# ----------------------------------------------------------------------------------------------

#: a rank-d point is second-order critical when the smallest eigenvalue of its Riemannian
#: Hessian is at least minus this fraction of the largest: the rotations of the factor give
#: exact zeros, computed to about 1e-9 of the largest eigenvalue (HESSIAN_EIG_RTOL and the
#: stationarity of the point), so this leaves three digits of room
RANK_D_HESSIAN_RTOL = 1e-6
#: the column preconditioner of the factor path's L-BFGS is floored at this fraction of its
#: largest entry, so that no column's step is unbounded
PRECONDITION_FLOOR = 1e-6
#: relative accuracy asked of the Lanczos estimates of the Riemannian Hessian's extreme
#: eigenvalues (both computed as largest eigenvalues, away from zero)
HESSIAN_EIG_RTOL = 1e-9
#: largest tangent dimension ``d K`` whose Riemannian Hessian is formed densely (exact
#: eigenvalues); above it Lanczos on the Hessian-vector product
HESSIAN_DENSE_MAX = 1200
#: Lanczos restarts allowed per extreme eigenvalue of the Riemannian Hessian (ARPACK, 24
#: vectors each): beyond, the estimate is reported as not converged (second order unproven)
HESSIAN_EIG_MAXITER = 30
#: relative accuracy asked of the Lanczos estimate of the dual's lowest eigenvalue on the
#: factor path (many classes): only the shift of the certifying Cholesky factorisation comes
#: from it, so a loose estimate costs a slightly weaker bound, never a wrong one
DUAL_LANCZOS_RTOL = 1e-5
#: relative (and absolute, on the dual scaled by its gradient scale) margin added to minus that
#: estimate before a Cholesky factorisation certifies the shift: ten times DUAL_LANCZOS_RTOL;
#: the shift is doubled until the factorisation succeeds
CHOLESKY_SHIFT_RTOL = 1e-4
#: temperature of the log-sum-exp repulsion of ``uniform_sphere_points``: small enough that the
#: energy is led by the closest pairs (a soft maximum of the cosines), large enough to be smooth
REPULSION_TEMPERATURE = 0.05
#: step of its Riemannian gradient descent, in radians of the largest move of a point
REPULSION_STEP = 0.05

# ----------------------------------------------------------------------------------------------
# the rank-d search policy (dgp.solver._policy): one place for every fixed-dimension solve,
# signed and non-negative, of dgp.optimum, dgp.supcon_prototypes and dgp.loss_floors
# ----------------------------------------------------------------------------------------------

#: default random candidates of a rank-d search (besides the given starts: the free optimum's
#: truncation, a spectral start): each is descended and improved by its own chain of moves,
#: independently of the others, so a larger budget contains a smaller one's computation.
#: Measured on random class problems (K 6 to 20, d 2 to 4): long chains from few starts find
#: lower losses than many short ones at the same cost (8 x 60 moves beat 16 x 40 and 16 x 6)
RANK_D_STARTS = 8
#: a row problem of this many rows or more (every batch composition's: 5 s a move at 231 880)
#: is searched on RANK_D_SAMPLED_ROWS rows drawn by weight, then polished on all (solve_rank_d)
RANK_D_SAMPLED_FROM_ROWS = 50_000
#: rows of the sampled phase of a search on many rows (drawn with replacement, seeded)
RANK_D_SAMPLED_ROWS = 10_000
#: most moves of each candidate's chain: two of its points exchanged (which class sits where),
#: twice, then seeded Gaussian noise, repeating; each move is descended and kept when better
RANK_D_HOPS = 60
#: a chain ends after this many moves in a row that did not lower its loss
RANK_D_HOP_STALL = 15
#: above this many classes a signed or sample-level candidate's chain (RANK_D_HOPS moves,
#: RANK_D_HOP_STALL failures) lengthens in proportion to K, up to RANK_D_HOP_LENGTHEN_MAX times:
#: a swap move picks one of K (K - 1) / 2 pairs, and at K = 30, d = 8 (435 pairs) chains of 60
#: moves stopped 0.014 nats above the best of 256 descents, chains of 120 reached below it
RANK_D_HOP_CLASSES = 15
#: the longest chain, in multiples of RANK_D_HOPS and RANK_D_HOP_STALL (reached at
#: K = RANK_D_HOP_LENGTHEN_MAX * RANK_D_HOP_CLASSES; the cost of a K = 200, d = 2 search bounded)
RANK_D_HOP_LENGTHEN_MAX = 2
#: of every RANK_D_SWAP_PERIOD moves, the last is a noise move and the others are swaps
RANK_D_SWAP_PERIOD = 3
#: size of a noise move, per column, relative to the unit columns (over sqrt(dim))
RANK_D_HOP_SIZE = 0.5
#: above this ``K * dim`` a candidate makes no moves (its descent is the costly part) and the
#: default budget is RANK_D_LARGE_STARTS random candidates (besides the given starts)
RANK_D_HOP_MAX_SIZE = 400
#: random candidates of the default budget above RANK_D_HOP_MAX_SIZE when no start is given
RANK_D_LARGE_STARTS = 1
#: seeded random points of which each random candidate of a small full-batch rank-d search
#: (``K * dim`` up to RANK_D_HOP_MAX_SIZE, one row per class) starts from the lowest after
#: RANK_D_SCREEN_STEPS batched L-BFGS steps (dgp.solver._rank_d_screen; the candidate's own
#: points, so candidates stay nested). A batch-aware problem (a row per class and composition,
#: hundreds of rows) is not screened: there the screen took 57 of the 60 s of
#: ``supcon_prototypes([10, 6, 4, 3, 2], tau=0.2, batch_size=8, dim=2)`` (5.5 s without)
RANK_D_SCREEN_POINTS = 32
#: batched L-BFGS steps of those points before the lowest is chosen
RANK_D_SCREEN_STEPS = 100
#: Armijo halvings of a screened point's step before the step is refused (the point stays)
RANK_D_SCREEN_BACKTRACKS = 30
#: most entries of the ``points x rows x K`` arrays of one batched evaluation of the screen's
#: backtracking, which tries 1, 2, 4, ... halvings of every point that failed in one call: one
#: call per halving was ~2 400 calls per start (most of them for points that had converged
#: and fail every halving by round-off) and 58% of the CPU time of ten K <= 8, d <= 3 SupCon
#: searches (15.4 of 26.3 s; 8.1 of 18.8 s with the batched halvings)
RANK_D_SCREEN_CHUNK_ENTRIES = 1 << 17
#: seconds between two progress lines of a rank-d search given a ``progress`` callable (every
#: descent, trust-region step and Hessian-vector product checks the clock)
RANK_D_PROGRESS_S = 5.0
#: inner (truncated CG) steps of one step of the factor path's preconditioned trust region: more,
#: shorter outer steps through the flat valley of many classes (measured at K = 1000, d = 128,
#: tau = 0.1 from the L-BFGS point: 1200 products lowered the loss by 0.245 nats with 50 inner
#: steps, 0.191 with 1000)
RANK_D_PRECONDITIONED_INNER = 50
#: rejected steps in a row after which the factor path's preconditioned trust region gives up
#: (the flat valley of many classes rejects runs of steps before the region fits; the plain
#: trust region of the row problems gives up after 3)
RANK_D_TRUST_REJECTIONS = 5
#: above this ``K * dim`` a row problem's candidates are polished with shorter inner solves
#: (RANK_D_LARGE_POLISH_INNER) and its certificate skips the Lanczos estimate of the Riemannian
#: Hessian (measured: 10 s at N = 500, dim = 8, twice the whole search); the factor path (many
#: classes) keeps it, and at most HESSIAN_DENSE_MAX it is dense and cheap
RANK_D_SECOND_ORDER_MAX_SIZE = 3000
#: L-BFGS steps of a candidate's first descent and of each further round
RANK_D_RUN_ITERS = 500
#: L-BFGS steps of the descent after a move (it starts close to a minimiser)
RANK_D_MOVE_ITERS = 200
#: trust-region steps of a candidate's polish, and inner (truncated CG) steps of each
RANK_D_POLISH_ITERS = 20
#: inner (truncated CG) steps of each trust-region step of that polish
RANK_D_POLISH_INNER = 200
#: rounds of L-BFGS and trust region a candidate may take to reach its stationarity target
RANK_D_ROUNDS = 4
#: above this ``K * dim`` a rank-d solve takes two rounds of shorter trust-region polish (a
#: K = 1000, dim = 128 solve then fits in minutes on one core; the gap is reported either way)
RANK_D_LARGE_SIZE = 50_000
#: inner steps of a trust-region step above RANK_D_LARGE_SIZE
RANK_D_LARGE_POLISH_INNER = 60
#: rounds of a candidate above RANK_D_LARGE_SIZE
RANK_D_LARGE_ROUNDS = 2
#: seconds of L-BFGS evaluations a factor-path (many classes) candidate is given, by the
#: guard's cost model of one evaluation, within the fewest and most evaluations below
RANK_D_FACTOR_SECONDS = 120.0
#: the fewest L-BFGS evaluations of a factor-path candidate
RANK_D_FACTOR_MIN_EVALS = 100
#: the most L-BFGS evaluations of a factor-path candidate
RANK_D_FACTOR_MAX_EVALS = 5000
#: L-BFGS memory of a factor-path descent after it restarts (the first descent keeps its 8): a
#: long descent stops on the gradient of its unnormalised columns, which grow, or spends its
#: steps with the preconditioner of its start (``bm_lbfgs``); from the first such stop, at
#: K = 1000, d = 128, tau = 0.1, memory 30 and a fresh preconditioner reached a relative
#: Riemannian gradient of 7.3e-7 in 11 712 steps, memory 8 8.1e-4 in 5000
RANK_D_FACTOR_RESTART_MEMORY = 30
#: seconds of L-BFGS evaluations (the guard's cost model) the restarted descents of a factor-path
#: candidate are given on top of RANK_D_FACTOR_SECONDS, at most RANK_D_FACTOR_RESTART_MAX_EVALS
#: (K = 1000, d = 128: 7803 steps; tau = 0.1 reached 6.9e-7 after 11 709 of them, the whole call
#: 375 s of CPU; tau = 0.5 ended at 1.7e-4, 339 s)
RANK_D_FACTOR_RESTART_SECONDS = 180.0
#: the most L-BFGS evaluations of the restarted descents of a factor-path candidate
RANK_D_FACTOR_RESTART_MAX_EVALS = 10_000
#: seconds of trust-region Hessian-vector products a factor-path candidate is given after
#: L-BFGS: the trust region runs without its stall rule, through the long descent of a flat
#: landscape into Newton's quadratic regime (measured at K = 400, dim = 128: L-BFGS ends at a
#: gradient of 2e-3, 150 trust-region steps reach 5e-10)
RANK_D_POLISH_SECONDS = 120.0
#: one Hessian-vector product costs about this many evaluations (measured 65 ms against 33 ms at
#: K = 1000, dim = 128)
RANK_D_PRODUCT_EVALS = 2.0
#: a budget below this many products is not spent (a few inner steps do not polish anything)
RANK_D_POLISH_MIN_PRODUCTS = 200
#: the most products a factor-path polish is given
RANK_D_POLISH_MAX_PRODUCTS = 20_000
#: inner steps of one trust-region step, and trust-region steps, on the factor path: the
#: product budget binds first
RANK_D_FACTOR_POLISH_INNER = 1000
#: trust-region steps of a factor-path polish (the product budget binds first)
RANK_D_FACTOR_POLISH_STEPS = 1000
#: the guard's floor on one row-problem evaluation, in operations at 1e9 per second: about
#: 200 us of interpreter work whatever K (measured 200 us at K = 10, dim = 2)
RANK_D_EVAL_OVERHEAD = 2e5
#: the guard's rate of float64 matrix products on the factor path (flops per second): measured
#: 4e10 on one loaded core of the 2-core test machine (numpy 2, OpenBLAS), with margin
RANK_D_GEMM_RATE = 3e10
#: the same for elementwise passes over a ``K x K`` buffer (entries per second; measured 1e9)
RANK_D_PASS_RATE = 2e9
#: L-BFGS iterations of a non-negative candidate's first descent, and of its descents after a
#: move (squared parametrisation, then the support polish)
NONNEG_RUN_ITERS = 2000
#: L-BFGS iterations of a non-negative candidate's descent after a move
NONNEG_MOVE_ITERS = 500
#: of every NONNEG_RELOCATE_PERIOD moves of a non-negative chain the last relocates one class
#: (the others: class swaps and noise as RANK_D_SWAP_PERIOD says; dgp.solver.nonnegative_factor)
NONNEG_RELOCATE_PERIOD = 6
#: a non-negative candidate has NONNEG_CHEAP_SIZE // (K * dim) relocation chains (at least
#: one) beside its chain of swaps and noise: where K * dim is small a chain costs a fraction of
#: a second and one attractor can hold 5 of 8 chains (K = 8, d = 2: 8 starts stop at
#: 892.6488, 16 reach 892.4474)
NONNEG_CHEAP_SIZE = 32

#: the loss resolution of training, in nats per anchor, under which two solutions are told
#: apart by nothing: the run-to-run spread of the final loss in the experiments of
#: docs/results.md is 3e-4 to 6e-4 (identifiability reports of fixed-dimension searches)
LOSS_RESOLUTION = 5e-4

#: GeometryMonitor, mini-batch prediction: the fewest batches on which the learned and the
#: predicted Gram's batch losses are compared (paired, the same batches for both)
MONITOR_LOSS_BATCHES = 200

#: GeometryMonitor, mini-batch prediction: the most batches of that comparison (it stops
#: earlier once the 95% half-width of the gap is MONITOR_LOSS_HALF_WIDTH)
MONITOR_LOSS_MAX_BATCHES = 2000

#: GeometryMonitor, mini-batch prediction: the 95% half-width (nats per anchor) at which the
#: paired estimate of the expected batch loss gap stops drawing batches
MONITOR_LOSS_HALF_WIDTH = 1e-3

#: GeometryMonitor: the floats (samples times dimension, 64 MiB in float64) of a first pass
#: (no earlier class centres) kept to judge ncc_accuracy / nc4 against the current pass's
#: centres at compute(); beyond them the first samples that fit are judged, and their count
#: is reported as ncc_samples
MONITOR_FIRST_PASS_ENTRIES = 2**23

#: GeometryMonitor, mini-batch prediction: a loss gap this small relative to the predicted
#: loss (floating-point rounding of two equal Grams' batch losses) is within the uncertainty
#: even where the paired estimate's own half-width is smaller still
MONITOR_LOSS_ROUNDING = 1e-12

#: mini-batch predictions: the most batches (sample-level subsets) or class compositions whose
#: expected loss is taken exactly, over every one of them, by default (``exact_max`` of
#: dgp.optimum, the class-level prototypes and dgp.solver.compositions); beyond, the stochastic
#: or sampled path. Measured on the shared 2-core machine: 57 481 class compositions (K = 8)
#: certified in 19 s free; C(28, 5) = 98 280 subsets in d = 3 by the finite sum in 133 s (35 s
#: of CPU)
EXACT_MAX_DEFAULT = 100_000

#: a Gram attains every batch composition's bound where, per class a, G_ab - tau log W_ab is
#: the same for every b to this (dgp.prototypes._batched.attains_every_batch_bound; Soft SupCon
#: at tau <= tau*, whose closed form is exact to rounding)
BATCH_ATTAIN_ATOL = 1e-9
#: largest excess of a composition's loss over its bound, relative to the largest row loss, that
#: such a Gram's certificate accepts (a round-off-level check of each composition drawn)
BATCH_ATTAIN_EXCESS = 1e-9

#: further independent runs beyond exact enumeration, the one default of dgp.optimum and
#: dgp.supcon_prototypes (``replicates=``): a stochastic expected-batch solve runs 1 + this many
#: seeded runs and keeps the best (their spread: the identifiability report and each Gram
#: entry's 95% interval); a sample average of compositions solves this many more samples for
#: the Gram's standard error. One default for both entry points (they gave 0 and 2)
BATCH_REPLICATES = 2

# ----------------------------------------------------------------------------------------------
# the stochastic expected-batch optimiser (dgp.solver.stochastic_optimum)
# ----------------------------------------------------------------------------------------------

#: partner terms each point gets in one round of the stochastic optimiser (its unit of budget,
#: schedule, plateau test and annealing; dgp.solver._stochastic.round_steps): an epoch at B = 256
#: and for collapsed classes, 160 steps (8.9 epochs) at N = 300, B = 16, where (d = 8, tau 0.2)
#: 200 epochs stopped 0.0027 nats per anchor above a long Adam, 128 terms 0.0002 (5-7 s a run)
ROUND_PARTNER_TERMS = 128
#: ... and at least this many terms with *positive* partners (a 10-NN graph of N = 2000 meets
#: 1.3 an epoch at B = 256, where, d = 128, tau 0.1, epochs stopped 0.047 nats per anchor above
#: 16 terms, 8 terms 0.004; soft labels meet about 90: unchanged; solver.positive_partners)
ROUND_POSITIVE_TERMS = 16
#: ... but a round is at most this many epochs (a perfect matching asked 140 at N = 2000)
ROUND_POSITIVE_MAX_EPOCHS = 16

#: closed forms with up to this many distinct class sizes m carry their structured KKT
#: certificate (dgp.prototypes._equiangular_kkt: O(K + m^3), 0.2 s at m = 1000), at any K
EQUIANGULAR_KKT_MAX_GROUPS = 1000
