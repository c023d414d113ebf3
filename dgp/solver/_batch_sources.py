r"""What one drawn batch is and what it costs (DESIGN §13): the weights of a weighting read one
batch at a time (:class:`BatchWeights`: dense, sparse, kernels of labels, or a source that builds
its own batch loss), the batches of a sampler (:class:`SampleBatches`, :class:`ClassBatches`),
and the loss of one batch prepared once (:class:`RowBatch`, the loss of
:mod:`dgp.solver._stochastic`'s module docstring), which the stochastic driver, its held-out
evaluation and its relaxation bound all call through :func:`batch_function`."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

import numpy as np

from dgp.solver._batch import BatchSpec

__all__ = [
    "BatchFunction",
    "BatchWeights",
    "ClassBatches",
    "DenseBatchWeights",
    "GaussianKernelWeights",
    "InnerProductKernelWeights",
    "LogBlockWeights",
    "RowBatch",
    "SampleBatches",
    "SparseBatchWeights",
    "batch_function",
    "batch_loss",
    "gaussian_log_kernel",
    "inner_product_log_kernel",
    "reduction_factor",
]


class BatchFunction(Protocol):
    """The loss of one drawn batch as a function of its rows, prepared once per batch (its
    target and reduction do not depend on the embedding): :class:`RowBatch`."""

    def terms(self, Zb: np.ndarray,
              gradient: bool = True) -> tuple[float, np.ndarray | None]:
        """The batch loss at unit rows ``Zb`` (``u x r``, any ``r``) and (with ``gradient``)
        its derivative ``Gam`` with respect to the batch's Gram entries (``u x u``, row-wise,
        zero diagonal)."""

    def value_grad(self, Zb: np.ndarray,
                   gradient: bool = True) -> tuple[float, np.ndarray | None]:
        """The batch loss and its Euclidean gradient in ``Zb`` (``(Gam + Gam^T) Zb``)."""


class BatchWeights(Protocol):
    """Log-weights of a weighting read on demand, one batch at a time.

    A weights object may also build a batch's loss itself, by a method
    ``batch_function(idx, counts, *, tau, spec) -> BatchFunction`` (class-block weights do,
    without the ``u x u`` target: :class:`dgp.solver.ClassBlockWeights`);
    :func:`batch_function` calls it where it exists and otherwise builds the generic loss from
    :meth:`log_block`. Every loss the driver, the evaluation, the bound and the time estimate
    compute goes through :func:`batch_function`."""

    n: int

    def log_block(self, idx: np.ndarray) -> np.ndarray:
        """``log w`` among the points ``idx`` (``u x u``; ``-inf`` for a zero weight). The
        diagonal is the weight a point gives another copy of itself (``-inf`` when a point has
        no copies). Rows may be scaled by positive constants: only row-normalised targets enter
        a batch loss."""


class LogBlockWeights:
    """The generic :meth:`batch_function` of a weights object from its :meth:`log_block`
    (:meth:`RowBatch.of_log_weights`): a base of the weight sources here."""

    def batch_function(self, idx: np.ndarray, counts: np.ndarray, *, tau: float,
                       spec: BatchSpec) -> RowBatch:
        """The loss of the batch ``idx`` with ``counts`` (:class:`RowBatch`)."""
        return RowBatch.of_log_weights(self.log_block(idx), counts, tau=tau, spec=spec)


def batch_function(weights: BatchWeights, idx: np.ndarray, counts: np.ndarray, *, tau: float,
                   spec: BatchSpec) -> BatchFunction:
    """The loss of the batch ``idx`` (counts ``counts``) of ``weights``: its own
    ``batch_function`` where it has one, else the generic loss of its log-weights block."""
    own = getattr(weights, "batch_function", None)
    if own is not None:
        return own(idx, counts, tau=tau, spec=spec)
    return RowBatch.of_log_weights(weights.log_block(idx), counts, tau=tau, spec=spec)


def gaussian_log_kernel(a: np.ndarray, b: np.ndarray, width2: float, *,
                        centred: bool = False,
                        b_squares: np.ndarray | None = None) -> np.ndarray:
    r"""The Gaussian kernel's log-weights :math:`-\|a_i - b_j\|^2 / (2w)` between the rows of
    ``a`` and those of ``b`` (``w = width2``, :math:`\sigma^2` for y-Aware): the one formula of
    the kernel read a batch or a block of rows at a time (log space: a narrow kernel does not
    underflow), in float64. The squared distances come from inner products, clipped at 0, so
    the memory is ``O(|a| |b|)``; inner products far from the origin lose every digit (labels
    translated by 1e7 moved log-weights by 0.055), so both sides are first centred at the mean
    of ``b``, unless ``centred`` (the caller centred them once, and ``b_squares`` holds the
    squared norms of ``b``'s rows). ``b`` the same array as ``a`` (a batch's block): exactly
    symmetric."""
    same = b is a
    a = np.asarray(a, dtype=float)
    b = a if same else np.asarray(b, dtype=float)
    if not centred:
        centre = b.mean(axis=0)
        a, b_squares = a - centre, None
        b = a if same else b - centre
    if same:
        a = np.ascontiguousarray(a)
        sq_a = np.sum(a * a, axis=1)
        out = np.add.outer(sq_a, sq_a) - 2.0 * (a @ a.T)
    else:
        out = a @ b.T
        out *= -2.0
        out += np.sum(a * a, axis=1)[:, None]
        out += (np.sum(b * b, axis=1) if b_squares is None else b_squares)[None, :]
    np.maximum(out, 0.0, out=out)
    out /= -(2.0 * width2)
    return out


def inner_product_log_kernel(a: np.ndarray, b: np.ndarray, label_tau: float) -> np.ndarray:
    r"""X-CLR's log-weights between unit label embeddings ``a`` (rows) and ``b`` (columns),
    :math:`\langle \hat a_i, \hat b_j\rangle / \tau_y`, up to a constant per row (the row
    softmax's normaliser, which cancels in a row-normalised target): the one formula of the
    kernel read a batch or a block of rows at a time."""
    return (a @ b.T) / label_tau


def _own_entries(out: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``out`` (``rows.size x n``) with each row's own entry set to ``-inf``."""
    out[np.arange(rows.size), rows] = -np.inf
    return out


@dataclass(frozen=True, eq=False)
class DenseBatchWeights(LogBlockWeights):
    """A dense ``N x N`` array of log-weights (diagonal: the weight between copies)."""

    L: np.ndarray

    @property
    def n(self) -> int:
        return int(self.L.shape[0])

    def log_block(self, idx: np.ndarray) -> np.ndarray:
        return self.L.take(idx, axis=0).take(idx, axis=1)  # half the time of np.ix_

    def log_rows(self, rows: np.ndarray) -> np.ndarray:
        """``log w`` between the points ``rows`` and every point (``rows.size x n``; the own
        entry is the weight between copies, as the diagonal of :meth:`log_block`)."""
        return np.array(self.L[rows], dtype=float)


@dataclass(frozen=True, eq=False)
class SparseBatchWeights(LogBlockWeights):
    """A sparse weight matrix (CSR; missing entries are zero weights; diagonal ignored)."""

    W: object  # scipy.sparse.csr_matrix

    @property
    def n(self) -> int:
        return int(self.W.shape[0])

    def log_block(self, idx: np.ndarray) -> np.ndarray:
        block = np.asarray(self.W[idx][:, idx].toarray(), dtype=float)
        with np.errstate(divide="ignore"):
            out = np.log(block)
        np.fill_diagonal(out, -np.inf)
        return out

    def log_rows(self, rows: np.ndarray) -> np.ndarray:
        """``log w`` between the points ``rows`` and every point (``rows.size x n``, the own
        entry ``-inf``)."""
        with np.errstate(divide="ignore"):
            out = np.log(np.asarray(self.W[rows].toarray(), dtype=float))
        return _own_entries(out, rows)


@dataclass(frozen=True, eq=False)
class GaussianKernelWeights(LogBlockWeights):
    r""":math:`\log w_{ij} = -\|y_i - y_j\|^2 / (2\sigma^2)` (y-Aware, Euclidean–Euclidean)
    from ``N x p`` labels (:func:`gaussian_log_kernel`)."""

    labels: np.ndarray
    sigma: float

    @property
    def n(self) -> int:
        return int(self.labels.shape[0])

    @cached_property
    def _points(self) -> tuple[np.ndarray, np.ndarray]:
        """The labels as floats, centred once at their mean, and their squared norms, kept
        for reading rows (:func:`gaussian_log_kernel` with ``centred``)."""
        y = np.asarray(self.labels, dtype=float)
        y = y - y.mean(axis=0)
        return y, np.sum(y * y, axis=1)

    def log_block(self, idx: np.ndarray) -> np.ndarray:
        y = self.labels[idx]  # centred at the batch's mean by the kernel
        out = gaussian_log_kernel(y, y, self.sigma**2)
        np.fill_diagonal(out, -np.inf)
        return out

    def log_rows(self, rows: np.ndarray) -> np.ndarray:
        """``log w`` between the points ``rows`` and every point (``rows.size x n``, the own
        entry ``-inf``)."""
        y, sq = self._points
        return _own_entries(gaussian_log_kernel(y[rows], y, self.sigma**2, centred=True,
                                                b_squares=sq), rows)


@dataclass(frozen=True, eq=False)
class InnerProductKernelWeights(LogBlockWeights):
    r""":math:`\log w_{ij} = \langle \hat y_i, \hat y_j\rangle / \tau_y` up to a constant per
    row (X-CLR: the row softmax's normaliser cancels in a batch's row-normalised target), with
    ``features`` the L2-normalised label embeddings (:func:`inner_product_log_kernel`)."""

    features: np.ndarray
    label_tau: float

    @property
    def n(self) -> int:
        return int(self.features.shape[0])

    def log_block(self, idx: np.ndarray) -> np.ndarray:
        f = self.features[idx]
        out = inner_product_log_kernel(f, f, self.label_tau)
        np.fill_diagonal(out, -np.inf)
        return out

    def log_rows(self, rows: np.ndarray) -> np.ndarray:
        """``log w`` between the points ``rows`` and every point (``rows.size x n``, the own
        entry ``-inf``)."""
        f = np.asarray(self.features, dtype=float)
        return _own_entries(inner_product_log_kernel(f[rows], f, self.label_tau), rows)


# ---------------------------------------------------------------------------------- samplers
@dataclass(frozen=True, eq=False)
class SampleBatches:
    """Uniform batches of ``batch_size`` distinct points among ``n`` (no replacement)."""

    n: int
    batch_size: int

    @property
    def samples(self) -> int:
        """The samples the batches are drawn from (each point is one)."""
        return self.n

    @property
    def steps_per_epoch(self) -> int:
        """Batches of one pass over the samples."""
        return max(1, self.n // self.batch_size)

    def draw(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        idx = np.sort(rng.choice(self.n, size=self.batch_size, replace=False))
        return idx, np.ones(idx.size)

    def epoch(self, rng: np.random.Generator):
        """The batches of one pass over a shuffled order (as a data loader draws them; each is
        a uniform subset); the last incomplete batch is dropped."""
        order = rng.permutation(self.n)
        B = self.batch_size
        for s in range(0, self.n - B + 1, B):
            idx = np.sort(order[s:s + B])
            yield idx, np.ones(B)


@dataclass(frozen=True, eq=False)
class ClassBatches:
    """Batches of collapsed classes: counts drawn by the sampler of ``spec`` from class
    ``sizes`` (uniform: multivariate hypergeometric; class-balanced: multinomial ``(B, 1/K)``;
    m-per-class: ``B/m`` classes, ``m`` each)."""

    sizes: np.ndarray
    spec: BatchSpec

    @property
    def n(self) -> int:
        return int(self.sizes.size)

    def draw(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        K, B = self.sizes.size, self.spec.batch_size
        if self.spec.sampler == "uniform":
            cum = np.cumsum(self.sizes)
            pick = rng.choice(int(cum[-1]), size=B, replace=False)
            counts = np.bincount(np.searchsorted(cum, pick, side="right"), minlength=K)
        elif self.spec.sampler == "class-balanced":
            counts = rng.multinomial(B, np.full(K, 1.0 / K))
        else:
            m = int(self.spec.samples_per_class)
            counts = np.zeros(K, dtype=np.int64)
            counts[rng.choice(K, size=B // m, replace=False)] = m
        idx = np.flatnonzero(counts)
        return idx, counts[idx].astype(float)

    @property
    def samples(self) -> int:
        """The samples the batches are drawn from (``N``, the sizes' sum)."""
        return int(self.sizes.sum())

    @property
    def steps_per_epoch(self) -> int:
        """Batches of one pass over the samples (``N / B``)."""
        return max(1, self.samples // self.spec.batch_size)

    def epoch(self, rng: np.random.Generator):
        for _ in range(self.steps_per_epoch):
            yield self.draw(rng)


# ------------------------------------------------------------------------------- batch loss
def reduction_factor(counts: np.ndarray, has: np.ndarray, spec: BatchSpec) -> float:
    r"""The reduction :math:`\rho` of a batch with ``counts`` whose anchors ``has`` positives
    (module docstring)."""
    if spec.reduction == "sum":
        return 1.0
    if spec.anchors_without_positives == "zero":
        return 1.0 / spec.batch_size
    anchors = float(counts[has].sum())
    return 1.0 / anchors if anchors > 0 else 0.0


@dataclass(frozen=True, eq=False)
class RowBatch:
    r"""The loss of one batch (module docstring), prepared once: only the anchors that have
    positives enter it, so only their rows of the batch's Gram are formed (``rows x u``, not
    ``u x u``: under SupCon a class-level batch's anchors with positives are the classes with
    two samples or more, a fraction of the classes present).

    Attributes
    ----------
    rows : ndarray of int
        The points whose anchors have positives (and a non-zero reduction).
    weight : ndarray
        :math:`\rho\, m_c` of each of them.
    offset : ndarray or None
        ``rows x u``: :math:`\log\mu_{cd}` (the diagonal :math:`\log(m_c - 1)`); ``None``
        where every count is 1 (sample-level batches: 0 off the point itself, :math:`-\infty`
        at it), which saves one of the two ``rows x u`` arrays a prepared batch keeps.
    target : ndarray or None
        ``rows x u``: the target :math:`p_{cd}`; ``None`` where every anchor's target mass is
        on copies of itself (SupCon's class-level batches: the linear term is :math:`1/\tau`).
    tau : float
    """

    rows: np.ndarray
    weight: np.ndarray
    offset: np.ndarray | None
    target: np.ndarray | None
    tau: float

    @classmethod
    def of_log_weights(cls, L: np.ndarray, counts: np.ndarray, *, tau: float,
                       spec: BatchSpec) -> RowBatch:
        r"""The batch of points with ``counts`` and log-weights ``L`` (``u x u``; diagonal:
        between copies), its target :math:`p_{cd} \propto \mu_{cd} w_{cd}` normalised in log
        space."""
        counts = np.asarray(counts, dtype=float)
        u = counts.size
        with np.errstate(divide="ignore"):
            log_mu = np.broadcast_to(np.log(counts), (u, u)).copy()
            np.fill_diagonal(log_mu, np.log(np.maximum(counts - 1.0, 0.0)))
        T = L + log_mu
        top = np.max(T, axis=1)
        has = np.isfinite(top)
        rho = reduction_factor(counts, has, spec)
        if rho == 0.0:
            has[:] = False
        T = T[has] - top[has, None]
        P = np.exp(T)
        P /= P.sum(axis=1, keepdims=True)
        offset = None if bool((counts == 1.0).all()) else log_mu[has]
        return cls(np.flatnonzero(has), rho * counts[has], offset, P, float(tau))

    def row_terms(self, Zb: np.ndarray,
                  gradient: bool = True) -> tuple[float, np.ndarray | None]:
        """The loss and (with ``gradient``) the rows ``rows`` of ``Gam``
        (:meth:`BatchFunction.terms`)."""
        r = self.rows
        k = np.arange(r.size)
        Gr = Zb[r] @ Zb.T
        Gr[k, r] = 1.0  # the within-point cosine is 1
        if self.offset is None:  # one copy of every point: none of the anchor's own point
            S = Gr / self.tau
            S[k, r] = -np.inf
        else:
            S = Gr / self.tau + self.offset
        top = np.max(S, axis=1)
        E = np.exp(S - top[:, None])
        tot = E.sum(axis=1)
        lse = top + np.log(tot)
        if self.target is None:
            lin = 1.0 / self.tau
        else:
            lin = np.sum(self.target * Gr, axis=1) / self.tau
        loss = float(self.weight @ (lse - lin))
        if not gradient:
            return loss, None
        E /= tot[:, None]
        if self.target is not None:
            E -= self.target
        E *= (self.weight / self.tau)[:, None]
        E[k, r] = 0.0  # the within-point cosine is fixed at 1
        return loss, E

    def terms(self, Zb: np.ndarray,
              gradient: bool = True) -> tuple[float, np.ndarray | None]:
        """:meth:`BatchFunction.terms`."""
        u = Zb.shape[0]
        if self.rows.size == 0:
            return 0.0, (np.zeros((u, u)) if gradient else None)
        loss, D = self.row_terms(Zb, gradient)
        if D is None:
            return loss, None
        Gam = np.zeros((u, u))
        Gam[self.rows] = D
        return loss, Gam

    def value_grad(self, Zb: np.ndarray,
                   gradient: bool = True) -> tuple[float, np.ndarray | None]:
        """:meth:`BatchFunction.value_grad`, in ``O(rows u r)``."""
        if self.rows.size == 0:
            return 0.0, (np.zeros_like(Zb) if gradient else None)
        loss, D = self.row_terms(Zb, gradient)
        if D is None:
            return loss, None
        g = D.T @ Zb[self.rows]
        g[self.rows] += D @ Zb
        return loss, g


def batch_loss(
    Zb: np.ndarray, counts: np.ndarray, L: np.ndarray, *, tau: float, spec: BatchSpec,
    gradient: bool = True,
) -> tuple[float, np.ndarray | None]:
    r"""The loss of one batch (module docstring) at unit rows ``Zb`` (``u x d``) with ``counts``
    and log-weights ``L`` (``u x u``), and its Euclidean gradient with respect to ``Zb``
    (``None`` when ``gradient`` is false)."""
    fn = RowBatch.of_log_weights(L, counts, tau=tau, spec=spec)
    return fn.value_grad(Zb, gradient)
