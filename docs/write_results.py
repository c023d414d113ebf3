"""Write docs/results.md from the JSON of `dgp verify all --json`.

    dgp verify all --quick --json --out verify-quick > verify-quick/all.json
    python docs/write_results.py verify-quick/all.json [--full verify-gpu/all.json]

Every number in the page comes from those files; the text around them says what each number
shows, and the verdict sentences are derived from the reports' ``supports`` fields, so a result
that does not confirm the paper is written as such.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))

INTRO = """\
# Results: trained CNNs against the predicted geometry

`dgp verify` trains small CNNs with mini-batches (Adam, cosine learning-rate decay) and tests
what `dgp` predicts before any training against the alternative each prediction competes with.
Every experiment runs several seeds; a seed draws its own training and held-out images, its own
initialisation and its own batches. Numbers are mean ± standard deviation over the seeds that
converged (`conv` = converged/seeds). This page is written by `docs/write_results.py` from the
JSON of `dgp verify all --json`; rerun both to refresh it.

**Convergence.** Training minimises the expected loss of a random batch. For every trained run
the excess of that loss over the prediction's, `E_b[L_b(Z) - L_b(Z*)]` per anchor, is estimated
on the same random batches for both embeddings (`excess`). A run converged when the excess is
below the budget's `converge_tol` (nats per anchor); runs that did not converge are listed in
the JSON but left out of the means and of every verdict.

**Verdicts.** Each comparison is paired over converged seeds: distance to the prediction vs
distance to the alternative, decided when the mean difference exceeds twice its standard error,
else `undecided`. Distances are the off-diagonal RMS difference of prototype Gram matrices
(`G err`, class objectives) or the Procrustes residual `1 - r²` (continuous labels).
"""

EXPLAIN = {
    "supcon-imbalance": """\
SupCon (`tau = 0.5`) on balanced classes and on classes whose sizes fall tenfold. Prediction:
`dgp.supcon_prototypes(sizes)`: the simplex when balanced, a size-dependent configuration with
the minority classes closer together when imbalanced. Alternative: the simplex. `G err` and
`simplex err` are the learned prototype Gram's distances to the prediction and to the simplex
(training images), `held-out err` the same for prototypes of held-out images; `min-maj` is the
mean cosine among the smallest classes minus that among the largest. The noise row trains on
Gaussian noise with the same labels: the free-point regime, where nothing can carry over.""",
    "batch-size": """\
Imbalanced SupCon at batch sizes 16 to 256: the learned prototypes against the full-batch
prediction and against the expected-batch prediction of uniform batches of that size.""",
    "soft-supcon-tau": """\
Soft SupCon (`eps = 0.25`) on imbalanced classes at multiples of
`tau* = K / ((K-1)(-log eps))`. Prediction: equiangular prototypes at `rho = 1 + tau log eps`
below `tau*` whatever the sizes, the simplex at `tau*`, a size-dependent geometry above.
Alternative: the equiangular geometry of the neighbouring regime (the simplex off `tau*`).""",
    "continuous-labels": """\
Digits rotated by a uniform random angle; the label is the point `(cos, sin)` of the angle on the
circle (digits 2, 3, 4, 5, 7 only: 0, 1, 8 look alike after a half turn and 6, 9 swap). Each
objective is scored against its prediction (`r2 pred`: the bound-attaining target from
`dgp.classify`, or the best embedding in `d` dimensions) and against the labels' own geometry
(`r2 labels`: the unit circle itself), and by the held-out k-NN `R²` of the angle. X-CLR with
the mismatched label temperature (`tau_y = tau/2`) has no realizable target; its prediction is
`dgp.optimum.optimum(dim=d)`, solved for a smaller training set (100 images in quick mode),
whose held-out k-NN is accordingly weaker.""",
    "controls": """\
What the images add. The same imbalanced SupCon and Euclidean–Euclidean runs as above beside
three controls: noise inputs (trained), an untrained CNN, and raw pixels, all scored on held-out
data (`held-out err` of the prototypes, held-out Procrustes `r²`, k-NN `R²` of the angle).""",
}

COLUMNS = {
    "supcon-imbalance": [
        ("G err", "gram_rms_error"),
        ("simplex err", "simplex_gram_rms_error"),
        ("held-out err", "heldout_gram_rms_error"),
        ("held-out simplex err", "heldout_simplex_gram_rms_error"),
        ("min-maj", "minority_minus_majority"),
        ("excess", "loss_excess"),
    ],
    "batch-size": [
        ("vs expected-batch", "batch_rms_error"),
        ("vs full-batch", "full_rms_error"),
        ("excess", "loss_excess"),
    ],
    "soft-supcon-tau": [
        ("mean cos", "mean_cosine"),
        ("spread", "cosine_spread"),
        ("G err", "gram_rms_error"),
        ("simplex err", "simplex_gram_rms_error"),
        ("sim r²", "similarity_r2"),
        ("held-out err", "heldout_gram_rms_error"),
    ],
    "continuous-labels": [
        ("r2 pred", "procrustes_r2"),
        ("r2 labels", "label_procrustes_r2"),
        ("held-out r2 pred", "heldout_procrustes_r2"),
        ("probe R²", "probe_r2"),
        ("k-NN R²", "knn_r2"),
        ("excess", "loss_excess"),
    ],
    "controls": [
        ("held-out err", "heldout_gram_rms_error"),
        ("held-out r2", "heldout_procrustes_r2"),
        ("probe R²", "probe_r2"),
        ("k-NN R²", "knn_r2"),
        ("excess", "loss_excess"),
    ],
}


def _fmt(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, list):
        return f"{v[0]:.3g} ± {v[1]:.2g}"
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


def _table(report: dict[str, Any]) -> list[str]:
    cols = COLUMNS[report["experiment"]]
    lines = [
        "| condition | conv | " + " | ".join(c for c, _ in cols) + " |",
        "|---|---|" + "---|" * len(cols),
    ]
    for row in report["summary"]:
        cells = [_fmt(row.get(k)) for _, k in cols]
        conv = f"{row['n_converged']}/{row['n_seeds']}" if row["trained"] else "not trained"
        lines.append(
            f"| {row['condition']} | {conv} | "
            + " | ".join(cells)
            + " |"
        )
    return lines


def _diff(v: dict[str, Any]) -> str:
    d = v.get("distance_difference")
    if not d:
        return v.get("why", "")
    return f"difference {d[0]:.3g} ± {d[1]:.2g} (SE)"


def _verdicts(report: dict[str, Any]) -> list[str]:
    sup = report["supports"]
    name = report["experiment"]
    out = [f"**Supports: {sup['supports']}.** Criterion: {sup['criterion']}."]
    if name == "supcon-imbalance":
        out.append(
            f"The prediction and the simplex differ by {sup['prediction_vs_simplex_rms']:.3g} "
            f"(RMS); training images: {sup['train']['supports']} ({_diff(sup['train'])}); "
            f"held-out images: {sup['heldout']['supports']} ({_diff(sup['heldout'])}). "
            f"Minority classes closer: predicted {sup['minority_closer']['predicted']}, learned "
            f"in every converged seed {sup['minority_closer']['learned_all_converged_seeds']}."
        )
    elif name == "batch-size":
        for d in sup["per_batch_size"]:
            out.append(
                f"- B = {d['batch_size']}: {d['supports']} ({_diff(d)}); the two predictions "
                f"differ by {d['predictions_rms']:.3g}."
            )
    elif name == "soft-supcon-tau":
        for d in sup["per_tau"]:
            out.append(
                f"- tau = {d['tau_over_tau_star']:g} tau* ({d['prediction']}, predicted mean "
                f"cosine {d['predicted_mean_cosine']:.3f}, alternative "
                f"{d['alternative_mean_cosine']:.3f}): {d['supports']} ({_diff(d)})."
            )
    elif name == "continuous-labels":
        for d in sup["per_objective"]:
            out.append(f"- {d['condition']} ({d['verdict']}): {d['supports']} ({_diff(d)}).")
        for k, v in report.get("not_run", {}).items():
            out.append(f"- {k}: not run ({v}).")
    elif name == "controls":
        for setting in ("supcon", "euclid-euclid"):
            if setting in sup:
                parts = [f"{k}: {v['supports']} ({_diff(v)})" for k, v in sup[setting].items()]
                out.append(f"- {setting}, images vs " + "; ".join(parts) + ".")
    misses = _not_confirmed(report)
    if misses:
        out.append("")
        out.append("**Not confirmed, or not converged:** " + " ".join(misses))
    return out


def _not_confirmed(report: dict[str, Any]) -> list[str]:
    """Sentences for every comparison the prediction did not win, and unconverged runs."""
    sup, out = report["supports"], []
    items: list[tuple[str, dict]] = []
    for key in ("per_batch_size", "per_tau", "per_objective"):
        for d in sup.get(key, []):
            label = d.get("condition") or d.get("batch_size") or d.get("tau_over_tau_star")
            items.append((str(label), d))
    for label, d in items:
        if d["supports"] not in ("prediction", "expected-batch", "coincide"):  # not confirmed
            out.append(f"{label}: {d['supports']} ({_diff(d)}).")
    if report["experiment"] == "supcon-imbalance" and sup["supports"] != "imbalance prediction":
        out.append(f"the imbalance prediction did not beat the simplex ({_diff(sup['train'])}).")
    if report["experiment"] == "controls":
        for setting in ("supcon", "euclid-euclid"):
            for k, v in sup.get(setting, {}).items():
                if v["supports"] != "images":
                    out.append(f"{setting}: trained images did not beat {k} ({_diff(v)}).")
    if report["experiment"] == "continuous-labels":
        for row in report["summary"]:
            r2 = row.get("procrustes_r2")
            if row["n_converged"] and r2 is not None and r2[0] < 0.9:
                out.append(
                    f"{row['condition']}: converged by the loss (excess "
                    f"{row['loss_excess'][0]:.2g} nats per anchor) yet only r² {r2[0]:.3f} "
                    "against its prediction: the loss is nearly flat along the remaining "
                    "difference."
                )
    for row in report["summary"]:
        if row["trained"] and row["n_converged"] < row["n_seeds"]:
            out.append(
                f"{row['condition']}: {row['n_seeds'] - row['n_converged']} of "
                f"{row['n_seeds']} runs did not converge."
            )
    return out


def _section(combined: dict[str, Any], label: str) -> list[str]:
    lines = [f"## {label}", ""]
    reports = combined["experiments"]
    if reports:
        b = reports[0]["config"]["budget"]
        lines += [
            f"Device `{combined['device']}`; budget: {b['steps']} steps "
            f"({b['steps_continuous']} for continuous labels), batch {b['batch_size']}, "
            f"lr {b['lr']}, d = {b['dim']}, {b['seeds']} seeds, converge_tol "
            f"{b['converge_tol']} nats per anchor.",
            "",
        ]
    for name, why in combined.get("skipped", {}).items():
        lines += [f"### {name}", "", f"Not run: {why}.", ""]
    for rep in reports:
        cfg = rep["config"]
        lines += [f"### {rep['experiment']}", "", EXPLAIN[rep["experiment"]], ""]
        data = cfg.get("data") or cfg.get("supcon", {}).get("data", "")
        if data:
            lines += [f"Data: {data}. Encoder: {cfg.get('encoder', 'CNN')}.", ""]
        lines += [*_table(rep), "", *_verdicts(rep), ""]
    return lines


def write(quick: dict[str, Any], full: dict[str, Any] | None) -> str:
    lines = [INTRO, ""]
    lines += _section(quick, "Quick mode (`dgp verify all --quick`, CPU)")
    if full is not None:
        lines += _section(full, f"Full mode (`dgp verify all --device {full['device']}`)")
    else:
        lines += [
            "## Full mode (GPU)",
            "",
            "GPU numbers are pending: no GPU session has run `bash benchmarks/gpu_verify.sh` yet "
            "(full mode: 5000 MNIST digits, 28x28, all ten classes, five seeds). Prepare the "
            "wheels with `bash benchmarks/prepare_gpu_wheels.sh`, run the script on the GPU "
            "machine, then `python docs/write_results.py QUICK.json --full verify-gpu/all.json`.",
            "",
        ]
    lines += [f"Written on {platform.machine()} with Python {platform.python_version()}.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("quick", help="JSON of dgp verify all --quick --json")
    parser.add_argument("--full", help="JSON of the full-mode (GPU) run")
    parser.add_argument("--out", default=os.path.join(HERE, "results.md"))
    args = parser.parse_args(argv)
    with open(args.quick, encoding="utf-8") as fh:
        quick = json.load(fh)
    full = None
    if args.full:
        with open(args.full, encoding="utf-8") as fh:
            full = json.load(fh)
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write(write(quick, full))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
