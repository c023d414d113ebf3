r"""The L-BFGS direction in compact form (Byrd, Nocedal and Schnabel 1994) for long vectors.

The two-loop recursion of :func:`dgp.solver._solve.lbfgs` makes ``4 m`` passes over vectors of
length ``n`` (a dot product and an update per stored pair, each way), with a temporary each:
at ``n = 128 000`` (``K = 1000``, ``d = 128``) and memory 30 it took 13 ms, as long as one
evaluation of the objective. The compact form keeps the pairs as the rows of two ``m x n``
matrices and gets the same direction from two products with them (``S g``, ``(D Y) g``), two
back (:math:`S^\top p + (DY)^\top q`) and algebra on ``m x m`` matrices: 3-6 ms there. The
products of the pairs with each other come for free: ``y_k = g_{k+1} - g_k``, so the new
column of :math:`S^\top Y` and of :math:`Y^\top D Y` are differences of the products with the
gradient that the directions compute anyway.

With :math:`H_0 = \gamma D` (``D`` the inverse of the diagonal preconditioner, or ``I``;
:math:`\gamma = s^\top y / y^\top D y` of the newest pair, as the two-loop recursion scales),
:math:`R` the upper triangle of :math:`S^\top Y` (chronological order) and :math:`\Delta` its
diagonal,

.. math::

    H g = H_0 g + S^\top p + \gamma (DY)^\top q,\quad q = -R^{-1} S g,\quad
    p = R^{-\top}\big((\Delta + \gamma Y^\top D Y) R^{-1} S g - \gamma (DY) g\big),

the same matrix as the two-loop recursion's (tested to rounding).
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import solve_triangular

__all__ = ["CompactHistory"]


class CompactHistory:
    """The stored pairs of an L-BFGS descent of vectors of length ``n`` (at most ``memory``),
    and the direction they give; ``scale`` is the inverse diagonal preconditioner ``D``
    (``None``: the identity).

    Use: :meth:`direction` at the current gradient (it keeps its products with the pairs), then
    after the step :meth:`add` with the step, the new gradient and whether the pair is kept
    (products with the new gradient are made either way, for the next direction)."""

    def __init__(self, n: int, memory: int, scale: np.ndarray | None = None) -> None:
        self.memory = memory
        self.scale = scale
        self.S = np.zeros((memory, n))
        self.DY = np.zeros((memory, n))
        self.SY = np.zeros((memory, memory))  # SY[i, j] = s_i . y_j (slots)
        self.YDY = np.zeros((memory, memory))
        self.order: list[int] = []  # slots, oldest first
        self.a = np.zeros(memory)  # S g and (D Y) g at the current gradient
        self.b = np.zeros(memory)

    def clear(self) -> None:
        """Forget every pair."""
        self.order = []

    def __len__(self) -> int:
        return len(self.order)

    def at(self, g: np.ndarray) -> None:
        """The products with the current gradient ``g`` (the first point of a descent, or after
        :meth:`clear`)."""
        m = len(self.order)
        if m:
            self.a, self.b = np.zeros(self.memory), np.zeros(self.memory)
            self.a[:m], self.b[:m] = self.S[:m] @ g, self.DY[:m] @ g

    def direction(self, g: np.ndarray) -> np.ndarray:
        """:math:`-H g` of the stored pairs (at least one) at the gradient ``g`` whose products
        :meth:`at` or :meth:`add` made."""
        idx = self.order
        new = idx[-1]
        gamma = self.SY[new, new] / self.YDY[new, new]
        R = np.triu(self.SY[np.ix_(idx, idx)])
        a, b = self.a[idx], gamma * self.b[idx]
        ra = solve_triangular(R, a)
        inner = np.diag(R) * ra + gamma * (self.YDY[np.ix_(idx, idx)] @ ra) - b
        p = solve_triangular(R, inner, trans="T")
        # the pairs fill the slots 0, 1, ... in turn: the rows in use are a view, not a copy
        m = len(idx)
        p_slots, q_slots = np.zeros(m), np.zeros(m)
        p_slots[idx] = p
        q_slots[idx] = gamma * ra
        d = p_slots @ self.S[:m]
        d -= q_slots @ self.DY[:m]
        d += gamma * (g if self.scale is None else self.scale * g)
        return -d

    def add(self, s: np.ndarray, y: np.ndarray, g_new: np.ndarray, keep: bool) -> None:
        """The step ``s`` to the gradient ``g_new`` (``y`` the gradient's change): the pair is
        stored when ``keep`` (the oldest goes when full), and the products with ``g_new`` are
        made for the next direction."""
        if not keep:
            self.at(g_new)
            return
        old = list(self.order)
        if old:
            m = len(old)
            a_new, b_new = np.zeros(self.memory), np.zeros(self.memory)
            a_new[:m], b_new[:m] = self.S[:m] @ g_new, self.DY[:m] @ g_new
            da, db = a_new - self.a, b_new - self.b  # s_j . y and (D y_j) . y of the kept pairs
        if len(old) == self.memory:
            slot = old.pop(0)
        else:
            slot = len(old)
        Dy = y if self.scale is None else self.scale * y
        self.S[slot] = s
        self.DY[slot] = Dy
        if old:
            self.SY[old, slot] = da[old]
            self.YDY[old, slot] = db[old]
            self.YDY[slot, old] = db[old]
            self.a, self.b = a_new, b_new
        self.SY[slot, slot] = float(s @ y)
        self.YDY[slot, slot] = float(y @ Dy)
        self.a[slot] = float(s @ g_new)
        self.b[slot] = float(Dy @ g_new)
        self.order = [*old, slot]
