"""How an amount of US dollars is stored: one column shape for every cost in the product.

Fourteen digits with eight decimal places: a single request can cost a few millionths of a dollar
(a short prompt on a cheap model) and still sum exactly, to the cent, into a year's bill."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from django.db import models

USD_MAX_DIGITS = 14
USD_DECIMAL_PLACES = 8


def usd_field(**options) -> models.DecimalField:
    """A dollar amount column (or an ``output_field`` for an aggregate over one)."""
    return models.DecimalField(
        max_digits=USD_MAX_DIGITS, decimal_places=USD_DECIMAL_PLACES, **options
    )


# Budget warnings come before the wall: at these fractions of a monthly cap (an agent's, in its
# spec under alerts.budget.warn_at; the organization's, in its settings) the budget alert's
# audience hears how close the cap is, once per threshold and calendar month.
DEFAULT_BUDGET_WARN_AT = ("0.8", "0.95")
MAX_BUDGET_WARNINGS = 5


def budget_warn_at_checked(values) -> list[Decimal]:
    """Warning fractions of a cap: each above 0 and below 1, no repeats, at most five; sorted.
    The one rule for an agent's spec and an organization's settings (ValueError names the fault)."""
    if not isinstance(values, list | tuple):
        raise ValueError("a list of fractions of the cap, such as [0.8, 0.95]")
    fractions = []
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int | float | str | Decimal):
            raise ValueError("each warning threshold is a number, such as 0.8 for 80%")
        try:
            fraction = Decimal(str(value))
        except InvalidOperation:
            raise ValueError("each warning threshold is a number, such as 0.8 for 80%") from None
        if not fraction.is_finite() or not Decimal("0") < fraction < Decimal("1"):
            raise ValueError(
                "each warning threshold is a fraction of the cap above 0 and below 1 (0.8 is 80%)"
            )
        # Four places at most, written in their shortest form ("0.8", not "0.8000").
        fractions.append(fraction.quantize(Decimal("0.0001")).normalize())
    if len(fractions) > MAX_BUDGET_WARNINGS:
        raise ValueError(f"at most {MAX_BUDGET_WARNINGS} warning thresholds")
    if len(set(fractions)) != len(fractions):
        raise ValueError("a warning threshold is repeated")
    return sorted(fractions)


def default_budget_warn_at() -> list[str]:
    return list(DEFAULT_BUDGET_WARN_AT)
