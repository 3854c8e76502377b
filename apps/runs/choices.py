"""Run statuses, surfaces and message roles, with the groups the runner and the reaper use."""

from django.db import models


class RunStatus(models.TextChoices):
    """A run's state. Every move is claimed with a conditional UPDATE (never a blind save) through
    ``apps.runs.states.claim``, which refuses any pair missing from ``RUN_TRANSITIONS`` below."""

    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"
    BUDGET_EXCEEDED = "budget_exceeded", "Budget exceeded"
    GUARDRAIL_BLOCKED = "guardrail_blocked", "Guardrail blocked"
    AWAITING_APPROVAL = "awaiting_approval", "Awaiting approval"
    AWAITING_ANSWER = "awaiting_answer", "Waiting for an answer"


TERMINAL_STATUSES = frozenset(
    {
        RunStatus.COMPLETED,
        RunStatus.FAILED,
        RunStatus.CANCELLED,
        RunStatus.BUDGET_EXCEEDED,
        RunStatus.GUARDRAIL_BLOCKED,
    }
)
# Rows nothing inside a process will resolve once their worker dies: what the reaper sweeps.
LIVE_STATUSES = frozenset({RunStatus.QUEUED, RunStatus.RUNNING})
PARKED_STATUSES = frozenset({RunStatus.AWAITING_APPROVAL, RunStatus.AWAITING_ANSWER})

# The whole state machine: from each status, the statuses a claim may move a run to. Only
# apps/runs writes a Run's status, and only through apps.runs.states.claim, which checks this.
RUN_TRANSITIONS: dict[str, frozenset[str]] = {
    # A worker claims it; a cancel before any worker picked it up; the stale-run reaper.
    RunStatus.QUEUED: frozenset({RunStatus.RUNNING, RunStatus.CANCELLED, RunStatus.FAILED}),
    # Its end as the runner books it (a gated call or a question parks it instead); the reaper
    # and the lease sweep fail it; a cancel of a run whose lease lapsed ends it cancelled.
    RunStatus.RUNNING: TERMINAL_STATUSES | PARKED_STATUSES,
    # A resume once every call is decided; a cancel, or the expiry sweep, ends a parked run.
    RunStatus.AWAITING_APPROVAL: frozenset({RunStatus.RUNNING, RunStatus.CANCELLED}),
    RunStatus.AWAITING_ANSWER: frozenset({RunStatus.RUNNING, RunStatus.CANCELLED}),
    # A run a sweep failed while its worker was in fact alive: that worker's own end, booked
    # later, wins (run_finish narrows this to stop_reason reaped | worker_lost).
    RunStatus.FAILED: (TERMINAL_STATUSES - {RunStatus.FAILED})
    | PARKED_STATUSES
    | {RunStatus.FAILED},
    RunStatus.COMPLETED: frozenset(),
    RunStatus.CANCELLED: frozenset(),
    RunStatus.BUDGET_EXCEEDED: frozenset(),
    RunStatus.GUARDRAIL_BLOCKED: frozenset(),
}


class StopReason(models.TextChoices):
    """Why a run ended, finer than its status (a step limit and a provider error are both `failed`)."""

    ANSWERED = "answered", "Answered"
    STEP_LIMIT = "step_limit", "Step limit reached"
    BUDGET = "budget", "Budget cap reached"
    GUARDRAIL = "guardrail", "Ended by a guardrail"
    CANCELLED = "cancelled", "Cancelled"
    PROVIDER_ERROR = "provider_error", "Model provider error"
    INTERNAL_ERROR = "internal_error", "Internal error"
    NOT_RUNNABLE = "not_runnable", "Agent not runnable"
    REAPED = "reaped", "Reaped by the stale-run sweep"
    WORKER_LOST = "worker_lost", "The worker running it stopped"
    UNDELIVERED = "undelivered", "No worker ever took it"


class Surface(models.TextChoices):
    CHAT = "chat", "Chat"
    API = "api", "API"
    WIDGET = "widget", "Widget"
    EMBED = "embed", "Embed"
    SLACK = "slack", "Slack"
    TELEGRAM = "telegram", "Telegram"
    MATTERMOST = "mattermost", "Mattermost"
    TEAMS = "teams", "Teams"
    WEBHOOK = "webhook", "Webhook"
    SCHEDULE = "schedule", "Schedule"
    EVENT = "event", "Event"
    VOICE = "voice", "Voice"


class MessageRole(models.TextChoices):
    USER = "user", "User"
    ASSISTANT = "assistant", "Assistant"


class StepKind(models.TextChoices):
    MODEL_REQUEST = "model_request", "Model request"
    TOOL_CALL = "tool_call", "Tool call"
