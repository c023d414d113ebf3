"""Example losses for ``dgp audit``: y-Aware written as public code writes it, right and wrong.

.. code-block:: console

    $ dgp audit dgp.torch.audit_examples:y_aware_loss
    $ dgp audit dgp.torch.audit_examples:y_aware_loss_public   # catches the slip

Both follow the structure of public y-Aware implementations (Dufumier et al. 2021): a Gaussian
kernel of the labels with a zero diagonal, normalised, then a weighted cross-entropy against the
softmax of the cosine similarities. ``y_aware_loss_public`` keeps their ``W /= W.sum(1)``, which
broadcasts the row sums along the last axis and so divides **columns**.
"""

from __future__ import annotations

from dgp.torch._compat import require_torch

torch = require_torch()

__all__ = ["SIGMA", "TAU", "y_aware_loss", "y_aware_loss_public"]

TAU = 0.1
SIGMA = 0.5


def _log_softmax_offdiag(embeddings, temperature):
    z = torch.nn.functional.normalize(embeddings, dim=1)
    sim = z @ z.T / temperature
    eye = torch.eye(sim.shape[0], dtype=torch.bool, device=sim.device)
    sim = sim.masked_fill(eye, float("-inf"))
    return torch.log_softmax(sim, dim=1).masked_fill(eye, 0.0)


def _kernel(labels, sigma, like):
    y = torch.as_tensor(labels, dtype=like.dtype, device=like.device).reshape(len(labels), -1)
    K = torch.exp(-(torch.cdist(y, y) ** 2) / (2 * sigma**2))
    return K * (1 - torch.eye(K.shape[0], dtype=like.dtype, device=like.device))


def y_aware_loss(embeddings, labels):
    """y-Aware, correctly row-normalised (sum over anchors)."""
    W = _kernel(labels, SIGMA, embeddings)
    W = W / W.sum(1, keepdim=True)
    return -(W * _log_softmax_offdiag(embeddings, TAU)).sum()


def y_aware_loss_public(embeddings, labels):
    """y-Aware with the public code's normalisation slip (``W /= W.sum(1)``), mean over anchors."""
    W = _kernel(labels, SIGMA, embeddings)
    W = W / W.sum(1)  # broadcasts as W[i, j] / W[j, :].sum(): a column normalisation
    return -(W * _log_softmax_offdiag(embeddings, TAU)).sum() / len(labels)


y_aware_loss.tau = TAU  # type: ignore[attr-defined]
y_aware_loss_public.tau = TAU  # type: ignore[attr-defined]
