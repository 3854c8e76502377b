"""Context files: the organization's standing context, written by people and bound to agents."""

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
