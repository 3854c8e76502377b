"""The requeue sweep: a run committed ``queued`` whose task never reached a worker is sent again.

``run_create`` commits the run and then sends its task; a broker that is down longer than the
publish retries (about 10 s) loses that message while the run row stays ``queued``. Nothing else
would move it until the stale-run reaper failed it hours later. The sweep re-sends the task of a
run still queued ``RUN_REQUEUE_AFTER_SECONDS`` after its creation, then after 3×, 7×, 15×… that
(each wait twice the last), so a run merely waiting behind a backlog costs a handful of duplicate
messages, not one per sweep. A duplicate is harmless: the worker's claim moves queued → running
in one conditional statement (apps/runs/claiming.py), so the second delivery finds nothing to
claim. After ``RUN_REQUEUE_LIMIT`` re-sends and one more wait the run is failed ``undelivered``,
with a sentence the API shows.

Only runs ``run_create`` put on the broker itself (``on_queue``) are re-sent: a run its creator
drives (a trigger's fire, a channel message) is held back on purpose and left to it.
"""

from __future__ import annotations

import datetime as dt
import logging

from django.conf import settings
from django.utils import timezone

from agenticos.outage import OUTAGE_ERRORS

from . import queue, services
from .choices import RunStatus
from .models import Run

logger = logging.getLogger(__name__)

# Re-sends before the run is failed: with the default 30 s the last goes out about 64 minutes
# after the run was created, and the run fails at about 2 h 8 min, before the stale-run reaper.
RUN_REQUEUE_LIMIT = 7

UNDELIVERED_SENTENCE = (
    "No worker took this run: its task was sent {sends} times over {minutes} minutes and the run "
    "was still queued, so the job queue (Redis) or the workers were down all that time. Start it "
    "again."
)


def resend_due_after(after_seconds: int, resends: int) -> dt.timedelta:
    """How old a queued run is when its re-send number ``resends + 1`` is due (or, past the limit,
    when it fails): 1, 3, 7, 15… × ``after_seconds``."""
    return dt.timedelta(seconds=after_seconds * (2 ** (resends + 1) - 1))


def runs_requeue(*, now: dt.datetime | None = None) -> int:
    """Re-send the task of every run put on the broker and still queued past its due time; fail
    the ones past the limit. Returns how many it re-sent. Stops at the first send the broker
    refuses (every other would wait out the same publish retries); the next sweep goes on."""
    after = settings.RUN_REQUEUE_AFTER_SECONDS
    if not after:
        return 0
    now = now or timezone.now()
    waiting = Run.objects.filter(
        status=RunStatus.QUEUED,
        on_queue=True,
        cancel_requested_at__isnull=True,
        created_at__lt=now - dt.timedelta(seconds=after),
    ).order_by("created_at")
    resent = 0
    for run_id, created_at, resends in waiting.values_list("pk", "created_at", "requeue_count"):
        if now - created_at < resend_due_after(after, resends):
            continue
        if resends >= RUN_REQUEUE_LIMIT:
            minutes = round((now - created_at).total_seconds() / 60)
            sentence = UNDELIVERED_SENTENCE.format(sends=resends + 1, minutes=minutes)
            if services.run_fail_undelivered(run_id, now=now, sentence=sentence):
                logger.warning("run %s failed: no worker took it after %d sends", run_id, resends)
            continue
        try:
            queue.enqueue(queue.EXECUTE_RUN, run_id)
        except OUTAGE_ERRORS as exc:
            logger.warning("requeue sweep stopped: the broker refused run %s (%s)", run_id, exc)
            break
        # Counted once sent, and only while the run is still the one read: a worker that claimed
        # it meanwhile leaves the count alone (the message just sent is then a no-op).
        Run.objects.filter(pk=run_id, status=RunStatus.QUEUED, requeue_count=resends).update(
            requeue_count=resends + 1
        )
        resent += 1
    if resent:
        logger.info("requeue sweep re-sent %d queued run(s)", resent)
    return resent
