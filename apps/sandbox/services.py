"""Every write of the sandbox app: opening a workspace and logging an operation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.audit.services import record_audit

from . import bubblewrap
from .choices import Backend, Outcome
from .models import Workspace, WorkspaceOperation
from .scopes import RunPlace, WorkspaceScopeRefused, workspace_key
from .service import ServiceWorkspaceBackend
from .state import StateWorkspaceBackend


@dataclass
class OpenWorkspace:
    """The run's workspace as the sandbox tools receive it (``RunResources.sandbox``).

    ``refused`` is set instead of ``backend`` when the workspace cannot be opened for this run
    (a scope with nothing to key on, no bubblewrap on this host): every tool answers with it.
    """

    workspace_id: int | None
    backend: Any
    backend_name: str
    scope: str
    owner_label: str
    run_id: int
    include_execute: bool
    refused: str = ""


def workspace_open_for_run(*, run, config) -> OpenWorkspace:
    """Open (or create) the workspace ``run`` reaches under the binding's ``config``.

    The key is derived here from what the run is (``scopes.workspace_key``); creating the row is
    audited with the run's person as the actor.
    """
    conversation = run.conversation if run.conversation_id else None
    user = run.user if run.user_id else None
    place = RunPlace(
        organization_id=run.organization_id,
        agent_id=run.agent_id,
        run_id=run.pk,
        conversation_id=run.conversation_id,
        channel_key=conversation.group_chat_key if conversation is not None else "",
        user_id=run.user_id,
        user_label=getattr(user, "email", "") if user is not None else "",
    )
    include_execute = config.backend == Backend.SERVICE and config.include_execute

    def refused(reason: str) -> OpenWorkspace:
        return OpenWorkspace(
            None, None, config.backend, config.session_scope, "", run.pk, include_execute, reason
        )

    try:
        key = workspace_key(
            place,
            scope=config.session_scope,
            backend=config.backend,
            connection=config.connection_id or "",
        )
    except WorkspaceScopeRefused as exc:
        return refused(f"No workspace here: {exc}.")
    if config.backend == Backend.SERVICE and not bubblewrap.available():
        return refused(
            "No workspace here: this deployment's sandbox needs bubblewrap, which is not "
            "installed on this host; an operator installs it (apt-get install -y bubblewrap)."
        )
    workspace = _workspace_get_or_create(run=run, key=key, config=config, user=user)
    backend: ServiceWorkspaceBackend | StateWorkspaceBackend
    if config.backend == Backend.SERVICE:
        backend = ServiceWorkspaceBackend(key.key)
    else:
        backend = StateWorkspaceBackend(workspace.pk)
    return OpenWorkspace(
        workspace.pk, backend, config.backend, key.scope, key.owner_label, run.pk, include_execute
    )


def _workspace_get_or_create(*, run, key, config, user) -> Workspace:
    existing = Workspace.objects.filter(organization_id=run.organization_id, key=key.key).first()
    if existing is not None:
        Workspace.objects.filter(pk=existing.pk).update(last_used_at=timezone.now())
        return existing
    try:
        with transaction.atomic():
            workspace = Workspace.objects.create(
                organization_id=run.organization_id,
                agent_id=run.agent_id,
                conversation_id=key.conversation_id,
                backend=config.backend,
                connection_name=config.connection_id or "",
                scope=key.scope,
                key=key.key,
                owner_label=key.owner_label[:200],
            )
            record_audit(
                actor=user,
                organization=run.organization,
                action="sandbox.workspace_opened",
                subject=workspace,
                details={
                    "backend": config.backend,
                    "scope": key.scope,
                    "agent_id": run.agent_id,
                    "run_id": run.pk,
                },
            )
            return workspace
    except IntegrityError:
        # Two runs opened the same workspace at once: the other one's row is the workspace.
        return Workspace.objects.get(organization_id=run.organization_id, key=key.key)


def operation_record(
    *, workspace_id: int, run_id: int | None, operation: str, path: str, outcome: str = Outcome.DONE
) -> None:
    """Log one operation: path, operation and run — never the content or the command."""
    WorkspaceOperation.objects.create(
        workspace_id=workspace_id,
        run_id=run_id,
        operation=operation,
        # PostgreSQL text cannot hold NUL; a refused path with one is logged with it spelled out.
        path=path.replace("\x00", "\\0")[:1024],
        outcome=outcome,
    )
