"""media ("Images out of history") through the real runner: a tool returns an image (a
``BinaryContent``) or a large text, the booked transcript keeps a ``media+sha256://`` reference
and the bytes go to the default storage under ``media/<org>/<conversation>/<digest>``; the next
turn's model (a scripted FunctionModel) reads the original bytes back, whether or not the agent
still binds the capability; a blob that is gone is a placeholder; a storage that cannot be
written keeps the bytes inline."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest
from django.core.files.storage import default_storage
from pydantic_ai import BinaryContent, ImageUrl
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolReturnPart,
)
from pydantic_ai.toolsets import FunctionToolset

from apps.agents.models import AgentVersion
from apps.capabilities.implementations import register_toolset, toolset_builder, unregister_toolset
from apps.capabilities.tools import media
from apps.runs import selectors
from apps.runs.models import Conversation, Run
from apps.runs.runner import execute_run
from apps.runs.transcript import chat_turns
from tests.runs.factories import published_agent, queued_run

from .scripted import drive_scripted

pytestmark = pytest.mark.django_db

PICTURE = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 160  # 40,968 bytes
DIGEST = hashlib.sha256(PICTURE).hexdigest()
LOGO_URL = "https://example.com/logo.png"
TOOLS_CAPABILITY = "planning"


def build_picture_toolset(binding, context) -> FunctionToolset:
    toolset = FunctionToolset(id=f"test-picture-{context.run_id}")

    @toolset.tool_plain
    def picture() -> BinaryContent:
        """A screenshot."""
        return BinaryContent(data=PICTURE, media_type="image/png")

    @toolset.tool_plain
    def logo() -> ImageUrl:
        """The company's logo, by URL."""
        return ImageUrl(url=LOGO_URL)

    @toolset.tool_plain
    def report(lines: int) -> str:
        """A long report."""
        return "\n".join(f"line {n:05d} of the quarterly report" for n in range(lines))

    return toolset


@pytest.fixture
def picture_tools(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "storage"
    previous = toolset_builder(TOOLS_CAPABILITY)
    register_toolset(TOOLS_CAPABILITY, build_picture_toolset)
    yield TOOLS_CAPABILITY
    if previous is None:
        unregister_toolset(TOOLS_CAPABILITY)
    else:
        register_toolset(TOOLS_CAPABILITY, previous)


def media_agent(org, threshold=1024, **spec):
    return published_agent(
        org,
        capabilities=[
            {"id": TOOLS_CAPABILITY},
            {"id": "media", "config": {"threshold_bytes": threshold}},
        ],
        **spec,
    )


def turn(actor, org, agent, text, conversation) -> Run:
    run = queued_run(actor, org, agent, text, conversation=conversation)
    execute_run(run.pk)
    return Run.objects.get(pk=run.pk)


def thread(org, agent, member) -> Conversation:
    return Conversation.objects.create(organization=org, agent=agent, user=member)


def blob_name(run: Run, digest: str = DIGEST) -> str:
    return f"media/{run.organization_id}/{run.conversation_id}/{digest}"


def picture_return(stored: list[dict]) -> dict:
    for message in stored:
        for part in message.get("parts") or []:
            if part.get("part_kind") == "tool-return" and part.get("tool_name") == "picture":
                return part
    raise AssertionError("no picture return in the transcript")


class Reader:
    """A scripted model that records what each request carried, then answers."""

    def __init__(self) -> None:
        self.seen: list[list] = []

    def __call__(self, messages, info) -> ModelResponse:
        self.seen.append(list(messages))
        return ModelResponse(parts=[TextPart("I looked at it.")])

    def returns(self, tool_name: str) -> list[ToolReturnPart]:
        return [
            part
            for message in self.seen[0]
            if isinstance(message, ModelRequest)
            for part in message.parts
            if isinstance(part, ToolReturnPart) and part.tool_name == tool_name
        ]


def test_an_image_a_tool_returned_is_stored_out_of_the_history_and_read_back_next_turn(
    org, member, picture_tools
):
    agent = media_agent(org)
    conversation = thread(org, agent, member)
    first = turn(member, org, agent, "/call picture {}", conversation)
    assert first.status == "completed", first.error

    stored = picture_return(first.transcript)["content"]
    assert stored["__harness_external_media__"] is True
    assert stored["__harness_external_uri__"] == f"media+sha256://{DIGEST}"
    assert "data" not in stored and stored["media_type"] == "image/png"
    assert base64.urlsafe_b64encode(PICTURE).decode()[:200] not in json.dumps(first.transcript)
    # Content-addressed, under the run's organization and conversation; no URL anywhere.
    with default_storage.open(blob_name(first), "rb") as blob:
        assert blob.read() == PICTURE
    assert "http" not in json.dumps(stored)

    reader = Reader()
    second = queued_run(member, org, agent, "what was on it?", conversation=conversation)
    outcome, _, _ = drive_scripted(second, function=reader)
    assert outcome.status == "completed", outcome.error
    (returned,) = reader.returns("picture")
    assert isinstance(returned.content, BinaryContent)
    assert returned.content.data == PICTURE and returned.content.media_type == "image/png"


def test_an_image_url_stays_a_url_and_small_parts_stay_inline(org, member, picture_tools):
    agent = media_agent(org)
    conversation = thread(org, agent, member)
    run = turn(member, org, agent, "/call logo {}", conversation)
    assert run.status == "completed", run.error
    text = json.dumps(run.transcript)
    assert LOGO_URL in text and "__harness_external_media__" not in text
    reader = Reader()
    outcome, _, _ = drive_scripted(
        queued_run(member, org, agent, "and the logo?", conversation=conversation),
        function=reader,
    )
    assert outcome.status == "completed"
    (returned,) = reader.returns("logo")
    assert returned.content == ImageUrl(url=LOGO_URL)


def test_the_history_is_restored_after_the_agent_stops_binding_media(org, member, picture_tools):
    agent = media_agent(org)
    conversation = thread(org, agent, member)
    turn(member, org, agent, "/call picture {}", conversation)
    unbound = AgentVersion.objects.create(
        agent=agent,
        number=2,
        spec={**agent.current_version.spec, "capabilities": [{"id": TOOLS_CAPABILITY}]},
    )
    agent.current_version = unbound
    agent.save(update_fields=["current_version"])

    reader = Reader()
    outcome, _, _ = drive_scripted(
        queued_run(member, org, agent, "still there?", conversation=conversation),
        function=reader,
    )
    assert outcome.status == "completed", outcome.error
    (returned,) = reader.returns("picture")
    assert returned.content.data == PICTURE


def test_a_blob_that_is_gone_is_a_placeholder_and_the_turn_goes_on(org, member, picture_tools):
    agent = media_agent(org)
    conversation = thread(org, agent, member)
    first = turn(member, org, agent, "/call picture {}", conversation)
    default_storage.delete(blob_name(first))

    reader = Reader()
    outcome, _, _ = drive_scripted(
        queued_run(member, org, agent, "what was on it?", conversation=conversation),
        function=reader,
    )
    assert outcome.status == "completed", outcome.error
    (returned,) = reader.returns("picture")
    assert returned.content == media.placeholder(f"media+sha256://{DIGEST}", "image/png")
    assert "no longer available" in returned.content
    # The next booked turn, on the offline model, completes too.
    assert turn(member, org, agent, "go on", conversation).status == "completed"


def test_a_storage_that_cannot_be_written_keeps_the_bytes_inline(
    org, member, picture_tools, settings, tmp_path
):
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("a file where the storage's directory should be")
    settings.MEDIA_ROOT = blocked
    agent = media_agent(org)
    run = turn(member, org, agent, "/call picture {}", thread(org, agent, member))
    assert run.status == "completed", run.error
    stored = picture_return(run.transcript)["content"]
    assert base64.urlsafe_b64decode(stored["data"]) == PICTURE
    assert "__harness_external_media__" not in json.dumps(run.transcript)


def test_without_the_capability_nothing_is_stored(org, member, picture_tools):
    agent = published_agent(org, capabilities=[{"id": TOOLS_CAPABILITY}])
    run = turn(member, org, agent, "/call picture {}", thread(org, agent, member))
    assert base64.urlsafe_b64decode(picture_return(run.transcript)["content"]["data"]) == PICTURE
    assert not default_storage.exists(blob_name(run))


def test_the_chat_and_the_transcript_read_large_text_back_through_the_one_reader(
    org, member, picture_tools
):
    """A large prompt and a large tool result are stored too (the harness moves text parts of the
    threshold or more): the chat still finds the run's own turn and shows the real text."""
    agent = media_agent(org)
    conversation = thread(org, agent, member)
    prompt = '/call report {"lines": 200}\n' + "Please read the report carefully. " * 40
    run = turn(member, org, agent, prompt, conversation)
    assert run.status == "completed", run.error
    text = json.dumps(run.transcript)
    assert "line 00199 of the quarterly report" not in text
    assert "read the report carefully" not in text
    (turn_drawn,) = [t for t in chat_turns(conversation) if t["role"] == "assistant"]
    lines = [line for b in turn_drawn["blocks"] if b["kind"] == "tools" for line in b["lines"]]
    results = [line for line in lines if line["kind"] != "call"]
    assert results and "line 00199 of the quarterly report" in json.dumps(results)
    assert selectors.run_transcript(run)["turns"]


def test_a_missing_file_the_model_produced_becomes_a_text_part():
    """A ``FilePart`` only accepts binary content: the placeholder replaces the whole part."""
    uri = f"media+sha256://{DIGEST}"
    stored = [
        {
            "kind": "response",
            "parts": [
                {
                    "part_kind": "file",
                    "content": {
                        "kind": "binary",
                        "media_type": "image/png",
                        "__harness_external_media__": True,
                        "__harness_external_uri__": uri,
                        "uri": uri,
                    },
                }
            ],
        }
    ]
    (message,) = media.restored(stored, prefix=None)
    assert message["parts"] == [
        {"part_kind": "text", "content": media.placeholder(uri, "image/png")}
    ]


@pytest.mark.parametrize(
    ("threshold", "status"), [(512, 422), (16 * 1024 * 1024, 422), (4096, 201)]
)
def test_publish_checks_the_threshold_range(client_for, builder, org, threshold, status):
    client = client_for(builder, org)
    spec = {
        "instructions": "Help.",
        "capabilities": [{"id": "media", "config": {"threshold_bytes": threshold}}],
    }
    # Saved as the console's Builder saves a draft: the API refuses an out-of-range config at
    # create already (docs/api-schema.md), so publish is what is tested here.
    from apps.agents.services import agent_create

    agent = agent_create(actor=builder, organization=org, name="Media", spec=spec)
    response = client.post(f"/api/v1/agents/{agent.pk}/publish/", {}, format="json")
    assert response.status_code == status, response.json()
    if status == 422:
        [error] = response.json()["errors"]
        assert error["binding"] == "media" and error["field"] == "config.threshold_bytes"


def test_the_capability_is_available_in_the_catalog_with_its_schema(client_for, member, org):
    catalog = client_for(member, org).get("/api/v1/agents/capabilities/").json()
    rows = catalog if isinstance(catalog, list) else catalog.get("results", catalog)
    (row,) = [c for c in rows if c["id"] == "media"]
    assert row["available"] is True
    prop = row["config_schema"]["properties"]["threshold_bytes"]
    assert (prop["default"], prop["minimum"], prop["maximum"]) == (32768, 1024, 10 * 1024 * 1024)


def test_a_parked_turn_resumes_from_its_restored_history(org, member, picture_tools, client_for):
    """The resume reads the run's own stored transcript through the same reader: the image goes
    back inline, and the booked transcript stores it again (a marker, not a marker of a marker)."""
    from apps.runs.resume import run_resume
    from apps.runs.services import run_create

    agent = published_agent(
        org,
        capabilities=[
            {"id": TOOLS_CAPABILITY},
            {"id": "ask_user"},
            {"id": "media", "config": {"threshold_bytes": 1024}},
        ],
    )
    conversation = thread(org, agent, member)
    turn(member, org, agent, "/call picture {}", conversation)
    # A question needs a person on the other side: the chat surface.
    parked = run_create(
        actor=member,
        organization=org,
        agent=agent,
        input="/ask Keep it?",
        conversation=conversation,
        surface="chat",
    )
    execute_run(parked.pk)
    parked.refresh_from_db()
    assert parked.status == "awaiting_answer", parked.error
    assert picture_return(parked.transcript)["content"]["__harness_external_media__"] is True

    answered = client_for(member, org).post(
        f"/api/v1/runs/{parked.pk}/answers/",
        {"answers": [{"header": "Choice", "selected": ["Yes"]}]},
        format="json",
    )
    assert answered.status_code == 200, answered.content
    run_resume(run_id=parked.pk)
    parked.refresh_from_db()
    assert parked.status == "completed", parked.error
    stored = picture_return(parked.transcript)["content"]
    assert stored["__harness_external_media__"] is True
    assert stored["__harness_external_uri__"] == f"media+sha256://{DIGEST}"
