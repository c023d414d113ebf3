r"""Vectorised w-InfoNCE losses for PyTorch, called like pytorch-metric-learning losses.

.. code-block:: python

    from dgp.torch import SupConLoss
    loss_fn = SupConLoss(tau=0.1)
    loss = loss_fn(embeddings, labels)   # embeddings: (N, d) tensor, labels: (N,) tensor

The loss is the w-InfoNCE of DESIGN §1, in nats and **summed over anchors** by default
(``reduction="sum"``), so that it equals :func:`dgp.infonce.winfonce_loss` on the same batch;
``reduction="mean"`` divides by the number of anchors and ``"none"`` returns one value per anchor.

.. math::

    L(Z) = \sum_i \sum_{j \ne i} p_{ij}\Big(-s_{ij} + \log \sum_{k \ne i} e^{s_{ik}}\Big),
    \qquad p_{ij} = w_{ij} / \sum_{k \ne i} w_{ik}.

One ``N x N`` similarity matrix and one log-softmax per call: no Python loop over anchors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dgp.errors import check_choice, check_positive, check_unit_interval
from dgp.infonce import SIMILARITIES
from dgp.torch._compat import require_torch

torch = require_torch()

__all__ = [
    "REDUCTIONS",
    "EuclidEuclidLoss",
    "SoftSupConLoss",
    "SupConLoss",
    "WInfoNCELoss",
    "XCLRLoss",
    "YAwareLoss",
    "gaussian_weights",
    "make_loss",
    "similarity_logits",
    "soft_supcon_weights",
    "supcon_weights",
    "winfonce",
    "xclr_weights",
]

REDUCTIONS = ("sum", "mean", "none")
EMPTY_ROWS = ("error", "skip")

Tensor = Any  # torch.Tensor; kept loose so the module imports cleanly for documentation tools


def _as_embeddings(embeddings: Tensor) -> Tensor:
    if not isinstance(embeddings, torch.Tensor):
        raise TypeError(f"embeddings must be a torch.Tensor, got {type(embeddings).__name__}")
    if embeddings.ndim != 2 or embeddings.shape[0] < 2:
        raise ValueError(
            f"embeddings must be an N x d tensor with N >= 2, got shape {tuple(embeddings.shape)}"
        )
    if not embeddings.is_floating_point():
        raise TypeError(f"embeddings must be floating point, got dtype {embeddings.dtype}")
    return embeddings


def similarity_logits(embeddings: Tensor, *, tau: float, similarity: str = "cosine") -> Tensor:
    r"""The ``N x N`` matrix :math:`s_{ij}` (diagonal included, not masked).

    Cosine: rows are L2-normalised and :math:`s_{ij} = \langle z_i, z_j\rangle / \tau`;
    Euclidean: :math:`s_{ij} = -\|z_i - z_j\|^2 / (2\tau)`.

    Raises
    ------
    TypeError, ValueError
        If ``embeddings`` is not a floating ``N x d`` tensor, ``tau <= 0`` or ``similarity`` is
        unknown.
    """
    tau = check_positive(tau, "tau")
    check_choice(similarity, SIMILARITIES, "similarity")
    Z = _as_embeddings(embeddings)
    if similarity == "cosine":
        Zn = torch.nn.functional.normalize(Z, dim=1)
        return (Zn @ Zn.T) / tau
    sq = (Z * Z).sum(dim=1)
    D = (sq[:, None] + sq[None, :] - 2.0 * (Z @ Z.T)).clamp_min(0.0)
    return -D / (2.0 * tau)


def winfonce(
    embeddings: Tensor,
    weights: Tensor,
    *,
    tau: float,
    similarity: str = "cosine",
    reduction: str = "sum",
    empty_rows: str = "error",
) -> Tensor:
    """Functional w-InfoNCE of a batch under an explicit weight matrix.

    Parameters
    ----------
    embeddings : Tensor, shape (N, d)
    weights : Tensor or array_like, shape (N, N)
        Non-negative weights; the diagonal is ignored. Treated as a constant (no gradient).
    tau : float
        Temperature ``> 0``.
    similarity : {"cosine", "euclidean"}
    reduction : {"sum", "mean", "none"}
        Sum over anchors (the dgp convention), mean over the anchors kept, or per anchor.
    empty_rows : {"error", "skip"}
        What to do with an anchor whose weights off the diagonal are all zero (e.g. a class
        with one sample in a mini-batch): raise, or drop it (its term is 0 under ``"none"``).

    Returns
    -------
    Tensor
        A scalar, or shape ``(N,)`` for ``reduction="none"``.

    Raises
    ------
    TypeError, ValueError
        If an argument is invalid: shapes, negative or non-finite weights, unknown options, or an
        anchor without positive weight under ``empty_rows="error"``.
    """
    check_choice(reduction, REDUCTIONS, "reduction")
    check_choice(empty_rows, EMPTY_ROWS, "empty_rows")
    S = similarity_logits(embeddings, tau=tau, similarity=similarity)
    n = S.shape[0]
    W = torch.as_tensor(weights, dtype=S.dtype, device=S.device).detach()
    if W.shape != (n, n):
        raise ValueError(f"weights must be {n} x {n} to match embeddings, got {tuple(W.shape)}")
    eye = torch.eye(n, dtype=torch.bool, device=S.device)
    W = W.masked_fill(eye, 0.0)
    if not bool(torch.isfinite(W).all()) or bool((W < 0).any()):
        raise ValueError("weights must be finite and >= 0 off the diagonal")
    mass = W.sum(dim=1)
    keep = mass > 0
    if not bool(keep.all()):
        if empty_rows == "error":
            i = int(torch.nonzero(~keep)[0, 0])
            raise ValueError(
                f"row {i} of weights has no positive weight off the diagonal (an anchor without "
                "positives); pass empty_rows='skip' to drop such anchors"
            )
        if not bool(keep.any()):
            raise ValueError("no anchor of the batch has a positive weight off the diagonal")
    P = W / mass.clamp_min(torch.finfo(S.dtype).tiny)[:, None]
    S = S.masked_fill(eye, float("-inf"))
    log_q = (S - torch.logsumexp(S, dim=1, keepdim=True)).masked_fill(eye, 0.0)
    per_anchor = -(P * log_q).sum(dim=1)
    if reduction == "none":
        return per_anchor
    if reduction == "sum":
        return per_anchor.sum()
    return per_anchor[keep].mean()


# --------------------------------------------------------------------------------------------
# weightings from labels (torch versions of dgp.weights; the diagonal is left to the loss)


def _class_labels(labels: Tensor) -> Tensor:
    y = torch.as_tensor(labels)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"labels must be one column of class labels, got shape {tuple(y.shape)}")
    if y.is_floating_point() or y.is_complex():
        if not bool(torch.equal(torch.round(y), y)):
            raise TypeError("labels must be integer class labels; got non-integer values")
    return y


def _continuous_labels(labels: Tensor) -> Tensor:
    y = torch.as_tensor(labels)
    if not y.is_floating_point():
        y = y.to(torch.get_default_dtype())
    if y.ndim == 1:
        y = y[:, None]
    if y.ndim != 2:
        raise ValueError(f"labels must be an N x p tensor, got shape {tuple(y.shape)}")
    if not bool(torch.isfinite(y).all()):
        raise ValueError("labels hold a NaN or infinite value")
    return y


def supcon_weights(labels: Tensor) -> Tensor:
    r"""SupCon: :math:`w_{ij} = 1[y_i = y_j]` (float64 tensor, diagonal not zeroed; the loss casts
    weights to the embeddings' dtype)."""
    y = _class_labels(labels)
    return (y[:, None] == y[None, :]).to(torch.float64)


def soft_supcon_weights(labels: Tensor, *, eps: float) -> Tensor:
    r"""Soft SupCon: 1 within a class, :math:`\varepsilon` across classes."""
    eps = check_unit_interval(eps, "eps")
    same = supcon_weights(labels)
    return same + eps * (1.0 - same)


def gaussian_weights(labels: Tensor, *, sigma: float) -> Tensor:
    r"""Gaussian label kernel :math:`\exp(-\|y_i - y_j\|^2 / (2\sigma^2))`.

    Used by y-Aware (cosine latent) and Euclidean–Euclidean (Euclidean latent).
    """
    sigma = check_positive(sigma, "sigma")
    y = _continuous_labels(labels)
    sq = (y * y).sum(dim=1)
    D = (sq[:, None] + sq[None, :] - 2.0 * (y @ y.T)).clamp_min(0.0)
    return torch.exp(-D / (2.0 * sigma**2))


def xclr_weights(labels: Tensor, *, label_tau: float) -> Tensor:
    r"""X-CLR weights :math:`\mathrm{softmax}_{k \ne i}(\langle\hat y_i, \hat y_k\rangle/\tau_y)_j`.

    Raises
    ------
    ValueError
        If a label embedding is zero.
    """
    label_tau = check_positive(label_tau, "label_tau")
    y = _continuous_labels(labels)
    norms = y.norm(dim=1)
    if bool((norms == 0).any()):
        i = int(torch.nonzero(norms == 0)[0, 0])
        raise ValueError(f"label embedding {i} is zero and cannot be L2-normalised for X-CLR")
    yh = y / norms[:, None]
    S = (yh @ yh.T) / label_tau
    eye = torch.eye(S.shape[0], dtype=torch.bool, device=S.device)
    return torch.softmax(S.masked_fill(eye, float("-inf")), dim=1)


# --------------------------------------------------------------------------------------------
# nn.Module losses


class WInfoNCELoss(torch.nn.Module):
    """Generic w-InfoNCE loss: ``loss(embeddings, labels)``.

    The weighting comes from, in order of precedence: the ``weights=`` argument of
    :meth:`forward`; a fixed dataset matrix ``weights`` given here, in which case ``labels`` are
    the **indices** of the batch samples in that matrix (``W[labels][:, labels]`` is used); or
    ``weight_fn(labels)``, a callable returning the batch's ``N x N`` weights.

    Parameters
    ----------
    tau : float
        Temperature ``> 0``.
    similarity : {"cosine", "euclidean"}
    weight_fn : callable, optional
        ``labels -> (N, N)`` weights.
    weights : Tensor or array_like, optional
        A fixed ``M x M`` weighting of the whole dataset, indexed by ``labels``.
    reduction : {"sum", "mean", "none"}
        ``"sum"`` (default) is the dgp convention, equal to :func:`dgp.infonce.winfonce_loss`.
    empty_rows : {"error", "skip"}
        See :func:`winfonce`.

    Raises
    ------
    TypeError, ValueError
        If an option is invalid, or both ``weight_fn`` and ``weights`` are given.
    """

    objective = "generic"

    def __init__(
        self,
        *,
        tau: float,
        similarity: str = "cosine",
        weight_fn: Callable[[Tensor], Tensor] | None = None,
        weights: Tensor | None = None,
        reduction: str = "sum",
        empty_rows: str = "error",
    ) -> None:
        super().__init__()
        self.tau = check_positive(tau, "tau")
        self.similarity = check_choice(similarity, SIMILARITIES, "similarity")
        self.reduction = check_choice(reduction, REDUCTIONS, "reduction")
        self.empty_rows = check_choice(empty_rows, EMPTY_ROWS, "empty_rows")
        if weight_fn is not None and weights is not None:
            raise ValueError("give either weight_fn or weights, not both")
        if weight_fn is not None and not callable(weight_fn):
            raise TypeError(f"weight_fn must be callable, got {type(weight_fn).__name__}")
        self.weight_fn = weight_fn
        if weights is not None:
            W = torch.as_tensor(weights, dtype=torch.get_default_dtype())
            if W.ndim != 2 or W.shape[0] != W.shape[1]:
                raise ValueError(f"weights must be a square matrix, got shape {tuple(W.shape)}")
            self.register_buffer("dataset_weights", W.clone())
        else:
            self.dataset_weights = None

    def weights_from_labels(self, labels: Tensor) -> Tensor:
        """The batch's ``N x N`` weights from its labels (see the class docstring).

        Raises
        ------
        ValueError
            If no weighting is configured, or indices fall outside the dataset matrix.
        """
        if self.dataset_weights is not None:
            idx = torch.as_tensor(labels, device=self.dataset_weights.device).long().reshape(-1)
            m = self.dataset_weights.shape[0]
            if bool(((idx < 0) | (idx >= m)).any()):
                raise ValueError(f"labels must be sample indices in [0, {m}) of the weights")
            return self.dataset_weights[idx][:, idx]
        if self.weight_fn is None:
            raise ValueError("no weighting: pass weights= to forward, or weight_fn/weights here")
        return self.weight_fn(labels)

    def forward(
        self, embeddings: Tensor, labels: Tensor | None = None, *, weights: Tensor | None = None
    ) -> Tensor:
        """The loss of a batch; see :func:`winfonce`.

        Raises
        ------
        TypeError, ValueError
            As :func:`winfonce`, or if ``labels`` do not have one entry per embedding.
        """
        Z = _as_embeddings(embeddings)
        if weights is None:
            if labels is None:
                raise ValueError("labels are required unless weights= is given")
            lab = torch.as_tensor(labels)
            if lab.shape[0] != Z.shape[0]:
                raise ValueError(
                    f"labels must have one entry per embedding ({Z.shape[0]}), got {lab.shape[0]}"
                )
            if lab.device != Z.device and self.dataset_weights is None:
                lab = lab.to(Z.device)
            weights = self.weights_from_labels(lab)
        return winfonce(
            Z,
            torch.as_tensor(weights).to(device=Z.device, dtype=Z.dtype),
            tau=self.tau,
            similarity=self.similarity,
            reduction=self.reduction,
            empty_rows=self.empty_rows,
        )

    def extra_repr(self) -> str:
        return f"tau={self.tau}, similarity={self.similarity!r}, reduction={self.reduction!r}"


class SupConLoss(WInfoNCELoss):
    """SupCon (Khosla et al. 2020, L_out) as w-InfoNCE: cosine latent, ``w_ij = 1[y_i = y_j]``."""

    objective = "supcon"

    def __init__(self, *, tau: float, reduction: str = "sum", empty_rows: str = "error") -> None:
        super().__init__(
            tau=tau, weight_fn=supcon_weights, reduction=reduction, empty_rows=empty_rows
        )


class SoftSupConLoss(WInfoNCELoss):
    """Soft SupCon: cosine latent, ``w_ij = 1`` within a class and ``eps`` across classes."""

    objective = "soft-supcon"

    def __init__(self, *, tau: float, eps: float, reduction: str = "sum") -> None:
        self.eps = check_unit_interval(eps, "eps")
        super().__init__(tau=tau, reduction=reduction)
        self.weight_fn = self._weights

    def _weights(self, labels: Tensor) -> Tensor:
        return soft_supcon_weights(labels, eps=self.eps)


class YAwareLoss(WInfoNCELoss):
    """y-Aware (Dufumier et al. 2021): cosine latent, Gaussian kernel of the labels (row
    normalised, as the w-InfoNCE definition says; not the column-normalised public slip)."""

    objective = "y-aware"
    _similarity = "cosine"

    def __init__(self, *, tau: float, sigma: float, reduction: str = "sum") -> None:
        self.sigma = check_positive(sigma, "sigma")
        super().__init__(tau=tau, similarity=self._similarity, reduction=reduction)
        self.weight_fn = self._weights

    def _weights(self, labels: Tensor) -> Tensor:
        return gaussian_weights(labels, sigma=self.sigma)


class EuclidEuclidLoss(YAwareLoss):
    """Euclidean–Euclidean: Gaussian label kernel with a Euclidean latent; its optimum is
    ``z = (sqrt(tau) / sigma) y`` up to a rigid motion."""

    objective = "euclid-euclid"
    _similarity = "euclidean"


class XCLRLoss(WInfoNCELoss):
    """X-CLR (Sobal et al. 2024): cosine latent, weights the label-similarity softmax at
    temperature ``label_tau`` (label embeddings are L2-normalised)."""

    objective = "x-clr"

    def __init__(self, *, tau: float, label_tau: float, reduction: str = "sum") -> None:
        self.label_tau = check_positive(label_tau, "label_tau")
        super().__init__(tau=tau, reduction=reduction)
        self.weight_fn = self._weights

    def _weights(self, labels: Tensor) -> Tensor:
        return xclr_weights(labels, label_tau=self.label_tau)


_CLASSES = {
    "supcon": (SupConLoss, ()),
    "soft-supcon": (SoftSupConLoss, ("eps",)),
    "y-aware": (YAwareLoss, ("sigma",)),
    "euclid-euclid": (EuclidEuclidLoss, ("sigma",)),
    "x-clr": (XCLRLoss, ("label_tau",)),
}


def make_loss(
    objective: str,
    *,
    tau: float,
    sigma: float | None = None,
    eps: float | None = None,
    label_tau: float | None = None,
    reduction: str = "sum",
) -> WInfoNCELoss:
    """The loss module of a named objective (the names of :data:`dgp.weights.OBJECTIVES`).

    Raises
    ------
    ValueError
        If ``objective`` is unknown or a parameter it needs is missing.
    """
    check_choice(objective, tuple(_CLASSES), "objective")
    cls, params = _CLASSES[objective]
    given = {"sigma": sigma, "eps": eps, "label_tau": label_tau}
    kwargs = {}
    for p in params:
        if given[p] is None:
            raise ValueError(f"objective {objective!r} needs {p}")
        kwargs[p] = given[p]
    return cls(tau=tau, reduction=reduction, **kwargs)
