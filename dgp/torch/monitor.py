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
  predicted Gram;
- ``loss_gap``: the loss of the learned Gram :math:`\hat G` minus that of the prediction,
  beside ``predicted_loss``, both in the prediction's own loss (``GeometryMonitor.loss_kind``
  says which). For a full-batch prediction: the class-level loss
  (:func:`dgp.prototypes.prototype_loss`, SupCon or Soft SupCon at the prediction's ``tau``,
  the collapsed configuration of the prediction's sizes) per anchor (divided by
  :math:`N = \sum n_c`). For a mini-batch prediction (a :class:`dgp.Prototypes` result with a
  ``batch``): the expected batch loss under the prediction's sampler, batch size and
  reduction, ``predicted_loss`` the prediction's ``loss`` and the gap estimated on the same
  batches for both Grams (paired), with ``loss_gap_uncertainty`` (the gap's 95% half-width
  combined in quadrature with the prediction's own, ``Z95 * loss_se``, where it was sampled)
  and ``loss_gap_within_uncertainty`` (1 where :math:`|` ``loss_gap`` :math:`|` is within it:
  the gap does not tell the run from the prediction). It is what the loss pins in every
  regime: a run whose ``loss_gap`` is near 0 has reached the prediction's loss, whatever its
  cosines;
- invariants (class shares :math:`w_c = n_c / N` of the prediction, :math:`1/K` without sizes):
  ``spectrum_gap``, the largest difference between the top ``SPECTRUM_TOP`` eigenvalues of
  :math:`\sum_c w_c \hat\mu_c \hat\mu_c^\top` and of the prediction's, relative to the
  prediction's largest (as the identifiability report's spread); ``global_mean_norm``
  :math:`\|\sum_c w_c \hat\mu_c\|` beside ``predicted_global_mean_norm``;
  ``class_mean_norm`` / ``class_mean_norm_min``, the mean and least :math:`\|m_c\|` (1 when
  every class has collapsed); ``within_class_spread``
  :math:`\frac1N\sum_i \|h_i - m_{y_i}\|^2 = 1 - \frac1N\sum_c n_c\|m_c\|^2` (0 when
  collapsed);
- NC2 (Papyan et al.; centred means :math:`M_c = m_c - m_G`): ``nc2_equinorm``
  :math:`\operatorname{std}_c\|M_c\| / \operatorname{mean}_c\|M_c\|`, ``nc2_equiangular`` the
  standard deviation of :math:`\cos(M_c, M_{c'})` over :math:`c \ne c'`, ``nc2_maxangle`` the
  mean of :math:`|\cos(M_c, M_{c'}) + 1/(K-1)|` and ``nc2_etf`` (Zhu et al. 2021)
  :math:`\|MM^\top/\|MM^\top\|_F - (I - \mathbf 1\mathbf 1^\top/K)/\sqrt{K-1}\|_F`; all 0 at
  a simplex equiangular tight frame (which imbalanced SupCon does not predict: compare them
  with their values at the prediction, not with 0);
- NC3, with a ``classifier`` (a ``K x d`` weight, or a module with one, acting on the monitored
  embeddings): ``nc3`` :math:`\|W/\|W\|_F - M/\|M\|_F\|_F^2`;
- NC4: ``ncc_accuracy``, the share of samples whose nearest class centre (Euclidean, among the
  class means :math:`m_c`) is their label, and with a classifier ``nc4``, the share where the
  classifier's ``argmax`` and the nearest centre disagree. The centres are the class means of
  the previous pass (before the last :meth:`GeometryMonitor.reset`); in a first pass (a fresh
  monitor, say one built for each evaluation) the monitor keeps the normalised embeddings of
  its first ``MONITOR_FIRST_PASS_ENTRIES // d`` samples and judges them at ``compute()``
  against the current pass's class means; ``ncc_samples`` is the number judged. Both are
  ``nan`` only while a class has no direction;
- ``gram_rms_pinned``: 1 where the loss pins the pairwise cosines that the ``gram_rms`` numbers
  compare, 0 where it does not (``K > d + 1``: rank-``d`` optima form a family of arrangements
  of equal loss; or a ``pinned`` report saying so), ``nan`` before the first batch. Where it is
  0 the monitor warns once (:class:`UnpinnedComparisonWarning`): judge such a run by
  ``loss_gap`` and the invariants, not by ``gram_rms``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from dgp._linalg import simplex_gram
from dgp.constants import MONITOR_FIRST_PASS_ENTRIES, MONITOR_GRAM_ATOL, MONITOR_LOSS_ROUNDING
from dgp.errors import (
    ParameterError,
    ParameterTypeError,
    check_positive,
    check_sizes,
    check_unit_interval,
    describe,
)
from dgp.prototypes import Prototypes, prototype_loss
from dgp.resources import check_memory
from dgp.torch._compat import require_torch
from dgp.torch._monitor_input import check_batch, check_classifier, check_pinned
from dgp.torch._monitor_numbers import (
    batch_loss_gap,
    gram_rms,
    minority_majority,
    nc1,
    nc2,
    spectrum,
)

torch = require_torch()

__all__ = ["SPECTRUM_TOP", "GeometryMonitor", "UnpinnedComparisonWarning", "target_gram"]

#: eigenvalues compared by ``spectrum_gap`` (the top ones, as the identifiability report does)
SPECTRUM_TOP = 16


class UnpinnedComparisonWarning(UserWarning):
    """A monitored distance compares with an arrangement the loss does not pin (e.g. the
    pairwise cosines when ``K > d + 1``): other arrangements reach the same loss."""

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


def _nearest(H: Tensor, centres: Tensor) -> Tensor:
    """Each row's nearest centre (Euclidean; ``|h|^2`` is common to a row, so left out)."""
    d2 = (centres * centres).sum(dim=1)[None, :] - 2.0 * (H @ centres.T)
    return d2.argmin(dim=1)


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
    tau, eps : float, optional
        The temperature (and Soft SupCon's ``eps``) of the class-level loss gap; taken from a
        :class:`dgp.Prototypes` result (and then must agree with it). With the sizes they
        add ``loss_gap`` and ``predicted_loss``.
    classifier : Tensor (K, d) or torch.nn.Module, optional
        A linear classifier on the monitored embeddings (its current ``weight`` is read at each
        :meth:`compute`): adds ``nc3`` and ``nc4``.
    pinned : mapping of str to bool, optional
        Which invariants the loss pins (e.g. ``{"pairwise cosines": False}`` from an
        identifiability report; read from the prediction's ``identifiability.pinned`` where it
        has one). ``"pairwise cosines": False`` makes ``gram_rms_pinned`` 0 and warns.

    Notes
    -----
    ``update(embeddings, labels)`` takes an ``(B, d)`` floating tensor (any device, any
    floating dtype; it is detached) and ``B`` integer class labels in ``0..K-1``, in the order
    of the prediction's classes. The sums are kept on the device of the first batch in float64
    (float32 on Apple ``mps``, which has no float64).

    ``learned_gram()`` gives the ``K x K`` Gram of the class means itself. ``loss_kind`` says
    in words which loss ``loss_gap`` and ``predicted_loss`` are in (full batch per anchor, or
    the expected batch loss with the prediction's batch size, sampler and reduction), and
    ``batch`` is the prediction's :class:`dgp.prototypes.BatchPrediction` (``None`` for a
    full-batch prediction).

    ``compute()`` returns a ``dict[str, float]`` whose keys depend only on the constructor's
    arguments: ``samples_seen``, ``classes_seen``, ``zero_norm_samples`` (embeddings of norm 0,
    counted in their class but without a direction), ``gram_rms`` (to the prediction),
    ``gram_rms_simplex``, ``gram_rms_pinned``, ``nc1``, then ``gram_rms_uniform`` when
    ``uniform`` is given, ``cosine_minority_majority`` /
    ``predicted_cosine_minority_majority`` when the sizes are known, ``loss_gap`` /
    ``predicted_loss`` when the sizes and ``tau`` are (and ``loss_gap_uncertainty`` /
    ``loss_gap_within_uncertainty`` for a mini-batch prediction), then always ``spectrum_gap``,
    ``global_mean_norm``, ``predicted_global_mean_norm``, ``class_mean_norm``,
    ``class_mean_norm_min``, ``within_class_spread``, ``nc2_equinorm``, ``nc2_equiangular``,
    ``nc2_maxangle``, ``nc2_etf``, ``ncc_accuracy``, ``ncc_samples``, and ``nc3`` / ``nc4``
    with a classifier.
    **Until every class has been seen** (``classes_seen < K``), or where a class mean
    is the zero vector, the geometry values are ``nan``: a Gram of the classes seen so far is
    not the Gram of the prediction, and is not reported as one. Balanced sizes have no
    minority: both minority cosines are then ``nan``.

    The module docstring (:mod:`dgp.torch.monitor`) defines every number.
    """

    def __init__(self, prototypes: object, *, sizes: object | None = None,
                 uniform: object | None = None, tau: float | None = None,
                 eps: float | None = None, classifier: object | None = None,
                 pinned: Mapping[str, bool] | None = None) -> None:
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
        self._loss_setup(prototypes, tau, eps)
        self.classifier = check_classifier(classifier, self.K)
        self.pinned = check_pinned(prototypes, pinned)
        self._warned = False
        self.reset()

    def _loss_setup(self, prototypes: object, tau: float | None, eps: float | None) -> None:
        """The temperature, eps and predicted per-anchor loss of the class-level loss gap."""
        if isinstance(prototypes, Prototypes):
            if tau is not None and float(tau) != prototypes.tau:
                raise ParameterError("tau", f"= {tau!r} differs from the prototypes' tau "
                                     f"{prototypes.tau!r}")
            if eps is not None and eps != prototypes.eps:
                raise ParameterError("eps", f"= {eps!r} differs from the prototypes' eps "
                                     f"{prototypes.eps!r}")
            tau, eps = prototypes.tau, prototypes.eps
        self.tau = None if tau is None else check_positive(tau, "tau")
        self.eps = None if eps is None else check_unit_interval(eps, "eps")
        if self.eps is not None and self.tau is None:
            raise ParameterError("eps", "needs tau (the loss gap is that of Soft SupCon at tau)")
        self._predicted_loss = math.nan
        self.batch = getattr(prototypes, "batch", None)  # a mini-batch prediction's BatchPrediction
        self.loss_kind = "full batch, per anchor"
        if self.batch is not None and self.tau is not None:
            spec = self.batch.spec
            self.loss_kind = (f"expected batch loss, B = {spec.batch_size}, {spec.sampler} "
                              f"sampler, {spec.reduction} reduction")
            self._predicted_loss = float(prototypes.loss)
        elif self.tau is not None and self.sizes is not None:
            self._predicted_loss = prototype_loss(self.target, self.sizes, tau=self.tau,
                                                  eps=self.eps) / float(sum(self.sizes))

    def cosines_pinned(self, dim: int | None = None) -> bool | None:
        """Whether the loss pins the pairwise cosines the ``gram_rms`` distances compare: not
        where ``K > d + 1`` (``d``, the embeddings' dimension, known after the first batch;
        rank-``d`` optima then form a family of arrangements of equal loss) nor where
        ``pinned`` (or the prediction's identifiability report) says ``"pairwise cosines"``
        is not; ``None`` while undecided (no batch yet and nothing said)."""
        if self.pinned.get("pairwise cosines") is False:
            return False
        if dim is None and self._sums is not None:
            dim = int(self._sums.shape[1])
        if dim is None:
            return True if self.pinned.get("pairwise cosines") else None
        return self.K <= dim + 1

    # -- state -----------------------------------------------------------------------------
    def reset(self, *, forget_centres: bool = False) -> None:
        """Forget every batch seen (the device and dimension are chosen again).

        The class means of the pass that ends here (when every class had a direction) are
        kept as the centres of ``ncc_accuracy`` and ``nc4`` for the next pass, unless
        ``forget_centres``: beyond a first pass (whose first samples it keeps to judge
        against that pass's own means) a monitor keeps no embeddings, so it judges each
        sample's nearest class centre against the previous pass's means (toolboxes make a
        second pass over the data once the means are known; passing the same data twice, with
        a reset between, gives their numbers exactly, and in a training loop reset each epoch
        they come one epoch late)."""
        centres = None
        if not forget_centres and getattr(self, "_sums", None) is not None:
            n, means, _ = self._host()
            if (n > 0).all() and (np.linalg.norm(means, axis=1) > 0).all():
                centres = torch.as_tensor(means)
        self._centres: Tensor | None = centres  # (K, d) class means of the last pass
        self._counts: Tensor | None = None  # (K,) samples per class
        self._sums: Tensor | None = None  # (K, d) sums of h_i per class
        self._second: Tensor | None = None  # (d, d) sum of h_i h_i^T
        self._zero = 0
        self._ncc = [0, 0, 0]  # samples judged, nearest centre == label, == classifier
        # a first pass (no centres): its first MONITOR_FIRST_PASS_ENTRIES // d samples (h, label,
        # classifier's prediction), judged at compute() against this pass's own class means
        self._first: list[tuple[Tensor, Tensor, Tensor | None]] = []
        self._first_n = 0

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
        d = None if self._sums is None else int(self._sums.shape[1])
        checked = check_batch(embeddings, labels, self.K, d)
        if checked is None:  # an empty batch
            return
        Z, y = checked
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
        if self._centres is not None and self._centres.shape[1] == H.shape[1]:
            self._nearest_centre(Z, H, y, ~zero)
        elif self._first_n < MONITOR_FIRST_PASS_ENTRIES // int(H.shape[1]):
            take = min(MONITOR_FIRST_PASS_ENTRIES // int(H.shape[1]) - self._first_n,
                       int(H.shape[0]))
            ok = ~zero[:take]
            pred = None if self.classifier is None else self._classify(Z[:take]).to(
                H.device)[ok]
            self._first.append((H[:take][ok], y[:take][ok], pred))
            self._first_n += take

    def _first_pass_ncc(self, means: np.ndarray) -> tuple[int, int, int]:
        """NC4's counts of a first pass: the kept samples against this pass's class means."""
        judged = hits = agree = 0
        for H, y, pred in self._first:
            centres = torch.as_tensor(means, device=H.device, dtype=H.dtype)
            ncc = _nearest(H, centres)
            judged += int(y.numel())
            hits += int((ncc == y).sum().item())
            if pred is not None:
                agree += int((pred.to(ncc.device) == ncc).sum().item())
        return judged, hits, agree

    def _nearest_centre(self, Z: Tensor, H: Tensor, y: Tensor, ok: Tensor) -> None:
        """NC4's counts: each sample's nearest class centre (the last pass's class means)
        against its label and the classifier's prediction."""
        means = self._centres.to(device=H.device, dtype=H.dtype)
        ncc = _nearest(H, means)[ok]
        self._ncc[0] += int(ok.sum().item())
        self._ncc[1] += int((ncc == y[ok]).sum().item())
        if self.classifier is not None:
            pred = self._classify(Z)[ok.to(Z.device)].to(ncc.device)
            self._ncc[2] += int((pred == ncc).sum().item())

    def _classify(self, Z: Tensor) -> Tensor:
        if isinstance(self.classifier, torch.Tensor):
            W = self.classifier.detach()
            return (Z.to(device=W.device, dtype=W.dtype) @ W.T).argmax(dim=1)
        weight = self.classifier.weight
        return self.classifier(Z.to(device=weight.device, dtype=weight.dtype)).argmax(dim=1)

    # -- numbers ---------------------------------------------------------------------------
    def compute(self) -> dict[str, float]:
        """The current numbers (see the class notes for the keys and when they are ``nan``).

        Warns
        -----
        UnpinnedComparisonWarning
            Once per monitor, the first time the ``gram_rms`` distances compare with an
            arrangement the loss does not pin (``gram_rms_pinned`` is then 0).
        """
        out = {"samples_seen": 0.0, "classes_seen": 0.0,
               "zero_norm_samples": float(self._zero)}
        keys = ["gram_rms", "gram_rms_simplex", "gram_rms_pinned", "nc1"]
        if self.uniform is not None:
            keys.append("gram_rms_uniform")
        if self.sizes is not None:
            keys += ["cosine_minority_majority", "predicted_cosine_minority_majority"]
        if not math.isnan(self._predicted_loss):
            keys += ["loss_gap", "predicted_loss"]
            if self.batch is not None:
                keys += ["loss_gap_uncertainty", "loss_gap_within_uncertainty"]
        keys += ["spectrum_gap", "global_mean_norm", "predicted_global_mean_norm",
                 "class_mean_norm", "class_mean_norm_min", "within_class_spread",
                 "nc2_equinorm", "nc2_equiangular", "nc2_maxangle", "nc2_etf",
                 "ncc_accuracy", "ncc_samples"]
        if self.classifier is not None:
            keys += ["nc3", "nc4"]
        out.update(dict.fromkeys(keys, math.nan))
        groups = minority_majority(self.sizes)
        if groups is not None:
            out["predicted_cosine_minority_majority"] = float(
                self.target[np.ix_(*groups)].mean())
        if not math.isnan(self._predicted_loss):
            out["predicted_loss"] = self._predicted_loss
        weights = self._class_weights()
        out["predicted_global_mean_norm"] = float(np.sqrt(max(weights @ self.target @ weights,
                                                              0.0)))
        pinned = self.cosines_pinned()
        if pinned is not None:
            out["gram_rms_pinned"] = float(pinned)
            if not pinned:
                self._warn_unpinned()
        if self._counts is None:
            return out
        n, means, S2 = self._host()
        out["samples_seen"] = float(n.sum())
        out["classes_seen"] = float((n > 0).sum())
        counts = self._ncc
        if self._centres is None and self._first and (n > 0).all() and (
                np.linalg.norm(means, axis=1) > 0).all():
            counts = self._first_pass_ncc(means)
        out["ncc_samples"] = float(counts[0])
        if counts[0]:
            out["ncc_accuracy"] = counts[1] / counts[0]
            if self.classifier is not None:
                out["nc4"] = 1.0 - counts[2] / counts[0]
        G = self.learned_gram()
        if not np.isfinite(G).all():  # a class unseen, or whose mean is the zero vector
            return out
        out["nc1"] = nc1(n, means, S2)
        out["gram_rms"] = gram_rms(G, self.target)
        out["gram_rms_simplex"] = gram_rms(G, self.simplex)
        if self.uniform is not None:
            out["gram_rms_uniform"] = gram_rms(G, self.uniform)
        if groups is not None:
            out["cosine_minority_majority"] = float(G[np.ix_(*groups)].mean())
        if not math.isnan(self._predicted_loss):
            out.update(self._loss_gap(G))
        out.update(self._invariants(G, n, means, weights))
        W = None if self.classifier is None else self._classifier_weight()
        out.update(nc2(n, means, W))
        return out

    def _loss_gap(self, G: np.ndarray) -> dict[str, float]:
        """The loss gap in the prediction's own loss: full batch, exact; for a mini-batch
        prediction, paired on the same batches of its sampler, with its uncertainty."""
        if self.batch is None:
            learned = prototype_loss(G, self.sizes, tau=self.tau, eps=self.eps)
            return {"loss_gap": learned / float(sum(self.sizes)) - self._predicted_loss}
        est = batch_loss_gap(G, self.target, self.sizes, tau=self.tau, eps=self.eps,
                             batch=self.batch, seed=self.batch.seed or 0)
        return {"loss_gap": est.gap, "loss_gap_uncertainty": est.uncertainty,
                "loss_gap_within_uncertainty": float(abs(est.gap) <= max(
                    est.uncertainty, MONITOR_LOSS_ROUNDING * max(1.0, abs(self._predicted_loss))))}

    def _warn_unpinned(self) -> None:
        if self._warned:
            return
        self._warned = True
        d = None if self._sums is None else int(self._sums.shape[1])
        why = (f"K = {self.K} classes in d = {d} dimensions (K > d + 1)"
               if d is not None and self.K > d + 1 else
               "the prediction's identifiability report says they are not pinned")
        warnings.warn(
            f"GeometryMonitor: the loss does not pin the pairwise cosines here ({why}): other "
            "arrangements reach the same loss, so gram_rms (and gram_rms_simplex/_uniform) can "
            "stay large on a run that converged. Judge the run by loss_gap and the pinned "
            "invariants (spectrum_gap, global_mean_norm, class_mean_norm, nc1, nc2_*).",
            UnpinnedComparisonWarning, stacklevel=3)

    def _class_weights(self) -> np.ndarray:
        """The classes' shares ``n_c / N`` of the prediction (``1 / K`` without sizes)."""
        if self.sizes is None:
            return np.full(self.K, 1.0 / self.K)
        s = np.asarray(self.sizes, dtype=float)
        return s / s.sum()

    def _invariants(self, G: np.ndarray, n: np.ndarray, means: np.ndarray,
                    w: np.ndarray) -> dict[str, float]:
        lam, ref = spectrum(G, w, SPECTRUM_TOP), spectrum(self.target, w, SPECTRUM_TOP)
        norms = np.linalg.norm(means, axis=1)
        N = float(n.sum())
        return {
            "spectrum_gap": float(np.abs(lam - ref).max() / max(float(ref[0]), 1e-300)),
            "global_mean_norm": float(np.sqrt(max(w @ G @ w, 0.0))),
            "class_mean_norm": float(norms.mean()),
            "class_mean_norm_min": float(norms.min()),
            "within_class_spread": float(max(1.0 - (n * norms**2).sum() / N, 0.0)),
        }

    def _classifier_weight(self) -> np.ndarray:
        W = self.classifier if isinstance(self.classifier, torch.Tensor) else \
            self.classifier.weight
        return W.detach().cpu().double().numpy()

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
