r"""The true minimiser of a cosine w-InfoNCE: a convex program over the Gram matrix.

With cosine similarity :math:`s_{ij} = G_{ij}/\tau` the loss summed over anchors,

.. math::

    L(G) = \sum_i \Big[-\sum_{j \ne i} p_{ij}\,\frac{G_{ij}}{\tau}
        + \log\sum_{k \ne i} e^{G_{ik}/\tau}\Big],

is convex in :math:`G` (log-sum-exp of linear maps), so

.. math::

    \min_G L(G) \quad\text{s.t.}\quad G \succeq 0,\ \operatorname{diag} G = 1

is a convex program (solved with cvxpy, exponential and PSD cones). A minimiser of rank
:math:`r` is optimal in every dimension :math:`d \ge r`.

Certificates, none of which trusts the solver status:

* **duality gap.** With :math:`y` the solver's multiplier of :math:`\operatorname{diag}G = 1`
  (cvxpy reports :math:`-y` in its convention, which we undo) and
  :math:`S = \nabla L(G) - \operatorname{Diag}(y)`, convexity gives for every feasible
  :math:`G^\star`: :math:`L(G) - L(G^\star) \le \langle S, G\rangle + N\max(0,
  -\lambda_{\min}(S))` (because :math:`\langle S, G^\star\rangle \ge \lambda_{\min}(S)
  \operatorname{tr}G^\star`). That bound, evaluated at the cleaned primal point, is
  ``duality_gap`` (nats); it is an upper bound on the suboptimality, valid whatever the solver did.
* **rank**: eigenvalues of :math:`G` above ``rank_rtol * lambda_max``.
* **uniqueness over the optimal face.** Each row's log-sum-exp is strictly convex except along
  the all-ones direction, and the linear part cancels that direction exactly, so :math:`L` is
  constant along :math:`G + c(J - I)` (a shift of every off-diagonal cosine, the softmax shift)
  and strictly convex across it. Two minimisers therefore differ by a multiple of
  :math:`J - I`: the optimal face is the segment :math:`\{G + c(J - I) \succeq 0\}`. Its
  end points are found by bisection on :math:`\lambda_{\min}` (a concave function of ``c``), with
  the PSD tolerance ``rank_rtol * lambda_max``; the minimiser is reported unique when the
  segment is shorter than ``unique_tol``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import logsumexp

from dgp.errors import check_positive, check_rtol, check_sizes, check_unit_interval, check_weights
from dgp.infonce import entropic_bound

__all__ = ["Optimum", "optimum", "prototype_program"]


@dataclass(frozen=True, eq=False)
class Optimum:
    """The true minimiser of a cosine w-InfoNCE loss and its certificates.

    Attributes
    ----------
    gram : ndarray, shape (N, N)
        Optimal Gram matrix (cleaned: symmetric, eigenvalues clipped at 0, unit diagonal).
    loss : float
        Loss at ``gram`` (nats, summed over anchors), recomputed from ``gram``.
    entropic_bound : float
        :math:`\\sum_i H(p_i)`; ``loss - entropic_bound`` is the excess.
    duality_gap : float
        Upper bound on ``loss - min L`` from the solver's dual multipliers (module docstring).
    dual_min_eig : float
        :math:`\\lambda_{\\min}(S)`, the dual PSD check.
    rank : int
        Numerical rank of ``gram`` (eigenvalues above ``rank_rtol * lambda_max``).
    rank_rtol : float
        The relative tolerance used for the rank and the PSD test of the face.
    eigenvalues : ndarray
        Eigenvalues of ``gram``, descending.
    embedding : ndarray, shape (N, rank)
        :math:`Z = U\\sqrt{\\Lambda}` from the ``rank`` leading eigenpairs (clipped eigenvalues;
        each eigenvector's largest-magnitude entry made positive), so ``Z Z^T ~ gram``.
    unique : bool
        Whether the optimal face is a single point (module docstring).
    face : tuple of float
        The interval of ``c`` with ``gram + c (J - I)`` optimal; its length is the face width.
    unique_tol : float
        Largest face width reported as unique.
    tau : float
    n : int
    solver : str
    status : str
        The solver's own status, reported for information only.
    """

    gram: np.ndarray
    loss: float
    entropic_bound: float
    duality_gap: float
    dual_min_eig: float
    rank: int
    rank_rtol: float
    eigenvalues: np.ndarray
    embedding: np.ndarray
    unique: bool
    face: tuple[float, float]
    unique_tol: float
    tau: float
    n: int
    solver: str
    status: str

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready fields."""
        return {
            "n": self.n,
            "tau": self.tau,
            "loss": self.loss,
            "entropic_bound": self.entropic_bound,
            "excess_loss": self.loss - self.entropic_bound,
            "duality_gap": self.duality_gap,
            "dual_min_eig": self.dual_min_eig,
            "rank": self.rank,
            "rank_rtol": self.rank_rtol,
            "eigenvalues": self.eigenvalues.tolist(),
            "unique": self.unique,
            "face": list(self.face),
            "unique_tol": self.unique_tol,
            "gram": self.gram.tolist(),
            "embedding": self.embedding.tolist(),
            "solver": self.solver,
            "status": self.status,
        }


def _loss_grad(G: np.ndarray, P: np.ndarray, tau: float) -> tuple[float, np.ndarray]:
    S = G / tau
    np.fill_diagonal(S, -np.inf)
    lse = logsumexp(S, axis=1, keepdims=True)
    Q = np.exp(S - lse)
    Sz = S.copy()
    np.fill_diagonal(Sz, 0.0)
    loss = float(np.sum(lse[:, 0]) - np.sum(P * Sz))
    R = (Q - P) / tau
    g = 0.5 * (R + R.T)
    np.fill_diagonal(g, 0.0)
    return loss, g


def _clean(G: np.ndarray) -> np.ndarray:
    """Nearest-ish feasible point: symmetric, eigenvalues clipped at 0, unit diagonal."""
    G = 0.5 * (G + G.T)
    lam, U = np.linalg.eigh(G)
    G = (U * np.clip(lam, 0.0, None)) @ U.T
    d = np.sqrt(np.clip(np.diag(G), 1e-300, None))
    G = G / np.outer(d, d)
    return 0.5 * (G + G.T)


def _face(G: np.ndarray, psd_tol: float) -> tuple[float, float]:
    N = G.shape[0]
    JI = np.ones((N, N)) - np.eye(N)

    def ok(c: float) -> bool:
        return float(np.linalg.eigvalsh(G + c * JI)[0]) >= -psd_tol

    ends = []
    for sign in (1.0, -1.0):
        lo, hi = 0.0, 2.0  # |c| <= 2 keeps every cosine in [-1, 1] from any feasible start
        if ok(sign * hi):
            ends.append(sign * hi)
            continue
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            if ok(sign * mid):
                lo = mid
            else:
                hi = mid
        ends.append(sign * lo)
    return ends[1], ends[0]


def _embedding(lam: np.ndarray, U: np.ndarray, rank: int) -> np.ndarray:
    order = np.argsort(lam)[::-1][:rank]
    V = U[:, order]
    big = np.argmax(np.abs(V), axis=0)
    signs = np.sign(V[big, np.arange(V.shape[1])])
    signs[signs == 0] = 1.0
    return V * signs * np.sqrt(np.clip(lam[order], 0.0, None))


def optimum(
    W: object,
    *,
    tau: float,
    rank_rtol: float = 1e-6,
    unique_tol: float = 1e-4,
    solver: str = "CLARABEL",
) -> Optimum:
    r"""True minimiser of the cosine w-InfoNCE loss of weighting ``W`` (convex program).

    Parameters
    ----------
    W : array_like, shape (N, N)
        Weights, validated as :func:`dgp.errors.check_weights` (diagonal ignored).
    tau : float
        Temperature ``> 0``.
    rank_rtol : float
        Relative eigenvalue tolerance for the rank and the PSD test of the optimal face.
    unique_tol : float
        Largest optimal-face width still reported as a unique minimiser.
    solver : str
        cvxpy solver name (an exponential- and PSD-cone solver).

    Returns
    -------
    Optimum

    Raises
    ------
    ValueError, TypeError
        On invalid weights, ``tau <= 0``, tolerances outside ``(0, 1)``, or an unknown solver.

    Examples
    --------
    >>> from dgp.weights import supcon_weights
    >>> opt = optimum(supcon_weights([0, 0, 1, 1]), tau=0.5)
    >>> opt.rank, bool(np.allclose(opt.gram[0, 1], 1, atol=1e-5)), opt.unique
    (1, True, True)
    """
    import cvxpy as cp

    A = check_weights(W)
    tau = check_positive(tau, "tau")
    rank_rtol = check_rtol(rank_rtol, "rank_rtol")
    unique_tol = check_positive(unique_tol, "unique_tol")
    if not isinstance(solver, str) or solver not in cp.installed_solvers():
        raise ValueError(
            f"solver must be one of the installed cvxpy solvers {cp.installed_solvers()}, "
            f"got {solver!r}"
        )
    N = A.shape[0]
    P = A / A.sum(axis=1, keepdims=True)
    rows = np.repeat(np.arange(N), N - 1)
    cols = np.array([k for i in range(N) for k in range(N) if k != i])
    G = cp.Variable((N, N), symmetric=True)
    off = cp.reshape(G[rows, cols], (N, N - 1), order="C")
    Poff = P[rows, cols].reshape(N, N - 1)
    # shifted by 1/tau per row (sum_j p_ij = 1), so that the exponents stay <= 0
    obj = cp.sum(
        -cp.sum(cp.multiply(Poff, off - 1.0), axis=1) / tau + cp.log_sum_exp((off - 1.0) / tau, 1)
    )
    cons = [G >> 0, cp.diag(G) == 1]
    prob = cp.Problem(cp.Minimize(obj), cons)
    try:
        prob.solve(solver=solver)
    except cp.error.SolverError as exc:
        raise ValueError(f"the convex program could not be solved by {solver}: {exc}") from None
    if G.value is None or cons[1].dual_value is None:
        raise ValueError(f"{solver} returned no solution (status {prob.status!r})")
    Gc = _clean(np.asarray(G.value))
    loss, g = _loss_grad(Gc, P, tau)
    y = -np.asarray(cons[1].dual_value, dtype=float)  # cvxpy: S = grad + Diag(dual)
    S = g - np.diag(y)
    lam_S = np.linalg.eigvalsh(S)
    gap = max(0.0, float(np.sum(S * Gc))) + N * max(0.0, -float(lam_S[0]))
    lam, U = np.linalg.eigh(Gc)
    lam_max = float(lam[-1])
    rank = int(np.sum(lam > rank_rtol * lam_max))
    face = _face(Gc, rank_rtol * lam_max)
    return Optimum(
        gram=Gc,
        loss=loss,
        entropic_bound=entropic_bound(A),
        duality_gap=gap,
        dual_min_eig=float(lam_S[0]),
        rank=rank,
        rank_rtol=rank_rtol,
        eigenvalues=lam[::-1].copy(),
        embedding=_embedding(lam, U, rank),
        unique=bool(face[1] - face[0] <= unique_tol),
        face=face,
        unique_tol=unique_tol,
        tau=tau,
        n=N,
        solver=solver,
        status=str(prob.status),
    )


def prototype_program(
    sizes: object,
    *,
    tau: float,
    eps: float | None = None,
    solver: str = "CLARABEL",
    solver_opts: dict[str, Any] | None = None,
) -> np.ndarray:
    r"""The ``K x K`` prototype problem of :mod:`dgp.prototypes` as a generic exponential-cone
    program (cvxpy), kept as an independent reference for the certified solver.

    Minimises :math:`\sum_c n_c[\beta_c\sum_{c'} n_{c'}(1 - G_{cc'}) + \log((n_c - 1) +
    \sum_{c' \ne c} n_{c'} e^{(G_{cc'} - 1)/\tau})]` over the elliptope and returns ``G`` as the
    solver left it (``solver_opts`` are passed to ``Problem.solve``). With Clarabel's default
    tolerances it is off by 1e-5 to 5e-4 in ``G`` even at ``tau`` in [0.5, 1] (K = 3..40), and
    it degrades further at ``tau <= 0.1`` (DESIGN §4), which is why the certified solver exists.

    Raises
    ------
    ValueError, TypeError
        On invalid arguments or a solver failure.
    """
    import cvxpy as cp

    n = check_sizes(sizes).astype(float)
    tau = check_positive(tau, "tau")
    if eps is not None:
        eps = check_unit_interval(eps, "eps")
    K = n.size
    N = n.sum()
    G = cp.Variable((K, K), symmetric=True)
    rows = np.repeat(np.arange(K), K - 1)
    cols = np.array([d for c in range(K) for d in range(K) if d != c])
    off = cp.reshape(G[rows, cols], (K, K - 1), order="C")
    logn = np.log(n[cols]).reshape(K, K - 1)
    X = cp.hstack([logn + (off - 1.0) / tau, np.log(n - 1.0)[:, None]])
    obj = n @ cp.log_sum_exp(X, axis=1)
    if eps is not None:
        Z = (n - 1.0) + eps * (N - n)
        coef = (n * eps / (tau * Z))[:, None] * n[cols].reshape(K, K - 1)
        obj = obj + cp.sum(cp.multiply(coef, 1.0 - off))
    prob = cp.Problem(cp.Minimize(obj), [G >> 0, cp.diag(G) == 1])
    try:
        prob.solve(solver=solver, **(solver_opts or {}))
    except cp.error.SolverError as exc:
        raise ValueError(f"the prototype program could not be solved by {solver}: {exc}") from None
    if G.value is None:
        raise ValueError(f"{solver} returned no solution (status {prob.status!r})")
    return 0.5 * (np.asarray(G.value) + np.asarray(G.value).T)
