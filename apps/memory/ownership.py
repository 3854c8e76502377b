"""Whose memory a run reaches, and whose past conversations it may read: decided here, on the
server, from who will hear the answer — never from the model, so no tool takes a scope.

Pure functions over plain values (no database): the runner calls :func:`memory_scope` and
:func:`conversation_corpus` with the run's audience, and the trigger app calls
:func:`trigger_memory_scope` for a run a trigger starts.

The rules (seed 000, "De quién son las notas, y quién puede oírlas"; "De quién son las
conversaciones"):

- one-to-one (the web chat, a direct message): the person's store, the same from every surface a
  linked account reaches (a linked chat account resolves to its person before a run exists);
  the MEMORY.md index is injected into the instructions;
- a group chat: the chat's own store; the speaker's own notes are unreachable there and the index
  is never injected (a colleague's sentence would arrive as instructions); past conversations are
  refused, since answering from one person's corpus would read it to the whole room;
- a public widget, an embed, an API-key run, a generic webhook: nobody to attribute anything to,
  so no store, and the tools say so instead of writing somewhere;
- a schedule or an event trigger: no store — unless the trigger runs as its creator, in which
  case a schedule reads and writes the creator's store and an event only reads it; past
  conversations stay refused either way (the creator lends authority, not identity);
- *Allow personal memory* off: no per-person store anywhere (group chats keep theirs).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

# Surfaces where one known person is the only one listening, unless the conversation is a group
# chat of a chat platform.
ONE_TO_ONE_SURFACES = frozenset({"chat", "voice", "slack", "telegram", "mattermost", "teams"})
# Surfaces on which a conversation can be a group chat (a channel, a group DM).
GROUP_CAPABLE_SURFACES = frozenset({"slack", "telegram", "mattermost", "teams"})
TRIGGER_SURFACES = frozenset({"schedule", "event"})


class Access(StrEnum):
    NONE = "none"
    READ = "read"
    READ_WRITE = "read_write"


@dataclass(frozen=True)
class StoreOwner:
    """One store: a person's (``user_id``) or a group chat's (``chat_key``), exactly one."""

    user_id: int | None = None
    chat_key: str = ""

    def __post_init__(self) -> None:
        if (self.user_id is None) == (not self.chat_key):
            raise ValueError("a memory store belongs to exactly one person or one group chat")

    @property
    def is_person(self) -> bool:
        return self.user_id is not None

    def mem0_part(self) -> str:
        """The owner's part of mem0's ``user_id`` (``{org}:{agent}:{owner}``)."""
        return f"user-{self.user_id}" if self.user_id is not None else f"chat-{self.chat_key}"


@dataclass(frozen=True)
class RunAudience:
    """Who hears a run's answer, as the runner knows it before the run."""

    surface: str
    # The person the run answers (a linked chat account already resolved to its person).
    user_id: int | None
    # A group chat's identity; blank for a one-to-one thread.
    group_chat_key: str = ""
    # A trigger's run that runs as its creator (``user_id`` is then the creator).
    runs_as_creator: bool = False


@dataclass(frozen=True)
class MemoryScope:
    """The one store a run touches, and how; ``reason`` says why there is none (or why read-only)."""

    owner: StoreOwner | None
    access: Access
    inject_index: bool
    reason: str = ""

    @property
    def readable(self) -> bool:
        return self.owner is not None and self.access in (Access.READ, Access.READ_WRITE)

    @property
    def writable(self) -> bool:
        return self.owner is not None and self.access == Access.READ_WRITE


NO_STORE_SENTENCES = {
    "widget": "a public widget has nobody to attribute a note to",
    "embed": "an embed has nobody to attribute a note to",
    "api": (
        "a run started with an API key has no memory store: the key acts for whoever issued it, "
        "but whoever holds it is not that person"
    ),
    "webhook": "a webhook run has nobody to attribute a note to",
    "schedule": (
        "a scheduled run answers nobody, so it has no memory store; put what it needs in the "
        "trigger's prompt or a bound context file"
    ),
    "event": (
        "an event trigger's run answers nobody, so it has no memory store; put what it needs in "
        "the trigger's prompt or a bound context file"
    ),
}
PERSONAL_MEMORY_OFF = "this organization has turned personal memory off"
UNLINKED_SENDER = (
    "the sender is not linked to an account here, so there is no one to keep notes for"
)
EVENT_READ_ONLY = "an event trigger's run may read its creator's notes but not change them"


def _none(reason: str) -> MemoryScope:
    return MemoryScope(owner=None, access=Access.NONE, inject_index=False, reason=reason)


def trigger_memory_scope(
    *, kind: str, creator_id: int | None, run_as_creator: bool, personal_memory_allowed: bool = True
) -> MemoryScope:
    """A trigger's run: no store, unless it runs as its creator — then a schedule reads and writes
    the creator's store and an event only reads it. The index is not injected: nobody is in the
    conversation the instructions would be steering."""
    if kind not in TRIGGER_SURFACES:
        raise ValueError(f"a trigger is a schedule or an event, not {kind!r}")
    if not run_as_creator or creator_id is None:
        return _none(NO_STORE_SENTENCES[kind])
    if not personal_memory_allowed:
        return _none(PERSONAL_MEMORY_OFF)
    if kind == "schedule":
        return MemoryScope(StoreOwner(user_id=creator_id), Access.READ_WRITE, inject_index=False)
    return MemoryScope(
        StoreOwner(user_id=creator_id), Access.READ, inject_index=False, reason=EVENT_READ_ONLY
    )


def memory_scope(audience: RunAudience, *, personal_memory_allowed: bool = True) -> MemoryScope:
    """The store a run with ``audience`` reaches (see the module's rules)."""
    surface = audience.surface
    if surface in TRIGGER_SURFACES:
        return trigger_memory_scope(
            kind=surface,
            creator_id=audience.user_id,
            run_as_creator=audience.runs_as_creator,
            personal_memory_allowed=personal_memory_allowed,
        )
    if audience.group_chat_key and surface in GROUP_CAPABLE_SURFACES:
        return MemoryScope(
            StoreOwner(chat_key=audience.group_chat_key), Access.READ_WRITE, inject_index=False
        )
    if surface not in ONE_TO_ONE_SURFACES:
        return _none(NO_STORE_SENTENCES.get(surface, f"a {surface} run has no memory store"))
    if audience.user_id is None:
        return _none(UNLINKED_SENDER)
    if not personal_memory_allowed:
        return _none(PERSONAL_MEMORY_OFF)
    return MemoryScope(StoreOwner(user_id=audience.user_id), Access.READ_WRITE, inject_index=True)


@dataclass(frozen=True)
class CorpusRule:
    """Whose past conversations a run may search: one person's, or nobody's with the reason."""

    user_id: int | None
    reason: str = ""


CORPUS_GROUP_CHAT = (
    "past conversations are personal, and this is a group chat: answering from them would read "
    "one person's private conversations to everyone in the room"
)
CORPUS_TRIGGER = (
    "a scheduled or event-triggered run answers nobody, so it reads no one's past conversations "
    "(not even its creator's)"
)
CORPUS_NOBODY = "this run answers no known person, so there are no past conversations to search"


def conversation_corpus(audience: RunAudience) -> CorpusRule:
    """Only where one person is the only one listening: their own corpus; refused elsewhere."""
    if audience.surface in TRIGGER_SURFACES:
        return CorpusRule(None, CORPUS_TRIGGER)
    if audience.group_chat_key and audience.surface in GROUP_CAPABLE_SURFACES:
        return CorpusRule(None, CORPUS_GROUP_CHAT)
    if audience.surface not in ONE_TO_ONE_SURFACES or audience.user_id is None:
        return CorpusRule(None, CORPUS_NOBODY)
    return CorpusRule(audience.user_id)
