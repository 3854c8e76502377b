"""Triggers and the history of their fires."""

from __future__ import annotations

from django.db import models

from .choices import FireOutcome, FireVia, TriggerKind


class Trigger(models.Model):
    """An agent that runs itself: on a schedule, or when a signed event arrives.

    A schedule trigger owns one django-celery-beat ``PeriodicTask`` (cron with a timezone, or an
    interval), so beat fires it and the admin shows it; pausing the trigger disables that entry.
    An event trigger owns one vault secret, the HMAC key its webhook bodies are signed with.

    ``created_by`` is the person the trigger acts for: a fire is refused — and the trigger
    disabled, with an audit entry saying why — once they left the organization or lost the right
    to run the agent. ``run_as_creator`` makes the run theirs (its ``user``: the memory store and
    the approval audience follow from that); off, the run belongs to no person.
    ``last_run`` points at the latest run it started, whatever its status, so its history stays
    honest (a failed run is not replaced by a retry: nothing retries a fire).
    """

    organization = models.ForeignKey(
        "orgs.Organization", on_delete=models.CASCADE, related_name="triggers"
    )
    agent = models.ForeignKey("agents.Agent", on_delete=models.CASCADE, related_name="triggers")
    kind = models.CharField(max_length=16, choices=TriggerKind.choices)
    name = models.CharField(max_length=120)
    prompt = models.TextField()
    run_as_creator = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        "orgs.User", on_delete=models.SET_NULL, null=True, related_name="+"
    )
    # What the schedule said, as given ({"cron", "timezone"} or {"every_seconds"}); the beat
    # entry below is built from it.
    schedule = models.JSONField(null=True, blank=True)
    periodic_task = models.OneToOneField(
        "django_celery_beat.PeriodicTask",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="trigger",
    )
    secret = models.ForeignKey(
        "vault.Secret", on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )
    enabled = models.BooleanField(default=True)
    # Why the platform disabled it (empty when a person paused it, or it runs).
    disabled_reason = models.CharField(max_length=300, blank=True)
    last_run = models.ForeignKey(
        "runs.Run", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    last_fired_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "pk"]
        indexes = [
            # An agent's Triggers tab.
            models.Index(fields=["agent", "name"], name="trigger_agent_name_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"


class TriggerFire(models.Model):
    """One fire of a trigger: what fired it, the run it started (if any), how it ended.

    ``delivery_id`` is an event's replay key: the digest of its verified signature, i.e. of what
    the signature covers (``signing.replay_key``), never a header the sender could change; unique
    per trigger, so a replayed webhook is refused by the database itself.
    """

    trigger = models.ForeignKey(Trigger, on_delete=models.CASCADE, related_name="fires")
    via = models.CharField(max_length=16, choices=FireVia.choices)
    outcome = models.CharField(max_length=16, choices=FireOutcome.choices)
    detail = models.CharField(max_length=500, blank=True)
    run = models.ForeignKey(
        "runs.Run", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    fired_by = models.ForeignKey(
        "orgs.User", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    delivery_id = models.CharField(max_length=128, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["trigger", "delivery_id"],
                condition=~models.Q(delivery_id=""),
                name="trigger_fire_delivery_unique",
            ),
        ]
        indexes = [
            # A trigger's history, newest first.
            models.Index(fields=["trigger", "-created_at"], name="trigger_fire_history_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.trigger_id} {self.via} {self.outcome}"
