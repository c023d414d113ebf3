"""`dgp audit` contains what the audited module does to its own processes and files: killing
its process group, its supervisor, deleting the audit's folder, shadowing a module dgp imports,
dying by a real-time signal. Each is one error line (exit 1: the audited code's failure), said
as it happened (never a false timeout), with no traceback and no process left behind.

The modules misbehave when imported, so torch is not needed."""

from __future__ import annotations

import os
import sys
import time

import pytest

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the audit's subreaper and /proc walk are Linux's")

KILL_GROUP = "import os, signal\nos.killpg(0, signal.SIGKILL)\n"
DELETE_FOLDER = ("import os, shutil, sys\nshutil.rmtree(os.path.dirname(sys.argv[2]))\n"
                 "raise RuntimeError('the module deleted the audit folder')\n")
SHADOW = "raise RuntimeError('the user argparse.py was imported')\n"
USES_ARGPARSE = ("import argparse\nraise RuntimeError('module ran with argparse from '"
                 " + ('user' if 'mods' in argparse.__file__ else 'stdlib'))\n")
REALTIME = "import os\nos.kill(os.getpid(), 40)\nimport time\ntime.sleep(30)\n"
DAEMON_KILLS_SUPERVISOR = (
    "import os, signal, time, pathlib\n"
    "here = pathlib.Path(__file__).with_name('daemon.pid')\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    if os.fork() == 0:\n"
    "        here.write_text(str(os.getpid()))\n"
    "        time.sleep(120)\n"
    "    os._exit(0)\n"
    "for _ in range(200):\n"
    "    if here.exists() and here.read_text():\n"
    "        break\n"
    "    time.sleep(0.01)\n"
    "os.kill(os.getppid(), signal.SIGKILL)  # the supervisor\n"
    "time.sleep(60)\n"
)


@pytest.fixture
def mods(tmp_path):
    d = tmp_path / "mods"
    d.mkdir()
    for name, text in (("kill_group", KILL_GROUP), ("delete_folder", DELETE_FOLDER),
                       ("argparse", SHADOW), ("uses_argparse", USES_ARGPARSE),
                       ("realtime", REALTIME), ("daemon_kills", DAEMON_KILLS_SUPERVISOR)):
        (d / f"{name}.py").write_text(text)
    return d


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _audit(cli, mods, target):
    start = time.monotonic()
    r = cli("audit", target, "--timeout", "60", "--path", str(mods))
    took = time.monotonic() - start
    assert r.code == 1 and r.out == "", r.err
    assert r.err.startswith("error: ") and r.err.count("\n") == 1, r.err
    assert "Traceback" not in r.err and "did not finish" not in r.err, r.err
    assert took < 40, took
    return r.err


@linux_only
def test_killing_its_process_group_kills_only_the_worker(cli, mods):
    err = _audit(cli, mods, "kill_group:loss")
    assert "the audit process was killed by signal SIGKILL while running kill_group:loss" in err


@linux_only
def test_deleting_the_audit_folder_is_said(cli, mods):
    err = _audit(cli, mods, "delete_folder:loss")
    assert "working folder was deleted while running delete_folder:loss" in err


@linux_only
def test_a_module_named_like_one_dgp_imports_shadows_nothing_of_dgp(cli, mods):
    err = _audit(cli, mods, "uses_argparse:loss")
    assert "module ran with argparse from stdlib" in err


@linux_only
def test_a_real_time_signal_is_named(cli, mods):
    err = _audit(cli, mods, "realtime:loss")
    assert "was killed by signal SIGRTMIN+" in err and "(40)" in err


@linux_only
def test_a_daemon_does_not_outlive_a_killed_supervisor(cli, mods):
    err = _audit(cli, mods, "daemon_kills:loss")
    assert "supervisor was killed by signal SIGKILL while running daemon_kills:loss" in err
    pid = int((mods / "daemon.pid").read_text())
    for _ in range(100):
        if not _alive(pid):
            break
        time.sleep(0.05)
    assert not _alive(pid), f"the daemon {pid} outlived the audit"
