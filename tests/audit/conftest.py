"""Fixtures of the audit tests: checkpoints in a temporary directory and a stand-in route for the
endpoints that must refuse impersonation."""

import pytest


@pytest.fixture(autouse=True)
def checkpoint_dir(settings, tmp_path):
    settings.AUDIT_CHECKPOINT_DIR = tmp_path / "audit-checkpoints"
    settings.AUDIT_CHECKPOINT_KEY = "test-checkpoint-key-0123456789abcdef"
    return settings.AUDIT_CHECKPOINT_DIR


@pytest.fixture(autouse=True)
def stand_in_routes(settings):
    # The project's routes plus a stand-in for the credential-pinning endpoints (tests/audit/urls.py).
    settings.ROOT_URLCONF = "tests.audit.urls"
