"""The pytest suite: the same real PostgreSQL and Redis, faster password hashing.

`agenticos test` runs the suite in parallel (pytest-xdist, docs/testing.md): every xdist worker is
its own pytest process and evaluates this module itself, so everything below that is "per suite
process" is also per worker. What the workers share is one PostgreSQL server and one Redis
server, started once by `agenticos test`.
"""

import os
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from .base import *  # noqa: F401,F403
from .base import DATABASES, REDIS_URL
from .env import env_int, env_str

# A worker process a test starts (tests/runs/worker.py) serves that pytest process: its test
# database and its frame keys, named after the suite's process id instead of its own.
_SERVED_SUITE = env_int("AGENTICOS_SERVED_SUITE_PID", 0, minimum=0)
_SUITE_PID = _SERVED_SUITE or os.getpid()
# "gw0", "gw1"... in an xdist worker (and in any process such a worker starts: the variable is
# inherited), empty in a suite that runs in one process.
XDIST_WORKER = env_str("PYTEST_XDIST_WORKER", "")

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
# One test database per pytest process: two suites on one server (a developer's and CI's, or two
# engineers') must not drop each other's database mid-run.
DATABASES["default"]["TEST"] = {"NAME": f"test_{DATABASES['default']['NAME']}_{_SUITE_PID}"}
# Copied from the migrated template `agenticos test` keeps (agenticos/testrun.py), not migrated
# once more in every worker. Unset (pytest started some other way), Django migrates as usual.
_TEMPLATE = env_str("AGENTICOS_TEST_TEMPLATE", "")
if _TEMPLATE:
    DATABASES["default"]["TEST"]["TEMPLATE"] = _TEMPLATE
if _SERVED_SUITE:
    # pytest-django appends the xdist worker id to the test database's name; a process serving
    # that worker must open the same database.
    DATABASES["default"]["NAME"] = DATABASES["default"]["TEST"]["NAME"] + (
        f"_{XDIST_WORKER}" if XDIST_WORKER else ""
    )


def _redis_database_of_worker(url: str, worker: str) -> str:
    """xdist worker gwN uses Redis database N+1 of the shared server (database 0 stays the
    single-process suite's): the cache, the channel layer's groups, Celery's default queue and
    the chat channels' sender limits then never meet another worker's, whose run ids, user ids
    and group names start at 1 too."""
    index = int(worker.removeprefix("gw")) + 1
    if index > 15:
        raise RuntimeError(f"{worker}: Redis has 16 databases; run the suite with at most 15")
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{index}"))


if XDIST_WORKER and urlsplit(REDIS_URL).scheme in {"redis", "rediss"}:
    REDIS_URL = _redis_database_of_worker(REDIS_URL, XDIST_WORKER)
    CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}
    }
    CELERY_BROKER_URL = REDIS_URL
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        # Group names (`run-1`) repeat in every test database; the prefix keeps two suites (or
        # two workers) on one Redis from hearing each other's frames.
        "CONFIG": {"hosts": [REDIS_URL], "prefix": f"asgi-test-{_SUITE_PID}"},
    }
}
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
