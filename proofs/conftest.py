"""pytest collects the theorem modules ``tNN_*.py`` of this package (not only ``test_*.py``)."""

import re

import pytest

_THEOREM_FILE = re.compile(r"^t\d\d_\w+\.py$")


def pytest_collect_file(file_path, parent):
    # a file named on the command line is collected by pytest itself
    if _THEOREM_FILE.match(file_path.name) and not parent.session.isinitpath(file_path):
        return pytest.Module.from_parent(parent, path=file_path)
    return None
