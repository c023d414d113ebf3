"""The one tolerance policy: its rank rule is relative (scale-invariant), its acceptance rule is
the one the solvers use, it has one rtol validator, it is reported, and its constants are named
in one module with a comment each."""

import ast
import inspect

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dgp
import dgp.constants
from dgp.constants import ACCEPT_FACTOR, ACCEPT_FLOOR, GRAM_RANK_RTOL
from dgp.design._common import prototype_rank
from dgp.errors import ParameterError
from dgp.objectives.spheres import fit_sphere
from dgp.tolerance import DEFAULT_POLICY, Tolerance, check_rtol
from dgp.torch._audit_limits import check_arguments


def _gram(seed: int, n: int, rank: int) -> np.ndarray:
    X = np.random.default_rng(seed).standard_normal((n, rank))
    return X @ X.T


@given(seed=st.integers(0, 2**16), rank=st.integers(1, 5),
       log_s=st.floats(-60.0, 60.0, allow_nan=False))
def test_rank_of_a_scaled_gram_is_its_rank(seed, rank, log_s):
    G = _gram(seed, 6, rank)
    lam = np.linalg.eigvalsh(G)
    assert DEFAULT_POLICY.rank(lam) == rank
    assert DEFAULT_POLICY.rank(10.0**log_s * lam) == rank


def test_rank_is_relative_where_the_old_rule_was_absolute():
    # the rule copied before, 1e-9 * max(1, top), called a Gram of scale 1e-10 rank 0
    G = 1e-10 * np.diag([1.0, 0.5, 0.0])
    lam = np.linalg.eigvalsh(G)
    assert int(np.sum(lam > 1e-9 * max(1.0, float(lam[-1])))) == 0
    assert DEFAULT_POLICY.rank(lam) == 2
    assert [prototype_rank(s * np.diag([1.0, 0.5, 0.0])) for s in (1e-12, 1.0, 1e12)] == [2, 2, 2]


def test_rank_threshold_is_gram_rtol_of_the_largest():
    top = 3.0
    just_above, just_below = 1.01 * GRAM_RANK_RTOL * top, 0.99 * GRAM_RANK_RTOL * top
    assert DEFAULT_POLICY.rank([top, just_above, just_below, 0.0, -1e-17]) == 2
    assert DEFAULT_POLICY.rank([]) == 0
    assert DEFAULT_POLICY.rank([0.0, -1e-18]) == 0
    assert Tolerance(1e-15, gram_rtol=1e-3).rank([1.0, 1e-4]) == 1


def test_experiments_embed_the_rank_the_policy_counts():
    pytest.importorskip("torch")
    from dgp.torch.experiments.scoring import gram_embedding

    G = np.diag([2.0, 1.0, 0.5, 1e-11, 0.0])
    for s in (1e-8, 1.0, 1e8):
        U = gram_embedding(s * G)
        assert U.shape == (5, DEFAULT_POLICY.rank(np.linalg.eigvalsh(s * G))) == (5, 3)
        np.testing.assert_allclose(U @ U.T, s * np.diag([2.0, 1.0, 0.5, 0.0, 0.0]), atol=1e-12 * s)


@pytest.mark.parametrize("target", [1e-14, 1e-10, 1e-8, 1e-3])
def test_acceptance_rule(target):
    bound = max(ACCEPT_FACTOR * target, ACCEPT_FLOOR)
    assert DEFAULT_POLICY.accepts(bound, target)
    assert DEFAULT_POLICY.accepts(0.0, target)
    assert not DEFAULT_POLICY.accepts(bound * (1 + 1e-12), target)


def test_solvers_have_no_acceptance_rule_of_their_own():
    import dgp.optima._api
    import dgp.prototypes._api
    import dgp.solver

    assert not hasattr(dgp.solver, "accepted")
    for mod in (dgp.prototypes._api, dgp.optima._api):
        assert "DEFAULT_POLICY.accepts(" in inspect.getsource(mod)


@pytest.mark.parametrize("bad", [0.0, 1.0, -1e-3, 2, "1e-6", None, True, float("nan")])
def test_one_rtol_validator(bad):
    messages = set()
    for call in (lambda: Tolerance.make(bad), lambda: check_rtol(bad),
                 lambda: fit_sphere([[0.0, 1.0], [1.0, 0.0], [0.0, -1.0]], rtol=bad),
                 lambda: check_arguments(n=8, probes=3, match_rtol=bad),
                 lambda: dgp.classify(np.ones((3, 3)) - np.eye(3), tau=0.5, dim=2, rtol=bad)):
        with pytest.raises(ParameterError, match="must be a number in \\(0, 1\\)") as info:
            call()
        messages.add(str(info.value).split(" ", 1)[1])
    assert len(messages) == 1  # the same words wherever an rtol is given
    assert check_rtol(1e-6, "match_rtol") == 1e-6


def test_policy_is_reported_and_scale_free():
    W = np.array([[0.0, 2.0, 1.0], [2.0, 0.0, 3.0], [1.0, 3.0, 0.0]])
    a, b = dgp.classify(W, tau=0.5, dim=2), dgp.classify(1e-200 * W, tau=0.5, dim=2)
    tol = a.to_dict()["tolerance"]
    assert tol["gram_rtol"] == GRAM_RANK_RTOL
    assert tol["accept"] == [ACCEPT_FACTOR, ACCEPT_FLOOR]
    assert tol == b.to_dict()["tolerance"]
    assert (a.verdict, a.rank) == (b.verdict, b.rank)


def test_one_home_of_the_policy():
    import importlib

    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("dgp.engine.tolerance")


def test_every_constant_is_named_with_a_comment():
    source = inspect.getsource(dgp.constants)
    lines = source.splitlines()
    names = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign):
            (target,) = node.targets
            assert isinstance(target, ast.Name) and target.id.isupper(), target
            assert lines[node.lineno - 2].startswith("#: "), f"{target.id} has no #: comment"
            names.append(target.id)
    assert len(names) == len(set(names)) >= 40
