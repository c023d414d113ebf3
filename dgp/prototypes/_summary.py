"""The text of a prototypes result: the lead that answers (minority collapse, per-class
positive-pair rates, what a class-balanced sampler changes) and the body (how it was solved,
loss, bounds, cosines, identifiability)."""

from __future__ import annotations

import math
import unicodedata
from typing import Any

import numpy as np

from dgp.constants import SCALE_FLOOR
from dgp.display import entry_cells, format_nats
from dgp.solver import bound_note, interval_note

__all__ = ["CLASSES_LISTED", "body_pairs", "classes_pairs", "gram_cells", "gram_summary",
           "lead_pairs", "printable_name"]


def gram_summary(G: np.ndarray, interval: tuple[np.ndarray, np.ndarray] | None = None
                 ) -> dict[str, Any]:
    """Extreme off-diagonal cosines and where they are (class indices from 0); with the Gram's
    per-entry 95% ``interval`` (a prediction from sampled batches), each cosine's interval
    beside it (``min_cosine_interval``, ``max_cosine_interval``)."""
    K = G.shape[0]
    iu = np.triu_indices(K, 1)
    off = G[iu]
    lo, hi = int(np.argmin(off)), int(np.argmax(off))
    out = {
        "min_cosine": float(off[lo]),
        "min_pair": [int(iu[0][lo]), int(iu[1][lo])],
        "max_cosine": float(off[hi]),
        "max_pair": [int(iu[0][hi]), int(iu[1][hi])],
        "simplex_cosine": -1.0 / (K - 1),
    }
    if interval is not None:
        for key in ("min", "max"):
            i, j = out[f"{key}_pair"]
            out[f"{key}_cosine_interval"] = [float(interval[0][i, j]), float(interval[1][i, j])]
    return out


def gram_cells(p: Any, digits: int = 4) -> list[list[str]]:
    """The cells of a printed prototype Gram: each entry with ``digits`` decimals and, where
    it comes from sampled batches (``p.batch.gram_interval`` of positive width), the
    half-width of its 95% interval over independent runs (``+0.1234±0.0056``)."""
    return entry_cells(p.gram, None if p.batch is None else p.batch.gram_interval, digits)


#: classes a summary names in full (beyond: the first and last three, unless the whole Gram
#: is asked for)
CLASSES_LISTED = 12


def printable_name(name: object) -> str:
    r"""A class label as text that prints safely on a terminal: control characters (Unicode
    category ``Cc``, tab kept) escaped as ``\xNN``, everything else as it is (a name from a
    user's file could otherwise move the cursor or retitle the terminal).

    >>> printable_name("dog\x1b[2J"), printable_name(3)
    ('dog\\x1b[2J', '3')
    """
    return "".join(f"\\x{ord(c):02x}" if c != "\t" and unicodedata.category(c) == "Cc" else c
                   for c in str(name))


def classes_pairs(p: Any, *, every: bool = False) -> list[tuple[str, str]]:
    """The summary line naming each class index by its label (``c0 = cat (n=12)``), for a
    result built from labels (none from sizes): all of them up to :data:`CLASSES_LISTED`
    classes or with ``every``, else the first and last three."""
    if p.classes is None:
        return []
    listed = [f"c{k} = {printable_name(name)} (n={n})"
              for k, (name, n) in enumerate(zip(p.classes, p.sizes, strict=True))]
    if len(listed) > CLASSES_LISTED and not every:
        listed = [*listed[:3], f"... {len(listed) - 6} more ...", *listed[-3:]]
    return [("classes", "counted from the labels: " + ", ".join(listed))]


def body_pairs(p: Any) -> list[tuple[str, str]]:
    """The lines of a prototypes summary after its lead: how it was solved, the loss and its
    bounds, rank and cosines, identifiability, what batches moved."""
    N = sum(p.sizes)
    pairs = []
    if p.rank_d is not None:
        how = (f"numeric in R^{p.dim} (rank-{p.dim} Burer-Monteiro, non-convex): "
               f"{p.stop_reason}")
    elif p.method == "numeric" and p.certificate is not None:
        how = f"numeric (certified: KKT residual {p.kkt_residual:.1e})"
    elif p.method == "first-order":
        how = "first-order (an O(tau^2) approximation, not certified)"
    elif p.method == "stochastic":
        how = ("stochastic: optimised on fresh batches, reported on others (not certified; "
               "a lower bound at 95% confidence)")
    else:
        how = f"closed form ({p.stop_reason})"
    pairs.append(("method", how))
    if p.batch is not None:
        s = p.batch.spec
        sampler = s.sampler + (
            f", m = {s.samples_per_class}" if s.samples_per_class is not None else ""
        )
        est = p.batch.estimate
        exp = (
            f"exact over {p.batch.compositions} composition"
            + ("s" if p.batch.compositions != 1 else "")
            if p.batch.exact
            else f"{p.batch.compositions:.3g} compositions: fitted on a sample of "
            f"{p.batch.drawn} (seed {p.batch.seed}), reported on {est.batches} fresh batches"
            if est is not None and est.expectation == "sample-average"
            else f"{p.batch.compositions:.3g} compositions: the full-batch prototypes, kept "
            "(no run optimised on fresh batches was lower beyond noise on the selection "
            f"batches), reported on {est.batches} fresh batches"
            if est is not None and p.batch.kept_full_batch
            else f"{p.batch.compositions:.3g} compositions: optimised on {est.steps} fresh "
            f"batches, reported on {est.batches} others"
            if est is not None
            else f"sample average of {p.batch.drawn} compositions (seed {p.batch.seed})"
        )
        red = s.reduction + (
            f", anchors without positives: {s.anchors_without_positives}"
            if s.reduction == "mean"
            else ""
        )
        pairs += [
            ("batches", f"B = {s.batch_size}, sampler {sampler}"),
            ("reduction", red),
            ("expectation", exp),
        ]
    bound_word = "<=" if p.method == "first-order" else "="
    unit = (p.batch.spec.loss_unit if p.batch is not None else
            f"nats (summed over {N} anchors)")
    loss = f"{bound_word} {p.loss:.10g} {unit}"
    est = None if p.batch is None else p.batch.estimate
    if est is not None:
        lo, hi = est.interval
        loss += f", 95% interval [{lo:.6f}, {hi:.6f}]" + interval_note(est)
    elif p.batch is not None and p.batch.loss_se is not None:
        loss += f", standard error {p.batch.loss_se:.2g}"
    pairs.append(("loss", loss))
    if p.dim is None and p.method == "stochastic" and p.lower_bound is not None:
        pairs.append(("bound", f"lower bound {p.lower_bound:.10g} (95% confidence; "
                      f"per-batch convex relaxation), gap {p.loss - p.lower_bound:.3g}"
                      + ("" if est is None else bound_note(est))))
    if p.dim is not None and p.lower_bound is not None:
        gap = max(0.0, p.loss - p.lower_bound)
        share = 100 * gap / max(abs(p.loss), SCALE_FLOOR)
        pairs.append(("in R^d", f"dim = {p.dim}; lower bound {p.lower_bound:.10g}, gap "
                      f"{gap:.3g} nats ({share:.2g}% of the loss)"
                      + ("" if est is None or est.expectation == "exact" else bound_note(est))))
        if p.rank_d is not None:
            r = p.rank_d
            pairs.append(("critical", f"gradient {r.gradient_norm:.1e}, Hessian min "
                          f"{r.hessian_min_eig:+.1e} ("
                          + ("second-order critical" if r.second_order else
                             "NOT second-order critical")
                          + ("; global optimum)" if r.global_optimal else
                             "; not proven global)")))
    if not math.isnan(p.excess_loss):
        ex = format_nats(p.excess_loss, p.log_excess_loss)
        excess = f"{bound_word} {ex} nats above the entropic bound {p.entropic_bound:.10g}"
        if p.certificate is not None and p.dim is None and p.method != "closed-form":
            # in R^d: the line above; a closed form is exact (its certificate checks it)
            gap = format_nats(p.certificate.gap_bound, p.certificate.log_gap_bound)
            excess += f" (gap to optimum <= {gap})"
        pairs.append(("excess", excess))
    if p.approximation is not None:
        a = p.approximation
        if a.psd_defect > 0:
            pairs.append((
                "PSD defect",
                f"{a.psd_defect:.3g} (lowest eigenvalue {a.min_eigenvalue:+.3g}: not a Gram of "
                "unit vectors)",
            ))
        if a.distance is not None:
            pairs.append(("projected", f"nearest point of the elliptope at distance "
                          f"{a.distance:.3g}; the loss above is taken there"))
    uniq = {True: "unique minimiser up to rotation", False: "not unique: a face of minimisers",
            None: "uniqueness undecided"}[p.unique]
    pairs.append(("rank", f"{p.rank} ({uniq})"))
    if p.K > 2:
        if p.equiangular is not None:
            pairs.append(("cosines", f"all {p.equiangular:+.6f} (equiangular)"))
        else:
            gs = gram_summary(p.gram)
            pm = {"min": "", "max": ""}
            if p.batch is not None and p.batch.gram_interval is not None:
                lo, hi = p.batch.gram_interval
                for key in pm:  # each cosine from sampled batches with its interval
                    i, j = gs[f"{key}_pair"]
                    pm[key] = (" (interval not measured)" if p.batch.unmeasured else
                               f" in [{lo[i, j]:+.3f}, {hi[i, j]:+.3f}]")
            pairs.append((
                "cosines",
                f"min {gs['min_cosine']:+.6f}{pm['min']} (classes {gs['min_pair'][0]},"
                f"{gs['min_pair'][1]}), max {gs['max_cosine']:+.6f}{pm['max']} (classes "
                f"{gs['max_pair'][0]},{gs['max_pair'][1]}); "
                f"simplex {gs['simplex_cosine']:+.6f}",
            ))
    elif p.matrix is not None or p.equiangular is not None:
        pairs.append(("cosine", f"{float(p.gram[0, 1]):+.6f}"))
    if p.identifiability is not None:
        pairs += p.identifiability.summary_pairs()
    if p.batch is not None and p.batch.unmeasured:
        pairs.append(("moved", f"max |G_batch - G_full| = {p.batch.shift:.3g} "
                      f"({p.batch.unmeasured})"))
    elif (p.batch is not None and p.batch.gram_interval is not None
          and not p.batch.closed_form):
        kept = p.batch.runs_interval is not None  # the full-batch prototypes kept
        lo, hi = p.batch.runs_interval if kept else p.batch.gram_interval
        iu = np.triu_indices(p.K, 1)
        beyond = p.batch.moved_beyond_interval  # the one count (JSON too)
        half = float(np.max((hi - lo)[iu]) / 2)
        left = p.batch.runs_left_out
        runs = p.batch.replicates + 1
        over = (f"{runs} independent runs" if not p.batch.restarts else
                f"{runs} runs, {p.batch.restarts} of them these prototypes' lineage (their run "
                "and its restarts on other batch streams: their batches' noise, not other "
                "arrangements)")
        where = (f"the runs' own 95% intervals (about their mean; these prototypes are the "
                 f"full-batch ones, kept) over {over}" if kept else
                 f"their 95% interval over {over}")
        pairs.append(("moved", f"{beyond} of {iu[0].size} cosines moved from the full "
                      f"batch beyond {where} (widest "
                      f"half-width {half:.2g}; max |G_batch - G_full| = "
                      f"{p.batch.shift:.3g}" + (", within the intervals" if beyond == 0
                                                  else "")
                      + (f"; {left} run{'s' if left > 1 else ''} that ended beyond the loss "
                         "resolution above these prototypes left out)" if left else ")")))
    elif p.batch is not None:
        pairs.append(("moved", f"max |G_batch - G_full| = {p.batch.shift:.3g}" + (
            f" (sampling error {p.batch.gram_se:.2g})" if p.batch.gram_se else
            " (exact: every composition enumerated)" if p.batch.exact else
            " (a closed form: no sampling error)")))
    return pairs


def lead_pairs(p: Any) -> list[tuple[str, str]]:
    """The lines a prototypes summary leads with: whether tail classes merge (beyond noise, with
    the interval), then, with batches, how often each class's anchors meet a positive, and for
    another sampler than uniform what it changes (rates against uniform batches of the same
    size, geometry against the full batch)."""
    pairs = []
    mc = p.minority_collapse
    if mc is not None and mc.pair is not None:
        pairs += mc.summary_pairs()
        if (p.eps is None and mc.pair_sizes == (1, 1) and p.batch is not None
                and p.batch.spec.sampler == "uniform"):  # SupCon singletons: twin negatives
            pairs.append(("", f"classes {mc.pair[0]},{mc.pair[1]} have one sample each: never "
                              "anchors with a positive, only negatives with the same weights to "
                              "every sample, so nothing in the loss tells them apart (not an "
                              "effect of imbalance)"))
    rates = p.positive_pairs
    if rates is None:
        return pairs
    order = np.argsort(-np.asarray(p.sizes), kind="stable")
    # the rates count a class's own samples: Soft SupCon's anchors have positives (eps) across
    # classes in every batch besides
    own = "positive" if p.eps is None else "same-class positive"
    pairs.append(("positives", rates.summary(order, positive=own)))
    small = int(order[-1])
    pairs.append(("", f"batches with a {own} pair of class {small}: "
                      f"{100 * float(rates.batch_rate[small]) + 0.0:.3g}%"))
    if rates.uniform is not None:
        full = p.full_batch_minority_collapse
        was = "" if full is None or full.collapsed is None else (
            "; full batch: minority collapse " + full.word)
        now = "" if mc is None or mc.collapsed is None else "minority collapse " + mc.word
        pairs.append(("sampler", f"{rates.sampler} against uniform batches: tail anchors meet a "
                      f"{own} {100 * float(rates.anchor_rate[small]):.3g}% against "
                      f"{100 * float(rates.uniform.anchor_rate[small]):.3g}%; geometry: "
                      + _geometry_moved(p) + (f", {now}{was}" if now else "")))
    return pairs


def _geometry_moved(p: Any) -> str:
    """How far the prediction's Gram is from the full batch's, led by what lies beyond the
    entries' 95% intervals where they come from sampled batches."""
    shift = f"max |G - G_full| = {p.batch.shift:.3g}"
    beyond = p.batch.moved_beyond_interval
    if beyond is None:
        return shift
    K = len(p.sizes)
    return (f"{beyond} of {K * (K - 1) // 2} cosines from the full batch's beyond their 95% "
            f"intervals ({shift})")
