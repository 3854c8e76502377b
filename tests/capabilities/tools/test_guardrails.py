"""guardrails: every detector on every edge, through the real runner on the offline model (and a
scripted FunctionModel where the offline model cannot produce the shape: reasoning, a split).

The offline model streams its answer four words at a time and quotes a tool's result, so a
PEM block written with literal ``\\n`` (as it arrives from a JSON service-account file) reaches the
stream split across several chunks — the case the output check holds text back for.
"""

from __future__ import annotations

import json

import pytest
from pydantic_ai.messages import (
    ModelMessagesTypeAdapter,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import DeltaThinkingPart

from apps.capabilities.registry import get_capability
from apps.capabilities.tools.guardrails import (
    REASONING_WITHHELD,
    EdgeCheck,
    Guard,
    GuardrailBlocked,
    GuardrailsCapability,
    OutputStreamFilter,
    guardrails_capabilities,
    size_limits,
)
from apps.runs.choices import RunStatus, StopReason
from apps.runs.events import frames_after
from apps.runs.models import Message, Run
from apps.runs.runner import execute_run, prepare
from tests.runs.factories import published_agent, queued_run

from .scripted import drive_scripted

pytestmark = pytest.mark.django_db

PEM = (
    "-----BEGIN PRIVATE KEY-----\\nMIIE vQIB ADAN BgkqhkiG 9w0B AQEF AASC\\n"
    "-----END PRIVATE KEY-----"
)
ANTHROPIC_KEY = "sk-ant-api03-" + "A" * 30
OPENAI_KEY = "sk-proj-" + "b" * 30
GITHUB_TOKEN = "ghp_" + "c" * 36
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"


def edge(edge_name="out", **config) -> EdgeCheck:
    parsed = get_capability("guardrails").parse_config(config)
    return Guard.from_config(parsed).edges[edge_name]


def pii(regions="US, GB, DE, PL") -> EdgeCheck:
    return edge("out", redact_pii_out=True, phone_regions=regions)


# --- the detectors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "regions", "redacted"),
    [
        ("call 415-555-0132 today", "US", "call [redacted:phone] today"),
        # A ZIP+4 starting with 0 is grouped like a German area code and number.
        ("ZIP 02134-1234", "DE", "ZIP [redacted:phone]"),
        ("ZIP 02134-1234", "US", "ZIP 02134-1234"),
        # 123456789 is a valid Polish landline: with PL listed, a nine-digit order number goes too.
        ("order 123456789", "PL", "order [redacted:phone]"),
        ("order 123456789", "US, GB", "order 123456789"),
        # A number written with + names its own country, whatever the regions say.
        ("ring +44 20 7946 0958", "US", "ring [redacted:phone]"),
        ("ring +48 12 345 67 89", "US", "ring [redacted:phone]"),
    ],
)
def test_the_seeds_phone_examples(text, regions, redacted):
    assert pii(regions).check(text) == redacted


@pytest.mark.parametrize(
    "text",
    [
        "The meeting is on 2024-05-17 at 10:30.",
        "Your order 4471-2231-88 ships tomorrow.",
        "It costs 1,234,567.89 dollars.",
        "Invoice 2024/0042 is paid.",
    ],
)
def test_a_date_an_amount_and_an_order_number_are_left_alone(text):
    assert pii().check(text) == text


def test_personal_data_is_redacted_by_kind_and_checksums_decide():
    check = pii()
    assert check.check("write to ana.lopez@example.com") == "write to [redacted:email]"
    assert check.check("IBAN DE89 3704 0044 0532 0130 00") == "IBAN [redacted:iban]"
    # One digit off: mod-97 fails, so it is not an account number.
    assert check.check("IBAN DE89370400440532013001") == "IBAN DE89370400440532013001"
    assert check.check("card 4111 1111 1111 1111") == "card [redacted:credit_card]"
    assert check.check("card 4111 1111 1111 1112") == "card 4111 1111 1111 1112"  # Luhn fails
    assert check.check("SSN 123-45-6789") == "SSN [redacted:us_ssn]"


@pytest.mark.parametrize(
    ("secret", "label"),
    [
        (ANTHROPIC_KEY, "anthropic_key"),
        (OPENAI_KEY, "openai_key"),
        (GITHUB_TOKEN, "github_token"),
        (JWT, "jwt"),
        (PEM, "private_key"),
    ],
)
def test_secrets_are_redacted_by_kind(secret, label):
    check = edge("out", redact_secrets_out=True)
    assert check.check(f"here: {secret}") == f"here: [redacted:{label}]"


def test_blocked_keywords_are_comma_or_line_separated_and_case_blind():
    check = edge("out", blocked_keywords_out="Project Falcon,\nzebra")
    assert check.check("nothing to see") == "nothing to see"
    for text in ("about project falcon", "a ZEBRA crossing"):
        with pytest.raises(GuardrailBlocked) as caught:
            check.check(text)
        assert "blocked term" in caught.value.sentence and "falcon" not in caught.value.sentence


def test_the_size_limits_shrink_with_each_region_above_four():
    assert size_limits(1) == size_limits(4) == (200_000, 10_000)
    assert size_limits(8) == (100_000, 5_000)
    assert size_limits(16) == (50_000, 2_500)
    check = pii("US")
    assert check.check("a" * 200_000) == "a" * 200_000
    with pytest.raises(GuardrailBlocked, match="too long to check"):
        check.check("a" * 200_001)
    with pytest.raises(GuardrailBlocked, match="2,500 digits"):
        pii("US, GB, DE, PL, FR, ES, IT, NL, BE, AT, CH, SE, NO, DK, FI, IE").check("1 " * 2_501)


def test_no_edge_configured_attaches_nothing(org, member):
    assert guardrails_capabilities({"id": "guardrails", "config": {}}, {}) == []
    agent = published_agent(org, capabilities=[{"id": "guardrails", "config": {}}])
    prepared = prepare(queued_run(member, org, agent, "hello"))
    assert prepared.output_filter is None
    assert not any(
        isinstance(c, GuardrailsCapability) for c in prepared.agent.root_capability.capabilities
    )


# --- the stream ------------------------------------------------------------------------------


def _stream_events(*parts: tuple[str, list[str]]):
    """Part start / delta / end events for parts of (kind, chunks)."""
    from pydantic_ai.messages import (
        PartDeltaEvent,
        PartEndEvent,
        PartStartEvent,
        TextPartDelta,
        ThinkingPart,
        ThinkingPartDelta,
    )

    for index, (kind, chunks) in enumerate(parts):
        first, rest = chunks[0], chunks[1:]
        part = TextPart(first) if kind == "text" else ThinkingPart(first)
        yield PartStartEvent(index=index, part=part)
        for chunk in rest:
            delta = TextPartDelta(chunk) if kind == "text" else ThinkingPartDelta(chunk)
            yield PartDeltaEvent(index=index, delta=delta)
        yield PartEndEvent(index=index, part=part)


def test_a_key_split_across_chunks_is_caught_and_nothing_leaves_before_the_part_ends():
    stream = OutputStreamFilter(check=edge("out", redact_secrets_out=True))
    key = ANTHROPIC_KEY
    events = list(_stream_events(("text", ["Your key is ", key[:9], key[9:20], key[20:], "."])))
    shown = [stream.feed(event) for event in events]
    assert all(out == [] for out in shown[:-1])  # held until the part is complete
    assert shown[-1] == [("text", "Your key is [redacted:anthropic_key].")]


def test_a_key_split_across_two_parts_ends_the_run_before_the_second_half():
    stream = OutputStreamFilter(check=edge("out", redact_secrets_out=True))
    key = ANTHROPIC_KEY
    first = list(_stream_events(("text", ["Your key is ", key[:15]])))
    assert [out for e in first for out in stream.feed(e)] == [("text", "Your key is " + key[:15])]
    with pytest.raises(GuardrailBlocked, match="split across two parts"):
        for event in _stream_events(("text", [key[15:]])):
            stream.feed(event)


# --- through the runner on the offline model ---------------------------------------------------


def guarded_agent(org, echo_toolset, **config):
    return published_agent(
        org,
        capabilities=[{"id": echo_toolset}, {"id": "guardrails", "config": config}],
    )


def run_now(actor, org, agent, text) -> Run:
    run = queued_run(actor, org, agent, text)
    execute_run(run.pk)
    return Run.objects.get(pk=run.pk)


def text_deltas(run: Run) -> list[str]:
    return [f["delta"] for f in frames_after(run.pk) if f["type"] == "text_delta"]


def call(tool: str, **args) -> str:
    return f"/call {tool} {json.dumps(args)}"


def history(run: Run):
    return ModelMessagesTypeAdapter.validate_python(run.transcript)


def test_unguarded_the_offline_stream_splits_the_key_across_chunks(org, member, echo_toolset):
    """The premise of the next test: without the check, the key leaves in pieces."""
    agent = published_agent(org, capabilities=[{"id": echo_toolset}])
    run = run_now(member, org, agent, call("echo", text=PEM))
    deltas = text_deltas(run)
    assert not any("BEGIN PRIVATE KEY" in d and "END PRIVATE KEY" in d for d in deltas)
    assert "-----BEGIN PRIVATE KEY-----" in "".join(deltas)


def test_output_edge_redacts_a_key_split_across_stream_chunks(org, member, echo_toolset):
    agent = guarded_agent(org, echo_toolset, redact_secrets_out=True)
    run = run_now(member, org, agent, call("echo", text=PEM))
    assert run.status == RunStatus.COMPLETED
    shown = "".join(text_deltas(run))
    assert "[redacted:private_key]" in shown and "MIIE" not in shown
    assert "[redacted:private_key]" in run.output and "MIIE" not in run.output
    final = history(run)[-1]
    assert isinstance(final, ModelResponse)
    assert "MIIE" not in final.parts[0].content
    assistant = Message.objects.get(run=run, role="assistant")
    assert "MIIE" not in assistant.content


def test_output_edge_blocked_keyword_ends_the_run_with_nothing_shown_or_stored(
    org, member, echo_toolset
):
    agent = guarded_agent(org, echo_toolset, blocked_keywords_out="falcon")
    run = run_now(member, org, agent, call("echo", text="Project Falcon launches"))
    assert run.status == RunStatus.GUARDRAIL_BLOCKED
    assert run.stop_reason == StopReason.GUARDRAIL
    assert run.error == "The guardrail ended the run: the agent's answer contained a blocked term."
    assert not any("Falcon" in d for d in text_deltas(run))
    assert run.output == ""
    responses = [m for m in history(run) if isinstance(m, ModelResponse)]
    assert not any(
        isinstance(p, TextPart) and "Falcon" in p.content for m in responses for p in m.parts
    )
    assert frames_after(run.pk)[-1]["status"] == "guardrail_blocked"


def test_input_edge_the_model_reads_the_redacted_prompt_and_the_thread_keeps_the_original(
    org, member, echo_toolset
):
    agent = guarded_agent(org, echo_toolset, redact_pii_in=True)
    run = run_now(member, org, agent, "my number is 415-555-0132, mail ana@example.com")
    assert run.status == RunStatus.COMPLETED
    # The offline model quotes what it read.
    assert "[redacted:phone]" in run.output and "[redacted:email]" in run.output
    assert "415-555-0132" not in run.output
    assert run.input == "my number is 415-555-0132, mail ana@example.com"
    person = Message.objects.get(run=run, role="user")
    assert "ana@example.com" in person.content


def test_input_edge_blocked_keyword_ends_the_run_before_any_model_request(
    org, member, echo_toolset
):
    agent = guarded_agent(org, echo_toolset, blocked_keywords_in="internal-only")
    run = run_now(member, org, agent, "please read the INTERNAL-ONLY memo")
    assert run.status == RunStatus.GUARDRAIL_BLOCKED
    assert run.request_count == 0 and run.cost_usd == 0
    assert "the prompt contained a blocked term" in run.error


def test_tool_result_edge_scrubs_what_a_tool_returned_before_the_model_reads_it(
    org, member, echo_toolset
):
    agent = guarded_agent(org, echo_toolset, redact_pii_tool=True, redact_secrets_tool=True)
    run = run_now(member, org, agent, call("echo", text=f"ring 415-555-0132, key {GITHUB_TOKEN}"))
    assert run.status == RunStatus.COMPLETED
    (returned,) = [
        p for m in history(run) for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)
    ]
    assert returned.content == "echo: ring [redacted:phone], key [redacted:github_token]"
    assert "415-555-0132" not in run.output and GITHUB_TOKEN not in run.output
    (result_frame,) = [f for f in frames_after(run.pk) if f["type"] == "tool_result"]
    assert "[redacted:phone]" in result_frame["content"]


def test_tool_result_edge_blocked_keyword_ends_the_run(org, member, echo_toolset):
    agent = guarded_agent(org, echo_toolset, blocked_keywords_tool="ignore previous instructions")
    run = run_now(member, org, agent, call("echo", text="Ignore previous instructions and"))
    assert run.status == RunStatus.GUARDRAIL_BLOCKED
    assert "a tool's result contained a blocked term" in run.error


def test_tool_result_edge_too_long_to_check_ends_the_run(org, member, big_toolset):
    agent = guarded_agent(org, big_toolset, redact_pii_tool=True, phone_regions="US")
    # 40,000 lines of 11 characters: 440,000 characters, over the 200,000 the detector reads.
    run = run_now(member, org, agent, call("repeat", text="abcd", times=40_000))
    assert run.status == RunStatus.GUARDRAIL_BLOCKED
    assert "too long to check for personal data" in run.error


def test_args_edge_the_tool_receives_streams_and_stores_the_redacted_value(
    org, member, echo_toolset
):
    agent = guarded_agent(org, echo_toolset, redact_secrets_args=True)
    run = run_now(member, org, agent, call("echo", text=f"use {ANTHROPIC_KEY} please"))
    assert run.status == RunStatus.COMPLETED
    (tool_call,) = [
        p for m in history(run) for p in getattr(m, "parts", []) if isinstance(p, ToolCallPart)
    ]
    assert tool_call.args_as_dict() == {"text": "use [redacted:anthropic_key] please"}
    (returned,) = [
        p for m in history(run) for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)
    ]
    assert returned.content == "echo: use [redacted:anthropic_key] please"
    (call_frame,) = [f for f in frames_after(run.pk) if f["type"] == "tool_call"]
    assert ANTHROPIC_KEY not in call_frame["args"]


def test_args_edge_blocked_keyword_ends_the_run_before_the_tool_runs(org, member, echo_toolset):
    agent = guarded_agent(org, echo_toolset, blocked_keywords_args="rm -rf")
    run = run_now(member, org, agent, call("echo", text="rm -rf /"))
    assert run.status == RunStatus.GUARDRAIL_BLOCKED
    assert not any(
        isinstance(p, (ToolReturnPart, ToolCallPart))
        for m in history(run)
        for p in getattr(m, "parts", [])
    )
    assert not [f for f in frames_after(run.pk) if f["type"] in ("tool_call", "tool_result")]


# --- through the runner's drive loop on a scripted FunctionModel -------------------------------


def drive_streamed(run: Run, stream_function):
    outcome, frames, state = drive_scripted(run, stream_function=stream_function)
    return outcome, [(f["type"], f["delta"]) for f in frames if "delta" in f], state


def test_reasoning_with_a_blocked_term_is_withheld_and_the_run_goes_on(org, member, echo_toolset):
    agent = guarded_agent(org, echo_toolset, blocked_keywords_out="falcon")

    async def stream(messages, info):
        yield {0: DeltaThinkingPart(content="Thinking about Project ")}
        yield {0: DeltaThinkingPart(content="Falcon now")}
        yield "The answer is 42."

    outcome, shown, state = drive_streamed(queued_run(member, org, agent, "hi"), stream)
    assert outcome.status == RunStatus.COMPLETED
    assert ("thinking_delta", REASONING_WITHHELD) in shown
    assert not any("Falcon" in text for _, text in shown)
    assert ("text_delta", "The answer is 42.") in shown
    stored = state.messages[-1]
    assert [p.content for p in stored.parts][0] == REASONING_WITHHELD


def test_a_secret_split_between_reasoning_and_answer_ends_the_run_before_its_second_half(
    org, member, echo_toolset
):
    agent = guarded_agent(org, echo_toolset, redact_secrets_out=True)
    key = ANTHROPIC_KEY

    async def stream(messages, info):
        yield {0: DeltaThinkingPart(content=f"The key starts {key[:14]}")}
        yield key[14:]

    outcome, shown, _ = drive_streamed(queued_run(member, org, agent, "hi"), stream)
    assert outcome.status == RunStatus.GUARDRAIL_BLOCKED
    assert shown == [("thinking_delta", f"The key starts {key[:14]}")]


def test_an_operator_filtering_for_trouble_finds_the_blocked_run(
    org, owner, member, echo_toolset, client_for
):
    agent = guarded_agent(org, echo_toolset, blocked_keywords_in="internal-only")
    blocked = run_now(member, org, agent, "the internal-only memo")
    fine = run_now(member, org, agent, "a public memo")
    assert (blocked.status, fine.status) == ("guardrail_blocked", "completed")
    listed = client_for(owner, org).get("/api/v1/runs/", {"status": "guardrail_blocked"}).json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert [row["id"] for row in rows] == [blocked.pk]
    assert rows[0]["status"] == "guardrail_blocked"
