"""conversation_search benchmark (`make bench`): search_conversations over a person's corpus.

One million messages across 10,000 conversations and 200 people (CONVERSATION_BENCH_MESSAGES
scales the message count; conversations and people scale with it, keeping 100 messages per
conversation and 50 conversations per person). Messages are written with COPY; the GIN index is
dropped for the load and built again afterwards (the same definition as the migration's), which
is how a bulk import would do it. The generated tsvector column is computed by PostgreSQL on
every row, as in production.

Printed: p50/p95 of ``PersonCorpus.search`` (ranking and the bold passage included) for a mix of
queries — a rare word, a common word, an "exact phrase", ``or``, a leading ``-`` — against a
baseline measured in the same run: the same person's corpus scanned with ILIKE (what the
capability deliberately does not do); and the index's and the column's size. Goal: p95 ≤ 50 ms.
"""

from __future__ import annotations

import itertools
import os
import random
import statistics
import time
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from apps.agents.models import Agent
from apps.orgs.models import Organization, User
from apps.runs.search import PersonCorpus

MESSAGES = int(os.environ.get("CONVERSATION_BENCH_MESSAGES", "1000000"))
PER_CONVERSATION = 100
CONVERSATIONS_PER_PERSON = 50
CONVERSATIONS = max(1, MESSAGES // PER_CONVERSATION)
PEOPLE = max(1, CONVERSATIONS // CONVERSATIONS_PER_PERSON)
QUERIES = 200

# A Zipf-like vocabulary: a few common words, a long tail of rare ones.
_rng = random.Random(18)
VOCABULARY = [f"w{n:05d}" for n in range(20_000)]
CUMULATIVE = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(len(VOCABULARY))))
COMMON = ["pricing", "meeting", "invoice", "deadline", "roadmap", "budget", "customer"]


def _sentence(rng: random.Random) -> str:
    words = rng.choices(VOCABULARY, cum_weights=CUMULATIVE, k=rng.randint(8, 30))
    if rng.random() < 0.05:
        words.insert(rng.randrange(len(words)), rng.choice(COMMON))
    if rng.random() < 0.01:
        words.extend(["q3", "pricing", "decision"])
    return " ".join(words)


def _load(organization: Organization, agent: Agent, people: list[User]) -> None:
    start = datetime(2025, 1, 1, tzinfo=UTC)
    with connection.cursor() as cursor:
        cursor.execute("DROP INDEX IF EXISTS message_search_gin_idx")
        with cursor.connection.cursor().copy(
            "COPY runs_conversation (organization_id, agent_id, user_id, surface, title, "
            "group_chat_key, created_at, updated_at) FROM STDIN"
        ) as copy:
            for n in range(CONVERSATIONS):
                when = start + timedelta(minutes=n)
                copy.write_row(
                    (
                        organization.pk,
                        agent.pk,
                        people[n % len(people)].pk,
                        "chat",
                        f"Thread {n}",
                        "",
                        when,
                        when,
                    )
                )
        cursor.execute(
            "SELECT id FROM runs_conversation WHERE organization_id = %s ORDER BY id",
            [organization.pk],
        )
        conversation_ids = [row[0] for row in cursor.fetchall()]
        with cursor.connection.cursor().copy(
            "COPY runs_message (conversation_id, role, content, created_at, run_status) FROM STDIN"
        ) as copy:
            for n in range(MESSAGES):
                copy.write_row(
                    (
                        conversation_ids[n // PER_CONVERSATION % len(conversation_ids)],
                        "user" if n % 2 == 0 else "assistant",
                        _sentence(_rng),
                        start + timedelta(seconds=n),
                        "",
                    )
                )
        # Django's foreign keys are deferred: check them now, before the index is built.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute(
            "CREATE INDEX message_search_gin_idx ON runs_message USING gin (search_vector)"
        )
        cursor.execute("ANALYZE runs_message")
        cursor.execute("ANALYZE runs_conversation")


def _queries(rng: random.Random) -> list[str]:
    kinds = [
        lambda: rng.choice(VOCABULARY[5_000:]),  # a rare word
        lambda: rng.choice(COMMON),  # a common word
        lambda: '"q3 pricing"',  # an exact phrase
        lambda: f"{rng.choice(COMMON)} or {rng.choice(VOCABULARY[1_000:])}",
        lambda: f"{rng.choice(COMMON)} -{rng.choice(VOCABULARY[:50])}",
    ]
    return [kinds[n % len(kinds)]() for n in range(QUERIES)]


def _ilike(organization_id: int, user_id: int, word: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(DISTINCT m.conversation_id) FROM runs_message m "
            "JOIN runs_conversation c ON c.id = m.conversation_id "
            "WHERE c.organization_id = %s AND c.user_id = %s AND m.content ILIKE %s",
            [organization_id, user_id, f"%{word}%"],
        )
        return cursor.fetchone()[0]


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


@pytest.mark.bench
@pytest.mark.django_db
def test_bench_search_conversations_over_a_persons_corpus():
    organization = Organization.objects.create(name="Bench", slug="bench-search")
    people = User.objects.bulk_create([User(email=f"person{n}@bench.test") for n in range(PEOPLE)])
    agent = Agent.objects.create(organization=organization, name="Bench")

    began = time.perf_counter()
    _load(organization, agent, people)
    loaded = time.perf_counter() - began

    rng = random.Random(7)
    queries = _queries(rng)
    timings: list[float] = []
    baseline: list[float] = []
    hits = 0
    for n, query in enumerate(queries):
        person = people[rng.randrange(len(people))]
        corpus = PersonCorpus(organization_id=organization.pk, user_id=person.pk)
        t0 = time.perf_counter()
        hits += len(corpus.search(query, 5))
        timings.append((time.perf_counter() - t0) * 1000)
        if n % 5 < 2:  # the baseline for the single-word queries
            t0 = time.perf_counter()
            _ilike(organization.pk, person.pk, query)
            baseline.append((time.perf_counter() - t0) * 1000)

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_relation_size('message_search_gin_idx')")
        (index_bytes,) = cursor.fetchone()
        cursor.execute("SELECT sum(pg_column_size(search_vector)) FROM runs_message")
        (column_bytes,) = cursor.fetchone()

    p50, p95 = statistics.median(timings), _percentile(timings, 0.95)
    b50, b95 = statistics.median(baseline), _percentile(baseline, 0.95)
    print(
        f"\n[bench] conversation_search: {MESSAGES:,} messages, {CONVERSATIONS:,} conversations, "
        f"{PEOPLE:,} people (loaded and indexed in {loaded:.0f}s); "
        f"search_conversations p50 {p50:.1f} ms, p95 {p95:.1f} ms over {len(timings)} queries "
        f"({hits} hits) — ILIKE baseline on the same corpus p50 {b50:.1f} ms, p95 {b95:.1f} ms "
        f"(ratio p95 {p95 / b95:.2f}); GIN index {index_bytes / 2**20:.1f} MiB, tsvector column "
        f"{int(column_bytes or 0) / 2**20:.1f} MiB"
    )
    assert hits > 0
