"""The pytest suite: the same real PostgreSQL and Redis, faster password hashing."""

import os
import tempfile
import time
from pathlib import Path

from .base import *  # noqa: F401,F403
from .base import DATABASES
from .env import env_int

# A worker process a test starts (tests/runs/worker.py) serves that pytest process: its test
# database and its frame keys, named after the suite's process id instead of its own.
_SERVED_SUITE = env_int("AGENTICOS_SERVED_SUITE_PID", 0, minimum=0)
_SUITE_PID = _SERVED_SUITE or os.getpid()

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
# One test database per pytest process: two suites on one server (a developer's and CI's, or two
# engineers') must not drop each other's database mid-run.
DATABASES["default"]["TEST"] = {"NAME": f"test_{DATABASES['default']['NAME']}_{_SUITE_PID}"}
if _SERVED_SUITE:
    DATABASES["default"]["NAME"] = DATABASES["default"]["TEST"]["NAME"]
# Run ids restart at 1 in every test database: each pytest process keys its run frames apart
# (apps/runs/events.py), so two suites on one Redis never replay each other's streams.
RUN_FRAMES_KEY_PREFIX = f"agenticos-test-{_SUITE_PID}"
# Rate limits the suite cannot trip by accident (tests of the limits lower them for themselves),
# kept apart per process so two suites on one Redis never share a count.
API_RATE_LIMIT = "100000/minute"
API_ANON_RATE_LIMIT = "100000/minute"
API_KEY_FAILURE_LIMIT = 100000
THROTTLE_KEY_PREFIX = f"agenticos-test-{_SUITE_PID}-{int(time.time())}"
# Stored media (apps/capabilities/tools/media.py) per suite process, never in the data directory;
# a worker serving the suite shares its directory.
MEDIA_ROOT = Path(tempfile.gettempdir()) / f"agenticos-test-media-{_SUITE_PID}"
# The suite's fake model providers, MCP servers, chat platforms and mem0 listen on 127.0.0.1: the
# suite lists that address the way an operator lists a self-hosted model (OUTBOUND_ALLOW). A test
# of a refusal empties the list for itself (tests/outbound).
OUTBOUND_ALLOW = ("127.0.0.1",)
