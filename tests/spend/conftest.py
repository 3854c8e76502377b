"""Fixtures the spend tests share with the runner's."""

from tests.runs.toolsets import echo_toolset  # noqa: F401  (a fixture)
