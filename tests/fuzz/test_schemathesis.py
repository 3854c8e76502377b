"""`make fuzz`: schemathesis over the whole OpenAPI schema of a server this test starts.

The project's ASGI application runs in uvicorn against the test database (tests/runs/live.py),
with the fixed cast and a published agent so that writes have something to act on. schemathesis
reads the schema the server publishes and runs every operation as the organization's owner and
as a member, with a bounded number of examples per operation (FUZZ_MAX_EXAMPLES, default 10),
positive and negative data, and the checks below. The run fails on any 5xx, any status the
schema does not document, and any response that does not match its schema.

Marked ``fuzz``: not part of `make test` (see README.md for the figures of the last run).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from apps.orgs.choices import Role
from apps.orgs.services import api_key_create
from tests.factories import member_of
from tests.runs.factories import published_agent
from tests.runs.live import asgi_server  # noqa: F401  (fixture)

pytestmark = [pytest.mark.fuzz, pytest.mark.timeout(900)]

MAX_EXAMPLES = int(os.environ.get("FUZZ_MAX_EXAMPLES", "10"))
SEED = os.environ.get("FUZZ_SEED", "13")
# Which phases run for which operations (an operation's own phases cannot be set on the command
# line, which would also override the file's).
CONFIG = Path(__file__).with_name("schemathesis.toml")
REPORT_DIR = Path(os.environ.get("FUZZ_REPORT_DIR", ".agenticos/fuzz")).resolve()
CHECKS = ",".join(
    [
        "not_a_server_error",
        "status_code_conformance",
        "content_type_conformance",
        "response_headers_conformance",
        "response_schema_conformance",
        "negative_data_rejection",
        "missing_required_header",
        "unsupported_method",
        "ignored_auth",
        "use_after_free",
        "ensure_resource_availability",
    ]
)


@pytest.fixture
def cast(transactional_db, org):
    owner = member_of(org, Role.OWNER, "owner@acme.test")
    member = member_of(org, Role.MEMBER, "member@acme.test")
    published_agent(org, name="Helper", created_by=owner)
    keys = {}
    for role, person in (("owner", owner), ("member", member)):
        keys[role] = api_key_create(actor=None, organization=org, user=person, name="fuzz")[1]
    return keys


def _schemathesis(server: str, key: str, role: str) -> subprocess.CompletedProcess:
    REPORT_DIR.mkdir(parents=True, exist_ok=True)
    command = [
        str(Path(sys.executable).with_name("st")),
        "--config-file",
        str(CONFIG),
        "run",
        f"http://{server}/api/v1/schema/",
        "--header",
        f"Authorization: Bearer {key}",
        "--max-examples",
        str(MAX_EXAMPLES),
        "--seed",
        SEED,
        "--checks",
        CHECKS,
        "--workers",
        "1",
        "--request-timeout",
        "30",
        "--no-shrink",
        "--report",
        "junit",
        "--report-junit-path",
        str(REPORT_DIR / f"{role}.xml"),
    ]
    # Run from the report directory: schemathesis keeps its cache (.schemathesis/) in the working
    # directory, and it belongs with the reports, not in the repository.
    return subprocess.run(command, capture_output=True, text=True, timeout=840, cwd=REPORT_DIR)


@pytest.mark.parametrize("role", ["owner", "member"])
def test_the_api_survives_schemathesis(asgi_server, cast, role):  # noqa: F811
    result = _schemathesis(asgi_server, cast[role], role)
    (REPORT_DIR / f"{role}.txt").write_text(result.stdout + result.stderr)
    summary = result.stdout[-6000:]
    print(summary)
    assert result.returncode == 0, summary + result.stderr[-2000:]
