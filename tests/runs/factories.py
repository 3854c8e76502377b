"""Agents with a published version, model profiles and runs, for the runner's tests."""

from __future__ import annotations

import math
from decimal import Decimal

from apps.agents.models import Agent, AgentVersion, ModelProfile
from apps.runs.models import Run
from apps.runs.services import run_create
from apps.spend.models import EntryKind
from apps.spend.services import budget_counter_for, charge_record, ledger_open, month_of


def published_agent(organization, *, name="Helper", created_by=None, **spec) -> Agent:
    """An agent whose version 1 is published with ``spec`` (AgentSpec fields)."""
    spec = {"instructions": "You are a helpful test agent.", **spec}
    agent = Agent.objects.create(
        organization=organization, name=name, draft_spec=spec, created_by=created_by
    )
    version = AgentVersion.objects.create(agent=agent, number=1, spec=spec, published_by=created_by)
    agent.current_version = version
    agent.save(update_fields=["current_version"])
    return agent


def compatible_profile(
    organization, *, base_url: str, model_name: str, label="Local server", secret=None
):
    return ModelProfile.objects.create(
        organization=organization,
        label=label,
        provider="openai_compatible",
        model_name=model_name,
        base_url=base_url,
        secret=secret,
    )


def queued_run(actor, organization, agent, text="hello", conversation=None) -> Run:
    return run_create(
        actor=actor, organization=organization, agent=agent, input=text, conversation=conversation
    )


def book_spend(run: Run, usd: Decimal) -> None:
    """Book ``usd`` of offline spend on ``run``'s ledger and the month's counters, as a request would.

    The offline rate card prices an output token at $15 per million: usd / 0.000015 tokens,
    rounded up, so the booked amount is at least ``usd`` (and less than a thousandth of a cent over).
    """
    ledger = ledger_open(run=run)
    month = month_of()
    counters = [
        budget_counter_for(
            organization_id=run.organization_id, agent_id=run.agent_id, month=month
        ).pk,
        budget_counter_for(organization_id=run.organization_id, agent_id=None, month=month).pk,
    ]
    tokens = math.ceil(usd / Decimal("0.000015"))
    charge_record(
        organization_id=run.organization_id,
        agent_id=run.agent_id,
        ledger_id=ledger.pk,
        counter_ids=counters,
        month=month,
        kind=EntryKind.MODEL_REQUEST,
        provider="offline",
        model_name="offline",
        input_tokens=0,
        output_tokens=tokens,
    )
