"""Settings package: `base` for every environment, `test` for the pytest suite."""

from .base import *  # noqa: F401,F403
