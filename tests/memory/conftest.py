from tests.runs.conftest import celery_worker  # noqa: F401  (a fixture)
