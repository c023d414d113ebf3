"""dgp.Problem: one validated, frozen problem that every entry point takes first.

Grouped by behaviour: every declared constraint refuses its bad values (naming the parameter);
contradictory fields are refused; bad calls of every entry point raise one error class; an entry
point given a Problem gives the numbers of its older call form; a Problem cannot be changed; the
deprecated ``rtol`` still works; properties across forms of the same weighting.
"""

from __future__ import annotations

import dataclasses
import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import dgp
from dgp.problem import PARAMETER_CONSTRAINTS
from dgp.weights import soft_supcon_weights, supcon_weights

LABELS = [0, 0, 0, 1, 1, 2, 2]  # sizes (3, 2, 2)
SIZES = [3, 2, 2]


def _raises(param: str, call, *args, **kwargs) -> dgp.InvalidParameterError:
    with pytest.raises(dgp.InvalidParameterError) as info:
        call(*args, **kwargs)
    assert info.value.param == param, info.value
    assert str(info.value).startswith(param), info.value
    return info.value


# ---------------------------------------------------------------------------------------------
# the error class
# ---------------------------------------------------------------------------------------------


def test_the_old_error_names_are_the_new_class():
    assert issubclass(dgp.InvalidParameterError, ValueError)
    assert dgp.errors.ParameterError is dgp.InvalidParameterError
    assert issubclass(dgp.errors.ParameterTypeError, dgp.InvalidParameterError)
    assert issubclass(dgp.errors.ParameterTypeError, TypeError)


def test_a_type_error_is_caught_as_an_invalid_parameter():
    err = _raises("tau", dgp.supcon_prototypes, [3, 3], tau="0.5")
    assert isinstance(err, TypeError)


def test_the_command_line_still_exits_2_on_a_bad_parameter(capsys):
    from dgp.cli import main

    assert main(["supcon", "--sizes", "3,3", "--tau", "-1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --tau") and err.count("\n") == 1


# ---------------------------------------------------------------------------------------------
# construction: the declared constraints, one checker
# ---------------------------------------------------------------------------------------------

CASES = [(name, bad) for name, c in PARAMETER_CONSTRAINTS.items() for bad in c.invalid]


@pytest.mark.parametrize("name", list(PARAMETER_CONSTRAINTS))
def test_every_constraint_accepts_its_valid_example(name):
    c = PARAMETER_CONSTRAINTS[name]
    p = dgp.Problem(**{**c.context, name: c.valid})
    assert isinstance(p, dgp.Problem)


@pytest.mark.parametrize(("name", "bad"), CASES, ids=[f"{n}={b!r}"[:40] for n, b in CASES])
def test_every_constraint_refuses_its_invalid_values(name, bad):
    c = PARAMETER_CONSTRAINTS[name]
    _raises(name, dgp.Problem, **{**c.context, name: bad})


BATCH_ONLY = [(name, v) for name, c in PARAMETER_CONSTRAINTS.items() for v in c.batch_only]


@pytest.mark.parametrize(("name", "value"), BATCH_ONLY,
                         ids=[f"{n}={v!r}"[:40] for n, v in BATCH_ONLY])
def test_batch_only_values_are_refused_at_full_batch_and_taken_with_a_batch_size(name, value):
    """A weighting's sample without positives, a SupCon singleton: an anchor without positives
    in every batch, which a batch problem takes and a full-batch one refuses."""
    c = PARAMETER_CONSTRAINTS[name]
    _raises(name, dgp.Problem, **{**c.context, name: value})
    p = dgp.Problem(**{**c.context, name: value, "batch_size": 3})
    assert p.batch_size == 3


def test_positional_arguments_are_refused_never_guessed():
    err = _raises("Problem", dgp.Problem, [2, 2, 2])
    assert "sizes" in str(err) and "labels" in str(err)
    _raises("Problem", dgp.Problem, np.ones((3, 3)), tau=0.5)


@pytest.mark.parametrize(("param", "kwargs"), [
    ("objective", {"W": np.ones((3, 3)), "objective": "supcon"}),
    ("labels", {"W": np.ones((3, 3)), "labels": [0, 0, 1]}),
    ("eps", {"W": np.ones((3, 3)), "eps": 0.1}),
    ("weights", {"W": np.ones((3, 3)), "weights": np.ones((3, 3))}),
    ("sizes", {"objective": "supcon", "sizes": SIZES, "labels": LABELS}),
    ("sizes", {"objective": "y-aware", "sizes": SIZES, "sigma": 1.0}),
    ("eps", {"objective": "supcon", "sizes": SIZES, "eps": 0.1}),
    ("sigma", {"objective": "soft-supcon", "sizes": SIZES, "sigma": 1.0}),
    ("labels", {"objective": "y-aware", "sigma": 1.0}),
    ("objective", {"labels": LABELS}),
    ("W", {}),
    ("sampler", {"objective": "supcon", "sizes": SIZES, "sampler": "class-balanced"}),
    ("samples_per_class", {"objective": "supcon", "sizes": SIZES, "batch_size": 4,
                           "samples_per_class": 2}),
])
def test_contradictory_fields_are_refused_naming_the_field(param, kwargs):
    _raises(param, dgp.Problem, **kwargs)


def test_the_forms_and_what_they_hold():
    by_sizes = dgp.Problem(objective="soft-supcon", sizes=SIZES, eps=0.1, tau=0.5)
    by_labels = dgp.Problem(objective="soft-supcon", labels=LABELS, eps=0.1)
    by_w = dgp.Problem(W=soft_supcon_weights(LABELS, eps=0.1))
    assert (by_sizes.form, by_labels.form, by_w.form) == ("sizes", "labels", "weights")
    assert by_sizes.sizes == by_labels.sizes == (3, 2, 2) and by_w.sizes is None
    assert by_sizes.n == by_labels.n == by_w.n == 7
    np.testing.assert_array_equal(by_sizes.dense_weights(), by_labels.dense_weights())
    np.testing.assert_allclose(by_w.dense_weights(), by_labels.dense_weights(), rtol=1e-15)
    assert dgp.Problem(objective="y-aware", labels=[[0.0], [1.0], [2.0]]).similarity == "cosine"
    assert dgp.Problem(objective="euclid-euclid", labels=[[0.0], [1.0]]).similarity == \
        "euclidean"


def test_repr_shows_the_fields_as_given():
    p = dgp.Problem(objective="soft-supcon", sizes=SIZES, eps=0.1, tau=0.5, batch_size=4)
    assert repr(p) == ("Problem(objective='soft-supcon', sizes=[3, 2, 2], eps=0.1, tau=0.5, "
                       "similarity='cosine', batch_size=4)")
    assert str(dgp.Problem(W=np.ones((3, 3)))) == (
        "Problem(W=<3 x 3 weights, dense, symmetric, 0 zero weights>, similarity='cosine')")


def test_a_sparse_weighting_is_not_densified_on_construction():
    A = sp.diags([np.ones(39), np.ones(39)], [1, -1], format="csr")  # a path of 40 samples
    p = dgp.Problem(W=A, tau=0.5)
    assert p.weighting.pairs is not None and p.weighting.L is None
    assert dgp.classify(p, dim=2).to_dict() == dgp.classify(A, tau=0.5, dim=2).to_dict()


# ---------------------------------------------------------------------------------------------
# frozen
# ---------------------------------------------------------------------------------------------


def test_a_problem_cannot_be_changed():
    W = soft_supcon_weights(LABELS, eps=0.1)
    p = dgp.Problem(W=W, tau=0.5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.tau = 1.0
    with pytest.raises(ValueError, match="read-only"):
        p.weighting.L[0, 1] = 0.0
    q = dgp.Problem(objective="supcon", labels=LABELS)
    with pytest.raises(ValueError, match="read-only"):
        q.labels_record.values[0] = 1
    again = pickle.loads(pickle.dumps(p))  # a worker's copy is frozen too
    with pytest.raises(ValueError, match="read-only"):
        again.weighting.L[0, 1] = 0.0
    W[0, 1] = W[1, 0] = 0.5  # the caller's array is not the problem's
    first = dgp.classify(p, dim=3).to_dict()
    assert dgp.classify(p, dim=3).to_dict() == first  # the engine consumed a copy
    assert first == dgp.classify(soft_supcon_weights(LABELS, eps=0.1), tau=0.5, dim=3).to_dict()


# ---------------------------------------------------------------------------------------------
# bad calls of every entry point: one error class, naming the parameter
# ---------------------------------------------------------------------------------------------

W7 = soft_supcon_weights(LABELS, eps=0.1)
P_W = dgp.Problem(W=W7, tau=0.5)
P_SOFT = dgp.Problem(objective="soft-supcon", sizes=SIZES, eps=0.1, tau=0.5)
P_SUP = dgp.Problem(objective="supcon", sizes=SIZES)
P_BATCH = dgp.Problem(objective="supcon", sizes=SIZES, tau=0.5, batch_size=4)
P_EUC = dgp.Problem(W=W7, tau=0.5, similarity="euclidean")

BAD_CALLS = [
    ("dim", dgp.classify, (P_W,), {"dim": 0}),
    ("tau", dgp.classify, (P_W,), {"tau": 0.4, "dim": 2}),
    ("tau", dgp.classify, (P_SUP,), {"dim": 2}),
    ("similarity", dgp.classify, (P_W,), {"similarity": "euclidean", "dim": 2}),
    ("batch_size", dgp.classify, (P_BATCH,), {"dim": 2}),
    ("log_weights", dgp.classify, (P_W,), {"log_weights": np.zeros((7, 7)), "dim": 2}),
    ("tol", dgp.classify, (P_W,), {"dim": 2, "tol": 2.0}),
    ("starts", dgp.classify, (P_W,), {"dim": 2, "starts": 3}),
    ("eps", dgp.classify, (dgp.Problem(objective="soft-supcon", sizes=SIZES),),
     {"tau": 0.5, "dim": 2}),
    ("similarity", dgp.optimum, (P_EUC,), {}),
    ("tau", dgp.optimum, (P_W,), {"tau": 0.3}),
    ("sampler", dgp.optimum, (dgp.Problem(W=W7, tau=0.5, batch_size=4, sampler="uniform"),),
     {"sampler": "class-balanced"}),
    ("dim", dgp.optimum, (P_W,), {"dim": 0}),
    ("tau", dgp.optimum, (dgp.Problem(W=W7),), {}),
    ("problem", dgp.supcon_prototypes, (P_W,), {}),
    ("problem", dgp.supcon_prototypes,
     (dgp.Problem(objective="y-aware", labels=[[0.0], [1.0], [2.0]], sigma=1.0, tau=0.5),), {}),
    ("eps", dgp.supcon_prototypes, (dgp.Problem(objective="soft-supcon", sizes=SIZES),),
     {"tau": 0.5}),
    ("eps", dgp.supcon_prototypes, (P_SUP,), {"tau": 0.5, "eps": 0.1}),
    ("eps", dgp.supcon_prototypes, (P_SOFT,), {"eps": 0.2}),
    ("batch_size", dgp.supcon_prototypes, (P_SUP,), {"tau": 0.5, "batch_size": 2}),
    # checked on every path, the full batch and R^dim included (a bad seed was numpy's error)
    ("seed", dgp.supcon_prototypes, (P_SUP,), {"tau": 0.5, "dim": 2, "seed": -1}),
    ("seed", dgp.supcon_prototypes, (P_SUP,), {"tau": 0.5, "seed": 2.5}),
    ("samples", dgp.supcon_prototypes, (P_SUP,), {"tau": 0.5, "samples": "x"}),
    ("replicates", dgp.supcon_prototypes, (P_SUP,), {"tau": 0.5, "replicates": -1}),
    # at least one further run, the same floor in both entry points (one was raised to 2 and
    # the other to 1 without a word)
    ("replicates", dgp.supcon_prototypes, (P_SUP,), {"tau": 0.5, "replicates": 0}),
    ("replicates", dgp.supcon_prototypes, (P_SUP,),
     {"tau": 0.5, "replicates": 0, "nonnegative": True}),
    ("replicates", dgp.optimum, (P_SUP,), {"tau": 0.5, "replicates": 0}),
    ("exact_max", dgp.supcon_prototypes, (P_SUP,), {"tau": 0.5, "exact_max": 0}),
    ("progress", dgp.supcon_prototypes, (P_SUP,), {"tau": 0.5, "progress": "yes"}),
    ("labels", dgp.phase, (P_SOFT, LABELS), {"grid": {"dim": [1, 2]}}),
    ("tau", dgp.phase, (P_SOFT,), {"grid": {"tau": [0.3, 0.6]}, "dim": 2}),
    ("grid", dgp.phase, (P_SOFT,), {"grid": {"imbalance": [1.0, 2.0]}, "dim": 2}),
    ("tol", dgp.phase, (P_SOFT,), {"grid": {"dim": [1, 2]}, "tol": 0.0}),
    ("batch_size", dgp.phase, (P_BATCH,), {"grid": {"dim": [1, 2]}}),
    ("eps", dgp.recommend, (P_SOFT,), {"want": "simplex", "eps": 0.2}),
    ("want", dgp.recommend, (P_SUP,), {"want": "simplex", "tau": 0.5}),
    ("tau", dgp.recommend, (P_SOFT,), {"want": "realizable", "dim": 2}),
    ("W", dgp.loss_floors, (P_SOFT,), {"W": W7}),
    ("tau", dgp.loss_floors, (P_SUP,), {}),
    ("starts", dgp.loss_floors, (P_SOFT,), {"starts": -1}),
    ("rtol", dgp.loss_floors, (P_SOFT,), {"tol": 1e-9, "rtol": 1e-9}),
    # ragged nestings (numpy's bare ValueError) and labels of one class, by every entry point
    ("sizes", dgp.supcon_prototypes, ([[3], [3, 3]],), {"tau": 0.5}),
    ("sizes", dgp.Problem, (), {"objective": "supcon", "sizes": [[3], [3, 3]]}),
    ("labels", dgp.Problem, (), {"objective": "y-aware", "labels": [[0.1], [0.2, 0.3]],
                                 "sigma": 1.0}),
    ("labels", dgp.classify_objective, ("y-aware", [[0.1], [0.2, 0.3]]),
     {"sigma": 1.0, "tau": 0.5, "dim": 2}),
    ("labels", dgp.phase, ("y-aware", [[0.1], [0.2, 0.3]]),
     {"sigma": 1.0, "grid": {"tau": [0.3, 0.6]}, "dim": 2}),
    ("W", dgp.classify, ([[0.0, 1.0], [1.0]],), {"tau": 0.5, "dim": 2}),
    ("labels", dgp.Problem, (), {"objective": "supcon", "labels": [0, 0, 0]}),
    ("labels", dgp.classify_objective, ("supcon", [2, 2, 2]), {"tau": 0.5, "dim": 2}),
    ("labels", dgp.loss_floors, ("supcon", [2, 2, 2]), {"tau": 0.5}),
    ("labels", dgp.phase, ("supcon", [2, 2, 2]), {"dim": 2, "grid": {"tau": [0.1, 0.2]}}),
    ("labels", dgp.recommend, ("soft-supcon", [2, 2, 2]), {"eps": 0.1, "want": "simplex"}),
    ("labels", dgp.recommend, ("supcon", [1, 1, 1, 1]), {"want": "min-dim", "tau": 0.5}),
    ("progress", dgp.optimum, (P_W,), {"progress": "yes"}),
    # the batch against the samples, checked by the Problem itself
    ("batch_size", dgp.Problem, (), {"W": [[0.0, 1.0], [1.0, 0.0]], "batch_size": 5}),
    ("samples_per_class", dgp.Problem, (), {"objective": "supcon", "sizes": [3, 3],
                                            "batch_size": 4, "sampler": "m-per-class"}),
    ("anchors_without_positives", dgp.Problem, (),
     {"objective": "supcon", "sizes": [3, 3], "batch_size": 4, "reduction": "sum",
      "anchors_without_positives": "zero"}),
]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize(("param", "call", "args", "kwargs"), BAD_CALLS,
                         ids=[f"{c.__name__}-{p}-{i}" for i, (p, c, _, _) in
                              enumerate(BAD_CALLS)])
def test_bad_calls_of_every_entry_point_name_the_parameter(param, call, args, kwargs):
    _raises(param, call, *args, **kwargs)


def test_a_list_refused_as_labels_hints_at_sizes():
    err = _raises("labels", dgp.classify_objective, "supcon", [3, 4, 2], tau=0.5, dim=2)
    assert "sizes=[3, 4, 2]" in str(err)
    err = _raises("labels", dgp.Problem, objective="supcon", labels=[3, 4, 2])
    assert "sizes=[3, 4, 2]" in str(err)


def test_a_keyword_that_repeats_the_problem_is_accepted():
    assert dgp.classify(P_W, tau=0.5, dim=3).to_dict() == dgp.classify(P_W, dim=3).to_dict()
    a = dgp.supcon_prototypes(P_SOFT, eps=0.1, tau=0.5)
    np.testing.assert_array_equal(a.gram, dgp.supcon_prototypes(P_SOFT).gram)


# ---------------------------------------------------------------------------------------------
# the same numbers as the older call forms
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("similarity", ["cosine", "euclidean"])
@pytest.mark.parametrize("sparse", [False, True])
def test_a_weighting_problem_with_its_floor_gives_the_numbers_of_the_matrix(similarity, sparse):
    # the problem hands its validated weighting to the engine (dense for the cosine floor of a
    # small sparse one, as classify(W, floor=True) does), without going through classify again
    W = soft_supcon_weights(LABELS, eps=0.2)
    if sparse:
        W = sp.csr_array(supcon_weights(LABELS))
    p = dgp.Problem(W=W, tau=0.3, similarity=similarity)
    first = dgp.classify(p, dim=1, floor=True, starts=2, seed=3)
    old = dgp.classify(W, similarity=similarity, tau=0.3, dim=1, floor=True, starts=2, seed=3)
    assert first.to_dict() == old.to_dict()
    assert dgp.classify(p, dim=1, floor=True, starts=2, seed=3).to_dict() == first.to_dict()
    if similarity == "cosine":  # inconsistent in R^1: the floor is computed on both paths
        assert first.verdict == "inconsistent"
        assert first.certificate.notes["loss_floor"]["upper"] > 0  # an embedding in R^1


@pytest.mark.slow  # more than about 3 s (README test line <= 4 min)
def test_classify_gives_the_numbers_of_its_older_forms():
    assert dgp.classify(P_W, dim=2).to_dict() == dgp.classify(W7, tau=0.5, dim=2).to_dict()
    old = dgp.classify_objective("soft-supcon", LABELS, eps=0.1, tau=0.5, dim=2, floor=True)
    p = dgp.Problem(objective="soft-supcon", labels=LABELS, eps=0.1, tau=0.5)
    assert dgp.classify(p, dim=2, floor=True).to_dict() == old.to_dict()
    by_sizes = dgp.classify(P_SOFT, dim=2, floor=True)
    assert by_sizes.to_dict() == old.to_dict()
    logs = np.log(np.where(W7 > 0, W7, 1.0))
    np.fill_diagonal(logs, 0.0)
    lw = dgp.Problem(log_weights=logs, tau=0.5)
    assert dgp.classify(lw, dim=2).to_dict() == dgp.classify(log_weights=logs, tau=0.5,
                                                             dim=2).to_dict()


def test_optimum_gives_the_numbers_of_its_older_form():
    old = dgp.optimum(W7, tau=0.5, dim=2)
    new = dgp.optimum(P_W, dim=2)
    assert new.loss == old.loss and np.array_equal(new.quotient_gram, old.quotient_gram)
    by_labels = dgp.optimum(dgp.Problem(objective="supcon", labels=LABELS, tau=0.5))
    assert by_labels.loss == dgp.optimum(supcon_weights(LABELS), tau=0.5).loss
    batch = dgp.optimum(P_W, batch_size=4)
    assert batch.loss == dgp.optimum(W7, tau=0.5, batch_size=4).loss


def test_supcon_prototypes_gives_the_numbers_of_its_older_form():
    for p, old in ((P_SOFT, dict(eps=0.1, tau=0.5)), (P_BATCH, dict(tau=0.5, batch_size=4))):
        new, ref = dgp.supcon_prototypes(p), dgp.supcon_prototypes(SIZES, **old)
        assert new.loss == ref.loss and np.array_equal(new.gram, ref.gram)
    by_labels = dgp.supcon_prototypes(dgp.Problem(objective="supcon", labels=LABELS), tau=0.2)
    assert by_labels.loss == dgp.supcon_prototypes(SIZES, tau=0.2).loss


@pytest.mark.slow  # more than about 3 s (README test line <= 4 min)
def test_the_design_tools_give_the_numbers_of_their_older_forms():
    grid = {"tau": [0.3, 0.9]}
    old = dgp.phase("soft-supcon", sizes=SIZES, eps=0.1, dim=2, grid=grid)
    p = dgp.Problem(objective="soft-supcon", sizes=SIZES, eps=0.1)
    assert dgp.phase(p, dim=2, grid=grid).to_dict() == old.to_dict()
    assert dgp.phase(dgp.Problem(W=W7), dim=2, grid=grid).to_dict() == \
        dgp.phase(W=W7, dim=2, grid=grid).to_dict()
    r_old = dgp.recommend("soft-supcon", sizes=SIZES, eps=0.1, want="simplex")
    assert dgp.recommend(p, want="simplex").to_dict() == r_old.to_dict()
    f_old = dgp.loss_floors("supcon", sizes=SIZES, tau=0.5, dim=2)
    assert dgp.loss_floors(P_SUP, tau=0.5, dim=2).to_dict() == f_old.to_dict()


# ---------------------------------------------------------------------------------------------
# tol and its deprecated alias rtol
# ---------------------------------------------------------------------------------------------


def test_rtol_is_a_deprecated_alias_of_tol():
    with pytest.warns(DeprecationWarning, match="use tol"):
        old = dgp.classify(W7, tau=0.5, dim=2, rtol=1e-7)
    assert old.to_dict() == dgp.classify(W7, tau=0.5, dim=2, tol=1e-7).to_dict()
    with pytest.warns(DeprecationWarning, match="use tol"):
        dgp.recommend(P_SOFT, want="min-dim", rtol=1e-7)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dgp.classify(W7, tau=0.5, dim=2, tol=1e-7)  # no warning for tol


# ---------------------------------------------------------------------------------------------
# properties: one weighting in several forms
# ---------------------------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(sizes=st.lists(st.integers(2, 3), min_size=2, max_size=4),
       eps=st.floats(0.02, 0.9), tau=st.floats(0.05, 2.0), dim=st.integers(1, 5))
def test_labels_sizes_and_weights_give_one_verdict(sizes, eps, tau, dim):
    labels = np.repeat(np.arange(len(sizes)), sizes)
    by_labels = dgp.classify(dgp.Problem(objective="soft-supcon", labels=labels, eps=eps),
                             tau=tau, dim=dim)
    by_sizes = dgp.classify(dgp.Problem(objective="soft-supcon", sizes=sizes, eps=eps, tau=tau),
                            dim=dim)
    by_w = dgp.classify(dgp.Problem(W=soft_supcon_weights(labels, eps=eps), tau=tau), dim=dim)
    assert by_labels.to_dict() == by_sizes.to_dict()
    assert (by_w.verdict, by_w.rank) == (by_labels.verdict, by_labels.rank)


@settings(max_examples=30, deadline=None)
@given(tau=st.floats(0.01, 10.0), other=st.floats(0.01, 10.0))
def test_a_keyword_agrees_with_the_field_or_is_refused(tau, other):
    p = dgp.Problem(objective="supcon", sizes=SIZES, tau=tau)
    if other == tau:
        assert dgp.classify(p, tau=other, dim=2).tau == tau
    else:
        _raises("tau", dgp.classify, p, tau=other, dim=2)
