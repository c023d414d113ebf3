"""Vocabularies of the audit: label kinds, calling conventions, partitions and forms."""

from __future__ import annotations

SIMILARITY_CHOICES = ("auto", "cosine", "euclidean")
#: label kinds the audit can make up (``"auto"`` tries them in turn)
LABEL_KINDS = ("continuous", "classes", "pairs", "none")
#: calling conventions: loss(Z, labels); loss(features [b, 2, d], labels); loss(z1, z2, labels)
CALLS = ("embeddings", "views", "pair")
#: partition functions the audit knows (with the anchors that enter the loss: the last three
#: need two views, rows ``0..b-1`` the first view and ``b..2b-1`` the second)
PARTITIONS = ("all", "class-averaged", "negatives", "cross-view", "one-direction", "one-view")
#: partitions whose denominators run over the other view only
CROSS_VIEW = ("cross-view", "one-direction")
#: partitions whose anchors are the first view's rows only
FIRST_VIEW_ANCHORS = ("one-direction", "one-view")
#: losses with class positives that are not a w-InfoNCE but have a known form, fitted when no
#: partition fits (their weights of the positives depend on the embeddings)
NAMED_FORMS = {
    "L_in": "SupCon's L_in: the mean over positives inside the log (solo-learn's SupCon, TF "
            "SupCon's summation_location=INSIDE)",
    "one-positive": "each positive pair with its own denominator of the negatives (TF SupCon's "
                    "denominator_mode=ONE_POSITIVE, pytorch-metric-learning's NTXentLoss with "
                    "classes)",
}
#: how a loss may use a weighting W (see :func:`candidate_terms`)
FORMS = ("rows", "raw", "columns", "columns-rows")

FORM_TEXT = {
    "rows": "rows of W normalised, every anchor weighs the same (a w-InfoNCE)",
    "raw": "cross-entropy against W as given: anchor i weighs sum_j w_ij",
    "columns": "W /= W.sum(1), which divides column j by the degree of sample j, then "
               "cross-entropy against it: anchors weigh unequally",
    "columns-rows": "W /= W.sum(1) (a column normalisation), then rows normalised",
}
PARTITION_TEXT = {
    "all": "every other sample in the denominator",
    "class-averaged": "BCL-style class averaging: each class's exponentials in the "
                      "denominator divided by its count in the batch",
    "negatives": "decoupled: samples with the anchor's label left out of the denominator",
    "cross-view": "bipartite (CLIP): the denominator runs over the other view only, every "
                  "row an anchor (both directions averaged)",
    "one-direction": "bipartite, one direction (MoCo-style in-batch, one-sided CLIP): anchors "
                     "of the first view only, the denominator over the second view",
    "one-view": "anchors of the first view only (SupContrast contrast_mode='one'), every "
                "other sample in the denominator",
}

SLIP = (
    "column normalisation: the loss divides its kernel by `W.sum(1)`, which broadcasts the row "
    "sums along the last axis and divides column j by the degree of sample j; anchors then weigh "
    "unequally and the target is the kernel divided by both degrees, k_ij / (s_i s_j). Normalise "
    "rows with `W / W.sum(1, keepdims=True)` (torch: `W.sum(1, keepdim=True)`)"
)

