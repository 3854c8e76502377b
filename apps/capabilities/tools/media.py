"""media ("Images out of history"): the large parts of a stored conversation history kept in the
deployment's file storage, with a ``media+sha256://`` reference left in their place.

Why here: a turn of a conversation starts from the previous run's stored transcript, the
library's own dump of the run's messages, replayed exactly as the model last saw it — base64
images and large tool results included. Without this capability those bytes are rows in
PostgreSQL and bytes on the wire at every turn.

The walkers are pydantic-ai-harness's (``externalize_media`` / ``restore_media``): every binary
part (``BinaryContent``: an image a tool returned, a file the model produced) and every text part
of ``threshold_bytes`` or more becomes a marker carrying the content's sha256 URI. The store is
:class:`StorageMediaStore`, over Django's default storage (the filesystem under ``MEDIA_ROOT``
here, an S3-compatible bucket in production through ``STORAGES``), at
``media/<organization>/<conversation>/<digest>``:

- the organization is the isolation: a content hash is the same for two tenants holding the same
  image, so the prefix comes from the run, never from the URI;
- the conversation is the lifetime: a hash does not record who still references it, so the
  thread's prefix goes with the thread (``apps.runs.services.conversation_delete``);
- no URL is ever issued (``public_url`` is None): a URL a model provider can download, anyone can.

Both directions fail softly. Writing: a storage failure keeps the inline bytes (losing a summary
a model was paid for is worse than a larger history). Reading: a blob that is gone becomes a
placeholder sentence in its place, never an exception; the run goes on.

Binding the capability is the decision to offload; restoring is not optional: every stored
history is restored (:func:`restored`) whether or not its agent still binds ``media``, since a
marker nobody restores is an image handed to the model in a language it does not read.
"""

from __future__ import annotations

import logging
from collections.abc import Coroutine, Mapping
from typing import Any

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from pydantic_ai_harness.media import (
    MediaContext,
    externalize_media,
    media_uri_for,
    parse_media_uri,
    restore_media,
)

from ._toolsets import parsed_config

logger = logging.getLogger(__name__)

CAPABILITY_ID = "media"
URI_SCHEME = "media+sha256://"

# The harness's marker keys (pydantic_ai_harness/media/_walker.py): what a stored part left in
# place of its payload carries. Read here only to find the markers before restoring them.
_MARKER = "__harness_external_media__"
_TEXT_MARKER = "__harness_external_text__"
_URI_KEY = "__harness_external_uri__"
_LITERAL_KEY = "__harness_external_literal__"
_FORMAT_KEY = "__harness_external_marker_format__"
_HARNESS_KEY_PREFIX = "__harness_external_"

_EMPTY = MediaContext()


def media_prefix(organization_id: int, conversation_id: int) -> str:
    """Where a conversation's blobs live in the default storage (always with a trailing ``/``)."""
    return f"media/{int(organization_id)}/{int(conversation_id)}/"


class StorageMediaStore:
    """The harness's ``MediaStore`` protocol over Django's default storage, under one prefix.

    Its methods are coroutines for the protocol's sake but never suspend: Django's storage API is
    blocking, and the walkers are driven on the caller's thread (:func:`_complete`), which is a
    blocking thread already (the runner's booking, a request's view)."""

    def __init__(self, prefix: str, storage=None) -> None:
        self.prefix = prefix
        self.storage = storage if storage is not None else default_storage

    def name_for(self, uri: str) -> str:
        return f"{self.prefix}{parse_media_uri(uri)}"

    async def put(self, data: bytes, *, context: MediaContext = _EMPTY) -> str:
        uri = media_uri_for(data)
        name = self.name_for(uri)
        if not self.storage.exists(name):
            saved = self.storage.save(name, ContentFile(data))
            if saved != name:
                # Another writer stored the same bytes between the check and the save: the
                # storage kept both under two names; the content-addressed one is enough.
                self.storage.delete(saved)
        return uri

    async def get(self, uri: str, *, context: MediaContext = _EMPTY) -> bytes:
        name = self.name_for(uri)
        if not self.storage.exists(name):
            raise FileNotFoundError(f"media not found: {uri}")
        with self.storage.open(name, "rb") as blob:
            return blob.read()

    async def exists(self, uri: str, *, context: MediaContext = _EMPTY) -> bool:
        return bool(self.storage.exists(self.name_for(uri)))

    async def public_url(self, uri: str, *, context: MediaContext = _EMPTY) -> str | None:
        return None  # never: a stored part is restored into the request, not linked

    async def get_metadata(self, uri: str, *, context: MediaContext = _EMPTY) -> Mapping[str, str]:
        if not await self.exists(uri):
            raise FileNotFoundError(f"media not found: {uri}")
        return {}


def _complete(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """The walker's result, driven to its end on this thread: its store never suspends, so the
    coroutine finishes on its first step (no event loop needed, none blocked)."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise RuntimeError("the media walker suspended; StorageMediaStore must not await")


# --- writing ------------------------------------------------------------------------------------


def threshold_of(bindings) -> int | None:
    """The enabled ``media`` binding's ``threshold_bytes``, or None when the agent binds none."""
    for binding in bindings:
        binding_id = binding["id"] if isinstance(binding, Mapping) else binding.id
        enabled = (
            binding.get("enabled", True)
            if isinstance(binding, Mapping)
            else getattr(binding, "enabled", True)
        )
        if binding_id == CAPABILITY_ID and enabled:
            return int(parsed_config(CAPABILITY_ID, binding).threshold_bytes)
    return None


def externalized(tree: list, *, prefix: str, threshold_bytes: int, storage=None) -> list:
    """``tree`` (a ``ModelMessagesTypeAdapter`` JSON dump) with every part of ``threshold_bytes``
    or more written to storage and replaced by its marker; ``tree`` itself when storage fails."""
    store = StorageMediaStore(prefix, storage)
    try:
        return _complete(
            externalize_media(tree, media_store=store, threshold_bytes=threshold_bytes)
        )
    except Exception:
        # Seed: a failure is logged and the history kept as it is — larger, never lost.
        logger.warning("media: storing parts under %s failed; kept inline", prefix, exc_info=True)
        return tree


# --- reading ------------------------------------------------------------------------------------


def _uri_of(node: dict) -> str | None:
    value = node.get(_URI_KEY, node.get("uri"))
    return value if isinstance(value, str) and value.startswith(URI_SCHEME) else None


def _literal(node: dict) -> dict | None:
    """The caller's dict inside the harness's literal wrapper (data that merely carries a marker
    key, never a marker itself), or None when ``node`` is no wrapper."""
    inner = node.get(_LITERAL_KEY)
    return inner if node.keys() == {_LITERAL_KEY, _FORMAT_KEY} and isinstance(inner, dict) else None


def _markers(node: Any, found: set[str]) -> None:
    if isinstance(node, list):
        for item in node:
            _markers(item, found)
    elif isinstance(node, dict):
        inner = _literal(node)
        if inner is not None:
            for value in inner.values():
                _markers(value, found)
            return
        if node.get(_MARKER) is True:
            uri = _uri_of(node)
            if uri is not None:
                found.add(uri)
        for value in node.values():
            _markers(value, found)


def text_uri(text: str) -> str:
    """The URI a text part of exactly ``text`` is stored under (the harness's encoding)."""
    return media_uri_for(text.encode("utf-8", errors="surrogatepass"))


def stored_text_uri(part: dict) -> str | None:
    """The URI of a stored text part's content, or None when ``part`` is not one."""
    if part.get(_MARKER) is True and part.get(_TEXT_MARKER) is True:
        return _uri_of(part)
    return None


def placeholder(uri: str | None, media_type: str | None = None) -> str:
    """What the model reads where a stored part is gone: said plainly, with what it was."""
    what = f"{media_type} " if media_type else ""
    digest = uri[len(URI_SCHEME) :][:12] if uri else "unknown"
    return (
        f"[a stored {what}part of this conversation is no longer available "
        f"(sha256 {digest}…); it was not restored]"
    )


def _is_missing(node: Any, missing: set[str] | None) -> bool:
    if not (isinstance(node, dict) and node.get(_MARKER) is True):
        return False
    return missing is None or _uri_of(node) in missing


def _without_markers(node: Any, missing: set[str] | None) -> Any:
    """``node`` with every marker in ``missing`` (every marker, when None) replaced by a
    placeholder of a shape its place accepts: a text part keeps its fields with the sentence as
    its content; a file the model produced becomes a text part; any other binary becomes the
    sentence (a tool return or a prompt item takes a string)."""
    if isinstance(node, list):
        return [_without_markers(item, missing) for item in node]
    if not isinstance(node, dict):
        return node
    inner = _literal(node)
    if inner is not None:
        kept = {key: _without_markers(value, missing) for key, value in inner.items()}
        return {**node, _LITERAL_KEY: kept}
    if _is_missing(node, missing):
        uri = _uri_of(node)
        media_type = node.get("media_type")
        sentence = placeholder(uri, media_type if isinstance(media_type, str) else None)
        if node.get(_TEXT_MARKER) is True:
            kept = {
                k: v
                for k, v in node.items()
                if not k.startswith(_HARNESS_KEY_PREFIX) and not (k == "uri" and v == uri)
            }
            return {**kept, "content": sentence}
        return sentence
    if node.get("part_kind") == "file" and _is_missing(node.get("content"), missing):
        media_type = node["content"].get("media_type")
        sentence = placeholder(_uri_of(node["content"]), media_type)
        return {"content": sentence, "part_kind": "text"}
    return {key: _without_markers(value, missing) for key, value in node.items()}


def restored(tree: list, *, prefix: str | None, storage=None) -> list:
    """``tree`` with every marker re-inlined from storage under ``prefix``; a blob that is gone
    (or a storage that fails) leaves a placeholder sentence instead. ``tree`` itself, untouched,
    when it carries no marker. ``prefix`` None (a history with no conversation to own blobs):
    every marker is a placeholder."""
    found: set[str] = set()
    _markers(tree, found)
    if not found:
        return tree
    if prefix is None:
        return _without_markers(tree, None)
    store = StorageMediaStore(prefix, storage)
    try:
        missing = {uri for uri in found if not _complete(store.exists(uri))}
        if missing:
            logger.warning("media: %d stored part(s) under %s are gone", len(missing), prefix)
        return _complete(restore_media(_without_markers(tree, missing), media_store=store))
    except Exception:
        logger.warning("media: restoring parts under %s failed", prefix, exc_info=True)
        return _without_markers(tree, None)


def delete_prefix(prefix: str, storage=None) -> int:
    """Delete every blob under ``prefix``; how many. A prefix that was never written is 0."""
    storage = storage if storage is not None else default_storage
    directory = prefix.rstrip("/")
    try:
        _, files = storage.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return 0
    for name in files:
        storage.delete(f"{directory}/{name}")
    return len(files)


def build_media_toolset(binding, context):
    return None  # no tools: it changes how a history is stored, not what the model can reach


__all__ = [
    "StorageMediaStore",
    "build_media_toolset",
    "delete_prefix",
    "externalized",
    "media_prefix",
    "placeholder",
    "restored",
    "stored_text_uri",
    "text_uri",
    "threshold_of",
]
