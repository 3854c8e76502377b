"""A trigger's kind, how a fire came about, and what became of it."""

from django.db import models


class TriggerKind(models.TextChoices):
    SCHEDULE = "schedule", "Schedule"
    EVENT = "event", "Event"


class FireVia(models.TextChoices):
    """What fired it: its beat entry, a signed event, or a person pressing "Fire now"."""

    SCHEDULE = "schedule", "Schedule"
    EVENT = "event", "Event"
    MANUAL = "manual", "Fire now"


class FireOutcome(models.TextChoices):
    """A fire's own outcome; the run's status says how the run went.

    ``started``: a run was created and handed to the runner. ``finished``: the runner booked its
    end (whatever status: a budget refusal or a provider failure is a recorded run, waiting for
    the next fire). ``refused``: no run — the creator may no longer run the agent (the trigger is
    disabled) or the trigger is paused. ``failed``: the run reached an end whose recording did not
    commit; the fire reports a failure, never a success.
    """

    STARTED = "started", "Started"
    FINISHED = "finished", "Finished"
    REFUSED = "refused", "Refused"
    FAILED = "failed", "Failed"
