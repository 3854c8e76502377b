"""Names the sandbox app stores."""

from django.db import models


class Backend(models.TextChoices):
    STATE = "state", "Files only (stored in this deployment)"
    SERVICE = "service", "This deployment's sandbox (bubblewrap)"


class Scope(models.TextChoices):
    """Who shares a workspace (the binding's ``session_scope``)."""

    RUN = "run", "Nobody — a new workspace every turn"
    CONVERSATION = "conversation", "Everyone in that chat"
    CHANNEL = "channel", "Every thread of a channel"
    USER = "user", "One person, across every surface"
    AGENT = "agent", "Everyone who talks to this agent"


class Operation(models.TextChoices):
    """What the operation log records: the tool, never the content."""

    LS = "ls"
    READ = "read_file"
    GLOB = "glob"
    GREP = "grep"
    WRITE = "write_file"
    EDIT = "edit_file"
    EXECUTE = "execute"


class Outcome(models.TextChoices):
    DONE = "done"
    REFUSED = "refused"
    FAILED = "failed"
