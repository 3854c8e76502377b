"""Run statuses, surfaces and message roles, with the groups the runner and the reaper use."""

from django.db import models


class RunStatus(models.TextChoices):
    """A run's state. Transitions (claimed with a conditional UPDATE, never a blind save):

    queued → running → completed | failed | cancelled | budget_exceeded | guardrail_blocked
    running → awaiting_approval | awaiting_answer → running (resume)
    queued → cancelled (cancelled before a worker picked it up)
    queued | running → failed (the stale-run reaper; a live run's later terminal write wins)
    running → failed (the lease sweep: its worker stopped renewing the lease)
    running → cancelled (a cancel of a run whose lease lapsed: no worker is left to stop it)
    """

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


class StopReason(models.TextChoices):
    """Why a run ended, finer than its status (a step limit and a provider error are both `failed`)."""

    ANSWERED = "answered", "Answered"
    STEP_LIMIT = "step_limit", "Step limit reached"
    BUDGET = "budget", "Budget cap reached"
    CANCELLED = "cancelled", "Cancelled"
    PROVIDER_ERROR = "provider_error", "Model provider error"
    INTERNAL_ERROR = "internal_error", "Internal error"
    NOT_RUNNABLE = "not_runnable", "Agent not runnable"
    REAPED = "reaped", "Reaped by the stale-run sweep"
    WORKER_LOST = "worker_lost", "The worker running it stopped"


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
