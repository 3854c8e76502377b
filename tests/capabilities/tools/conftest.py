"""Fixtures the tool tests share: the harmless echo toolset and the large-result one."""

from tests.runs.toolsets import echo_toolset  # noqa: F401  (fixture)

from .big_toolset import big_toolset  # noqa: F401  (fixture)
