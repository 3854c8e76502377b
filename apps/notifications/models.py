"""In-app notifications and a person's opt-outs."""

from __future__ import annotations

from django.db import models

from agenticos.money import usd_field


class AlertKind(models.TextChoices):
    BUDGET = "budget", "Budget"
    APPROVALS = "approvals", "Approvals"
    USAGE = "usage", "Usage"


class Channel(models.TextChoices):
    EMAIL = "email", "E-mail"
    IN_APP = "in_app", "In-app"


class Notification(models.Model):
    """One in-app notification for one person, in the organization it is about."""

    organization = models.ForeignKey(
        "orgs.Organization", on_delete=models.CASCADE, related_name="notifications"
    )
    user = models.ForeignKey("orgs.User", on_delete=models.CASCADE, related_name="notifications")
    kind = models.CharField(max_length=16, choices=AlertKind.choices)
    title = models.CharField(max_length=300)
    body = models.TextField(blank=True)
    # Built by links.link(): always carries org=.
    link = models.CharField(max_length=500, blank=True)
    # The run an approvals alert is about: the inbox shows it resolved once nothing of the run
    # waits any more, and a run that parks again does not add a second unread alert.
    run = models.ForeignKey(
        "runs.Run", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    read_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        indexes = [
            # A person's unread notifications, newest first.
            models.Index(
                fields=["user", "read_at", "-created_at"], name="notification_user_unread_idx"
            ),
        ]

    def __str__(self) -> str:
        return self.title


class NotificationOptOut(models.Model):
    """Settings → Notifications: this person does not want this kind of alert on this channel.
    Applied last: nothing an agent's author writes enrols anyone in an inbox (seed 003)."""

    user = models.ForeignKey(
        "orgs.User", on_delete=models.CASCADE, related_name="notification_opt_outs"
    )
    kind = models.CharField(max_length=16, choices=AlertKind.choices)
    channel = models.CharField(max_length=16, choices=Channel.choices, default=Channel.EMAIL)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "kind", "channel"], name="notification_opt_out_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} opts out of {self.kind} by {self.channel}"


class UsageReportSent(models.Model):
    """A usage report that went out, so the daily job sends each period once per agent even when
    two beats or a retry run it twice."""

    agent = models.ForeignKey(
        "agents.Agent", on_delete=models.CASCADE, related_name="usage_reports_sent"
    )
    period = models.CharField(max_length=8)  # weekly | monthly
    period_start = models.DateField()
    sent_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "period", "period_start"], name="usage_report_once_per_period"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.period} report of {self.agent} from {self.period_start}"


class BudgetWarningSent(models.Model):
    """A budget warning that went out: one row per cap counter (a scope and a UTC month) and
    threshold, so each threshold warns once a month — a new month is a new counter, which is the
    reset — even when two bookings cross it at once or the task is delivered twice (the unique
    constraint lets exactly one through). Threshold 1 is the cap itself: the "reached" alert,
    sent once per cap and month however many runs the cap refuses."""

    counter = models.ForeignKey(
        "spend.BudgetCounter", on_delete=models.CASCADE, related_name="warnings_sent"
    )
    # A fraction of the cap, 0.8000 for 80%.
    threshold = models.DecimalField(max_digits=5, decimal_places=4)
    spent_usd = usd_field()
    limit_usd = usd_field()
    sent_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["counter", "threshold"], name="budget_warning_once_per_threshold"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.threshold * 100:.0f}% of counter {self.counter_id}"
