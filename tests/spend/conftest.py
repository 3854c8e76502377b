import pytest

from tests.runs.toolsets import echo_toolset  # noqa: F401  (a fixture)


@pytest.fixture(autouse=True)
def no_real_model_requests():
    """No test reaches a real provider; the offline model (a FunctionModel) is not affected."""
    from pydantic_ai import models

    previous = models.ALLOW_MODEL_REQUESTS
    models.ALLOW_MODEL_REQUESTS = False
    yield
    models.ALLOW_MODEL_REQUESTS = previous


@pytest.fixture
def allow_local_model_requests(no_real_model_requests):
    """For tests against the OpenAI-compatible server they start on 127.0.0.1."""
    from pydantic_ai import models

    models.ALLOW_MODEL_REQUESTS = True
    yield
