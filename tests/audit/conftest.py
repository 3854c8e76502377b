"""Fixtures of the audit tests: checkpoints in a temporary directory, the impersonation
middleware and the audit routes switched on until the lead wires them into settings/urls."""

import pytest

MIDDLEWARE_PATH = "apps.audit.middleware.ImpersonationMiddleware"


@pytest.fixture(autouse=True)
def checkpoint_dir(settings, tmp_path):
    settings.AUDIT_CHECKPOINT_DIR = tmp_path / "audit-checkpoints"
    settings.AUDIT_CHECKPOINT_KEY = "test-checkpoint-key-0123456789abcdef"
    return settings.AUDIT_CHECKPOINT_DIR


@pytest.fixture(autouse=True)
def audit_wiring(settings):
    if MIDDLEWARE_PATH not in settings.MIDDLEWARE:
        middleware = list(settings.MIDDLEWARE)
        # After authentication (it reads the signed-in admin), before the organization is chosen
        # (which must be chosen for the account being acted as).
        middleware.insert(
            middleware.index("django.contrib.auth.middleware.AuthenticationMiddleware") + 1,
            MIDDLEWARE_PATH,
        )
        settings.MIDDLEWARE = middleware
    settings.ROOT_URLCONF = "tests.audit.urls"
