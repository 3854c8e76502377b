"""The benchmarks reuse the test factories (tests/), which live beside the installed packages."""

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parent.parent)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

# The suite's own test-database teardown (stray connections closed before the drop), so a
# benchmark's live server or worker thread does not leave its database behind.
from tests.conftest import django_db_setup  # noqa: E402,F401
