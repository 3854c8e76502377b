"""A chat platform's webhook body over the limit is a JSON 413 — also past Django's own
DATA_UPLOAD_MAX_MEMORY_SIZE, where Django used to answer its HTML 400 page (issue 32, item 10).
The size is checked before the binding is looked up, so no binding is needed here."""

from __future__ import annotations

import pytest
from django.test import Client, override_settings

from apps.channels.views import MAX_BODY_BYTES

PATHS = [
    "/channels/slack/1/events/",
    "/channels/telegram/1/webhook/",
    "/channels/mattermost/1/webhook/",
]


@pytest.mark.django_db
@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=MAX_BODY_BYTES * 2)
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    "size", [MAX_BODY_BYTES + 1, MAX_BODY_BYTES * 2 + 1], ids=["over ours", "over django"]
)
def test_a_webhook_body_over_the_limit_is_a_json_413(path, size):
    response = Client().post(path, data=b"{" + b" " * size + b"}", content_type="application/json")
    assert response.status_code == 413
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": f"At most {MAX_BODY_BYTES} bytes."}
