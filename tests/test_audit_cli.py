"""`dgp audit` runs the named code in a child process: timeouts, prints kept off --json
stdout, no current directory on the search path unless asked, one error line per failure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from dgp.cli.audit import UserCodeError, load_callable

pytest.importorskip("torch")
pytestmark = pytest.mark.torch

LOSSES = '''
import torch

def _supcon(z, y):
    zn = torch.nn.functional.normalize(z, dim=1)
    s = (zn @ zn.T / 0.2).masked_fill(torch.eye(len(z), dtype=torch.bool), float("-inf"))
    logq = torch.log_softmax(s, 1).masked_fill(torch.eye(len(z), dtype=torch.bool), 0)
    same = (y[:, None] == y[None, :]).double() - torch.eye(len(z))
    return -((same / same.sum(1, keepdim=True)) * logq).sum()

def chatty(z, y):
    print("hello from the loss")
    return _supcon(z, y)

def hang(z, y):
    while True:
        pass

def boom(z, y):
    raise ZeroDivisionError("inside the loss")

def deep(z, y):
    return deep(z, y)

def detached(z, y):
    return torch.tensor(float(z.sum()))

for f in (chatty, hang, boom, deep, detached):
    f.tau = 0.2
'''


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    d = tmp_path_factory.mktemp("losses")
    (d / "audit_losses.py").write_text(LOSSES)
    (d / "broken_mod.py").write_text("raise RuntimeError('broken at import')\n")
    (d / "needs_dep.py").write_text("import some_missing_dependency_xyz\n")
    (d / "plain_mod.py").write_text("x = 1\n\ndef hang(z, y):\n    while True:\n        pass\n"
                                    "\n\nhang.tau = 0.1\n")
    return d


# `dgp audit` in a child process (cli.process): the current directory it is started in, and
# its own child, are what these tests are about


def test_current_directory_only_with_path_and_prints_off_json_stdout(modules, cli):
    proc = cli.process("audit", "audit_losses:chatty", "--labels", "classes", cwd=modules,
                       timeout=120)
    assert proc.code == 2
    assert proc.err.startswith("error: cannot import module 'audit_losses'")
    assert proc.err.count("\n") == 1 and "--path" in proc.err
    ok = cli.process("audit", "audit_losses:chatty", "--labels", "classes", "--json", "--path",
                     ".", cwd=modules, timeout=120)
    assert ok.code == 0, ok.err
    out = ok.json  # one object: the loss's print went to stderr
    assert out["match"]["objective"] == "supcon" and out["labels"] == "classes"
    assert "hello from the loss" in ok.err


def test_timeout_stops_a_loss_that_never_returns(modules, cli):
    proc = cli.process("audit", "plain_mod:hang", "--timeout", "2", "--path", modules,
                       timeout=120)
    assert proc.code == 1
    assert proc.err.count("\n") == 1 and "--timeout" in proc.err
    assert proc.err.startswith("error: the audit of plain_mod:hang did not finish")


@pytest.mark.parametrize(
    ("target", "status", "match"),
    [
        ("audit_losses:boom", 1, "ZeroDivisionError: inside the loss"),
        ("broken_mod:loss", 1, "failed inside it: RuntimeError: broken at import"),
        ("no_such_module_xyz:loss", 2, "cannot import module"),
    ],
)
def test_failures_are_one_error_line(modules, target, status, match, cli):
    proc = cli.process("audit", target, "--labels", "continuous", "--call", "embeddings",
                       "--path", modules, timeout=120)
    assert proc.code == status, proc.err
    err = proc.err.strip().splitlines()
    assert err[-1].startswith("error:") and match in err[-1]
    assert "Traceback" not in proc.err


@pytest.mark.parametrize(
    ("target", "error", "match"),
    [
        ("broken_mod:loss", UserCodeError, "failed inside it: RuntimeError: broken at import"),
        ("needs_dep:loss", UserCodeError, "needs 'some_missing_dependency_xyz'"),
        ("no_such_module_xyz:loss", ValueError, "cannot import module"),
        ("plain_mod:nope", ValueError, "no attribute"),
        ("plain_mod:x", ValueError, "not callable"),
    ],
)
def test_load_callable_tells_user_failures_from_bad_input(modules, monkeypatch, target, error,
                                                          match):
    """User-code failures (exit 1) and bad input (exit 2), as the child classifies them."""
    monkeypatch.syspath_prepend(str(modules))
    with pytest.raises(error, match=match):
        load_callable(target)


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--timeout", "0"], "--timeout"),
        (["--labels", "missing_labels.npy"], "labels"),
        (["--path", "/no/such/folder"], "--path"),
        (["bad target"], "MODULE:CALLABLE"),
    ],
)
def test_bad_input_is_refused_before_running_anything(argv, match, cli, monkeypatch):
    monkeypatch.setenv("DGP_MEMORY_LIMIT", "1G")
    target, argv = (argv[0], []) if argv == ["bad target"] else ("audit_losses:chatty", argv)
    r = cli("audit", target, *argv)
    assert r.code == 2
    assert r.err.startswith("error:") and r.err.count("\n") == 1 and match in r.err


def test_probe_memory_is_refused_before_the_module_runs(modules, cli):
    """`--n 100000` was a MemoryError traceback: now one line saying what fits, and the
    module (which would print) is never imported."""
    proc = cli.process("audit", "audit_losses:chatty", "--n", "100000", "--path", modules,
                       env={"DGP_MEMORY_LIMIT": "1G"}, timeout=120)
    assert proc.code == 2
    assert proc.err.startswith("error: the audit probes at N = 100000")
    assert "samples fit" in proc.err and proc.err.count("\n") == 1


def test_help_says_it_runs_the_code(cli):
    r = cli("audit", "--help")
    assert r.code == 0
    text = " ".join(r.out.split())
    assert "IMPORTS AND RUNS the named module" in text and "--timeout" in text


def test_worker_is_not_given_the_current_directory(modules, monkeypatch):
    """The bootstrap drops sys.path[0] (the current directory of `python -c`)."""
    from dgp.cli.audit import _BOOTSTRAP

    probe_code = _BOOTSTRAP.split("from dgp")[0] + "import os; print(os.getcwd() in sys.path)"
    cfg = json.dumps({"path": [], "dgp": os.getcwd()})
    out = subprocess.run([sys.executable, "-c", probe_code, cfg], capture_output=True,
                         text=True, cwd=modules, timeout=60)
    assert out.stdout.strip() == "False", textwrap.shorten(out.stderr, 200)
