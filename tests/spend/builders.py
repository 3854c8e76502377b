"""Runs with a known cost, written as the runner leaves them, for the spend aggregates' tests."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from django.utils import timezone

from apps.runs.models import Run


def finished_run(
    agent,
    *,
    cost: str | Decimal = "0",
    user=None,
    started_at: dt.datetime | None = None,
    parent: Run | None = None,
    partial: bool = False,
    provider: str = "offline",
    status: str = "completed",
    input_tokens: int = 0,
    output_tokens: int = 0,
) -> Run:
    started_at = started_at or timezone.now()
    return Run.objects.create(
        organization=agent.organization,
        agent=agent,
        agent_version=agent.current_version,
        user=user if parent is None else parent.user,
        surface="api" if parent is None else parent.surface,
        parent_run=parent,
        status=status,
        input="question",
        model_provider=provider,
        model_name=f"{provider}-model",
        model_label=f"{provider} model",
        started_at=started_at,
        ended_at=started_at + dt.timedelta(seconds=2),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost_usd=Decimal(cost),
        cost_is_partial=partial,
    )
