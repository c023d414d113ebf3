"""`dgp audit` runs the named code in a child process: timeouts, prints kept off --json
stdout, no current directory on the search path unless asked, one error line per failure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from _foreground import dgp_foreground

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

def suicide(z, y):
    import os, signal
    os.kill(os.getpid(), signal.SIGKILL)

def quits(z, y):
    import os
    os._exit(3)

for f in (chatty, hang, boom, deep, detached, suicide, quits):
    f.tau = 0.2
'''

# a CLIP-style loss with no temperature attribute (tau = 0.07 inside)
CLIP = (
    "import torch\n"
    "import torch.nn.functional as F\n"
    "def clip(a, b):\n"
    "    a, b = F.normalize(a, dim=1), F.normalize(b, dim=1)\n"
    "    logits = a @ b.T / 0.07\n"
    "    t = torch.arange(len(a))\n"
    "    return (F.cross_entropy(logits, t) + F.cross_entropy(logits.T, t)) / 2\n"
)

# the module forks; both copies raise (the fork's copy of the worker must not answer instead)
FORK_RAISE = "import os\npid = os.fork()\nraise RuntimeError(f'raised by {os.getpid()}')\n"
# the module forks a child that goes on sleeping; the module itself raises
FORK_LINGER = (
    "import os, time, pathlib\n"
    "if os.fork() == 0:\n"
    "    pathlib.Path(__file__).with_name('linger.pid').write_text(str(os.getpid()))\n"
    "    time.sleep(120)\n"
    "    os._exit(0)\n"
    "raise RuntimeError('the module raised after forking')\n"
)
# a daemon: fork, setsid() (a new session and process group), fork again, the middle one exits
DOUBLE_FORK = (
    "import os, time, pathlib, torch\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    if os.fork() == 0:\n"
    "        pathlib.Path(__file__).with_name('daemon.pid').write_text(str(os.getpid()))\n"
    "        time.sleep(120)\n"
    "    os._exit(0)\n"
    "time.sleep(0.5)  # let the daemon start\n"
    "def loss(z, y):\n"
    "    zn = torch.nn.functional.normalize(z, dim=1)\n"
    "    eye = torch.eye(len(z), dtype=torch.bool)\n"
    "    s = (zn @ zn.T / 0.2).masked_fill(eye, float('-inf'))\n"
    "    logq = torch.log_softmax(s, 1).masked_fill(eye, 0)\n"
    "    same = (y[:, None] == y[None, :]).double() - torch.eye(len(z))\n"
    "    return -((same / same.sum(1, keepdim=True)) * logq).sum()\n"
    "loss.tau = 0.2\n"
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    d = tmp_path_factory.mktemp("losses")
    (d / "audit_losses.py").write_text(LOSSES)
    (d / "broken_mod.py").write_text("raise RuntimeError('broken at import')\n")
    (d / "needs_dep.py").write_text("import some_missing_dependency_xyz\n")
    (d / "clip_mod.py").write_text(CLIP)
    (d / "fork_raise.py").write_text(FORK_RAISE)
    (d / "fork_linger.py").write_text(FORK_LINGER)
    (d / "double_fork.py").write_text(DOUBLE_FORK)
    (d / "plain_mod.py").write_text("x = 1\n\ndef hang(z, y):\n    while True:\n        pass\n"
                                    "\n\nhang.tau = 0.1\n")
    return d


# `dgp audit` in a child process (cli.process): the current directory it is started in, and
# its own child, are what these tests are about


# slow: about 5 s or more of CPU on 2 cores; it runs in the slow step of CI (-m slow)
@pytest.mark.slow
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


@pytest.mark.slow
def test_timeout_stops_a_loss_that_never_returns(modules, cli):
    proc = cli.process("audit", "plain_mod:hang", "--timeout", "2", "--path", modules,
                       timeout=120)
    assert proc.code == 1
    assert proc.err.count("\n") == 1 and "--timeout" in proc.err
    assert proc.err.startswith("error: the audit of plain_mod:hang did not finish")


@pytest.mark.parametrize(
    ("target", "status", "match"),
    [
        # each waits for a child that imports torch (~4 s): in the slow step
        pytest.param("audit_losses:boom", 1, "ZeroDivisionError: inside the loss",
                     marks=pytest.mark.slow),
        pytest.param("audit_losses:suicide", 1, "was killed by signal SIGKILL while running",
                     marks=pytest.mark.slow),
        pytest.param("audit_losses:quits", 1, "exited with status 3 while running",
                     marks=pytest.mark.slow),
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
    from dgp.cli._audit_supervisor import _BOOTSTRAP

    probe_code = _BOOTSTRAP.split("from dgp")[0] + "import os; print(os.getcwd() in sys.path)"
    cfg = json.dumps({"path": [], "dgp": os.getcwd()})
    out = subprocess.run([sys.executable, "-c", probe_code, cfg], capture_output=True,
                         text=True, cwd=modules, timeout=60)
    assert out.stdout.strip() == "False", textwrap.shorten(out.stderr, 200)


linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the audit's subreaper and /proc walk are Linux's")


# slow: about 5 s or more of CPU on 2 cores; it runs in the slow step of CI (-m slow)
@pytest.mark.slow
@linux_only
def test_a_daemonised_grandchild_does_not_outlive_the_audit(modules, cli):
    """A double fork with setsid() leaves the worker's process group and session; the audit's
    supervisor is a child subreaper, so the daemon is reparented to it and killed."""
    proc = cli.process("audit", "double_fork:loss", "--labels", "classes", "--call",
                       "embeddings", "--json", "--path", modules, timeout=120)
    assert proc.code == 0, proc.err
    assert proc.json["match"]["objective"] == "supcon"
    pid = int((modules / "daemon.pid").read_text())
    assert not _alive(pid), f"the daemonised grandchild {pid} still runs"


@pytest.mark.parametrize(("target", "match", "pidfile"), [
    ("fork_raise:loss", "RuntimeError: raised by ", None),
    ("fork_linger:loss", "RuntimeError: the module raised after forking", "linger.pid"),
])
@linux_only
def test_a_module_that_forks_then_raises_is_reported_as_its_error(modules, cli, target, match,
                                                                  pidfile):
    proc = cli.process("audit", target, "--timeout", "60", "--path", modules, timeout=120)
    assert proc.code == 1
    err = proc.err.strip().splitlines()
    assert err[-1].startswith("error: importing module") and match in err[-1], proc.err
    assert "did not finish" not in proc.err and "Traceback" not in proc.err
    if pidfile is not None:
        assert not _alive(int((modules / pidfile).read_text()))


@linux_only
def test_descendants_follow_the_parent_links():
    """The /proc walk that the supervisor kills from finds a grandchild through its parent."""
    from dgp.cli.audit import descendants

    child = subprocess.Popen([sys.executable, "-c",
                              "import subprocess, sys, time; "
                              "p = subprocess.Popen([sys.executable, '-c', "
                              "'import time; time.sleep(60)']); "
                              "print(p.pid, flush=True); time.sleep(60)"],
                             stdout=subprocess.PIPE, text=True)
    try:
        grandchild = int(child.stdout.readline())
        found = descendants(os.getpid())
        assert child.pid in found and grandchild in found
        assert descendants(grandchild) == []
    finally:
        for pid in (grandchild, child.pid):
            os.kill(pid, 9)
        child.wait()


# slow: about 5 s or more of CPU on 2 cores; it runs in the slow step of CI (-m slow)
@pytest.mark.slow
def test_a_loss_without_temperature_is_audited_with_the_estimate(modules, cli):
    """It exited 2 ("the temperature must be known; pass tau"); now the JSON has the estimate
    and the cross-view partition (CONTRACT v3)."""
    proc = cli.process("audit", "clip_mod:clip", "--json", "--path", modules, timeout=120)
    assert proc.code == 0, proc.err
    out = proc.json
    assert out["model"]["partition"] == "cross-view" and out["identified"]
    assert out["tau_source"] == "estimated" and out["tau_given"] is None
    assert abs(out["tau_estimate"] - 0.07) < 1e-3 * 0.07 and out["tau_residual"] < 1e-8
    assert {h["partition"] for h in out["hypotheses"]} >= {"all", "cross-view", "one-direction"}


def _start_hanging_audit(modules):
    """``dgp audit`` of a loss that never returns, once its supervisor and worker run: the
    process and the pids below it."""
    import time

    from dgp.cli.audit import descendants

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (os.getcwd(), os.environ.get("PYTHONPATH")) if p)}
    dgp = subprocess.Popen(dgp_foreground("audit", "plain_mod:hang", "--timeout", "120",
                                          "--path", str(modules)), env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    below: list[int] = []
    for _ in range(300):  # until the supervisor and its worker run
        below = descendants(dgp.pid)
        if len(below) >= 2:
            break
        time.sleep(0.1)
    time.sleep(1.0)  # the worker imports the module and loops in the loss
    return dgp, below


def _all_gone(pids: list[int]) -> bool:
    import time

    for _ in range(100):
        if not any(_alive(pid) for pid in pids):
            return True
        time.sleep(0.1)
    return False


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code"), [("SIGINT", 130), ("SIGTERM", 143)])
@linux_only
def test_an_interrupted_audit_exits_with_one_line_and_no_process_left(modules, sig, code):
    import signal

    dgp, below = _start_hanging_audit(modules)
    assert len(below) >= 2, "the audit did not start"
    dgp.send_signal(getattr(signal, sig))
    _, err = dgp.communicate(timeout=60)
    assert dgp.returncode == code, err
    assert err.count("\n") == 1 and err.startswith("error:") and "Traceback" not in err
    assert _all_gone(below), [p for p in below if _alive(p)]


@pytest.mark.slow
@linux_only
def test_killing_dgp_itself_stops_the_audit(modules):
    """dgp killed with SIGKILL cannot clean up: the supervisor sees its parent gone and kills
    the worker and what it started."""
    import signal

    dgp, below = _start_hanging_audit(modules)
    dgp.send_signal(signal.SIGKILL)
    dgp.wait()
    assert len(below) >= 2, "the audit did not start"
    assert _all_gone(below), [p for p in below if _alive(p)]
