"""``phase --scheduler``: an address where no Dask scheduler answers is bad input (exit 2)
named before the work, whatever answers there: nothing, an HTTP server (whose reply Dask would
read as a frame length of exabytes), a server that closes at once or one that accepts and never
answers (connect and handshake have a timeout); a scheme nothing else can reach (``local://``,
``inproc://``) is refused too."""

from __future__ import annotations

import socket
import threading
import time

import numpy as np
import pytest

pytest.importorskip("distributed")

ARGV = ("phase", "--objective", "y-aware", "--labels", "y.csv", "--sigma", "1", "--grid",
        "tau=0.5,1", "--dim", "2", "--scheduler")


def _server(mode: str) -> int:
    """A local TCP server of the given kind, in a daemon thread; its port."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    kept = []

    def serve():
        while True:
            c, _ = s.accept()
            kept.append(c)
            if mode == "http":
                c.settimeout(2)
                try:
                    c.recv(65536)
                except OSError:
                    pass
                c.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n" + b"x" * 64)
                c.close()
            elif mode == "close":
                c.close()
            elif mode == "short":  # a few bytes, too few for a frame header, then nothing
                c.sendall(b"\x01\x00\x00")
                c.close()

    threading.Thread(target=serve, daemon=True).start()
    return s.getsockname()[1]


@pytest.fixture
def labels(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    np.savetxt("y.csv", np.random.default_rng(0).standard_normal(8))
    monkeypatch.setattr("dgp.cli.phase.SCHEDULER_TIMEOUT_S", 1.0)


@pytest.mark.parametrize("mode", ["http", "close", "short", "silent"])
def test_a_server_that_is_not_a_scheduler_is_exit_2(labels, cli, mode):
    port = _server(mode)
    start = time.monotonic()
    r = cli(*ARGV, f"tcp://127.0.0.1:{port}")
    assert time.monotonic() - start < 30
    assert r.code == 2 and r.out == "" and r.err.count("\n") == 1, r.err
    assert r.err.startswith(f"error: --scheduler 'tcp://127.0.0.1:{port}': no Dask scheduler "
                            "answers there")
    assert "internal error" not in r.err and "EiB" not in r.err


def test_nothing_listening_is_refused_at_once(labels, cli):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    r = cli(*ARGV, f"tcp://127.0.0.1:{port}")
    assert r.code == 2 and "Connection refused" in r.err, r.err


@pytest.mark.parametrize("address", ["local://", "inproc://x", "ucx://1.2.3.4:5", "tcp://host",
                                     "nowhere", "tcp://:80"])
def test_an_address_of_another_kind_is_exit_2(labels, cli, address):
    r = cli(*ARGV, address)
    assert r.code == 2 and r.err.startswith(f"error: --scheduler {address!r}: give 'local'"), r.err
