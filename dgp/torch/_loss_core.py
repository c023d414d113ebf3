"""The w-InfoNCE of one batch for PyTorch (:func:`dgp.torch.losses.winfonce`): the similarity
logits, one log-softmax per call, the reductions and the anchors without positives, the
``tau``/``temperature`` alias, and what every loss module sets up the same way
(:class:`BatchLoss`)."""

from __future__ import annotations

from typing import Any

from dgp.errors import (
    InputError,
    InputTypeError,
    ParameterError,
    check_choice,
    check_positive,
)
from dgp.infonce import SIMILARITIES
from dgp.torch._compat import require_torch

torch = require_torch()


REDUCTIONS = ("sum", "mean", "none")
EMPTY_ROWS = ("error", "skip")

Tensor = Any  # torch.Tensor; kept loose so the module imports cleanly for documentation tools


def as_embeddings(embeddings: Tensor) -> Tensor:
    if not isinstance(embeddings, torch.Tensor):
        raise InputTypeError(f"embeddings must be a torch.Tensor, got {type(embeddings).__name__}")
    if embeddings.ndim != 2 or embeddings.shape[0] < 2:
        raise InputError(
            f"embeddings must be an N x d tensor with N >= 2, got shape {tuple(embeddings.shape)}"
        )
    if not embeddings.is_floating_point():
        raise InputTypeError(f"embeddings must be floating point, got dtype {embeddings.dtype}")
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
    Z = as_embeddings(embeddings)
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
        with one sample in a mini-batch): raise, or drop it (its term is 0 under ``"none"`` and
        ``"sum"``, and ``"mean"`` averages over the others). A batch where no anchor has a
        positive gives 0 under ``"skip"`` (attached to the graph, with a zero gradient), as
        pytorch-metric-learning does.

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
        raise InputError(f"weights must be {n} x {n} to match embeddings, got {tuple(W.shape)}")
    eye = torch.eye(n, dtype=torch.bool, device=S.device)
    W = W.masked_fill(eye, 0.0)
    if not bool(torch.isfinite(W).all()) or bool((W < 0).any()):
        raise InputError("weights must be finite and >= 0 off the diagonal")
    mass = W.sum(dim=1)
    keep = mass > 0
    if not bool(keep.all()):
        if empty_rows == "error":
            i = int(torch.nonzero(~keep)[0, 0])
            raise InputError(
                f"row {i} of weights has no positive weight off the diagonal (an anchor without "
                "positives); pass empty_rows='skip' to drop such anchors"
            )
    P = W / mass.clamp_min(torch.finfo(S.dtype).tiny)[:, None]
    S = S.masked_fill(eye, float("-inf"))
    log_q = (S - torch.logsumexp(S, dim=1, keepdim=True)).masked_fill(eye, 0.0)
    return reduce_anchors(-(P * log_q).sum(dim=1), keep, reduction)


def reduce_anchors(per_anchor: Tensor, keep: Tensor, reduction: str) -> Tensor:
    """The loss of a batch from its anchors' terms: ``per_anchor`` itself (``"none"``), their
    sum (``"sum"``) or their mean over the anchors ``keep`` marks (``"mean"``; with none kept,
    the sum of terms that are all 0, still attached to the graph, as pytorch-metric-learning
    does)."""
    if reduction == "none":
        return per_anchor
    if reduction == "sum" or not bool(keep.any()):
        return per_anchor.sum()
    return per_anchor[keep].mean()


def resolve_tau(tau: float | None, temperature: float | None) -> float:
    """The temperature from ``tau`` or its alias ``temperature`` (pytorch-metric-learning's name).

    Raises
    ------
    ValueError
        If neither is given, both are given with different values, or the value is not > 0.
    """
    if tau is None and temperature is None:
        raise ParameterError("tau", "is missing: give tau= (or its alias temperature=)")
    if tau is not None and temperature is not None and tau != temperature:
        raise ParameterError(
            "temperature", f"is an alias of tau: got tau={tau!r} and temperature={temperature!r}"
        )
    return check_positive(tau if tau is not None else temperature, "tau")


class BatchLoss(torch.nn.Module):
    """What every loss module of :mod:`dgp.torch.losses` sets up the same way: the temperature
    (``tau``, or its alias ``temperature``), the reduction over the anchors and what happens to
    anchors without positives, checked once here; and its ``repr``, from ``extra_repr``.

    Raises
    ------
    ValueError
        If ``tau`` is missing, not > 0 or disagrees with ``temperature``, or ``reduction``
        or ``empty_rows`` is not one of :data:`REDUCTIONS` or :data:`EMPTY_ROWS`.
    """

    def __init__(self, *, tau: float | None, temperature: float | None, reduction: str,
                 empty_rows: str) -> None:
        super().__init__()
        self.tau = resolve_tau(tau, temperature)
        self.reduction = check_choice(reduction, REDUCTIONS, "reduction")
        self.empty_rows = check_choice(empty_rows, EMPTY_ROWS, "empty_rows")

    @property
    def temperature(self) -> float:
        """Alias of :attr:`tau` (pytorch-metric-learning's name)."""
        return self.tau

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.extra_repr()})"
