"""Full-text search over one person's past conversations (the conversation_search capability).

The database keeps ``runs_message.search_vector`` itself (a generated column,
``to_tsvector('simple', content)``) under a GIN index; a query goes through
``websearch_to_tsquery('simple', …)`` — "exact phrases", ``or`` and a leading ``-`` work — and
threads are ordered by their strongest turn's ``ts_rank_cd``. Not ILIKE, which matches inside
words and cannot rank; not embeddings, which is what knowledge search is and answers another
question.

The corpus (``PersonCorpus``) is the person's own one-to-one conversations in the organization.
Left out on purpose: the runs of triggers (transcripts of runs made under someone's authority,
which a search on a person's behalf has no permission of theirs to check) and group chats (a
channel thread joins the corpus once the channels app can confirm the person is still a member
there; conversations shared with a person join it once sharing exists).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection

from apps.capabilities.tools.conversation_search import (
    WINDOW_CHARS,
    WINDOW_TURNS,
    ConversationAccess,
    ConversationHit,
    ConversationWindow,
    Turn,
)
from apps.memory.ownership import conversation_corpus

from .choices import MessageRole, Surface
from .models import Conversation, Message

# Triggers answer nobody: their transcripts are not anyone's conversations.
EXCLUDED_SURFACES = (Surface.SCHEDULE.value, Surface.EVENT.value)
HEADLINE_OPTIONS = "StartSel=**, StopSel=**, MaxWords=40, MinWords=12, MaxFragments=1"

_SEARCH_SQL = """
WITH q AS (SELECT websearch_to_tsquery('simple', %(query)s) AS query),
corpus AS (
    SELECT c.id, c.title, c.updated_at
    FROM runs_conversation c
    WHERE c.organization_id = %(organization_id)s
      AND c.user_id = %(user_id)s
      AND c.group_chat_key = ''
      AND c.surface <> ALL(%(excluded)s)
      AND c.id <> %(current)s
),
hits AS (
    SELECT m.conversation_id, m.id, ts_rank_cd(m.search_vector, q.query) AS rank
    FROM runs_message m
    JOIN corpus ON corpus.id = m.conversation_id
    CROSS JOIN q
    WHERE m.search_vector @@ q.query
),
best AS (
    SELECT conversation_id,
           count(*) AS matched,
           max(rank) AS rank,
           (array_agg(id ORDER BY rank DESC, id DESC))[1] AS message_id
    FROM hits
    GROUP BY conversation_id
    ORDER BY max(rank) DESC, conversation_id DESC
    LIMIT %(limit)s
)
SELECT best.conversation_id, corpus.title, corpus.updated_at, best.matched,
       ts_headline('simple', m.content, q.query, %(headline)s)
FROM best
JOIN corpus ON corpus.id = best.conversation_id
JOIN runs_message m ON m.id = best.message_id
CROSS JOIN q
ORDER BY best.rank DESC, best.conversation_id DESC
"""


def person_conversations(organization_id: int, user_id: int):
    """The conversations in a person's corpus (the same rule as the search's SQL)."""
    return Conversation.objects.filter(
        organization_id=organization_id, user_id=user_id, group_chat_key=""
    ).exclude(surface__in=EXCLUDED_SURFACES)


@dataclass(frozen=True)
class PersonCorpus:
    """One person's past conversations in one organization."""

    organization_id: int
    user_id: int
    # The run's own conversation: it is the present, not a past conversation (its newest message
    # is the very question being searched for).
    current_conversation_id: int | None = None

    def searchable(self, query: str) -> bool:
        with connection.cursor() as cursor:
            cursor.execute("SELECT numnode(websearch_to_tsquery('simple', %s)) > 0", [query])
            return bool(cursor.fetchone()[0])

    def search(self, query: str, limit: int) -> list[ConversationHit]:
        with connection.cursor() as cursor:
            cursor.execute(
                _SEARCH_SQL,
                {
                    "query": query,
                    "organization_id": self.organization_id,
                    "user_id": self.user_id,
                    "excluded": list(EXCLUDED_SURFACES),
                    "limit": limit,
                    "current": self.current_conversation_id or 0,
                    "headline": HEADLINE_OPTIONS,
                },
            )
            rows = cursor.fetchall()
        return [
            ConversationHit(
                conversation_id=row[0],
                title=row[1],
                last_active=row[2],
                matched_turns=row[3],
                passage=row[4],
            )
            for row in rows
        ]

    def read(self, conversation_id: int, offset: int) -> ConversationWindow | None:
        try:
            conversation_id = int(conversation_id)
        except (TypeError, ValueError):
            return None
        conversation = (
            person_conversations(self.organization_id, self.user_id)
            .filter(pk=conversation_id)
            .first()
        )
        if conversation is None:
            return None
        messages = Message.objects.filter(conversation=conversation).exclude(content="")
        total = messages.count()
        rows = list(
            messages.select_related("run__user")
            .order_by("created_at", "pk")
            .only("role", "content", "run__user__email", "run__user__full_name")[
                offset : offset + WINDOW_TURNS
            ]
        )
        # A room with several people names who spoke; a one-person thread does not need to.
        speakers = (
            messages.filter(role=MessageRole.USER, run__user__isnull=False)
            .values("run__user")
            .distinct()
            .count()
        )
        turns: list[Turn] = []
        size = 0
        for row in rows:
            if turns and size + len(row.content) > WINDOW_CHARS:
                break
            content = row.content
            if len(content) > WINDOW_CHARS:
                content = (
                    content[:WINDOW_CHARS]
                    + f"\n[This turn is cut at {WINDOW_CHARS:,} of {len(row.content):,} characters.]"
                )
            user = row.run.user if row.run is not None and row.run.user_id else None
            turns.append(
                Turn(
                    role=row.role,
                    content=content,
                    speaker=user.display_name if user is not None else "",
                )
            )
            size += len(content)
        return ConversationWindow(
            conversation_id=conversation.pk,
            title=conversation.title,
            total_turns=total,
            offset=offset,
            turns=turns,
            several_people=speakers > 1,
        )


def conversations_for_run(
    organization_id: int, audience, *, current_conversation_id=None
) -> ConversationAccess:
    """The corpus a run may search (``ownership.conversation_corpus``), or the reason it has none."""
    rule = conversation_corpus(audience)
    if rule.user_id is None:
        return ConversationAccess(corpus=None, reason=rule.reason)
    return ConversationAccess(
        corpus=PersonCorpus(
            organization_id=organization_id,
            user_id=rule.user_id,
            current_conversation_id=current_conversation_id,
        )
    )
