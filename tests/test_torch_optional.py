"""`import dgp` and dgp.torch work without torch; using the backend names the torch extra."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import dgp.torch


def _run_without_torch(code: str) -> subprocess.CompletedProcess:
    prelude = "import sys\nsys.modules['torch'] = None  # simulate torch not installed\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_import_dgp_without_torch():
    proc = _run_without_torch(
        """
        import dgp, dgp.metrics, dgp.torch
        assert dgp.torch.is_available() is False
        import numpy as np
        assert abs(dgp.metrics.procrustes_r2(np.eye(3), np.eye(3)) - 1.0) < 1e-12
        print("ok")
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_backend_raises_import_error_naming_extra():
    proc = _run_without_torch(
        """
        import dgp.torch
        from dgp.torch import TorchUnavailableError
        for attempt in (lambda: dgp.torch.SupConLoss, lambda: __import__("dgp.torch.losses")):
            try:
                attempt()
            except TorchUnavailableError as exc:
                assert isinstance(exc, ImportError)
                assert 'pip install "dgp-contrastive[torch]"' in str(exc), str(exc)
            else:
                raise SystemExit("no ImportError")
        print("ok")
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_cli_verify_without_torch_is_one_error_line():
    proc = _run_without_torch(
        """
        from dgp.cli import main
        raise SystemExit(main(["verify", "supcon-imbalance", "--quick"]))
        """
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("error:") and proc.stderr.count("\n") == 1
    assert "dgp-contrastive[torch]" in proc.stderr


def test_is_available_is_bool():
    assert isinstance(dgp.torch.is_available(), bool)


def test_cli_audit_checks_input_without_torch():
    """The parent of `dgp audit` never imports torch: bad input is refused without it."""
    proc = _run_without_torch(
        """
        from dgp.cli import main
        raise SystemExit(main(["audit", "not a target"]))
        """
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("error:") and "MODULE:CALLABLE" in proc.stderr
