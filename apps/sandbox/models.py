"""A workspace, its files (``state`` backend) and its operation log."""

from django.db import models

from .choices import Backend, Operation, Outcome, Scope


class Workspace(models.Model):
    """One workspace: what a key derived from the binding's scope opens (``scopes.py``).

    ``key`` is a hash, never an id a client sent: the server derives it from the run (its
    conversation, channel, person or agent), so no request can name another person's workspace.
    ``conversation`` is set for the run and conversation scopes, so a workspace is deleted with
    the conversation it belongs to; the wider scopes outlive any one chat.
    """

    organization = models.ForeignKey(
        "orgs.Organization", on_delete=models.CASCADE, related_name="sandbox_workspaces"
    )
    agent = models.ForeignKey(
        "agents.Agent", on_delete=models.CASCADE, related_name="sandbox_workspaces"
    )
    conversation = models.ForeignKey(
        "runs.Conversation",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="sandbox_workspaces",
    )
    backend = models.CharField(max_length=16, choices=Backend.choices)
    # The connection's name for a service workspace ("" for state and for this deployment's own):
    # two hosts are two workspaces, so it is part of the key as well.
    connection_name = models.CharField(max_length=64, blank=True)
    scope = models.CharField(max_length=16, choices=Scope.choices)
    key = models.CharField(max_length=64)
    # Whose workspace it is, in words, for the files panel and the operator page.
    owner_label = models.CharField(max_length=200)
    size_bytes = models.BigIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            # The one lookup a run makes: its organization's workspace under a key.
            models.UniqueConstraint(
                fields=["organization", "key"], name="sandbox_workspace_key_unique"
            ),
        ]
        indexes = [
            # The operator page: an organization's workspaces, most recently used first.
            models.Index(fields=["organization", "-last_used_at"], name="sandbox_ws_org_last_used"),
        ]

    def __str__(self) -> str:
        return f"{self.get_backend_display()} workspace of {self.owner_label}"


class WorkspaceFile(models.Model):
    """One file of a ``state`` workspace: its path relative to the root, and its bytes.

    ``version`` grows on every write, so an edit made on content that changed since it was read
    is refused instead of silently losing the other write.
    """

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="files")
    path = models.CharField(max_length=1024)
    is_dir = models.BooleanField(default=False)
    content = models.BinaryField(default=b"")
    size = models.BigIntegerField(default=0)
    version = models.PositiveIntegerField(default=1)
    modified_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            # A path names one file; also the index every read and write uses.
            models.UniqueConstraint(fields=["workspace", "path"], name="sandbox_file_path_unique"),
        ]

    def __str__(self) -> str:
        return self.path


class WorkspaceOperation(models.Model):
    """The per-workspace operation log: path, operation, run — never the content or a command.

    ``run_id`` is a plain id, not a foreign key: the log outlives a run's deletion, and this app
    sits below the runs app.
    """

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="operations")
    run_id = models.BigIntegerField(null=True, blank=True)
    operation = models.CharField(max_length=16, choices=Operation.choices)
    path = models.CharField(max_length=1024, blank=True)
    outcome = models.CharField(max_length=16, choices=Outcome.choices, default=Outcome.DONE)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            # The operator page's log of one workspace, newest first.
            models.Index(fields=["workspace", "-created_at"], name="sandbox_op_ws_created"),
        ]

    def __str__(self) -> str:
        return f"{self.operation} {self.path}"
