"""Conversations, their messages, runs and the steps of a run."""

from __future__ import annotations

from decimal import Decimal

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models

from agenticos.money import usd_field

from .choices import MessageRole, RunStatus, StepKind, StopReason, Surface


class Conversation(models.Model):
    """A thread of turns between people (or a surface) and one agent. Runs continue it."""

    organization = models.ForeignKey(
        "orgs.Organization", on_delete=models.CASCADE, related_name="conversations"
    )
    agent = models.ForeignKey(
        "agents.Agent", on_delete=models.CASCADE, related_name="conversations"
    )
    user = models.ForeignKey(
        "orgs.User", on_delete=models.SET_NULL, null=True, blank=True, related_name="conversations"
    )
    surface = models.CharField(max_length=16, choices=Surface.choices, default=Surface.API)
    title = models.CharField(max_length=200, blank=True)
    # A group chat's identity on its platform (e.g. "slack:T042:C0815"), set by the channel that
    # admitted the conversation; blank for a one-to-one thread. Who hears a run's answer — and so
    # which memory store it reaches, and whether a person's past conversations may be read —
    # follows from it (apps.memory.ownership).
    group_chat_key = models.CharField(max_length=255, blank=True)
    # The planning capability's plan: it belongs to the conversation, not the turn (seed 000,
    # "Planificación"). NULL when there is none; written back by the runner when a run stops.
    plan = models.JSONField(null=True, blank=True)
    # The system_reminders capability's cadence ({"requests": N, "fires": {class: count}}): it
    # counts across the whole conversation, so it is kept here, never the reminder text.
    reminder_counters = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]
        indexes = [
            # A person's recent conversations in an organization.
            models.Index(
                fields=["organization", "user", "-updated_at"], name="conv_org_user_updated_idx"
            ),
        ]

    def __str__(self) -> str:
        return self.title or f"Conversation {self.pk}"


class Message(models.Model):
    """One turn of a conversation.

    An assistant turn carries its own share of its run's cost: the difference from what earlier
    turns of that run already claim, so the messages of a run sum to the run (seed 003, "Un coste
    que no se pudo medir lo dice"). NULL cost means "not recorded", never "free".
    ``run_status`` is the run's status when the turn was written, so a cancelled, truncated turn
    does not read as a finished answer.
    """

    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="messages"
    )
    run = models.ForeignKey(
        "runs.Run", on_delete=models.SET_NULL, null=True, blank=True, related_name="messages"
    )
    role = models.CharField(max_length=16, choices=MessageRole.choices)
    content = models.TextField(blank=True)
    cost_usd = usd_field(null=True, blank=True)
    cost_is_partial = models.BooleanField(null=True, blank=True)
    run_status = models.CharField(max_length=24, choices=RunStatus.choices, blank=True)
    # The provider's input tokens of the turn's last request (the context gauge's reading).
    context_tokens = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # What conversation_search matches: kept by the database itself on every write. The
    # configuration is ``simple`` (no stemming) because one language's stemmer mangles every other
    # language's words (seed 000, "Cómo busca").
    search_vector = models.GeneratedField(
        expression=SearchVector("content", config="simple"),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    class Meta:
        ordering = ["conversation", "created_at", "pk"]
        indexes = [
            # The thread in order.
            models.Index(fields=["conversation", "created_at"], name="message_conv_created_idx"),
            # search_conversations: websearch_to_tsquery matched against every message.
            GinIndex(fields=["search_vector"], name="message_search_gin_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:40]}"


class Run(models.Model):
    """One execution of a published agent version, from any surface, through the one runner.

    The row is committed `running` before the first model request, so a worker that dies leaves a
    durable row the stale-run reaper can end. Cost and tokens are written by the runner's finally
    block with an explicit commit, so a failed or cancelled run still records what it spent.
    ``error`` is a controlled sentence; the provider's own text goes to the server log only.
    """

    organization = models.ForeignKey(
        "orgs.Organization", on_delete=models.CASCADE, related_name="runs"
    )
    agent = models.ForeignKey("agents.Agent", on_delete=models.PROTECT, related_name="runs")
    agent_version = models.ForeignKey(
        "agents.AgentVersion", on_delete=models.PROTECT, related_name="runs"
    )
    user = models.ForeignKey(
        "orgs.User", on_delete=models.SET_NULL, null=True, blank=True, related_name="runs"
    )
    surface = models.CharField(max_length=16, choices=Surface.choices, default=Surface.API)
    conversation = models.ForeignKey(
        Conversation, on_delete=models.SET_NULL, null=True, blank=True, related_name="runs"
    )
    # A delegated run points at the run that delegated it; top-level runs have none. SET NULL, not
    # CASCADE: deleting a parent leaves its delegations' rows, which then count toward the bill on
    # their own (seed 003) — a delegation's spend must not vanish with the row that called it.
    parent_run = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="child_runs"
    )
    # The delegation's task id, as its subagent_* frames and ledger entries carry it (delegated
    # rows only; apps/runs/delegation.py).
    subagent_task_id = models.CharField(max_length=64, blank=True)
    status = models.CharField(max_length=24, choices=RunStatus.choices, default=RunStatus.QUEUED)
    stop_reason = models.CharField(max_length=24, choices=StopReason.choices, blank=True)
    input = models.TextField()
    output = models.TextField(blank=True)
    error = models.CharField(max_length=500, blank=True)
    # The cap that refused the run: {"scope": "agent"|"organization", "limit_usd": ..., "spent_usd": ...}.
    budget_refusal = models.JSONField(null=True, blank=True)
    model_label = models.CharField(max_length=200, blank=True)
    model_provider = models.CharField(max_length=32, blank=True)
    model_name = models.CharField(max_length=200, blank=True)
    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    request_count = models.PositiveIntegerField(default=0)
    cost_usd = usd_field(default=Decimal("0"))
    # True when some request could not be priced (booked at 0): the cost is a floor.
    cost_is_partial = models.BooleanField(default=False)
    # The pydantic-ai message history (ModelMessagesTypeAdapter JSON); round-trips for resumes.
    transcript = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    # The age the reaper measures: the last status transition, not the first start.
    last_transition_at = models.DateTimeField(auto_now_add=True)
    cancel_requested_at = models.DateTimeField(null=True, blank=True)
    # While running: until when the worker holding the run vouches for it. The worker renews it
    # every few seconds; a lapsed lease means the worker stopped, and the lease sweep fails the
    # run within about a minute (docs/runner.md "Leases"). NULL when no worker holds the run.
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # True while a run that already answered still books spend under it: background delegations
    # it started are still running (apps/runs/delegation/lifetime.py). Its totals and its child
    # rows are not final until it turns False, in the same transaction that brings them up to the
    # ledger — or the lease sweep does that for a worker that died meanwhile.
    accruing = models.BooleanField(default=False)
    # True when run_create put the run on the broker itself: only such a run is re-sent by the
    # requeue sweep while it stays queued (apps/runs/requeue.py). A run its creator drives (a
    # trigger's fire, a channel message) is left to that creator.
    on_queue = models.BooleanField(default=False)
    # How many times the requeue sweep re-sent the run's task; past RUN_REQUEUE_LIMIT it fails.
    requeue_count = models.PositiveSmallIntegerField(default=0)
    # A parked run's state (apps.approvals.parking): the message history and the parked call ids,
    # one level per delegate (a tree), plus the plan. NULL when the run is not parked.
    paused_state = models.JSONField(null=True, blank=True)
    # The chat session's approval mode (apps.approvals.choices.ApprovalMode), checked in prepare():
    # "follow" (the spec decides), "approve_all" (standing consent), "ask_all" (gate every tool).
    approval_mode = models.CharField(max_length=16, default="follow")
    # The chat binding ("exposure", apps.channels) that admitted the run, when a channel did. A
    # plain id, not a foreign key: channels sits above runs, and the run history filters on it.
    exposure_id = models.PositiveBigIntegerField(null=True, blank=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            # Run history of an organization, newest first.
            models.Index(fields=["organization", "-created_at"], name="run_org_created_idx"),
            # The reaper: live runs older than the threshold.
            models.Index(
                fields=["last_transition_at"],
                condition=models.Q(status__in=["queued", "running"]),
                name="run_live_transition_idx",
            ),
            # The lease sweep: running runs whose worker stopped renewing.
            models.Index(
                fields=["lease_expires_at"],
                condition=models.Q(status="running"),
                name="run_running_lease_idx",
            ),
            # The lease sweep: answered runs still accruing whose worker stopped renewing.
            models.Index(
                fields=["lease_expires_at"],
                condition=models.Q(accruing=True),
                name="run_accruing_lease_idx",
            ),
            # The requeue sweep: runs put on the broker and still queued.
            models.Index(
                fields=["created_at"],
                condition=models.Q(status="queued", on_queue=True),
                name="run_queued_on_queue_idx",
            ),
            # An agent's runs this month (spend reports).
            models.Index(fields=["agent", "created_at"], name="run_agent_created_idx"),
        ]

    def __str__(self) -> str:
        return f"Run {self.pk} of {self.agent_id} ({self.status})"


class RunStep(models.Model):
    """One model request (or tool call) of a run, with what it cost, in order."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="steps")
    number = models.PositiveIntegerField()
    kind = models.CharField(max_length=16, choices=StepKind.choices)
    detail = models.JSONField(default=dict, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_usd = usd_field(default=Decimal("0"))
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "number"]
        constraints = [
            models.UniqueConstraint(fields=["run", "number"], name="run_step_number_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.run_id}#{self.number} {self.kind}"
