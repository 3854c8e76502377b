"""A run's stored transcript with its large parts kept out of the row (the ``media`` capability,
apps/capabilities/tools/media.py), and the one way to read one back.

- :func:`transcript_for_storage` is what the runner books as ``Run.transcript``: the messages'
  JSON, with every part of the binding's ``threshold_bytes`` or more written to the default
  storage under the conversation's prefix when the agent binds ``media``. A run outside a
  conversation keeps its parts inline: no thread owns the blobs, so nothing would delete them.
- :func:`restored_transcript` is the one reader. Every read of a stored transcript goes through
  it — the next turn's history and a resume (``runner._history_of``), the run's web activity in the
  transcript API (``selectors._own_transcript``), the chat's turns (``transcript._own_messages``)
  — whether or not the agent still binds ``media``.
- :func:`conversation_media_delete` removes a thread's blobs with the thread.
"""

from __future__ import annotations

from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter

from apps.capabilities.tools import media


def transcript_for_storage(
    messages: list[ModelMessage], *, organization_id: int, conversation_id: int | None, threshold
) -> list[dict]:
    dumped = ModelMessagesTypeAdapter.dump_python(messages, mode="json")
    if threshold is None or conversation_id is None:
        return dumped
    return media.externalized(
        dumped,
        prefix=media.media_prefix(organization_id, conversation_id),
        threshold_bytes=threshold,
    )


def restored_transcript(
    stored: list[dict] | None, *, organization_id: int, conversation_id: int | None
) -> list[dict]:
    """``stored`` (a run's transcript, or a slice of one) with its stored parts back inline; a part
    whose blob is gone reads as a placeholder sentence."""
    prefix = (
        media.media_prefix(organization_id, conversation_id)
        if conversation_id is not None
        else None
    )
    return media.restored(stored or [], prefix=prefix)


def is_prompt(part: dict, text: str) -> bool:
    """Is this stored part the user prompt ``text`` — inline, or stored as a text part (its
    marker names the digest of the prompt's bytes, so nothing is read to tell)?"""
    if part.get("part_kind") != "user-prompt":
        return False
    if part.get("content") == text:
        return True
    return media.stored_text_uri(part) == media.text_uri(text)


def conversation_media_delete(*, organization_id: int, conversation_id: int) -> int:
    return media.delete_prefix(media.media_prefix(organization_id, conversation_id))
