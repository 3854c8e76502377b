"""Sign-in lockout: django-axes' handler with a per-account ceiling on top.

Axes counts wrong passwords per (account, address): AXES_FAILURE_LIMIT of them lock that pair
out, so a stranger cannot lock a person out from everywhere. Alone, that pair lets anyone with
more addresses (or a forged ``X-Forwarded-For`` the server believed) keep guessing one account for
ever. The ceiling closes it: ACCOUNT_LOCKOUT_FAILURE_LIMIT wrong passwords for one account, from
any number of addresses within AXES_COOLOFF_MINUTES, lock the account out from every address until
the cool-off passes — the right password included. The price is deliberate: a stranger who knows
an address can lock that person out for the cool-off, and the lockout is audited (``auth.lockout``)
so the organization's owners see it happening.

The ceiling is read from axes' own attempt rows (one per account, address and user agent), so it
needs no second store and the admin's "Access attempts" page shows what it counts. It reports
itself to axes as "failures at the limit", so axes refuses the sign-in with its 429 and sends its
``user_locked_out`` signal (the audit) exactly as it does for the pair.
"""

from __future__ import annotations

from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_client_username, get_cool_off, get_failure_limit
from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import Sum
from django.utils import timezone


def account_failures(username: str | None) -> int:
    """Wrong passwords for ``username`` from every address, within the cool-off."""
    if not username:
        return 0
    cool_off = get_cool_off()
    attempts = AccessAttempt.objects.filter(
        # Any spelling of the address counts: the form is the same account to the person.
        username__iexact=username.strip(),
    )
    if cool_off is not None:
        attempts = attempts.filter(attempt_time__gte=timezone.now() - cool_off)
    return attempts.aggregate(total=Sum("failures_since_start"))["total"] or 0


class AccountCeilingHandler(AxesDatabaseHandler):
    """Axes' database handler; an account over its ceiling counts as locked from any address."""

    def get_failures(self, request, credentials=None) -> int:
        failures = super().get_failures(request, credentials)
        ceiling = settings.ACCOUNT_LOCKOUT_FAILURE_LIMIT
        if not ceiling:
            return failures
        username = get_client_username(request, credentials)
        if account_failures(username) >= ceiling:
            return max(failures, get_failure_limit(request, credentials))
        return failures
