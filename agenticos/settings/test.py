"""The pytest suite: the same real PostgreSQL and Redis, faster password hashing."""

import os

from .base import *  # noqa: F401,F403
from .base import DATABASES

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
# One test database per pytest process: two suites on one server (a developer's and CI's, or two
# engineers') must not drop each other's database mid-run.
DATABASES["default"]["TEST"] = {"NAME": f"test_{DATABASES['default']['NAME']}_{os.getpid()}"}
