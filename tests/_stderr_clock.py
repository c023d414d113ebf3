"""A stderr that records when each line arrives, and the durations the estimates print: what the
time-estimate tests read (``tests/test_batch_time_estimate.py``,
``tests/test_bound_time_estimate.py``)."""

from __future__ import annotations

import re
import time


class ClockedStderr:
    """A stderr that records ``(time.monotonic(), line)`` for each non-empty line written."""

    def __init__(self):
        self.lines: list[tuple[float, str]] = []

    def write(self, text: str) -> int:
        for line in text.splitlines():
            if line.strip():
                self.lines.append((time.monotonic(), line))
        return len(text)

    def flush(self) -> None:
        pass


def said_seconds(text: str) -> float:
    """Seconds of a printed duration (``"12 s"``, ``"2.5 min"``)."""
    value, unit = re.fullmatch(r"(\d+(?:\.\d+)?) (s|min)", text).groups()
    return float(value) * (60.0 if unit == "min" else 1.0)
