from django.apps import apps
from django.db.models import Exists, OuterRef, QuerySet

from .models import AlertKind, Channel, Notification, NotificationOptOut


def notifications_for(user, organization) -> QuerySet[Notification]:
    """A person's in-app notifications in the organization they are looking at."""
    return Notification.objects.filter(user=user, organization=organization)


def inbox_for(user, organization) -> QuerySet[Notification]:
    """The inbox: each approvals alert knows whether its run still waits for a decision
    (``waiting``), so a decided one reads as resolved."""
    ToolApproval = apps.get_model("approvals", "ToolApproval")
    pending = ToolApproval.objects.filter(run_id=OuterRef("run_id"), status="pending")
    return notifications_for(user, organization).annotate(waiting=Exists(pending))


def unread_count(user, organization) -> int:
    return notifications_for(user, organization).filter(read_at__isnull=True).count()


def opt_outs_of(user) -> set[tuple[str, str]]:
    return set(NotificationOptOut.objects.filter(user=user).values_list("kind", "channel"))


def preference_grid(user) -> list[dict]:
    """Each kind with, per channel, whether the person receives it."""
    opted_out = opt_outs_of(user)
    return [
        {
            "kind": kind,
            "label": label,
            "channels": [
                {"channel": channel, "label": channel_label, "on": (kind, channel) not in opted_out}
                for channel, channel_label in Channel.choices
            ],
        }
        for kind, label in AlertKind.choices
    ]
