"""Targeted SupCon (TSC): fixed class targets as extra positives and negatives of every anchor,
assigned to classes by identity or by a Hungarian matching of the class means."""

from __future__ import annotations

import math

import numpy as np

from dgp.errors import (
    InputError,
    InputTypeError,
    ParameterError,
    ParameterTypeError,
    check_choice,
    check_flag,
    check_int,
    describe,
)
from dgp.prototypes import Prototypes
from dgp.torch._compat import require_torch
from dgp.torch._loss_core import (
    BatchLoss,
    Tensor,
    as_embeddings,
    reduce_anchors,
    winfonce,
)
from dgp.torch._loss_weights import class_labels

torch = require_torch()


ASSIGNMENTS = ("identity", "hungarian")


def _target_rows(targets: object) -> np.ndarray:
    """``M x d`` unit rows from a :class:`dgp.Prototypes` result, an array or a tensor."""
    if isinstance(targets, Prototypes):
        rows = targets.prototypes  # K x dim (K x rank without dim), the saved fixed targets
    elif isinstance(targets, torch.Tensor):
        rows = targets.detach().cpu().double().numpy()
    else:
        rows = targets
    try:
        A = np.asarray(rows, dtype=float)
    except (TypeError, ValueError):
        raise ParameterTypeError("targets", "must be an M x d array of target vectors or a "
                                 f"dgp.Prototypes result, got {describe(targets)}") from None
    if A.ndim != 2 or A.shape[0] < 1 or A.shape[1] < 1:
        raise ParameterError("targets", f"must be an M x d array with M >= 1, got shape {A.shape}")
    if not np.isfinite(A).all():
        raise ParameterError("targets", "must be finite (it holds NaN or infinite values)")
    norms = np.linalg.norm(A, axis=1)
    if (norms == 0).any():
        raise ParameterError("targets", f"row {int(np.argmin(norms))} is zero: a target needs a "
                             "direction")
    return A / norms[:, None]


def hungarian_assignment(class_means: object, targets: object) -> np.ndarray:
    r"""The one-to-one assignment of ``K`` classes to ``M >= K`` targets that maximises the
    total cosine between each class mean and its target (TSC's matching, by
    :func:`scipy.optimize.linear_sum_assignment`): entry ``c`` is the target row of class ``c``.

    >>> hungarian_assignment([[0.0, 1.0], [1.0, 0.1]], [[1.0, 0.0], [0.0, 1.0]]).tolist()
    [1, 0]

    Raises
    ------
    ParameterError
        If the shapes disagree, ``K > M``, or a class mean is zero or not finite.
    """
    from scipy.optimize import linear_sum_assignment

    T = _target_rows(targets)
    try:
        C = np.asarray(class_means, dtype=float)
    except (TypeError, ValueError):
        raise ParameterTypeError("class_means", f"must be a K x d array, got "
                                 f"{describe(class_means)}") from None
    if C.ndim != 2 or C.shape[1] != T.shape[1] or C.shape[0] > T.shape[0] or C.shape[0] < 1:
        raise ParameterError("class_means", f"must be K x {T.shape[1]} with 1 <= K <= "
                             f"{T.shape[0]} (the targets), got shape {C.shape}")
    norms = np.linalg.norm(C, axis=1)
    if not np.isfinite(C).all() or (norms == 0).any():
        raise ParameterError("class_means", "must be finite and non-zero (a class mean needs a "
                             "direction)")
    cos = (C / norms[:, None]) @ T.T
    rows, cols = linear_sum_assignment(-cos)
    out = np.empty(C.shape[0], dtype=np.int64)
    out[rows] = cols
    return out


class TargetedSupConLoss(BatchLoss):
    r"""SupCon with fixed class targets, as Targeted Supervised Contrastive learning (TSC, Li et
    al., CVPR 2022) trains: ``loss(embeddings, labels)``.

    The ``M`` targets (unit vectors, e.g. ``dgp.supcon_prototypes(sizes, tau=..., dim=d)``, its
    ``.factor``, a ``--save-prototypes`` file, or TSC's uniform targets) are appended to the
    batch's contrast set, as TSC appends them to its keys: every target is a **negative** of every
    anchor, and the target assigned to an anchor's class is one more **positive** of that
    anchor, with weight ``target_weight`` beside the weight 1 of each same-class sample. The
    anchors are the batch's samples (TSC masks the targets out as anchors; ``target_anchors=True``
    makes them anchors too, with their class's batch samples as positives). Targets are fixed:
    no gradient reaches them. As a w-InfoNCE over the ``B + M`` points (rows :math:`x`, anchors
    :math:`i` in the batch, :math:`s_{ij} = \langle x_i, x_j\rangle/\tau`):

    .. math::

        \ell_i = -\sum_{j \ne i} p_{ij}\Big(s_{ij} - \log\sum_{k \ne i} e^{s_{ik}}\Big),\quad
        p_{ij} \propto \begin{cases} 1 & j \text{ a sample of class } y_i \\
        \lambda & j = t_{a(y_i)},\ \text{the target assigned to } y_i \\ 0 & \text{otherwise.}
        \end{cases}

    With :math:`\lambda = 1` (the default) this is TSC's loss with one copy of each target
    (its ``loss_class + loss_target`` at ``tw = 1``, ``tr = 1``); TSC's ``tw != 1`` divides by
    the count of positives rather than their weight, so it differs slightly from
    :math:`\lambda = tw`. Without targets (``targets=None``) it is :class:`SupConLoss`. Every
    anchor has its target as a positive, so a class with one sample in the batch (the tail of a
    long-tailed set) still gets a pull; with ``targets=None`` or ``target_weight=0`` anchors
    without positives follow ``empty_rows`` (dropped by default, as pytorch-metric-learning).

    Parameters
    ----------
    targets : array_like (M, d), Tensor, dgp.Prototypes or None
        Target vectors (rows normalised here); ``M >= K`` classes; their width must be the
        embeddings' ``d``. A :class:`dgp.Prototypes` result gives its ``prototypes`` (what
        ``dgp supcon --save-prototypes`` saves: ``K x dim``, or ``K x rank`` without ``dim``,
        then zero-padded to the embeddings' width, which keeps the Gram).
    tau, temperature : float
        Temperature ``> 0`` (``temperature`` is pytorch-metric-learning's name).
    assignment : None, "identity", "hungarian" or sequence of int
        Which target row each class ``0..K-1`` gets, stated once and kept in the attribute
        :attr:`assignment` (a ``(K,)`` long tensor): ``None``/``"identity"``: class ``c`` gets
        row ``c`` (the order of :func:`dgp.supcon_prototypes`, whose rows are the classes
        of ``sizes``); a sequence: class ``c`` gets row ``assignment[c]`` (distinct rows);
        ``"hungarian"``: TSC's matching of class means to targets
        (:func:`hungarian_assignment`), computed once by :meth:`assign` — call it on the
        initial encoder's embeddings of the training set, or let the first batch that holds
        every class do it. TSC re-matches running class centroids during training; here the
        assignment is fixed once computed (call :meth:`assign` again to re-match).
    num_classes : int, optional
        ``K`` for ``"hungarian"`` when fewer classes than targets (default ``M``).
    target_weight : float
        :math:`\lambda \ge 0`, the weight of the target positive (``0``: targets only as
        negatives).
    target_anchors : bool
        Also use the targets of the classes in the batch as anchors (default ``False``, as TSC).
    reduction : {"sum", "mean", "none"}
        As :class:`SupConLoss` (``"sum"``, dgp's convention, grows with the batch size;
        ``"mean"`` over the anchors kept; ``"none"``: one value per anchor, the batch's ``B``
        then, with ``target_anchors``, the ``M`` targets; dropped anchors are 0).
    empty_rows : {"skip", "error"}
        Anchors without any positive: dropped (default) or an error.

    Raises
    ------
    ValueError, TypeError
        If an argument is invalid (the message names it).

    Examples
    --------
    >>> import torch
    >>> loss = TargetedSupConLoss([[1.0, 0.0], [0.0, 1.0]], temperature=0.1, reduction="mean")
    >>> loss.assignment.tolist()
    [0, 1]
    >>> z = torch.tensor([[1.0, 0.0], [0.0, 1.0]])             # each sample on its target
    >>> bool(loss(z, torch.tensor([0, 1])) < loss(z, torch.tensor([1, 0])))
    True
    """

    def __init__(
        self,
        targets: object | None = None,
        *,
        tau: float | None = None,
        temperature: float | None = None,
        assignment: object | None = None,
        num_classes: int | None = None,
        target_weight: float = 1.0,
        target_anchors: bool = False,
        reduction: str = "sum",
        empty_rows: str = "skip",
    ) -> None:
        super().__init__(tau=tau, temperature=temperature, reduction=reduction,
                         empty_rows=empty_rows)
        lam = float(target_weight) if isinstance(target_weight, (int, float)) else math.nan
        if not (math.isfinite(lam) and lam >= 0) or isinstance(target_weight, bool):
            raise ParameterError("target_weight", f"must be a finite number >= 0, got "
                                 f"{describe(target_weight)}")
        self.target_weight = lam
        self.target_anchors = check_flag(target_anchors, "target_anchors")
        if targets is None:
            if assignment is not None or num_classes is not None:
                raise ParameterError("assignment", "needs targets (targets=None is plain SupCon)")
            self.register_buffer("targets", None)
            self.register_buffer("assignment", None)
            self.pad_targets = False
            self.assignment_method = "none"
            return
        T = _target_rows(targets)
        M = T.shape[0]
        self.register_buffer("targets", torch.as_tensor(T, dtype=torch.float64))  # cast per batch
        # a prediction in free dimension has rank-wide rows: zero-padded to the embeddings' width
        # (the same Gram), as R^rank sits in R^d
        self.pad_targets = isinstance(targets, Prototypes)
        if num_classes is not None:
            num_classes = check_int(num_classes, "num_classes", minimum=1, maximum=M)
        if isinstance(assignment, str):
            method = check_choice(assignment, ASSIGNMENTS, "assignment")
        else:
            method = "identity" if assignment is None else "given"
        if method != "hungarian" and num_classes is not None:
            raise ParameterError("num_classes", "applies to assignment='hungarian' only (the "
                                 "assignment's length gives K otherwise)")
        self.assignment_method = method
        self.num_classes = num_classes if num_classes is not None else M
        if method == "identity":
            self.register_buffer("assignment", torch.arange(M))
        elif method == "hungarian":
            self.register_buffer("assignment", None)  # set by assign()
        else:
            self.register_buffer("assignment", self._check_assignment(assignment, M))
            self.num_classes = int(self.assignment.numel())

    @staticmethod
    def _check_assignment(assignment: object, M: int) -> Tensor:
        try:
            a = np.asarray(assignment)
        except (TypeError, ValueError):
            a = np.asarray([])
        if a.ndim != 1 or a.size == 0 or not np.issubdtype(a.dtype, np.integer):
            raise ParameterTypeError("assignment", "must be None, 'identity', 'hungarian' or a "
                                     f"sequence of target rows (int), got {describe(assignment)}")
        if a.size > M or a.min() < 0 or a.max() >= M or np.unique(a).size != a.size:
            raise ParameterError("assignment", f"must give each of its {a.size} classes a "
                                 f"distinct target row in 0..{M - 1}, got {describe(a.tolist())}")
        return torch.as_tensor(a, dtype=torch.long)

    @torch.no_grad()
    def assign(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        """Match classes to targets (TSC's Hungarian matching of the normalised class means of
        the L2-normalised ``embeddings``) and keep it in :attr:`assignment`, which is returned.

        Raises
        ------
        InputError
            If a class ``0..K-1`` has no sample in ``labels``, or there are no targets.
        """
        if self.targets is None:
            raise InputError("there are no targets to assign (targets=None)")
        Z = as_embeddings(embeddings).detach()
        y = self._labels(labels, Z)
        self._fit_width(Z)
        K = self.num_classes
        H = torch.nn.functional.normalize(Z.double(), dim=1).cpu()
        sums = torch.zeros(K, H.shape[1], dtype=H.dtype).index_add_(0, y.cpu(), H)
        counts = torch.bincount(y.cpu(), minlength=K)
        if bool((counts == 0).any()):
            missing = int(torch.nonzero(counts == 0)[0, 0])
            raise InputError(f"class {missing} has no sample: the Hungarian assignment needs "
                             f"every class 0..{K - 1} (pass the whole training set to assign())")
        a = hungarian_assignment(sums.numpy(), self.targets.detach().cpu().double().numpy())
        self.assignment = torch.as_tensor(a, dtype=torch.long, device=self.targets.device)
        return self.assignment

    def _fit_width(self, Z: Tensor) -> None:
        """Zero-pad a prediction's narrower targets to the embeddings' width, or refuse."""
        w, d = self.targets.shape[1], Z.shape[1]
        if w < d and self.pad_targets:
            self.targets = torch.nn.functional.pad(self.targets, (0, d - w))
        elif w != d:
            raise InputError(f"embeddings have width {d}, the targets {w} (give targets of the "
                             "embeddings' dimension, e.g. supcon_prototypes(..., dim=d))")

    def _labels(self, labels: Tensor, Z: Tensor) -> Tensor:
        y = class_labels(labels).reshape(-1)
        if y.shape[0] != Z.shape[0]:
            raise InputError(f"labels must have one entry per embedding ({Z.shape[0]}), got "
                             f"{y.shape[0]}")
        y = y.to(device=Z.device, dtype=torch.long)
        K = self.num_classes if self.targets is not None else None
        if K is not None and y.numel() and (int(y.min()) < 0 or int(y.max()) >= K):
            bad = int(y.min()) if int(y.min()) < 0 else int(y.max())
            raise InputError(f"labels must be classes 0..{K - 1} (one per assigned target), got "
                             f"{bad}")
        return y

    def forward(self, embeddings: Tensor, labels: Tensor) -> Tensor:
        """The loss of a batch (see the class docstring).

        Raises
        ------
        TypeError, ValueError
            If the embeddings or labels are invalid, their width differs from the targets', or
            an anchor has no positive under ``empty_rows="error"``.
        """
        if self.targets is None:
            Z = as_embeddings(embeddings)
        else:  # one sample is a batch here: its target is its positive
            if not isinstance(embeddings, torch.Tensor) or not embeddings.is_floating_point():
                raise InputTypeError("embeddings must be a floating torch.Tensor, got "
                                     f"{describe(embeddings)}")
            if embeddings.ndim != 2 or embeddings.shape[0] < 1:
                raise InputError("embeddings must be a B x d tensor with B >= 1, got shape "
                                 f"{tuple(embeddings.shape)}")
            Z = embeddings
        y = self._labels(labels, Z)
        B = Z.shape[0]
        if self.targets is None:
            W = (y[:, None] == y[None, :]).to(Z.dtype)
            return winfonce(Z, W, tau=self.tau, reduction=self.reduction,
                            empty_rows=self.empty_rows)
        self._fit_width(Z)
        if self.assignment is None:  # "hungarian", not assigned yet: the first full batch does
            if int(torch.unique(y).numel()) < self.num_classes:
                raise InputError("assignment='hungarian' is not computed yet and this batch "
                                 "misses a class: call loss.assign(embeddings, labels) on data "
                                 "holding every class first")
            self.assign(Z, y)
        T = self.targets.to(device=Z.device, dtype=Z.dtype)
        M = T.shape[0]
        a = self.assignment.to(Z.device)
        tclass = torch.full((M,), -1, dtype=torch.long, device=Z.device)
        tclass[a] = torch.arange(a.numel(), device=Z.device)
        X = torch.cat([Z, T], dim=0)
        n = B + M
        W = torch.zeros(n, n, dtype=Z.dtype, device=Z.device)
        W[:B, :B] = (y[:, None] == y[None, :]).to(Z.dtype)
        W[torch.arange(B, device=Z.device), B + a[y]] = self.target_weight
        if self.target_anchors:
            W[B:, :B] = (tclass[:, None] == y[None, :]).to(Z.dtype)
        W.fill_diagonal_(0.0)
        anchors = n if self.target_anchors else B
        mass = W[:anchors].sum(dim=1)
        keep = mass > 0
        if self.empty_rows == "error" and not bool(keep[:B].all()):
            i = int(torch.nonzero(~keep[:B])[0, 0])
            raise InputError(f"anchor {i} (class {int(y[i])}) has no positive; pass "
                             "empty_rows='skip' to drop such anchors")
        per = winfonce(X, W, tau=self.tau, reduction="none", empty_rows="skip")[:anchors]
        return reduce_anchors(per, keep, self.reduction)

    def extra_repr(self) -> str:
        parts = [f"tau={self.tau:g}"]
        if self.targets is not None:
            parts += [f"targets={self.targets.shape[0]} x {self.targets.shape[1]}",
                      f"assignment={self.assignment_method!r}",
                      f"target_weight={self.target_weight:g}"]
            if self.target_anchors:
                parts.append("target_anchors=True")
        parts += [f"reduction={self.reduction!r}", f"empty_rows={self.empty_rows!r}"]
        return ", ".join(parts)
