r"""Watch a training run's class geometry against dgp's prediction, batch by batch.

:class:`GeometryMonitor` accumulates, over the batches it is shown, per-class sums of the
L2-normalised embeddings :math:`h_i = z_i / \|z_i\|` (and one ``d x d`` second moment), never
the embeddings themselves, and turns them into a few numbers a logger can plot:

.. code-block:: python

    import dgp
    from dgp.torch import GeometryMonitor

    pred = dgp.supcon_prototypes([500, 50, 50], tau=0.1)   # what SupCon should converge to
    monitor = GeometryMonitor(pred)
    for x, y in loader:                                      # any loss, any loop
        monitor.update(model(x), y)                          # detached; any device / dtype
    print(monitor.compute())                                 # dict[str, float]
    monitor.reset()

Definitions (class ``c`` has :math:`n_c` samples seen, :math:`N = \sum_c n_c`):

- class mean :math:`m_c = \frac1{n_c}\sum_{y_i = c} h_i` and its direction
  :math:`\hat\mu_c = m_c / \|m_c\|`; the learned Gram is
  :math:`\hat G_{cc'} = \langle\hat\mu_c, \hat\mu_{c'}\rangle`;
- Gram RMS distance to a target Gram :math:`T` (unit diagonal): the root mean square over the
  :math:`K(K-1)` off-diagonal entries,
  :math:`\big(\frac{1}{K(K-1)}\sum_{c \ne c'} (\hat G_{cc'} - T_{cc'})^2\big)^{1/2}`;
  the targets are the prediction, the regular simplex (:math:`T_{cc'} = -1/(K-1)`) and,
  when given, uniform targets (e.g. Targeted SupCon's);
- NC1, the within-class variability collapse of Papyan, Han & Donoho (PNAS 2020), computed
  on the normalised embeddings: :math:`\mathrm{NC1} = \frac1K \operatorname{tr}(\Sigma_W
  \Sigma_B^{+})` with :math:`\Sigma_W = \frac1N \sum_i (h_i - m_{y_i})(h_i - m_{y_i})^\top`,
  :math:`\Sigma_B = \frac1K \sum_c (m_c - m_G)(m_c - m_G)^\top`, :math:`m_G = \frac1N \sum_i
  h_i` the global mean and :math:`{}^+` the Moore–Penrose pseudo-inverse (eigenvalues below
  ``GRAM_RANK_RTOL`` of the largest count as zero). It tends to 0 as classes collapse;
- minority and majority classes: those whose size *in the prediction* (the ``sizes`` of a
  :class:`dgp.Prototypes` result, or the ``sizes`` argument) is below, respectively above, the
  median size; where one side would be empty, the classes at the median make it up (sizes
  50, 10, 10: one majority, two minority classes; 50, 50, 10: two majority, one minority), and
  balanced sizes have no minority at all; ``cosine_minority_majority`` is the mean of
  :math:`\hat G_{cc'}` over minority ``c`` and majority ``c'``, beside the same mean of the
  predicted Gram.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dgp._linalg import simplex_gram
from dgp.constants import GRAM_RANK_RTOL, MONITOR_GRAM_ATOL
from dgp.errors import (
    InputError,
    InputTypeError,
    ParameterError,
    ParameterTypeError,
    check_sizes,
    describe,
)
from dgp.prototypes import Prototypes
from dgp.resources import check_memory
from dgp.torch._compat import require_torch

torch = require_torch()

__all__ = ["GeometryMonitor", "target_gram"]

Tensor = Any  # torch.Tensor


def target_gram(prototypes: object, name: str = "prototypes") -> np.ndarray:
    """The ``K x K`` target Gram of a :class:`dgp.Prototypes` result, a Gram or prototype rows.

    A square array that is symmetric with unit diagonal (within ``MONITOR_GRAM_ATOL``) is read
    as a Gram; any other ``K x d`` array as ``K`` prototype vectors, whose rows are normalised
    (so a ``K x K`` array of vectors that is itself symmetric with unit diagonal must be given
    as its Gram ``Z @ Z.T``).

    >>> target_gram([[2.0, 0.0], [0.0, 3.0], [-1.0, 0.0]]).tolist()
    [[1.0, 0.0, -1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 1.0]]

    Raises
    ------
    ParameterError, ParameterTypeError
        If it is none of these, is not finite, has fewer than two rows or a zero row.
    """
    if isinstance(prototypes, Prototypes):
        return np.array(prototypes.gram, dtype=float)
    if isinstance(prototypes, torch.Tensor):
        prototypes = prototypes.detach().cpu().double().numpy()
    try:
        A = np.asarray(prototypes, dtype=float)
    except (TypeError, ValueError):
        raise ParameterTypeError(name, "must be a dgp.Prototypes result, a K x K Gram or a K x d "
                                 f"array of prototype vectors, got {describe(prototypes)}"
                                 ) from None
    if A.ndim != 2 or A.shape[0] < 2:
        raise ParameterError(name, "must be a K x K Gram or a K x d array with K >= 2 classes, "
                             f"got shape {A.shape}")
    if not np.isfinite(A).all():
        raise ParameterError(name, "must be finite (it holds NaN or infinite values)")
    if (A.shape[0] == A.shape[1] and np.allclose(A, A.T, rtol=0.0, atol=MONITOR_GRAM_ATOL)
            and np.allclose(np.diag(A), 1.0, rtol=0.0, atol=MONITOR_GRAM_ATOL)):
        G = 0.5 * (A + A.T)
        np.fill_diagonal(G, 1.0)
        return G
    norms = np.linalg.norm(A, axis=1)
    if (norms == 0).any():
        raise ParameterError(name, f"has a zero row (class {int(np.argmin(norms))}): a "
                             "prototype vector needs a direction")
    U = A / norms[:, None]
    G = U @ U.T
    np.fill_diagonal(G, 1.0)
    return G


def _gram_rms(G: np.ndarray, T: np.ndarray) -> float:
    K = G.shape[0]
    off = ~np.eye(K, dtype=bool)
    return float(np.sqrt(np.mean((G[off] - T[off]) ** 2)))


class GeometryMonitor:
    """Streaming distance of a run's class means to the predicted prototype geometry.

    Parameters
    ----------
    prototypes : dgp.Prototypes, array_like (K, K) or (K, d)
        The prediction: a :func:`dgp.supcon_prototypes` result, its Gram, or prototype vectors
        (read as :func:`target_gram` says).
    sizes : sequence of int, optional
        Class sizes of the prediction, for the minority/majority cosine; taken from a
        :class:`dgp.Prototypes` result when not given (and then must agree with it).
    uniform : array_like (K, K) or (K, d), optional
        Uniform targets (e.g. Targeted SupCon's fixed points) to report the distance to.

    Notes
    -----
    ``update(embeddings, labels)`` takes an ``(B, d)`` floating tensor (any device, any
    floating dtype; it is detached) and ``B`` integer class labels in ``0..K-1``, in the order
    of the prediction's classes. The sums are kept on the device of the first batch in float64
    (float32 on Apple ``mps``, which has no float64).

    ``learned_gram()`` gives the ``K x K`` Gram of the class means itself.

    ``compute()`` returns a ``dict[str, float]`` whose keys depend only on the constructor's
    arguments: ``samples_seen``, ``classes_seen``, ``zero_norm_samples`` (embeddings of norm 0,
    counted in their class but without a direction), ``gram_rms`` (to the prediction),
    ``gram_rms_simplex``, ``nc1``, then ``gram_rms_uniform`` when ``uniform`` is given and
    ``cosine_minority_majority`` / ``predicted_cosine_minority_majority`` when the sizes are
    known. **Until every class has been seen** (``classes_seen < K``), or where a class mean
    is the zero vector, the geometry values are ``nan``: a Gram of the classes seen so far is
    not the Gram of the prediction, and is not reported as one. Balanced sizes have no
    minority: both minority cosines are then ``nan``.

    The module docstring (:mod:`dgp.torch.monitor`) defines every number.
    """

    def __init__(self, prototypes: object, *, sizes: object | None = None,
                 uniform: object | None = None) -> None:
        self.target = target_gram(prototypes)
        self.K = int(self.target.shape[0])
        own = tuple(prototypes.sizes) if isinstance(prototypes, Prototypes) else None
        if sizes is not None:
            sz = tuple(int(n) for n in check_sizes(sizes, "sizes", min_size=1))
            if len(sz) != self.K:
                raise ParameterError("sizes", f"has {len(sz)} classes, the prototypes have "
                                     f"{self.K}")
            if own is not None and sz != own:
                raise ParameterError("sizes", f"= {list(sz)} differs from the sizes of the "
                                     f"prototypes result, {list(own)}")
            own = sz
        self.sizes = own
        self.uniform = None if uniform is None else target_gram(uniform, "uniform")
        if self.uniform is not None and self.uniform.shape[0] != self.K:
            raise ParameterError("uniform", f"has {self.uniform.shape[0]} classes, the "
                                 f"prototypes have {self.K}")
        self.simplex = simplex_gram(self.K)
        self.reset()

    # -- state -----------------------------------------------------------------------------
    def reset(self) -> None:
        """Forget every batch seen (the device and dimension are chosen again)."""
        self._counts: Tensor | None = None  # (K,) samples per class
        self._sums: Tensor | None = None  # (K, d) sums of h_i per class
        self._second: Tensor | None = None  # (d, d) sum of h_i h_i^T
        self._zero = 0

    def __repr__(self) -> str:
        n = 0 if self._counts is None else int(self._counts.sum().item())
        seen = 0 if self._counts is None else int((self._counts > 0).sum().item())
        return f"GeometryMonitor(K={self.K}, samples_seen={n}, classes_seen={seen})"

    def _allocate(self, device: Any, d: int) -> None:
        dtype = torch.float32 if device.type == "mps" else torch.float64
        # compute() holds the d x d moment, the scatters and an eigendecomposition on the host
        check_memory(8.0 * (5 * d * d + 3 * self.K * d), what=f"the monitor of {d}-dimensional "
                     "embeddings (d x d second moment and scatter matrices)",
                     hint="monitor a lower-dimensional projection of the embeddings")
        self._counts = torch.zeros(self.K, dtype=dtype, device=device)
        self._sums = torch.zeros(self.K, d, dtype=dtype, device=device)
        self._second = torch.zeros(d, d, dtype=dtype, device=device)

    @torch.no_grad()
    def update(self, embeddings: Tensor, labels: Tensor) -> None:
        """Add a batch: ``embeddings`` ``(B, d)`` (any device and floating dtype, detached),
        ``labels`` ``B`` integer classes in ``0..K-1``.

        Raises
        ------
        InputTypeError
            If ``embeddings`` is not a floating tensor or ``labels`` not integers.
        InputError
            If shapes disagree, ``d`` changed since the first batch, a label is out of range or
            an embedding is not finite.
        """
        if not isinstance(embeddings, torch.Tensor) or not embeddings.is_floating_point():
            raise InputTypeError("embeddings must be a floating-point torch.Tensor, got "
                                 f"{describe(embeddings)}")
        if embeddings.ndim != 2:
            raise InputError("embeddings must be a B x d tensor, got shape "
                             f"{tuple(embeddings.shape)}")
        Z = embeddings.detach()
        if self._sums is not None and Z.shape[1] != self._sums.shape[1]:
            raise InputError(f"embeddings have dimension {Z.shape[1]}, earlier batches had "
                             f"{self._sums.shape[1]} (call reset() to start over)")
        y = labels.detach() if isinstance(labels, torch.Tensor) else torch.as_tensor(labels)
        if y.is_floating_point() or y.is_complex() or y.dtype == torch.bool:
            raise InputTypeError(f"labels must be integer class indices, got dtype {y.dtype}")
        y = y.reshape(-1)
        if y.shape[0] != Z.shape[0]:
            raise InputError(f"labels has {y.shape[0]} entries for {Z.shape[0]} embeddings")
        if y.numel() == 0:
            return
        lo, hi = int(y.min().item()), int(y.max().item())
        if lo < 0 or hi >= self.K:
            bad = lo if lo < 0 else hi
            raise InputError(f"labels must be classes 0..{self.K - 1} (the prototypes' order), "
                             f"got {bad}")
        if not bool(torch.isfinite(Z).all().item()):
            raise InputError("embeddings hold NaN or infinite values")
        if self._sums is None:  # the first batch that counts chooses the device and d
            self._allocate(Z.device, int(Z.shape[1]))
        acc = self._sums
        y = y.to(device=acc.device, dtype=torch.long)
        H = Z.to(device=acc.device, dtype=acc.dtype)
        norms = torch.linalg.vector_norm(H, dim=1)
        zero = norms == 0
        H = H / torch.where(zero, torch.ones_like(norms), norms)[:, None]
        self._zero += int(zero.sum().item())
        self._counts.index_add_(0, y, torch.ones_like(norms))
        self._sums.index_add_(0, y, H)
        self._second.addmm_(H.T, H)

    # -- numbers ---------------------------------------------------------------------------
    def compute(self) -> dict[str, float]:
        """The current numbers (see the class notes for the keys and when they are ``nan``)."""
        out = {"samples_seen": 0.0, "classes_seen": 0.0,
               "zero_norm_samples": float(self._zero)}
        keys = ["gram_rms", "gram_rms_simplex", "nc1"]
        if self.uniform is not None:
            keys.append("gram_rms_uniform")
        if self.sizes is not None:
            keys += ["cosine_minority_majority", "predicted_cosine_minority_majority"]
        out.update(dict.fromkeys(keys, math.nan))
        groups = self._minority_majority()
        if groups is not None:
            out["predicted_cosine_minority_majority"] = float(
                self.target[np.ix_(*groups)].mean())
        if self._counts is None:
            return out
        n, means, S2 = self._host()
        out["samples_seen"] = float(n.sum())
        out["classes_seen"] = float((n > 0).sum())
        G = self.learned_gram()
        if not np.isfinite(G).all():  # a class unseen, or whose mean is the zero vector
            return out
        out["nc1"] = self._nc1(n, means, S2)
        out["gram_rms"] = _gram_rms(G, self.target)
        out["gram_rms_simplex"] = _gram_rms(G, self.simplex)
        if self.uniform is not None:
            out["gram_rms_uniform"] = _gram_rms(G, self.uniform)
        if groups is not None:
            out["cosine_minority_majority"] = float(G[np.ix_(*groups)].mean())
        return out

    def learned_gram(self) -> np.ndarray:
        """The ``K x K`` cosines :math:`\\hat G` of the normalised class means seen so far (to
        draw beside the prediction, e.g. with :func:`dgp.plots.gram_heatmaps`); the rows and
        columns of a class not seen yet, or whose mean is the zero vector, are ``nan``.

        >>> import torch
        >>> mon = GeometryMonitor([[1.0, -0.5], [-0.5, 1.0]])
        >>> mon.update(torch.tensor([[1.0, 0.0], [0.0, 2.0]]), torch.tensor([0, 1]))
        >>> mon.learned_gram().tolist()
        [[1.0, 0.0], [0.0, 1.0]]
        """
        if self._counts is None:
            return np.full((self.K, self.K), math.nan)
        n, means, _ = self._host()
        norms = np.linalg.norm(means, axis=1)
        ok = (n > 0) & (norms > 0)
        U = np.where(ok[:, None], means, math.nan) / np.where(ok, norms, 1.0)[:, None]
        G = U @ U.T
        G[np.diag_indices(self.K)] = np.where(ok, 1.0, math.nan)
        return G

    def _host(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Counts, class means (0 for a class not seen) and the second moment, in float64."""
        n = self._counts.cpu().double().numpy()
        S = self._sums.cpu().double().numpy()
        return n, S / np.maximum(n, 1.0)[:, None], self._second.cpu().double().numpy()

    def _minority_majority(self) -> tuple[np.ndarray, np.ndarray] | None:
        if self.sizes is None:
            return None
        s = np.asarray(self.sizes, dtype=float)
        med = float(np.median(s))
        below, above, at = s < med, s > med, s == med
        if not below.any() and not above.any():
            return None  # balanced: no minority
        if not below.any():
            below = at  # e.g. sizes 50, 10, 10: the classes at the median are the minority
        elif not above.any():
            above = at
        return np.flatnonzero(below), np.flatnonzero(above)

    def _nc1(self, n: np.ndarray, means: np.ndarray, S2: np.ndarray) -> float:
        N = float(n.sum())
        sigma_w = (S2 - (means * n[:, None]).T @ means) / N
        glob = (means * n[:, None]).sum(axis=0) / N
        C = means - glob
        sigma_b = C.T @ C / self.K
        lam, V = np.linalg.eigh(0.5 * (sigma_b + sigma_b.T))
        top = float(lam[-1])
        within = float(np.trace(sigma_w))
        if top <= GRAM_RANK_RTOL * max(top, within) or top <= 0:
            return math.inf if within > 0 else math.nan  # no between-class spread at all
        keep = lam > GRAM_RANK_RTOL * top
        Vk = V[:, keep]
        pinv = (Vk / lam[keep]) @ Vk.T
        return float(np.trace(sigma_w @ pinv) / self.K)
