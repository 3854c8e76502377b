"""How an amount of US dollars is stored: one column shape for every cost in the product.

Fourteen digits with eight decimal places: a single request can cost a few millionths of a dollar
(a short prompt on a cheap model) and still sum exactly, to the cent, into a year's bill."""

from __future__ import annotations

from django.db import models

USD_MAX_DIGITS = 14
USD_DECIMAL_PLACES = 8


def usd_field(**options) -> models.DecimalField:
    """A dollar amount column (or an ``output_field`` for an aggregate over one)."""
    return models.DecimalField(
        max_digits=USD_MAX_DIGITS, decimal_places=USD_DECIMAL_PLACES, **options
    )
