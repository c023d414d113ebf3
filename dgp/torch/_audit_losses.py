"""The losses to audit, re-exported by :mod:`dgp.torch.audit_examples`: y-Aware right and wrong,
the released SupContrast code, CLIP-style losses, and BCL- and DCL-style losses written from
their published formulas."""

from __future__ import annotations

from dgp.errors import InputError
from dgp.torch._compat import require_torch

torch = require_torch()


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


# --------------------------------------------------------------------------------------------
# SupContrast-, BCL- and DCL-style losses, from the published formulas


class SupContrastLoss(torch.nn.Module):
    r"""HobbitLong/SupContrast ``losses.py`` ``SupConLoss`` as released, preceded by the L2
    normalisation its model applies (``networks/resnet_big.py``, ``SupConResNet.forward``).

    Written from master at commit ``66a8fe53880d`` (``losses.py`` last changed in
    ``72fd9894f390``, "fix: nan loss values", 2023-12-02): no ``+1e-9`` in the log, and an
    anchor without a positive divides by 1 instead of 0 (it adds 0 to the mean). Defaults are
    the released ones (``temperature = base_temperature = 0.07``, ``contrast_mode="all"``).
    Called as ``loss(features [bsz, n_views, d], labels=None)``.
    """

    def __init__(self, temperature: float = 0.07, contrast_mode: str = "all",
                 base_temperature: float = 0.07) -> None:
        super().__init__()
        self.temperature = temperature
        self.contrast_mode = contrast_mode
        self.base_temperature = base_temperature

    def forward(self, features, labels=None):
        if features.ndim != 3:
            raise InputError(f"features must be [bsz, n_views, d], got shape "
                             f"{tuple(features.shape)}")
        features = torch.nn.functional.normalize(features, dim=-1)  # the model's last step
        bsz, views = features.shape[0], features.shape[1]
        if labels is None:
            mask = torch.eye(bsz, dtype=features.dtype)
        else:
            y = torch.as_tensor(labels).reshape(-1, 1)
            mask = torch.eq(y, y.T).to(features.dtype)
        contrast = torch.cat(torch.unbind(features, dim=1), dim=0)
        if self.contrast_mode == "one":
            anchor, anchor_count = features[:, 0], 1
        else:
            anchor, anchor_count = contrast, views
        logits = anchor @ contrast.T / self.temperature
        logits = logits - logits.max(dim=1, keepdim=True).values.detach()
        mask = mask.repeat(anchor_count, views)
        logits_mask = torch.scatter(torch.ones_like(mask), 1,
                                    torch.arange(bsz * anchor_count).view(-1, 1), 0)
        mask = mask * logits_mask
        exp_logits = torch.exp(logits) * logits_mask
        log_prob = logits - torch.log(exp_logits.sum(1, keepdim=True))
        positives = mask.sum(1)
        positives = torch.where(positives == 0, torch.ones_like(positives), positives)
        mean_log_prob_pos = (mask * log_prob).sum(1) / positives
        loss = -(self.temperature / self.base_temperature) * mean_log_prob_pos
        return loss.view(anchor_count, bsz).mean()


def supcontrast_out(temperature: float = TAU, base_temperature: float | None = None):
    """HobbitLong's ``SupConLoss`` (:math:`L_{out}`, every view an anchor), base temperature
    equal to the temperature unless given."""
    return SupContrastLoss(temperature, "all",
                           temperature if base_temperature is None else base_temperature)


def supcontrast_base_temperature(temperature: float = TAU, base_temperature: float = 0.07):
    r"""HobbitLong's ``SupConLoss`` with its default base temperature: the loss scaled by
    :math:`\tau/\tau_b`."""
    return SupContrastLoss(temperature, "all", base_temperature)


def supcontrast_one(temperature: float = TAU):
    """HobbitLong's ``SupConLoss`` with ``contrast_mode="one"``: the first view's rows are the
    anchors, every other sample in the denominator."""
    return SupContrastLoss(temperature, "one", temperature)


class SoloLearnSupCon(torch.nn.Module):
    r"""solo-learn's SupCon: ``solo/methods/supcon.py`` calls ``simclr_loss_func`` of
    ``solo/losses/simclr.py`` (vturrisi/solo-learn, commit ``e38418437698``) with the class
    labels repeated over the views as ``indexes``:
    :math:`-\mathrm{mean}_i \log\big(\sum_{p} e^{s_{ip}} / \sum_{k \ne i} e^{s_{ik}}\big)`,
    SupCon's :math:`L_{in}` up to the constant :math:`\log|P(i)|` (one process: ``gather`` is
    the identity). Called as ``loss(z [n_views * bsz, d], labels)``, one label per row.
    """

    def __init__(self, temperature: float = TAU) -> None:
        super().__init__()
        self.temperature = temperature

    def forward(self, z, indexes):
        z = torch.nn.functional.normalize(z, dim=-1)
        sim = torch.exp(z @ z.T / self.temperature)
        idx = torch.as_tensor(indexes).reshape(1, -1)
        pos_mask = idx.t() == idx
        pos_mask.fill_diagonal_(False)
        neg_mask = idx.t() != idx
        pos = torch.sum(sim * pos_mask, 1)
        neg = torch.sum(sim * neg_mask, 1)
        return -(torch.mean(torch.log(pos / (pos + neg))))


def supcontrast_in(temperature: float = TAU):
    """SupCon's :math:`L_{in}` (the mean inside the log) as solo-learn computes it: not a
    w-InfoNCE."""
    return SoloLearnSupCon(temperature)


class YAwareOriginal(torch.nn.Module):
    r"""The y-Aware loss of the original code, ``losses.py``
    ``GeneralizedSupervisedNTXenLoss`` of Duplums/yAwareContrastiveLearning (commit
    ``afe9b6f11f85``): an RBF kernel of the labels (``gamma = 1/(2 sigma^2)``, computed here
    with numpy instead of scikit-learn's ``rbf_kernel``), zero diagonal, ``weights /=
    weights.sum(axis=1)`` (the column normalisation), diagonal similarities pushed down by
    ``1e8``, and ``-1/N * sum(weights * log_softmax)``. Called as ``loss(z_i, z_j, labels)``.
    """

    def __init__(self, temperature: float = TAU, sigma: float = SIGMA) -> None:
        super().__init__()
        self.temperature = temperature
        self.sigma = sigma
        self.INF = 1e8

    def forward(self, z_i, z_j, labels):
        import numpy as np

        N = len(z_i)
        z_i = torch.nn.functional.normalize(z_i, p=2, dim=-1)
        z_j = torch.nn.functional.normalize(z_j, p=2, dim=-1)
        eye = torch.eye(N, dtype=z_i.dtype)
        sim_zii = z_i @ z_i.T / self.temperature - self.INF * eye
        sim_zjj = z_j @ z_j.T / self.temperature - self.INF * eye
        sim_zij = z_i @ z_j.T / self.temperature
        y = torch.as_tensor(labels).reshape(N, -1).repeat(2, 1).detach().cpu().numpy()
        sq = ((y[:, None, :] - y[None, :, :]) ** 2).sum(-1)
        weights = np.exp(-sq / (2 * self.sigma**2))
        weights = weights * (1 - np.eye(2 * N))
        weights /= weights.sum(axis=1)
        sim_Z = torch.cat([torch.cat([sim_zii, sim_zij], dim=1),
                           torch.cat([sim_zij.T, sim_zjj], dim=1)], dim=0)
        log_sim_Z = torch.log_softmax(sim_Z, dim=1)
        return -1.0 / N * (torch.from_numpy(weights).to(z_i.dtype) * log_sim_Z).sum()


CLIP_TAU = 0.07


def clip_loss(a, b):
    """A CLIP-style loss (open_clip's ``ClipLoss`` after its model's normalisation): logits
    ``a @ b.T / tau`` with ``tau = 0.07``, cross-entropy in both directions, averaged. It has
    no temperature attribute: the audit estimates it."""
    a = torch.nn.functional.normalize(a, dim=1)
    b = torch.nn.functional.normalize(b, dim=1)
    logits = a @ b.T / CLIP_TAU
    target = torch.arange(len(a))
    return (torch.nn.functional.cross_entropy(logits, target)
            + torch.nn.functional.cross_entropy(logits.T, target)) / 2


def clip_loss_one_direction(a, b):
    """:func:`clip_loss` in one direction only (MoCo-style in-batch negatives): the rows of
    ``a`` are the anchors, the denominator runs over ``b``."""
    a = torch.nn.functional.normalize(a, dim=1)
    b = torch.nn.functional.normalize(b, dim=1)
    return torch.nn.functional.cross_entropy(a @ b.T / CLIP_TAU, torch.arange(len(a)))


class _ClassLoss(torch.nn.Module):
    def __init__(self, temperature: float, partition: str) -> None:
        super().__init__()
        self.temperature = temperature
        self.partition = partition

    def forward(self, embeddings, labels):
        z = torch.nn.functional.normalize(embeddings, dim=1)
        s = z @ z.T / self.temperature
        y = torch.as_tensor(labels).reshape(-1).to(s.device)
        n = s.shape[0]
        not_self = ~torch.eye(n, dtype=torch.bool, device=s.device)
        same = y[:, None] == y[None, :]
        pos = same & not_self
        if self.partition == "class-averaged":
            sizes = same.to(s.dtype).sum(0)  # |B_{y_k}| for column k
            count = sizes[None, :] - same.to(s.dtype)  # minus the anchor in its own class
            logits = s - torch.log(count.clamp_min(1.0))
            keep = not_self
        else:  # "negatives": the anchor's class left out of the denominator
            logits = s
            keep = ~same
        denom = torch.logsumexp(logits.masked_fill(~keep, float("-inf")), dim=1)
        per_anchor = -(s * pos).sum(1) / pos.sum(1) + denom
        return per_anchor.mean()


def bcl_loss(temperature: float = TAU):
    r"""BCL-style class-averaged SupCon (Zhu et al. 2022, without the class prototypes):
    :math:`-\frac{1}{|P(i)|}\sum_p \log \frac{e^{s_{ip}}}{\sum_{j}\frac{1}{|B_j|}
    \sum_{k \in B_j} e^{s_{ik}}}`, the anchor left out of its own class's count."""
    return _ClassLoss(temperature, "class-averaged")


def decoupled_supcon_loss(temperature: float = TAU):
    r"""Decoupled SupCon (DCL with labels): the anchor's class left out of the denominator,
    :math:`-\frac{1}{|P(i)|}\sum_p s_{ip} + \log\sum_{k: y_k \ne y_i} e^{s_{ik}}`."""
    return _ClassLoss(temperature, "negatives")
