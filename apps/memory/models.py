"""Context files (the organization's standing context, written by people and bound to agents) and
memory notes (what an agent wrote down itself, for one person or one group chat)."""

from __future__ import annotations

from django.db import models

from .choices import ContextMode

NAME_MAX = 120
BODY_MAX_CHARS = 200_000


class ContextFile(models.Model):
    """A glossary, a brand voice, an escalation matrix: text a person writes once and binds to many
    agents by id (``AgentSpec.context_ids``).

    An ``inject`` file is inserted into the instructions of every run of an agent that binds it; a
    ``link`` file stays out of the prompt and is read with ``read_context``. Its ``name`` is how the
    model asks for it, hence unique in the organization. The content is text: a document that needs
    searching belongs in a knowledge collection, not here.
    """

    organization = models.ForeignKey(
        "orgs.Organization", on_delete=models.CASCADE, related_name="context_files"
    )
    name = models.CharField(max_length=NAME_MAX)
    description = models.CharField(
        max_length=300,
        blank=True,
        help_text="One line saying when the file is useful; list_context shows it.",
    )
    format = models.CharField(max_length=32, default="markdown", help_text="markdown, text, csv …")
    body = models.TextField(blank=True)
    mode = models.CharField(max_length=8, choices=ContextMode.choices, default=ContextMode.INJECT)
    created_by = models.ForeignKey(
        "orgs.User",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="context_files_created",
    )
    updated_by = models.ForeignKey(
        "orgs.User",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="context_files_updated",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["organization", "name"]
        constraints = [
            # read_context finds a file by name: two files of one organization may not share one.
            models.UniqueConstraint(
                fields=["organization", "name"], name="context_file_org_name_unique"
            ),
        ]
        # The organization's list (ordered by name) is served by the unique constraint's index.

    def __str__(self) -> str:
        return self.name


MEMORY_NAME_MAX = 120
MEMORY_BODY_MAX_CHARS = 50_000
INDEX_NAME = "MEMORY.md"


class MemoryNote(models.Model):
    """A note an agent keeps between conversations, in exactly one store: one person's
    (``owner_user``) or one group chat's (``chat_key``), never both, never neither.

    The store is decided on the server from who hears the answer (``apps.memory.ownership``), so
    no tool takes a scope. ``MEMORY.md`` is an ordinary note, the index. A note its owner
    *suspended* (``suspended_at``) is invisible to every tool and keeps its name taken: an agent
    that writes the name again revives the row with new content (seed 000, "Leerla, y borrarla").
    """

    organization = models.ForeignKey(
        "orgs.Organization", on_delete=models.CASCADE, related_name="memory_notes"
    )
    agent = models.ForeignKey("agents.Agent", on_delete=models.CASCADE, related_name="memory_notes")
    owner_user = models.ForeignKey(
        "orgs.User",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="memory_notes",
    )
    # A group chat's store: the platform's chat identity (e.g. "slack:T042:C0815"); blank for a
    # person's note.
    chat_key = models.CharField(max_length=255, blank=True)
    name = models.CharField(max_length=MEMORY_NAME_MAX)
    body = models.TextField(blank=True)
    suspended_at = models.DateTimeField(null=True, blank=True)
    # The run that last wrote it (kept when the run row goes).
    written_by_run = models.ForeignKey(
        "runs.Run", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["agent", "name"]
        constraints = [
            # Exactly one owner: a person or a group chat.
            models.CheckConstraint(
                condition=(models.Q(owner_user__isnull=False) & models.Q(chat_key=""))
                | (models.Q(owner_user__isnull=True) & ~models.Q(chat_key="")),
                name="memory_note_exactly_one_owner",
            ),
            # A tool finds a note by name in its store; suspended names stay taken. These two
            # also serve the run's read of a store (agent + owner, ordered by name).
            models.UniqueConstraint(
                fields=["agent", "owner_user", "name"],
                condition=models.Q(owner_user__isnull=False),
                name="memory_note_person_name_unique",
            ),
            models.UniqueConstraint(
                fields=["agent", "chat_key", "name"],
                condition=~models.Q(chat_key=""),
                name="memory_note_chat_name_unique",
            ),
        ]
        indexes = [
            # Settings → Memory: a person's notes across every agent of an organization.
            models.Index(fields=["owner_user", "organization"], name="memory_note_owner_org_idx"),
        ]

    def __str__(self) -> str:
        return self.name
