"""Zero weights (the procedure lives in :mod:`dgp.engine.zeros._components` for now)."""

from dgp.engine.zeros._components import *  # noqa: F403
from dgp.engine.zeros._components import __all__  # noqa: F401
