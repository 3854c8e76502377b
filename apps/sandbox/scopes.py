"""The workspace key: derived on the server from the binding's ``session_scope`` and the run.

The scope is a data-sharing policy — getting it wrong shows one person another's files — so the
key is computed here from what the run *is* (its conversation, the channel it arrived in, the
person it runs for, its agent), never taken from a client. The parts are length-prefixed before
hashing, so two different id tuples can never spell the same string (``user 1 / agent 23`` and
``user 12 / agent 3`` stay apart). A scope with nothing to key on refuses: a ``user`` workspace
for a run with no person does not quietly become the agent's shared one.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from .choices import Scope

KEY_VERSION = "agenticos-sandbox-v1"


class WorkspaceScopeRefused(Exception):
    """The scope has nothing to key on for this run; the message says what is missing."""


@dataclass(frozen=True)
class RunPlace:
    """What a run is, as far as a workspace key cares."""

    organization_id: int
    agent_id: int
    run_id: int
    conversation_id: int | None
    # The chat-platform channel the conversation belongs to ("" outside a channel).
    channel_key: str
    user_id: int | None
    user_label: str = ""


@dataclass(frozen=True)
class WorkspaceKey:
    key: str
    scope: str
    owner_label: str
    # Set for the scopes whose workspace is deleted with the conversation.
    conversation_id: int | None


def _digest(parts: tuple[str, ...]) -> str:
    encoded = "".join(f"{len(part)}:{part};" for part in parts)
    return hashlib.sha256(encoded.encode("utf-8")).hexdigest()


def workspace_key(
    place: RunPlace, *, scope: str, backend: str, connection: str = ""
) -> WorkspaceKey:
    """The key of the workspace ``place`` opens under ``scope``; refuses rather than widening.

    ``backend`` and ``connection`` are part of the key: a stored document and a directory on a
    sandbox host are different things, so changing either opens a new workspace and leaves the
    old one where it is.
    """
    base = (KEY_VERSION, str(place.organization_id), backend, connection, scope)
    if scope == Scope.RUN:
        ident, label, conversation = (
            f"run:{place.run_id}",
            f"run {place.run_id}",
            place.conversation_id,
        )
    elif scope == Scope.CONVERSATION:
        if place.conversation_id is None:
            raise WorkspaceScopeRefused(
                "the workspace is shared per conversation, and this run has no conversation"
            )
        ident = f"conversation:{place.conversation_id}"
        label, conversation = f"conversation {place.conversation_id}", place.conversation_id
    elif scope == Scope.CHANNEL:
        if not place.channel_key:
            raise WorkspaceScopeRefused(
                "the workspace is shared per chat channel, and this run did not arrive in one"
            )
        ident, label, conversation = (
            f"channel:{place.channel_key}",
            f"channel {place.channel_key}",
            None,
        )
    elif scope == Scope.USER:
        if place.user_id is None:
            raise WorkspaceScopeRefused(
                "the workspace belongs to one person, and this run runs for no person"
            )
        ident = f"user:{place.user_id}"
        label, conversation = f"{place.user_label or 'person ' + str(place.user_id)}", None
    elif scope == Scope.AGENT:
        ident, label, conversation = "agent", "everyone who talks to this agent", None
    else:
        raise WorkspaceScopeRefused(f"unknown session_scope {scope!r}")
    key = _digest((*base, str(place.agent_id), ident))
    return WorkspaceKey(key=key, scope=scope, owner_label=label, conversation_id=conversation)
