"""A few hundred runs with every column the run history filters and orders on, bulk-created."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal

from django.utils import timezone

from apps.agents.models import AgentVersion
from apps.runs.models import Run

from .factories import published_agent

BASE = dt.datetime(2025, 3, 1, 8, 0, tzinfo=dt.UTC)
STATUSES = [
    "completed",
    "completed",
    "failed",
    "budget_exceeded",
    "cancelled",
    "completed",
    "running",
    "queued",
]
SURFACES = ["chat", "api", "slack", "mattermost"]
LABELS = ["Offline model", "GPT-4o (gpt-4o)"]


@dataclass
class History:
    agents: list
    top_level: list[Run]
    delegated: list[Run]
    other_org_run: Run

    @property
    def everything(self) -> list[Run]:
        return self.top_level + self.delegated


def duration_ms(run: Run) -> int | None:
    if run.started_at is None or run.ended_at is None:
        return None
    return int((run.ended_at - run.started_at) / dt.timedelta(milliseconds=1))


def build_history(org, other_org, users, *, count: int = 300) -> History:
    helper = published_agent(org, name="Helper")
    researcher = published_agent(org, name="Researcher")
    AgentVersion.objects.create(agent=helper, number=2, spec=helper.current_version.spec)
    versions = {
        helper.pk: list(helper.versions.order_by("number")),
        researcher.pk: [researcher.current_version],
    }
    rows = []
    for i in range(count):
        status = STATUSES[i % len(STATUSES)]
        agent = helper if i % 3 else researcher
        started = None if status == "queued" else BASE + dt.timedelta(hours=i)
        # Durations spread over 0 .. 95 s, not in started order, so a page of newest is the wrong set.
        took = dt.timedelta(milliseconds=(i * 7919) % 95_000)
        ended = None if status in ("running", "queued") else started + took
        tokens_in, tokens_out = (i * 31) % 5000, (i * 17) % 900
        rows.append(
            Run(
                organization=org,
                agent=agent,
                agent_version=versions[agent.pk][i % len(versions[agent.pk])],
                user=users[(i // 2) % len(users)],
                surface=SURFACES[i % len(SURFACES)],
                status=status,
                input=f"question {i}",
                model_label=LABELS[i % 2],
                started_at=started,
                ended_at=ended,
                # Unfinished runs keep the zero they were created with, as the runner does.
                input_tokens=tokens_in if ended else 0,
                output_tokens=tokens_out if ended else 0,
                cost_usd=Decimal(tokens_in * 3 + tokens_out * 15) / Decimal(1_000_000)
                if ended
                else Decimal(0),
            )
        )
    top_level = Run.objects.bulk_create(rows)
    delegated = Run.objects.bulk_create(
        Run(
            organization=org,
            agent=researcher,
            agent_version=researcher.current_version,
            user=parent.user,
            surface=parent.surface,
            parent_run=parent,
            status="completed",
            input="delegated",
            model_label=LABELS[0],
            started_at=parent.started_at,
            ended_at=parent.started_at + dt.timedelta(seconds=1),
            input_tokens=10,
            output_tokens=10,
            cost_usd=Decimal("0.00018"),
        )
        for parent in top_level[:40:4]
        if parent.started_at is not None
    )
    theirs = published_agent(other_org, name="Theirs")
    other_org_run = Run.objects.create(
        organization=other_org,
        agent=theirs,
        agent_version=theirs.current_version,
        status="completed",
        input="theirs",
        started_at=timezone.now(),
        ended_at=timezone.now(),
    )
    return History(
        agents=[helper, researcher],
        top_level=top_level,
        delegated=delegated,
        other_org_run=other_org_run,
    )
