"""A signed event starts one run, once: replays are keyed on what the signature covers, and only
one header form (``sha256=<64 lower-case hex>``) is accepted (issue 32, item 3).

A replay of a signature that verifies is a 409 (the sender learns nothing it did not know); a
signature header in any other form is the 403 of a bad signature. Neither creates a run or a fire.
"""

from __future__ import annotations

import json
import time

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from apps.runs.models import Run
from apps.triggers.models import TriggerFire
from apps.triggers.signing import sign, sign_github

BODY = json.dumps({"action": "opened", "issue": {"number": 7}}).encode()


def post_event(trigger_id, body=BODY, **headers):
    return APIClient().post(
        f"/api/v1/triggers/{trigger_id}/events/",
        data=body,
        content_type="application/json",
        **headers,
    )


@pytest.fixture
def event(org, builder, agent, client_for):
    response = client_for(builder, org).post(
        "/api/v1/triggers/",
        {"agent_id": agent.pk, "kind": "event", "name": "Issues", "prompt": "Triage this issue"},
        format="json",
    )
    assert response.status_code == 201, response.content
    return response.json()


def github(secret, **extra):
    return {"HTTP_X_HUB_SIGNATURE_256": sign_github(secret, BODY), **extra}


def ours(secret, timestamp):
    return {
        "HTTP_X_AGENTICOS_SIGNATURE": sign(secret, BODY, timestamp),
        "HTTP_X_AGENTICOS_TIMESTAMP": str(timestamp),
    }


def without_prefix(headers, name):
    return {**headers, name: headers[name].removeprefix("sha256=")}


def started_runs():
    return Run.objects.count(), TriggerFire.objects.count()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("replay", "status"),
    [
        pytest.param(
            lambda s: github(s, HTTP_X_GITHUB_DELIVERY="another-guid"), 409, id="new delivery id"
        ),
        pytest.param(lambda s: github(s), 409, id="no delivery id"),
        pytest.param(
            lambda s: github(s, HTTP_X_GITHUB_DELIVERY="first-guid"), 409, id="same delivery id"
        ),
        pytest.param(
            lambda s: without_prefix(github(s), "HTTP_X_HUB_SIGNATURE_256"), 403, id="no prefix"
        ),
        pytest.param(
            lambda s: {"HTTP_X_HUB_SIGNATURE_256": sign_github(s, BODY).upper()},
            403,
            id="upper case",
        ),
        pytest.param(
            lambda s: {"HTTP_X_HUB_SIGNATURE_256": " " + sign_github(s, BODY)},
            403,
            id="padded",
        ),
    ],
)
def test_a_github_event_starts_one_run_however_its_replay_is_dressed(event, replay, status):
    first = post_event(event["id"], **github(event["secret"], HTTP_X_GITHUB_DELIVERY="first-guid"))
    assert first.status_code == 202, first.content
    again = post_event(event["id"], **replay(event["secret"]))
    assert again.status_code == status, again.content
    assert started_runs() == (1, 1)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("replay", "status"),
    [
        pytest.param(lambda headers: headers, 409, id="same request"),
        pytest.param(
            lambda headers: without_prefix(headers, "HTTP_X_AGENTICOS_SIGNATURE"),
            403,
            id="no prefix",
        ),
        pytest.param(
            lambda headers: {
                **headers,
                "HTTP_X_AGENTICOS_SIGNATURE": headers["HTTP_X_AGENTICOS_SIGNATURE"].upper(),
            },
            403,
            id="upper case",
        ),
        pytest.param(
            lambda headers: {
                **headers,
                "HTTP_X_AGENTICOS_TIMESTAMP": "0" + headers["HTTP_X_AGENTICOS_TIMESTAMP"],
            },
            403,
            id="timestamp respelled",
        ),
    ],
)
def test_an_agenticos_event_replayed_inside_its_window_is_refused(event, replay, status):
    headers = ours(event["secret"], int(time.time()))
    assert post_event(event["id"], **headers).status_code == 202
    again = post_event(event["id"], **replay(headers))
    assert again.status_code == status, again.content
    assert started_runs() == (1, 1)


@pytest.mark.django_db
def test_the_first_delivery_of_each_distinct_event_is_accepted(event):
    now = int(time.time())
    assert post_event(event["id"], **ours(event["secret"], now)).status_code == 202
    # A second event with the same body, signed at another second, is another event.
    assert post_event(event["id"], **ours(event["secret"], now - 1)).status_code == 202
    assert post_event(event["id"], **github(event["secret"])).status_code == 202
    other = json.dumps({"action": "closed"}).encode()
    signed_other = {"HTTP_X_HUB_SIGNATURE_256": sign_github(event["secret"], other)}
    assert post_event(event["id"], body=other, **signed_other).status_code == 202
    assert started_runs() == (4, 4)


@pytest.mark.django_db
def test_the_replay_key_is_the_signatures_digest_not_a_header(event):
    post_event(event["id"], **github(event["secret"], HTTP_X_GITHUB_DELIVERY="guid-1"))
    fire = TriggerFire.objects.get()
    assert fire.delivery_id.startswith("gh:") and "guid-1" not in fire.delivery_id
    assert sign_github(event["secret"], BODY) not in fire.delivery_id


@pytest.mark.django_db
@override_settings(TRIGGER_EVENT_MAX_BYTES=64 * 1024, DATA_UPLOAD_MAX_MEMORY_SIZE=128 * 1024)
@pytest.mark.parametrize("size", [64 * 1024 + 1, 128 * 1024 + 1], ids=["over event", "over django"])
def test_a_body_over_the_limit_is_a_json_413(event, size):
    body = b"x" * size
    response = post_event(
        event["id"], body=body, HTTP_X_HUB_SIGNATURE_256=sign_github(event["secret"], body)
    )
    assert response.status_code == 413
    assert response["Content-Type"] == "application/json"
    assert "at most 65536 bytes" in response.json()["detail"]
    assert started_runs() == (0, 0)
