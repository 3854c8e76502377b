"""Every read of the audit trail a person can reach: the API, the console page and exports.

Scoped to one organization and gated by ``audit:read``. App admins hold audit:read everywhere
(apps.orgs.permissions) but read through this same path, so what they read of one organization
is that organization's trail; the deployment-wide chain is read in the Django admin only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, time, timedelta

from django.core.exceptions import ValidationError
from django.db.models import QuerySet

from agenticos import params as parsing
from apps.orgs.permissions import AUDIT_READ, has_org_permission

from .chain import format_timestamp
from .models import AuditEntry

# The read model of GET /audit, and so of every audit export (seed 003: exactly these fields;
# the stored ip_address is not among them).
AUDIT_READ_FIELDS = (
    "id",
    "created_at",
    "action",
    "actor_user_id",
    "actor_email",
    "impersonator_user_id",
    "organization_id",
    "subject_type",
    "subject_id",
    "subject_label",
    "details",
    "chain",
    "sequence",
    "prev_hash",
    "entry_hash",
)


def audit_entries_visible_to(user, organization) -> QuerySet[AuditEntry]:
    """The organization's trail if `user` holds audit:read there, else nothing."""
    if organization is None or not has_org_permission(user, organization, AUDIT_READ):
        return AuditEntry.objects.none()
    return AuditEntry.objects.filter(organization_id=organization.pk).defer("ip_address")


@dataclass(frozen=True)
class Window:
    """A time window, both ends inclusive; a date as `to` means the whole of that day."""

    start: datetime | None = None
    end: datetime | None = None
    # The request parameters the ends were read from, so a refusal names them as the caller
    # spelled them (`created_from`, `started_to` …).
    keys: tuple[str, str] = field(default=("from", "to"), compare=False)

    @property
    def complete(self) -> bool:
        return self.start is not None and self.end is not None

    def apply(self, queryset: QuerySet, field_name: str) -> QuerySet:
        if self.start is not None:
            queryset = queryset.filter(**{f"{field_name}__gte": self.start})
        if self.end is not None:
            queryset = queryset.filter(**{f"{field_name}__lte": self.end})
        return queryset

    def as_details(self) -> dict:
        return {
            "from": self.start.isoformat() if self.start else None,
            "to": self.end.isoformat() if self.end else None,
        }


def _moment(
    raw: str, *, end_of_day: bool, name: str = "", errors: dict | None = None
) -> datetime | None:
    errors = {} if errors is None else errors
    moment = parsing.parse_day_or_moment(name, raw.strip(), errors)
    if moment is None or isinstance(moment, datetime):
        return moment
    if end_of_day:
        return datetime.combine(moment + timedelta(days=1), time.min, tzinfo=UTC) - timedelta(
            microseconds=1
        )
    return datetime.combine(moment, time.min, tzinfo=UTC)


def parse_window(params, from_key: str, to_key: str) -> Window:
    """Read `from_key`/`to_key` (ISO date or datetime) from a QueryDict; 422 on a bad value."""
    errors: dict[str, list[str]] = {}
    ends: dict[str, datetime | None] = {}
    for key, end_of_day in ((from_key, False), (to_key, True)):
        raw = params.get(key)
        ends[key] = None
        if raw not in (None, ""):
            ends[key] = _moment(raw, end_of_day=end_of_day, name=key, errors=errors)
    window = Window(ends[from_key], ends[to_key], keys=(from_key, to_key))
    if window.start is not None and window.end is not None and window.start > window.end:
        errors[to_key] = [f"must not be before {from_key}"]
    if errors:
        raise ValidationError(errors)
    return window


@dataclass(frozen=True)
class AuditFilters:
    """The filters of GET /audit, the console page and the audit export."""

    actions: tuple[str, ...] = ()
    actor_user_id: int | None = None
    window: Window = field(default_factory=Window)

    def apply(self, queryset: QuerySet[AuditEntry]) -> QuerySet[AuditEntry]:
        if self.actions:
            queryset = queryset.filter(action__in=self.actions)
        if self.actor_user_id is not None:
            queryset = queryset.filter(actor_id=self.actor_user_id)
        return self.window.apply(queryset, "created_at")

    def as_details(self) -> dict:
        """The filters as the export's audit entry names them (the window is named apart)."""
        named: dict = {}
        if self.actions:
            named["action"] = list(self.actions)
        if self.actor_user_id is not None:
            named["actor_user_id"] = self.actor_user_id
        return named


def parse_audit_filters(params) -> AuditFilters:
    """`action` (repeatable), `actor_user_id`, `created_from`, `created_to` from a QueryDict."""
    errors: dict[str, list[str]] = {}
    actions = parsing.parse_texts(
        "action", (value.strip() for value in params.getlist("action")), errors
    )
    actor_user_id = None
    raw_actor = params.get("actor_user_id")
    if raw_actor not in (None, ""):
        actor_user_id = parsing.parse_id("actor_user_id", raw_actor, errors)
    try:
        window = parse_window(params, "created_from", "created_to")
    except ValidationError as error:
        errors.update(error.message_dict)
        window = Window()
    if errors:
        raise ValidationError(errors)
    return AuditFilters(actions=actions, actor_user_id=actor_user_id, window=window)


def audit_entry_row(entry: AuditEntry) -> dict:
    """One entry in the read model (AUDIT_READ_FIELDS): the API, the console and exports."""
    return {
        "id": entry.pk,
        # Microseconds and a Z, the same in the API, the CSV and the JSONL.
        "created_at": format_timestamp(entry.created_at),
        "action": entry.action,
        "actor_user_id": entry.actor_id,
        "actor_email": entry.actor_label or None,
        "impersonator_user_id": entry.impersonator_id,
        "organization_id": entry.organization_id,
        "subject_type": entry.subject_type,
        "subject_id": entry.subject_id,
        "subject_label": entry.subject_label,
        "details": entry.details,
        "chain": entry.chain,
        "sequence": entry.sequence,
        "prev_hash": entry.prev_hash,
        "entry_hash": entry.entry_hash,
    }


def audit_action_names(queryset: QuerySet[AuditEntry]) -> list[str]:
    """The distinct actions in `queryset`, for the console's filter list."""
    return sorted(set(queryset.order_by().values_list("action", flat=True).distinct()))
