"""A parked run comes back: once every call is decided (a decision, an answer, or
``POST runs/{id}/resume/``), the resume is enqueued on commit and a worker continues the run
through the same ``prepare()`` funnel as a new one.

The approvals app decides; it tells this module through ``on_run_calls_decided`` (registered in
``apps/runs/apps.py``), and never touches the run itself.
"""

from __future__ import annotations

import logging

from django.db import transaction

from apps.approvals.services import deferred_results_for, pending_for_run

from . import queue
from .choices import PARKED_STATUSES
from .delegation.parked import with_delegation_approvals
from .exposures import segment_observed
from .models import Run
from .runner import Assembly, RunNotRunnable, assemble, execute_run

logger = logging.getLogger(__name__)


class ResumeRefused(Exception):
    """The run cannot be continued now; the sentence says why. Its decisions are kept."""

    def __init__(self, sentence: str) -> None:
        self.sentence = sentence
        super().__init__(sentence)


def _enqueue_resume(run_id: int) -> None:
    queue.enqueue(queue.RESUME_RUN, run_id)


def run_calls_decided(*, run_id: int) -> None:
    """The approvals hook: nothing of run ``run_id`` is pending. A run still parked is resumed
    once the decision commits (a cancelled one stays as it is)."""
    if Run.objects.filter(pk=run_id, status__in=PARKED_STATUSES).exists():
        transaction.on_commit(lambda: _enqueue_resume(run_id))


def _resumable(run_id: int) -> Assembly:
    """The parked run assembled for its continuation, every call decided; else
    ``ResumeRefused`` (a spec that stopped building keeps every decision and leaves the run
    parked, so resuming works again as soon as the spec does). Assembling writes nothing."""
    run = Run.objects.select_related("organization", "agent", "agent_version", "user").get(
        pk=run_id
    )
    if run.status not in PARKED_STATUSES:
        raise ResumeRefused(f"The run is {run.status}, not parked.")
    if pending_for_run(run.pk):
        raise ResumeRefused("The run still has calls waiting for a decision or an answer.")
    try:
        assembly = assemble(run, resume=True)
    except RunNotRunnable as exc:
        sentence = f"The run could not continue yet: {exc.sentence} The decisions are kept; resume it once the agent runs again."
        Run.objects.filter(pk=run.pk).update(error=sentence[:500])
        logger.info("run %s: resume refused: %s", run.pk, exc.sentence)
        raise ResumeRefused(sentence) from exc
    if run.error:
        Run.objects.filter(pk=run.pk).update(error="")
    return assembly


def run_resume_request(*, run: Run) -> Run:
    """``POST runs/{id}/resume/``: check now that the run can continue (a refusal is the caller's
    409, with the sentence), then enqueue the continuation on commit, like a decision does."""
    _resumable(run.pk)
    transaction.on_commit(lambda: _enqueue_resume(run.pk))
    run.refresh_from_db()
    return run


def run_resume(*, run_id: int) -> str | None:
    """Continue a parked run whose calls are all decided (the resume task's body): assembled
    once, here, and handed to the runner. Returns the run's status after the continuation;
    ``ResumeRefused`` when it cannot continue now."""
    assembly = _resumable(run_id)
    # A channel's run: its continuation is relayed to the thread it came from (apps.channels).
    with segment_observed(assembly.run):
        return execute_run(
            run_id,
            resume=True,
            # The run's own task calls that parked on a delegation are approved too: replayed,
            # each continues its delegate where it stopped instead of delegating again.
            deferred_tool_results=with_delegation_approvals(
                deferred_results_for(assembly.run), assembly.run.paused_state
            ),
            assembly=assembly,
        )
