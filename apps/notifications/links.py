"""Every link an alert carries is built here, and carries ``org=<id>`` (seed 003, "Cada enlace
dice de qué organización trata"): the separator is chosen by the path, because the approvals link
already has ``?tab=approvals``."""

from __future__ import annotations

from django.conf import settings

APPROVALS_QUEUE_PATH = "/runs?tab=approvals"


def link(path: str, organization) -> str:
    separator = "&" if "?" in path else "?"
    return f"{settings.AGENTICOS_PUBLIC_URL.rstrip('/')}{path}{separator}org={organization.pk}"


def approvals_queue_link(organization) -> str:
    return link(APPROVALS_QUEUE_PATH, organization)


def agent_link(agent) -> str:
    return link(f"/agents/{agent.pk}/", agent.organization)
