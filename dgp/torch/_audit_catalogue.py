"""The catalogue of released implementations audited in the docs (``docs/audit.md``), re-exported
by :mod:`dgp.torch.audit_examples`: each case, how it is loaded when installed, what it is
meant to optimise, and the row of the table its audit gives."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dgp.torch import _audit_losses as audited
from dgp.torch._compat import require_torch
from dgp.torch.audit import Intended

torch = require_torch()


class CaseUnavailable(Exception):
    """An audited implementation is not installed (or not in the installed version)."""


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        raise CaseUnavailable(f"{dist} is not installed (the `audit` test extra)") from None


#: what importing an optional audited package may raise: a missing dependency (ImportError), a
#: torchvision wheel built for another torch (RuntimeError, "operator torchvision::nms does not
#: exist"), a broken shared library (OSError), a module without an attribute it expects
_IMPORT_FAILURES = (ImportError, RuntimeError, OSError, AttributeError)


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _attr(module: str, name: str, dist: str) -> Any:
    version = _version(dist)
    try:
        mod = importlib.import_module(module)
    except _IMPORT_FAILURES as exc:
        raise CaseUnavailable(f"{dist} {version}: `import {module}` fails ({_reason(exc)})"
                              ) from None
    if not hasattr(mod, name):
        raise CaseUnavailable(f"{dist} {version} has no {module}.{name}")
    return getattr(mod, name)


class _MemoryBankOff(torch.nn.Module):
    """Stands in for lightly's ``MemoryBankModule`` at ``size=0`` (SimCLR: no memory bank),
    where the real one returns its input and no negatives."""

    def __init__(self, size: Any = 0, gather_distributed: bool = False, **_: Any) -> None:
        super().__init__()
        if size not in (0, (0,), None):
            raise CaseUnavailable("the stubbed memory bank supports size 0 only")

    def forward(self, output: Any, update: bool = False) -> tuple[Any, None]:
        return output, None


def _from_file(dist: str, package: str, module: str, relpath: str, name: str,
               stubs: dict[str, Any] | None = None) -> Any:
    """``name`` from the package's module, or, where importing the package fails (its
    ``__init__`` needs torchvision, timm...), from the module's released source file alone,
    loaded under a private name; ``stubs`` stand in for imports the file needs only in code
    paths the audit does not take, during its loading only (nothing of the package is
    replaced)."""
    import os
    import sys
    import types

    version = _version(dist)
    try:
        return getattr(importlib.import_module(module), name)
    except _IMPORT_FAILURES as exc:
        why = _reason(exc)
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise CaseUnavailable(f"{dist} {version} cannot be located")
    path = os.path.join(next(iter(spec.submodule_search_locations)), relpath)
    if not os.path.isfile(path):
        raise CaseUnavailable(f"{dist} {version} has no {relpath} (`import {module}`: {why})")
    file_spec = importlib.util.spec_from_file_location(
        "_dgp_audit_" + relpath.replace("/", "_").removesuffix(".py"), path)
    if file_spec is None or file_spec.loader is None:
        raise CaseUnavailable(f"{dist} {version}: {relpath} cannot be loaded")
    loaded = importlib.util.module_from_spec(file_spec)
    saved = {key: sys.modules.get(key) for key in (stubs or {})}
    try:
        for key, attrs in (stubs or {}).items():
            stub = types.ModuleType(key)
            stub.__dict__.update(attrs)
            sys.modules[key] = stub
        file_spec.loader.exec_module(loaded)
    except _IMPORT_FAILURES as exc:
        raise CaseUnavailable(f"{dist} {version}: `import {module}` fails ({why}) and so does "
                              f"its file {relpath} ({_reason(exc)})") from None
    finally:
        for key, old in saved.items():
            if old is None:
                sys.modules.pop(key, None)
            else:
                sys.modules[key] = old
    if not hasattr(loaded, name):
        raise CaseUnavailable(f"{dist} {version}: {relpath} has no {name}")
    return getattr(loaded, name)


def _lightly(name: str, relpath: str) -> Any:
    """A lightly loss from ``lightly.loss``, or from its source file (``import lightly.loss``
    imports torchvision, for other losses; the package index's torchvision wheels need the CUDA
    build of torch). The DCL file needs only torch and ``lightly.utils.dist``; the NT-Xent file
    also imports the memory bank, stubbed at size 0."""
    stubs = {"lightly.models.modules.memory_bank": {"MemoryBankModule": _MemoryBankOff}}
    return _from_file("lightly", "lightly", "lightly.loss", relpath, name, stubs)


class OpenClipLoss(torch.nn.Module):
    """open_clip's ``ClipLoss`` (``open_clip/loss.py``) as CLIP trains it: the model normalises
    both towers' features and owns the learned ``logit_scale`` (initialised at
    ``log(1/0.07)``), which the loss receives as an argument. ``ClipLoss`` is loaded from the
    installed open_clip_torch, from its file where ``import open_clip`` fails (it needs
    torchvision and timm)."""

    def __init__(self, init_tau: float = 0.07) -> None:
        super().__init__()
        import math

        self.clip = _from_file("open_clip_torch", "open_clip", "open_clip.loss", "loss.py",
                               "ClipLoss")()
        self.logit_scale = torch.nn.Parameter(torch.tensor(math.log(1.0 / init_tau),
                                                           dtype=torch.float64))

    def forward(self, image_features, text_features):
        a = torch.nn.functional.normalize(image_features, dim=-1)
        b = torch.nn.functional.normalize(text_features, dim=-1)
        return self.clip(a, b, self.logit_scale.exp())


def _pml_self_supervised(symmetric: bool) -> Any:
    ntxent = _attr("pytorch_metric_learning.losses", "NTXentLoss", "pytorch-metric-learning")
    wrap = _attr("pytorch_metric_learning.losses", "SelfSupervisedLoss",
                 "pytorch-metric-learning")
    return wrap(ntxent(temperature=0.1), symmetric=symmetric)


@dataclass(frozen=True)
class AuditCase:
    """One audited implementation: how to build it, how to call it, what it means to be.

    Attributes
    ----------
    name : str
        Row name in the table.
    source : str
        Where the code comes from (package and version, or "dgp (from the published formula)").
    build : callable
        ``() -> loss``; raises :class:`CaseUnavailable` when not installed.
    audit : dict
        Keyword arguments of :func:`dgp.torch.audit.audit_loss` (``labels``, ``call``, ``tau``).
    intended : Intended
        The objective the code means to implement.
    expect : dict
        What the audit must find (checked by the tests): ``objective``, ``form``,
        ``partition``, ``identified``, ``unequal_anchors``, ``named`` (the named non-InfoNCE
        form of a loss that is not identified), ``tau`` (the estimated temperature),
        ``learned`` (a trainable temperature).
    dist : str or None
        The distribution it comes from (for the version in the table).
    """

    name: str
    source: str
    build: Callable[[], Any]
    audit: dict[str, Any]
    intended: Intended
    expect: dict[str, Any]
    dist: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    def source_text(self) -> str:
        """The source with the installed version, or why it is unavailable."""
        if self.dist is None:
            return self.source
        try:
            return f"{self.dist} {_version(self.dist)}"
        except CaseUnavailable:
            return f"{self.dist} (not installed)"


_SUPCON = Intended("supcon")
_PAIRS = Intended("supcon", note="SimCLR: the two views of a sample are its positives")
_BANDWIDTH = 0.25  # nidl's bandwidth is sigma^2: sigma = 0.5
_PML = "pytorch-metric-learning"
_HOBBITLONG = "HobbitLong/SupContrast@72fd989 (wrapper)"
_DGP = "dgp (published formula)"

CASES: tuple[AuditCase, ...] = (
    AuditCase(
        "SupConLoss", _PML,
        lambda: _attr("pytorch_metric_learning.losses", "SupConLoss", _PML)(temperature=0.1),
        {}, _SUPCON, {"objective": "supcon", "form": "rows", "partition": "all"}, dist=_PML),
    AuditCase(
        "MultiSupConLoss", _PML,
        lambda: _attr("pytorch_metric_learning.losses", "MultiSupConLoss", _PML)(
            temperature=0.1),
        {}, _SUPCON, {"identified": True}, dist=_PML,
        notes=("not in a released version (an open pull request)",)),
    AuditCase(
        "NTXentLoss (pairs)", _PML,
        lambda: _attr("pytorch_metric_learning.losses", "NTXentLoss", _PML)(temperature=0.1),
        {"labels": "pairs"}, _PAIRS, {"objective": "supcon", "form": "rows", "partition": "all"},
        dist=_PML),
    AuditCase(
        "NTXentLoss (classes)", _PML,
        lambda: _attr("pytorch_metric_learning.losses", "NTXentLoss", _PML)(temperature=0.1),
        {"labels": "classes"}, _SUPCON, {"identified": False, "named": "one-positive"},
        dist=_PML,
        notes=("each positive pair has its own denominator (the other positives left out)",)),
    AuditCase(
        "SelfSupervisedLoss(NTXentLoss), symmetric=True", _PML, lambda: _pml_self_supervised(True),
        {"labels": "none", "call": "pair"}, _PAIRS,
        {"objective": "supcon", "form": "rows", "partition": "all"}, dist=_PML,
        notes=("symmetric=True concatenates the views: SimCLR's NT-Xent",)),
    AuditCase(
        "SelfSupervisedLoss(NTXentLoss), symmetric=False", _PML,
        lambda: _pml_self_supervised(False),
        {"labels": "none", "call": "pair"}, _PAIRS,
        {"objective": "supcon", "form": "rows", "partition": "one-direction"}, dist=_PML),
    AuditCase(
        "YAwareInfoNCE", "nidl",
        lambda: _attr("nidl.losses.yaware_infonce", "YAwareInfoNCE", "nidl")(
            bandwidth=_BANDWIDTH, temperature=0.1),
        {"labels": "continuous", "call": "pair"},
        Intended("y-aware", {"sigma": _BANDWIDTH ** 0.5}, "bandwidth = sigma^2"),
        {"objective": "y-aware", "form": "columns", "partition": "all",
         "unequal_anchors": True}, dist="nidl"),
    AuditCase(
        "GeneralizedSupervisedNTXenLoss (y-Aware, original)",
        "Duplums/yAwareContrastiveLearning@afe9b6f (wrapper)",
        lambda: audited.YAwareOriginal(0.1, audited.SIGMA),
        {"labels": "continuous", "call": "pair"}, Intended("y-aware", {"sigma": audited.SIGMA}),
        {"objective": "y-aware", "form": "columns", "partition": "all",
         "unequal_anchors": True}),
    AuditCase(
        "NTXentLoss", "lightly", lambda: _lightly("NTXentLoss", "loss/ntx_ent_loss.py")(
            temperature=0.1),
        {"labels": "none", "call": "pair"}, _PAIRS,
        {"objective": "supcon", "form": "rows", "partition": "all"}, dist="lightly",
        notes=("loaded from its file, memory bank stubbed at size 0",)),
    AuditCase(
        "DCLLoss", "lightly", lambda: _lightly("DCLLoss", "loss/dcl_loss.py")(temperature=0.1),
        {"labels": "none", "call": "pair"}, _PAIRS,
        {"objective": "supcon", "partition": "negatives"}, dist="lightly"),
    AuditCase(
        "DCLWLoss", "lightly",
        lambda: _lightly("DCLWLoss", "loss/dcl_loss.py")(temperature=0.1, sigma=0.5),
        {"labels": "none", "call": "pair"}, _PAIRS, {"identified": False}, dist="lightly",
        notes=("positive weights from the embeddings (von Mises-Fisher)",)),
    AuditCase(
        "ClipLoss", "open_clip_torch", lambda: OpenClipLoss(0.07),
        {"labels": "none", "call": "pair"}, _PAIRS,
        {"objective": "supcon", "form": "rows", "partition": "cross-view", "tau": 0.07,
         "learned": True}, dist="open_clip_torch",
        notes=("features normalised and logit_scale held as the model does",)),
    AuditCase(
        "CLIP-style, no tau attribute", _DGP, lambda: audited.clip_loss,
        {"labels": "none", "call": "pair"}, _PAIRS,
        {"objective": "supcon", "form": "rows", "partition": "cross-view",
         "tau": audited.CLIP_TAU}),
    AuditCase(
        "CLIP-style, one direction", _DGP, lambda: audited.clip_loss_one_direction,
        {"labels": "none", "call": "pair"}, _PAIRS,
        {"objective": "supcon", "form": "rows", "partition": "one-direction",
         "tau": audited.CLIP_TAU}),
    AuditCase(
        "SupConLoss (SupContrast)", _HOBBITLONG, lambda: audited.supcontrast_out(0.1),
        {"labels": "classes", "call": "views"}, _SUPCON,
        {"objective": "supcon", "form": "rows", "partition": "all"}),
    AuditCase(
        "SupConLoss (SupContrast), base 0.07", _HOBBITLONG,
        lambda: audited.supcontrast_base_temperature(0.1, 0.07),
        {"labels": "classes", "call": "views"}, _SUPCON,
        {"objective": "supcon", "form": "rows", "partition": "all"}),
    AuditCase(
        "SupConLoss (SupContrast), contrast_mode='one'", _HOBBITLONG,
        lambda: audited.supcontrast_one(0.1),
        {"labels": "classes", "call": "views"}, _SUPCON,
        {"objective": "supcon", "form": "rows", "partition": "one-view"}),
    AuditCase(
        "SupCon (solo-learn)", "vturrisi/solo-learn@e384184 (wrapper)",
        lambda: audited.SoloLearnSupCon(0.1), {"labels": "classes", "call": "embeddings"}, _SUPCON,
        {"identified": False, "named": "L_in"},
        notes=("L_in: the mean over positives inside the log",)),
    AuditCase(
        "BCL class-averaged", _DGP, lambda: audited.bcl_loss(0.1),
        {"labels": "classes"}, Intended("simplex", note="balanced classes on a regular simplex"),
        {"objective": "supcon", "partition": "class-averaged"}),
    AuditCase(
        "decoupled SupCon", _DGP, lambda: audited.decoupled_supcon_loss(0.1),
        {"labels": "classes"}, _SUPCON, {"objective": "supcon", "partition": "negatives"}),
)


# --------------------------------------------------------------------------------------------
# the table of docs/audit.md (docs/make_audit_table.py writes it; the tests check each row)

TABLE_HEADER = (
    "| implementation | source | called as | identified as | τ̂ | anchors | verdict (d = N) "
    "| intended | geometry gap | flag |\n"
    "|---|---|---|---|---|---|---|---|---|---|"
)
_CALL_TEXT = {"embeddings": "(z, y)", "views": "(f[b, 2, d], y)", "pair": "(z1, z2{})"}
_PARTITION_FLAG = {
    "negatives": "no entropic bound (positives out of the denominator)",
    "class-averaged": "class-averaged denominator",
    "cross-view": "cross-view denominator (the other view only)",
    "one-direction": "one direction: first view's anchors, the other view's denominator; "
                     "no verdict",
    "one-view": "first view's anchors only; no verdict",
}


def _flag(case: AuditCase, report: Any) -> str:
    if not report.identified:
        if report.named_form is not None:
            return f"**not a w-InfoNCE**: {report.named_form['description']}"
        why = case.notes[0] if case.notes else "its weights depend on the embeddings"
        return f"**not a w-InfoNCE**: {why}"
    flags = []
    if report.match is not None and report.match["form"] in ("columns", "columns-rows"):
        flags.append("**column normalisation** (`W /= W.sum(1)`)")
    elif report.match is not None and report.match["form"] == "raw":
        flags.append("rows not normalised")
    if report.partition in _PARTITION_FLAG:
        flags.append(_PARTITION_FLAG[report.partition])
    if report.learned_temperature is not None:
        flags.append(f"learned temperature (`{report.learned_temperature}`)")
    if report.match is None:
        flags.append("no registered objective")
    return "; ".join(flags) or "as intended"


def table_row(case: AuditCase, report: Any) -> str:
    """The row of ``case`` in the audit table, from its :class:`~dgp.torch.audit.AuditReport`."""
    lab = report.labels_kind if report.labels_kind != "none" else "no labels"
    call = _CALL_TEXT[report.call].format(", y" if report.labels_kind != "none" else "")
    if report.call != "pair":
        call = call.replace("y)", f"y: {lab})")
    else:
        call = call.replace(", y)", f", y: {lab})")
    anchors = "-"
    if report.anchor_weights is not None:
        spread = report.anchor_spread
        low = report.anchor_weights[report.anchor_weights > 0]
        anchors = ("equal" if spread < 1 + 1e-4 else f"{low.min():.3g}–{low.max():.3g}")
        if (report.anchor_weights == 0).any():
            anchors += " (first view)"
    intended = case.intended.objective + "".join(
        f" ({k}={v:.3g})" for k, v in case.intended.params.items())
    gap = "-"
    if report.intended is not None:
        value = report.intended["max_gap"]
        gap = (f"{value:.2g}" if value > 1e-6 else "0") + (
            f" (r² {report.intended['similarity_r2']:.4f})")
    verdict = report.verdict or "-"
    return (f"| {case.name} | {case.source_text()} | `{call}` | {report.summary()} "
            f"| {report.tau_estimate:.4g} | {anchors} | {verdict} | {intended} | {gap} "
            f"| {_flag(case, report)} |")


def unavailable_row(case: AuditCase, reason: str) -> str:
    """The row of a case whose package (or class) is not installed."""
    return (f"| {case.name} | {case.source_text()} | - | not audited: {reason} | - | - | - "
            f"| {case.intended.objective} | - | - |")


def run_case(case: AuditCase) -> Any:
    """Audit one case as the table does (the packages' own warnings silenced).

    Raises
    ------
    CaseUnavailable
        If its package or class is not installed.
    """
    import warnings

    from dgp.torch.audit import audit_loss

    loss = case.build()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return audit_loss(loss, intended=case.intended, name=case.name, **case.audit)
