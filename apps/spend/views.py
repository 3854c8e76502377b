"""The console's Spend page and its CSV download; the Dashboard's cap card reads the same
selectors (apps.console.views). Parse the window, call the selectors, render."""

from __future__ import annotations

import datetime as dt
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone

from apps.audit.exports import console_download
from apps.orgs.access import organization_from_request
from apps.orgs.permissions import RUNS_VIEW

from .aggregates import SpendScope, spend_overview
from .charts import daily_cost_svg
from .exports import spend_export
from .filters import DEFAULT_DAYS, last_days, parse_spend_window

PRESET_DAYS = (7, 30, 90)


def _calendar_presets(today: dt.date) -> list[dict]:
    this_month = today.replace(day=1)
    last_month_end = this_month - dt.timedelta(days=1)
    last_month = last_month_end.replace(day=1)
    return [
        {
            "label": "This month",
            "query": urlencode({"from": this_month.isoformat(), "to": today.isoformat()}),
        },
        {
            "label": "Last month",
            "query": urlencode({"from": last_month.isoformat(), "to": last_month_end.isoformat()}),
        },
    ]


@login_required
def spend_page(request):
    organization = organization_from_request(request, RUNS_VIEW)
    try:
        window = parse_spend_window(request.GET)
    except ValidationError as error:
        messages.error(
            request,
            "Window ignored: "
            + "; ".join(
                f"{field}: {' '.join(problems)}" for field, problems in error.message_dict.items()
            ),
        )
        window = last_days(DEFAULT_DAYS)
    overview = spend_overview(SpendScope.for_reader(request.user, organization), window)
    today = timezone.now().astimezone(dt.UTC).date()
    return render(
        request,
        "spend/spend.html",
        {
            "organization": organization,
            "overview": overview,
            # Offline-model money is its rate card's, never a bill: the page says so (issue 15).
            "simulated": any(row["provider"] == "offline" for row in overview["by_provider"]),
            "window": window,
            "chart": daily_cost_svg(
                overview["daily"],
                title=f"Daily cost, {window.since:%Y-%m-%d} to {window.until:%Y-%m-%d} (UTC)",
            ),
            "day_presets": PRESET_DAYS,
            "calendar_presets": _calendar_presets(today),
            # The download carries the resolved window as an explicit range: a days preset is
            # not a range an export accepts, and the file must describe what the page showed.
            "export_query": urlencode(window.as_query()),
        },
    )


@login_required
def spend_download(request):
    organization_from_request(request, RUNS_VIEW)
    return console_download(request, spend_export, page_url=reverse("spend:page"))
