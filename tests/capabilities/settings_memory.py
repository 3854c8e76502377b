"""Test settings with the memory app installed, until the lead adds it to INSTALLED_APPS.

Run: DJANGO_SETTINGS_MODULE=tests.capabilities.settings_memory pytest tests/capabilities
(delete this module and urls_memory.py once ``apps.memory`` and its API include are in the real
settings and urls).
"""

from agenticos.settings.test import *  # noqa: F401,F403
from agenticos.settings.test import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "apps.memory"]
ROOT_URLCONF = "tests.capabilities.urls_memory"
