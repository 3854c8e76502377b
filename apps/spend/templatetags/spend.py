"""Money in the console, with a floor marked as one (seed 003: "every surface that draws that
money marks it as a floor"): an amount some run of which could not be priced reads "at least $X",
and its tooltip says how many runs of how many, which is what someone can act on."""

from __future__ import annotations

from decimal import Decimal

from django import template
from django.utils.html import format_html

from apps.spend.charts import duration_text, usd

register = template.Library()


@register.filter
def dollars(value) -> str:
    return usd(Decimal(value or 0))


@register.simple_tag
def spend_amount(cost, partial_run_count=0, run_count=None, compact=False):
    """``$1.20``, or a floor: "at least $1.20" (``compact``: "≥ $1.20") with a tooltip."""
    amount = usd(Decimal(cost or 0))
    if not partial_run_count:
        return format_html('<span class="spend-amount">{}</span>', amount)
    if partial_run_count is True or run_count is None:
        why = "Some charges could not be priced (an unknown model is booked at $0)"
    else:
        why = f"{partial_run_count} of {run_count} runs could not be fully priced (an unknown model is booked at $0)"
    return format_html(
        '<span class="spend-amount spend-floor" title="{}: the real cost is at least this much.">{}{}</span>',
        why,
        "≥ " if compact else "at least ",
        amount,
    )


@register.filter
def percent_of(value, cap) -> int | None:
    """How much of a cap is used, in whole percent (None without a cap)."""
    if cap in (None, "") or Decimal(cap) == 0:
        return None
    return int(Decimal(value or 0) * 100 / Decimal(cap))


@register.filter
def took(ms) -> str:
    """A duration in milliseconds as people read it ("850 ms", "4.8 s")."""
    return duration_text(ms)
