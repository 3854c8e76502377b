"""The hash chain: the canonical encoding of an entry and the hash over it.

The writer (services.record_audit) and the verifier (verify.py) both call `entry_hash`, so the
two can never disagree about what an entry's content is. Every stored field except the hash
itself is covered, the previous entry's hash included: changing any column of any entry, or
moving, inserting or deleting an entry in the middle, makes that entry (or the one after the
gap) fail to recompute.

The encoding is JSON with sorted keys and no whitespace. Two details are normalised because
PostgreSQL does not hand back exactly what Python stored: a float with an integral value is
encoded as an integer (JSONB prints 1e100 as a 101-digit integer), and an IP address is
written in its compressed form (``inet`` may print IPv6 differently).
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import math
from datetime import UTC, datetime
from typing import Any

GENESIS_HASH = "0" * 64

# Order of the fields as `values_list` reads them in verify.py; also the hashed content.
HASHED_FIELDS = (
    "chain",
    "sequence",
    "created_at",
    "organization_id",
    "actor_id",
    "actor_label",
    "impersonator_id",
    "action",
    "subject_type",
    "subject_id",
    "subject_label",
    "details",
    "ip_address",
    "prev_hash",
)


def canonical_json_value(value: Any) -> Any:
    """`value` as the JSON-safe form the hash is taken over (and the database stores)."""
    if isinstance(value, bool) or value is None or isinstance(value, str | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("audit details cannot hold NaN or infinity")
        return int(value) if value.is_integer() else value
    if isinstance(value, dict):
        return {str(key): canonical_json_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [canonical_json_value(item) for item in value]
    raise TypeError(f"audit details must be JSON values, got {type(value).__name__}")


def format_timestamp(moment: datetime) -> str:
    if moment.utcoffset() is None:
        raise ValueError("audit timestamps must be timezone-aware")
    if moment.tzinfo is not UTC:
        moment = moment.astimezone(UTC)
    # isoformat is several times faster than strftime, and audit-verify calls this per entry.
    return moment.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def format_ip(address: str | None) -> str | None:
    return None if not address else ipaddress.ip_address(address).compressed


def encode(fields: dict[str, Any]) -> bytes:
    """The canonical bytes of one entry; `fields` holds every name in HASHED_FIELDS."""
    content = {
        "chain": fields["chain"],
        "sequence": int(fields["sequence"]),
        "created_at": format_timestamp(fields["created_at"]),
        "organization_id": fields["organization_id"],
        "actor_id": fields["actor_id"],
        "actor_label": fields["actor_label"],
        "impersonator_id": fields["impersonator_id"],
        "action": fields["action"],
        "subject_type": fields["subject_type"],
        "subject_id": fields["subject_id"],
        "subject_label": fields["subject_label"],
        "details": canonical_json_value(fields["details"]),
        "ip_address": format_ip(fields["ip_address"]),
        "prev_hash": fields["prev_hash"],
    }
    return json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def entry_hash(fields: dict[str, Any]) -> str:
    return hashlib.sha256(encode(fields)).hexdigest()
