"""The one outcome mapping: how an exception that ended a model loop becomes a status, a stop
reason and the sentence a person reads. The run's own loop (apps/runs/runner.py) and every
delegation (apps/runs/delegation/tools.py) end through :func:`outcome_of`, so a step limit, a
provider failure or a cap reads the same on a run's row as on a delegated one.

The provider's own error text may carry a request URL with a key in it: it goes to the server
log only; rows and frames carry the controlled sentences below.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from pydantic_ai.exceptions import (
    ModelAPIError,
    ModelHTTPError,
    RunCancelled,
    UnexpectedModelBehavior,
    UsageLimitExceeded,
)

from apps.capabilities.tools.guardrails import GuardrailBlocked
from apps.mcp.client import McpUnreachable
from apps.spend.services import BudgetExceeded

from .choices import RunStatus, StopReason

INTERNAL_ERROR_SENTENCE = (
    "The {subject} failed with an internal error; the details are in the server log."
)
CANCELLED_SENTENCE = "The run was cancelled."


class ProviderTimeout(Exception):
    """A model request took longer than its profile's ``request_timeout_seconds``."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        super().__init__(f"no answer within {seconds:g} s")


class RunNotRunnable(Exception):
    def __init__(self, sentence: str) -> None:
        self.sentence = sentence
        super().__init__(sentence)


@dataclass
class Outcome:
    status: str
    stop_reason: str
    error: str = ""
    budget_refusal: dict | None = None

    @property
    def ends_the_tree(self) -> bool:
        """A delegation ending so stops the run that holds it: the run's caps are the ones that
        bind, and a cancel (or a worker shutting down) is the whole run's."""
        return self.status in (RunStatus.BUDGET_EXCEEDED, RunStatus.CANCELLED)


def provider_error_sentence(exc: BaseException) -> str:
    """A controlled sentence for a provider failure; the provider's own text goes to the log only."""
    status = getattr(exc, "status_code", None)
    if status == 429:
        return "The model provider refused the request: rate limited or out of quota (HTTP 429)."
    if status in (401, 403):
        return f"The model provider rejected the API key (HTTP {status})."
    if status == 404:
        return "The model provider does not know this model (HTTP 404)."
    if isinstance(status, int) and status >= 500:
        return f"The model provider failed to answer (HTTP {status})."
    if isinstance(status, int):
        return f"The model provider rejected the request (HTTP {status})."
    return "The model provider could not be reached."


def outcome_of(
    exc: BaseException | None, *, max_steps: int | str = "its", subject: str = "run"
) -> Outcome:
    """What ended a model loop, as a row records it. ``subject`` names who stopped ("run" or
    "delegate") in the sentences that say so; ``max_steps`` is the loop's own step limit."""
    if exc is None:
        return Outcome(RunStatus.COMPLETED, StopReason.ANSWERED)
    if isinstance(exc, RunNotRunnable):
        return Outcome(RunStatus.FAILED, StopReason.NOT_RUNNABLE, exc.sentence)
    if isinstance(exc, McpUnreachable):
        # A bound server that cannot be reached stops the run naming it; its tools are never
        # silently missing from what the model is offered.
        return Outcome(RunStatus.FAILED, StopReason.NOT_RUNNABLE, exc.sentence)
    if isinstance(exc, BudgetExceeded):
        return Outcome(RunStatus.BUDGET_EXCEEDED, StopReason.BUDGET, exc.sentence, exc.as_dict())
    if isinstance(exc, GuardrailBlocked):
        return Outcome(RunStatus.GUARDRAIL_BLOCKED, StopReason.GUARDRAIL, exc.sentence)
    if isinstance(exc, UsageLimitExceeded):
        return Outcome(
            RunStatus.FAILED,
            StopReason.STEP_LIMIT,
            f"The {subject} stopped at its step limit of {max_steps} model requests "
            "(limits.max_steps) before answering.",
        )
    if isinstance(exc, (RunCancelled, asyncio.CancelledError)):
        return Outcome(RunStatus.CANCELLED, StopReason.CANCELLED, CANCELLED_SENTENCE)
    if isinstance(exc, ProviderTimeout):
        return Outcome(
            RunStatus.FAILED,
            StopReason.PROVIDER_ERROR,
            f"The model provider did not answer within {exc.seconds:g} seconds (the model "
            "profile's request timeout).",
        )
    if isinstance(exc, (ModelHTTPError, ModelAPIError)):
        return Outcome(RunStatus.FAILED, StopReason.PROVIDER_ERROR, provider_error_sentence(exc))
    if isinstance(exc, UnexpectedModelBehavior):
        return Outcome(
            RunStatus.FAILED,
            StopReason.PROVIDER_ERROR,
            "The model answered in a way the run could not use.",
        )
    if not isinstance(exc, Exception):
        # KeyboardInterrupt, SystemExit: the process is stopping, the loop did not fail.
        return Outcome(RunStatus.CANCELLED, StopReason.CANCELLED, CANCELLED_SENTENCE)
    return Outcome(
        RunStatus.FAILED,
        StopReason.INTERNAL_ERROR,
        INTERNAL_ERROR_SENTENCE.format(subject=subject),
    )
