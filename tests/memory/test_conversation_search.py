"""conversation_search through the real runner: the person's corpus and nobody else's, the
full-text operators, the passage in bold, read_conversation's windows, the refusals, and the
deployment-wide scope."""

import datetime as dt

import pytest
from django.db import connection
from django.utils import timezone

from apps.capabilities.tools.conversation_search import WINDOW_TURNS
from apps.runs.models import Conversation, Message, Run
from apps.runs.search import PersonCorpus
from tests.runs.factories import published_agent

from .support import group_chat, returns_of, run_now, slash_call

pytestmark = pytest.mark.django_db

SEARCH = [{"id": "conversation_search"}]


@pytest.fixture
def agent(org, owner):
    return published_agent(org, created_by=owner, capabilities=SEARCH)


def thread(org, agent, user, title, *turns, surface="chat", when=None, group_chat_key=""):
    """A past conversation with alternating user / assistant turns."""
    conversation = Conversation.objects.create(
        organization=org,
        agent=agent,
        user=user,
        surface=surface,
        title=title,
        group_chat_key=group_chat_key,
    )
    for i, text in enumerate(turns):
        Message.objects.create(
            conversation=conversation, role="user" if i % 2 == 0 else "assistant", content=text
        )
    if when is not None:
        Conversation.objects.filter(pk=conversation.pk).update(updated_at=when)
        conversation.refresh_from_db()
    return conversation


def search(actor, org, agent, query, **kwargs):
    run = run_now(actor, org, agent, slash_call("search_conversations", query=query), **kwargs)
    assert run.status == "completed", run.error
    return returns_of(run)[-1]


@pytest.fixture
def pricing(org, agent, member):
    return thread(
        org,
        agent,
        member,
        "Q3 pricing",
        "What did we decide about the Q3 pricing?",
        "We decided to raise the Q3 pricing by five percent for enterprise plans.",
        when=timezone.now() - dt.timedelta(days=3),
    )


def test_the_person_finds_their_own_conversation_with_the_passage_in_bold(
    org, agent, member, pricing
):
    found = search(member, org, agent, "pricing")
    assert f"conversation_id {pricing.pk}: 'Q3 pricing'" in found
    assert "2 matching turn(s)" in found
    assert "**pricing**" in found
    assert f"last active {pricing.updated_at:%Y-%m-%d %H:%M} UTC" in found


def test_another_persons_conversations_are_not_in_the_corpus(org, agent, member, builder, pricing):
    found = search(builder, org, agent, "pricing")
    assert "No past conversation matches 'pricing'" in found
    run = run_now(builder, org, agent, slash_call("read_conversation", conversation_id=pricing.pk))
    assert (
        f"There is no conversation {pricing.pk} among this person's conversations"
        in (returns_of(run)[-1])
    )


def test_another_organizations_conversations_are_not_in_the_corpus(
    org, other_org, outsider, agent, member
):
    foreign_agent = published_agent(other_org, created_by=outsider, capabilities=SEARCH)
    # The same user id cannot be in two orgs' corpora: a member's thread elsewhere stays there.
    thread(other_org, foreign_agent, member, "Elsewhere", "pricing in another tenant")
    assert "No past conversation matches" in search(member, org, agent, "tenant")


def test_a_triggers_conversations_are_left_out(org, agent, member):
    thread(org, agent, member, "Nightly report", "pricing report of the night", surface="schedule")
    thread(org, agent, member, "Webhook", "pricing event payload", surface="event")
    assert "No past conversation matches" in search(member, org, agent, "pricing")


def test_words_are_not_stemmed(org, agent, member):
    thread(org, agent, member, "Standup", "The weekly meetings moved to Monday.")
    assert "No past conversation matches 'meeting'" in search(member, org, agent, "meeting")
    assert "try another form of the word" in search(member, org, agent, "meeting")
    assert "**meetings**" in search(member, org, agent, "meetings")
    # Whole words, case-insensitively.
    assert "**meetings**" in search(member, org, agent, "MEETINGS")


def test_exact_phrases_or_and_exclusion(org, agent, member):
    a = thread(org, agent, member, "A", "the red car is fast")
    b = thread(org, agent, member, "B", "the car is red and slow")
    c = thread(org, agent, member, "C", "a blue bicycle")
    phrase = search(member, org, agent, '"red car"')
    assert f"conversation_id {a.pk}:" in phrase and f"conversation_id {b.pk}:" not in phrase
    either = search(member, org, agent, "bicycle or slow")
    assert f"conversation_id {b.pk}:" in either and f"conversation_id {c.pk}:" in either
    assert f"conversation_id {a.pk}:" not in either
    excluded = search(member, org, agent, "car -slow")
    assert f"conversation_id {a.pk}:" in excluded and f"conversation_id {b.pk}:" not in excluded


def test_threads_are_ranked_by_their_strongest_turn(org, agent, member):
    weak = thread(org, agent, member, "Weak", "budget mentioned once among many other words here")
    strong = thread(org, agent, member, "Strong", "budget budget budget: the budget")
    found = search(member, org, agent, "budget")
    assert found.index(f"conversation_id {strong.pk}:") < found.index(f"conversation_id {weak.pk}:")


def test_a_query_with_no_word_is_a_retry_naming_why(org, agent, member):
    found = search(member, org, agent, "- !!")
    assert "has no word to look for" in found


def test_read_conversation_is_markdown_in_windows_saying_how_to_get_the_next(org, agent, member):
    turns = [f"turn number {i}" for i in range(WINDOW_TURNS + 5)]
    long = thread(org, agent, member, "Long thread", *turns)
    first = run_now(member, org, agent, slash_call("read_conversation", conversation_id=long.pk))
    text = returns_of(first)[-1]
    assert text.startswith("# Long thread")
    assert "USER:\nturn number 0\n\nAI:\nturn number 1" in text
    assert f"turns 1–{WINDOW_TURNS} of {WINDOW_TURNS + 5}" in text
    assert (
        f"read_conversation(conversation_id={long.pk}, offset={WINDOW_TURNS})" in text
        and "turn number 20" not in text
    )
    second = run_now(
        member,
        org,
        agent,
        slash_call("read_conversation", conversation_id=long.pk, offset=WINDOW_TURNS),
    )
    rest = returns_of(second)[-1]
    assert "turn number 24" in rest and "[End of the conversation.]" in rest


def test_a_room_with_several_people_names_who_spoke(org, agent, member, builder):
    # A thread in which two people's runs spoke: each user turn is named.
    shared = Conversation.objects.create(
        organization=org, agent=agent, user=member, surface="chat", title="Planning"
    )
    for person, text in ((member, "I think Friday"), (builder, "Monday works better")):
        run = Run.objects.create(
            organization=org,
            agent=agent,
            agent_version=agent.current_version,
            user=person,
            surface="chat",
            conversation=shared,
            input=text,
            status="completed",
        )
        Message.objects.create(conversation=shared, run=run, role="user", content=text)
    window = PersonCorpus(org.pk, member.pk).read(shared.pk, 0)
    from apps.capabilities.tools.conversation_search import render_window

    text = render_window(window)
    assert f"USER ({member.display_name}):\nI think Friday" in text
    assert f"USER ({builder.display_name}):\nMonday works better" in text


@pytest.mark.parametrize(
    ("surface", "says"),
    [
        ("schedule", "a scheduled or event-triggered run answers nobody"),
        ("event", "a scheduled or event-triggered run answers nobody"),
        ("api", "this run answers no known person"),
        ("widget", "this run answers no known person"),
    ],
)
def test_refused_where_nobody_or_a_trigger_listens(org, agent, member, pricing, surface, says):
    found = search(member, org, agent, "pricing", surface=surface)
    assert found.startswith("Refused: past conversations cannot be read here:") and says in found
    assert "Q3" not in found


def test_refused_in_a_group_chat_with_the_reason(org, agent, member, pricing):
    room = group_chat(org, agent, member)
    found = search(member, org, agent, "pricing", surface="slack", conversation=room)
    assert "this is a group chat" in found and "Q3" not in found
    run = run_now(
        member,
        org,
        agent,
        slash_call("read_conversation", conversation_id=pricing.pk),
        surface="slack",
        conversation=room,
    )
    assert "this is a group chat" in returns_of(run)[-1]


def test_group_chat_threads_are_not_in_a_persons_corpus(org, agent, member):
    thread(org, agent, member, "Room", "pricing in the room", surface="slack", group_chat_key="s:1")
    assert "No past conversation matches" in search(member, org, agent, "pricing")


def test_removing_the_scope_deployment_wide_turns_it_off(org, agent, member, settings, pricing):
    settings.DEFAULT_GRANTED_SCOPES = tuple(
        s for s in settings.DEFAULT_GRANTED_SCOPES if s != "conversations:read"
    )
    run = run_now(member, org, agent, slash_call("search_conversations", query="pricing"))
    assert run.status == "failed" and "conversations:read" in run.error
    assert "Q3" not in run.output


def test_the_index_is_a_gin_index_on_a_generated_simple_tsvector():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT generation_expression FROM information_schema.columns "
            "WHERE table_name = 'runs_message' AND column_name = 'search_vector'"
        )
        (expression,) = cursor.fetchone()
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'message_search_gin_idx'")
        (index,) = cursor.fetchone()
    assert "to_tsvector('simple'::regconfig" in expression
    assert "USING gin (search_vector)" in index


def test_the_tool_description_says_words_are_not_stemmed():
    from apps.capabilities.registry import get_capability

    (search_tool,) = [
        t for t in get_capability("conversation_search").tools if t.id == "search_conversations"
    ]
    assert "not stemmed" in search_tool.description
