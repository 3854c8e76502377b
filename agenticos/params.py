"""The one parsing layer for values that arrive as text: query parameters, path ids, websocket
cursors, headers. Built on DRF's fields, so the API, the console and the consumers refuse the
same values with the same sentences.

Why not ``str.isdigit()``: it is true for ``"²"`` and ``"①"``, which ``int()`` then refuses — a
500. Why bounds: PostgreSQL's bigint ends at 2**63-1 and its timestamps, through Python's
``datetime``, at year 9999; a value past them is refused here, as a 422 naming the field, rather
than by the database as a 500. Why text is checked: PostgreSQL refuses NUL (``\\x00``) in text and
lone surrogates cannot be encoded to UTF-8; DRF's ``CharField`` refuses both.

Every helper takes the field's name, the raw value and an ``errors`` dict it adds to, so a caller
gathers every bad field of a request and raises once (``raise_errors``): the answer names them all.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import fields, serializers

BIGINT_MAX = 2**63 - 1
# The span a date filter may name. Wide enough for any record this product holds; narrow enough
# that "the whole day" (one day later, exclusive) and timezone shifts stay inside datetime's range.
EARLIEST_DAY = dt.date(1900, 1, 1)
LATEST_DAY = dt.date(9998, 12, 31)
TEXT_MAX_CHARS = 500
# A JSON document (an agent spec, a binding's config) nested deeper than this is refused: nothing
# the product stores needs it, and every recursive walk over it would be a stack to exhaust.
JSON_MAX_DEPTH = 32

Errors = dict[str, list[str]]

# An id is ASCII digits and nothing else: no sign, no decimal point, no surrounding whitespace.
ID_PATH_PATTERN = "[0-9]+"
_ID_PATTERN = re.compile(ID_PATH_PATTERN)


class IdField(serializers.IntegerField):
    """A database id: a positive integer within bigint, written as plain ASCII digits."""

    default_error_messages = {"invalid": "must be an id (a positive whole number)."}

    def __init__(self, **kwargs):
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", BIGINT_MAX)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if isinstance(data, bool):
            self.fail("invalid")
        if isinstance(data, str) and not _ID_PATTERN.fullmatch(data):
            self.fail("invalid")
        return super().to_internal_value(data)


def _messages(error: serializers.ValidationError) -> list[str]:
    detail = error.detail
    if isinstance(detail, dict):
        return [str(m) for messages in detail.values() for m in messages]
    return [str(m) for m in detail]


def _run(field: fields.Field, name: str, raw, errors: Errors):
    try:
        return field.run_validation(raw)
    except serializers.ValidationError as error:
        errors.setdefault(name, []).extend(_messages(error))
        return None


def as_id(raw) -> int | None:
    """A selector's id as an int, or None when it is none or lies past bigint (no row has it):
    the caller's "not found", never the database's out-of-range error."""
    try:
        value = int(raw)
    except (TypeError, ValueError):
        return None
    return value if 0 < value <= BIGINT_MAX else None


def parse_id(name: str, raw, errors: Errors) -> int | None:
    return _run(IdField(), name, raw, errors)


def parse_ids(name: str, values: Iterable, errors: Errors) -> tuple[int, ...]:
    parsed = [parse_id(name, value, errors) for value in values if value != ""]
    return tuple(value for value in parsed if value is not None)


def parse_int(
    name: str, raw, errors: Errors, *, minimum: int = 0, maximum: int = BIGINT_MAX
) -> int | None:
    field = serializers.IntegerField(min_value=minimum, max_value=maximum)
    if isinstance(raw, str) and not re.fullmatch(r"-?[0-9]+", raw):
        errors.setdefault(name, []).append("must be a whole number.")
        return None
    return _run(field, name, raw, errors)


def parse_text(name: str, raw, errors: Errors, *, max_length: int = TEXT_MAX_CHARS) -> str | None:
    """Free text of a filter: no NUL byte, no lone surrogate, at most ``max_length`` characters."""
    return _run(
        serializers.CharField(max_length=max_length, trim_whitespace=False), name, raw, errors
    )


def parse_texts(name: str, values: Iterable, errors: Errors) -> tuple[str, ...]:
    parsed = [parse_text(name, value, errors) for value in values if value != ""]
    return tuple(value for value in parsed if value is not None)


# A window named as the last N days, today included: "30d". The pattern admits exactly 1d..366d
# (the spend screen's ``days`` bounds), so the schema says what the parser accepts.
PERIOD_MAX_DAYS = 366
PERIOD_PATTERN = r"^([1-9]|[1-9][0-9]|[12][0-9][0-9]|3[0-5][0-9]|36[0-6])d$"
# As a query parameter an empty value is the filter left unset, as for every filter a form sends
# (Activity's Period select has an empty choice): the schema says so.
PERIOD_QUERY_PATTERN = r"^(([1-9]|[1-9][0-9]|[12][0-9][0-9]|3[0-5][0-9]|36[0-6])d)?$"


def parse_period(name: str, raw, errors: Errors) -> int | None:
    """``Nd`` — the last N UTC calendar days, today included (1d..366d) — as a number of days."""
    text = _run(
        serializers.RegexField(
            PERIOD_PATTERN,
            max_length=8,
            error_messages={
                "invalid": f"must be a number of days written like 30d (1d to {PERIOD_MAX_DAYS}d)."
            },
        ),
        name,
        raw,
        errors,
    )
    return None if text is None else int(text[:-1])


def _day_bounds() -> list:
    message = f"must be between {EARLIEST_DAY.isoformat()} and {LATEST_DAY.isoformat()}."
    return [
        MinValueValidator(EARLIEST_DAY, message=message),
        MaxValueValidator(LATEST_DAY, message=message),
    ]


def parse_day_or_moment(name: str, raw: str, errors: Errors) -> dt.date | dt.datetime | None:
    """A bare ISO date (``2025-01-31``: a whole day, the caller decides which end) or an ISO
    date-time (aware, UTC when no offset is given), both within EARLIEST_DAY..LATEST_DAY."""
    text = _run(serializers.CharField(max_length=64), name, raw, errors)
    if text is None:
        return None
    if len(text) == 10:
        # A bare date first: Python's ISO parser would read "2025-01-31" as that day's midnight.
        day_errors: Errors = {}
        day = _run(serializers.DateField(input_formats=["iso-8601"]), name, text, day_errors)
        if day is not None:
            bounded = _run(serializers.DateField(validators=_day_bounds()), name, day, errors)
            return bounded
    moment_errors: Errors = {}
    moment = _run(
        serializers.DateTimeField(input_formats=["iso-8601"], default_timezone=dt.UTC),
        name,
        text,
        moment_errors,
    )
    if moment is None:
        errors.setdefault(name, []).append(
            "must be an ISO 8601 date (2025-01-31) or date-time (2025-01-31T09:30:00Z)."
        )
        return None
    if not EARLIEST_DAY <= moment.date() <= LATEST_DAY:
        errors.setdefault(name, []).append(
            f"must be between {EARLIEST_DAY.isoformat()} and {LATEST_DAY.isoformat()}."
        )
        return None
    return moment


def json_problems(value, *, max_depth: int = JSON_MAX_DEPTH) -> list[str]:
    """What PostgreSQL's JSONB (or a recursive walk) would refuse in a JSON document: NUL bytes
    and lone surrogates in any string or key, and nesting deeper than ``max_depth``."""
    problems: list[str] = []
    stack = [(value, 1)]
    while stack and len(problems) < 5:
        item, depth = stack.pop()
        if depth > max_depth:
            problems.append(f"is nested deeper than {max_depth} levels.")
            break
        if isinstance(item, dict):
            for key, child in item.items():
                problems.extend(_string_problems(key))
                stack.append((child, depth + 1))
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, str):
            problems.extend(_string_problems(item))
    return list(dict.fromkeys(problems))


_SURROGATE = re.compile("[\ud800-\udfff]")


def _string_problems(text) -> list[str]:
    if not isinstance(text, str):
        return []
    problems = []
    if "\x00" in text:
        problems.append("contains a NUL character (\\u0000), which cannot be stored.")
    if _SURROGATE.search(text):
        problems.append("contains a lone surrogate character, which is not valid Unicode text.")
    return problems


def validate_storable_json(value) -> None:
    """A DRF validator: the value can be stored as JSONB and walked without exhausting a stack."""
    problems = json_problems(value)
    if problems:
        raise serializers.ValidationError(problems)


@extend_schema_field(OpenApiTypes.OBJECT)
class SafeJSONField(serializers.JSONField):
    """A JSON object field whose every string PostgreSQL can store and whose nesting is bounded."""

    def to_internal_value(self, data):
        data = super().to_internal_value(data)
        if not isinstance(data, dict):
            raise serializers.ValidationError("must be a JSON object.")
        validate_storable_json(data)
        return data


def raise_errors(errors: Errors) -> None:
    """Raise the gathered errors as one ValidationError (a 422 on the API, form errors in the
    console); do nothing when there are none."""
    if errors:
        raise ValidationError({name: messages for name, messages in errors.items()})


# --- Request bodies: JSON types as the schema states them ----------------------------------
# DRF's fields coerce: a CharField takes 0 as "0", an IntegerField "5" as 5, a BooleanField 1 as
# true. A JSON body is typed, and the schema says which type each field is; a value of another
# type is refused (422 naming the field) rather than read as something the client did not send.
_JSON_TYPES: list[tuple[type, tuple[type, ...], str]] = [
    (serializers.BooleanField, (bool,), "must be true or false."),
    (serializers.IntegerField, (int,), "must be a whole number."),
    (serializers.DecimalField, (str,), "must be a decimal number written as a string."),
    (serializers.DateTimeField, (str,), "must be an ISO 8601 date-time string."),
    (serializers.ChoiceField, (str,), "must be a string."),
    (serializers.CharField, (str,), "must be a string."),
    (serializers.ListField, (list,), "must be a list."),
    (serializers.DictField, (dict,), "must be an object."),
]


def _json_type_problem(field: fields.Field, value) -> str | None:
    if value is None:
        return None  # allow_null decides
    for field_class, types, message in _JSON_TYPES:
        if isinstance(field, field_class):
            if isinstance(value, bool) and bool not in types:
                return message
            return None if isinstance(value, types) else message
    return None


def _printable_key(key) -> str:
    # The key is echoed back: a lone surrogate cannot be encoded as UTF-8 (a 500 when the answer
    # is rendered), so it is escaped; a key longer than any field name is cut.
    text = str(key).encode("utf-8", "backslashreplace").decode("utf-8")
    return text if len(text) <= 100 else text[:100] + "…"


def accepted_keys(serializer) -> list[str]:
    """The keys a request serializer takes: its writable fields, as a client spells them."""
    return [field.field_name for field in serializer.fields.values() if not field.read_only]


class StrictJSONMixin:
    """The base of every request serializer: a key it does not take is refused, and each value
    must have the JSON type of its field.

    Why refuse unknown keys: DRF drops them silently, so ``{"content": ...}`` sent where the field
    is ``body`` answered 201 and stored an empty file. The answer is a 422 naming each unknown key
    and listing the keys the endpoint takes (the schema says the same: ``additionalProperties:
    false`` on every request body, apps/orgs/api/schema.py).
    """

    def to_internal_value(self, data):
        # Unknown keys and values of the wrong JSON type are named together, in one answer.
        errors: Errors = {}
        if hasattr(data, "keys"):
            accepted = accepted_keys(self)
            unknown = [key for key in data.keys() if key not in accepted]
            takes = ", ".join(accepted) if accepted else "no keys"
            for key in unknown:
                errors[_printable_key(key)] = [
                    f"is not a field this endpoint accepts; it takes: {takes}."
                ]
        if isinstance(data, dict):
            for name, field in self.fields.items():
                if field.read_only or field.field_name not in data:
                    continue
                problem = _json_type_problem(field, data[field.field_name])
                items = data[field.field_name]
                if problem is None and isinstance(field, serializers.ListField) and items:
                    problem = next(
                        (p for p in (_json_type_problem(field.child, item) for item in items) if p),
                        None,
                    )
                if problem:
                    errors[name] = [problem]
        if errors:
            raise serializers.ValidationError(errors)
        return super().to_internal_value(data)
