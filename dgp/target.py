r"""The target similarities that attain the entropic bound.

Gibbs' inequality gives :math:`L(Z) \ge \sum_i H(p_i)` with equality iff
:math:`s_{ij} = \log w_{ij} + c_i` for all :math:`j \ne i`. Since :math:`s` is symmetric this
needs :math:`\log w_{ij} + c_i = \log w_{ji} + c_j`, solvable iff every cycle has
:math:`\prod w_{ij} = \prod w_{ji}` (Kolmogorov's criterion). On a complete graph the triangles
through one vertex generate the cycle space, so the potentials :math:`c_j = \log w_{0j} -
\log w_{j0}` (vertex 0 as root) are the only candidates and the residuals
:math:`r_{ij} = \log w_{ij} - \log w_{ji} - (c_j - c_i)` are exactly the log-ratios of the
triangles :math:`0 \to i \to j \to 0`. The symmetric target :math:`\ell_{ij} = \log w_{ij} +
c_i` is then unique up to one global constant :math:`c`:

- cosine: :math:`G(c)_{ij} = \tau(\ell_{ij} + c)` off the diagonal, :math:`G_{ii} = 1`;
- Euclidean: :math:`D(c)_{ij} = -2\tau(\ell_{ij} + c)`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dgp.errors import check_positive, check_weights

__all__ = ["LogTarget", "log_target", "target_edm", "target_gram"]


@dataclass(frozen=True)
class LogTarget:
    """The symmetric log-target of a weighting restricted to a set of vertices.

    Attributes
    ----------
    ell : ndarray
        Symmetric :math:`\\ell_{ij} = \\log w_{ij} + c_i` (zero diagonal); :math:`-\\infty` where
        :math:`w_{ij} = 0`.
    offsets : ndarray
        Row offsets :math:`c_i` (mean zero; all zero for a symmetric ``W``).
    consistent : bool
        Whether the cycle condition holds within ``tolerance``.
    cycle : tuple of int or None
        A triangle ``(0, i, j)`` with the largest log-ratio when the condition fails.
    cycle_log_ratio : float
        :math:`\\log \\prod_{cycle} w_{ab} / \\prod_{cycle} w_{ba}` around that triangle.
    tolerance : float
        Absolute tolerance on log-ratios: ``rtol * max(1, max |log w|)``.
    """

    ell: np.ndarray
    offsets: np.ndarray
    consistent: bool
    cycle: tuple[int, int, int] | None
    cycle_log_ratio: float
    tolerance: float


def log_target(W: np.ndarray, *, rtol: float, logW: np.ndarray | None = None) -> LogTarget:
    """Cycle condition and symmetric log-target of a weighting with all weights positive.

    ``W`` must be validated (:func:`dgp.errors.check_weights`) with a positive off-diagonal;
    ``logW`` may pass its precomputed logarithm (any diagonal). ``ell`` may share its memory.
    """
    n = W.shape[0]
    if logW is None:
        with np.errstate(divide="ignore"):
            logW = np.log(W)
    L = logW
    np.fill_diagonal(L, 0.0)
    tol = rtol * max(1.0, float(np.abs(L).max()))
    if np.array_equal(W, W.T):  # symmetric: ell = log W, offsets zero, nothing to check
        return LogTarget(L, np.zeros(n), True, None, 0.0, tol)
    # antisymmetric log-ratios a_ij = log w_ij - log w_ji must be a gradient c_j - c_i
    a = L - L.T
    c = a[0].copy()  # c_j - c_0 along the root edges (c_0 = 0)
    a -= c[None, :]
    a += c[:, None]  # the residuals: log-ratios of the triangles 0 -> i -> j -> 0
    worst = np.unravel_index(int(np.argmax(np.abs(a))), a.shape)
    worst_val = float(a[worst])
    consistent = abs(worst_val) <= tol
    c -= c.mean()
    ell = L + c[:, None]
    ell = 0.5 * (ell + ell.T)  # exact symmetry; the asymmetry is within tol when consistent
    np.fill_diagonal(ell, 0.0)
    cycle = None if consistent else (0, int(worst[0]), int(worst[1]))
    return LogTarget(ell, c, consistent, cycle, worst_val, tol)


def target_gram(W: object, *, tau: float, c: float, rtol: float = 1e-8) -> np.ndarray:
    r"""The cosine target :math:`G(c)`: :math:`\tau(\ell_{ij} + c)` off the diagonal, 1 on it.

    Raises
    ------
    ValueError
        If ``W`` is invalid, has a zero weight, breaks the cycle condition, or ``tau <= 0``.

    Examples
    --------
    >>> import numpy as np
    >>> G = target_gram(np.ones((3, 3)), tau=0.5, c=-1.0)
    >>> G[0, 1]
    np.float64(-0.5)
    """
    tgt = _positive_target(W, rtol)
    tau = check_positive(tau, "tau")
    G = tau * (tgt.ell + float(c))
    np.fill_diagonal(G, 1.0)
    return G


def target_edm(W: object, *, tau: float, c: float, rtol: float = 1e-8) -> np.ndarray:
    r"""The Euclidean target :math:`D(c)_{ij} = -2\tau(\ell_{ij} + c)` (zero diagonal).

    Raises
    ------
    ValueError
        If ``W`` is invalid, has a zero weight, breaks the cycle condition, or ``tau <= 0``.
    """
    tgt = _positive_target(W, rtol)
    tau = check_positive(tau, "tau")
    D = -2.0 * tau * (tgt.ell + float(c))
    np.fill_diagonal(D, 0.0)
    return D


def _positive_target(W: object, rtol: float) -> LogTarget:
    A = check_weights(W)
    off = ~np.eye(A.shape[0], dtype=bool)
    if (A[off] == 0).any():
        i, j = (int(k) for k in np.argwhere((A == 0) & off)[0])
        raise ValueError(f"W[{i}, {j}] = 0: a zero weight has no finite target (s = -inf)")
    tgt = log_target(A, rtol=rtol)
    if not tgt.consistent:
        raise ValueError(
            f"W breaks the cycle condition around {tgt.cycle} (log-ratio "
            f"{tgt.cycle_log_ratio:.3g}); no symmetric target exists"
        )
    return tgt
