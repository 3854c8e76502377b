"""Small typed readers for the environment.

Every setting of the project is read here and nowhere else. A value that is present but
malformed raises ``ImproperlyConfigured`` naming the variable, so a typo fails at start instead
of surfacing as odd behaviour an hour later.
"""

from __future__ import annotations

import ipaddress
import os
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import overload
from urllib.parse import parse_qs, quote, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

_UNSET = object()


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    return None if value is None else value.strip()


@overload
def env_str(name: str) -> str: ...
@overload
def env_str(name: str, default: str) -> str: ...
@overload
def env_str(name: str, default: None) -> str | None: ...


# A str default (or none, which raises when unset) always yields a str: the overloads say so, so a
# setting read with one needs no None check where it is used.
def env_str(name: str, default: str | None | object = _UNSET) -> str | None:
    value = _raw(name)
    if value is None or value == "":
        if default is _UNSET:
            raise ImproperlyConfigured(f"{name} must be set")
        return default  # type: ignore[return-value]
    return value


def env_rate(name: str, default: str) -> str:
    """A rate limit ``N/second|minute|hour|day``; set and empty means off (``""``), unset means
    ``default``."""
    value = _raw(name)
    if value is None:
        return default
    if value == "":
        return ""
    count, _, unit = value.partition("/")
    if not count.strip().isdigit() or unit.strip()[:1].lower() not in {"s", "m", "h", "d"}:
        raise ImproperlyConfigured(f"{name} must be N/second, N/minute, N/hour or N/day, or empty")
    return value


def env_forwarded_allow_ips(name: str = "FORWARDED_ALLOW_IPS") -> str:
    """The proxies whose ``X-Forwarded-For`` / ``-Proto`` the server believes: a comma-separated
    list of addresses or networks, or ``*``; empty or unset (the default) trusts none."""
    value = (_raw(name) or "").replace(" ", "")
    if value in {"", "*"}:
        return value
    for item in value.split(","):
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise ImproperlyConfigured(
                f"{name}: {item!r} is not an address or a network (a comma list, or *)"
            ) from None
    return value


def uvicorn_proxy_arguments() -> list[str]:
    """uvicorn's options for FORWARDED_ALLOW_IPS. Unset, uvicorn itself would trust the headers
    of any connection from 127.0.0.1 — every local client, and every request a local proxy
    relays with the client's own header in it; here, no proxy unless the operator names one."""
    trusted = env_forwarded_allow_ips()
    if not trusted:
        return ["--no-proxy-headers"]
    return ["--proxy-headers", "--forwarded-allow-ips", trusted]


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    value = _raw(name)
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {value!r}") from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {number}")
    return number


def env_bool(name: str, default: bool) -> bool:
    value = _raw(name)
    if value is None or value == "":
        return default
    lowered = value.lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (true/false), got {value!r}")


def env_optional_decimal(name: str, default: Decimal | None) -> Decimal | None:
    """A decimal where a variable that is set but empty means "none" (e.g. no cap)."""
    value = _raw(name)
    if value is None:
        return default
    if value == "":
        return None
    try:
        number = Decimal(value)
    except InvalidOperation:
        raise ImproperlyConfigured(f"{name} must be a number or empty, got {value!r}") from None
    if not number.is_finite() or number < 0:
        raise ImproperlyConfigured(f"{name} must be a non-negative number, got {value!r}")
    return number


def env_list(name: str, default: list[str] | None = None) -> list[str]:
    value = _raw(name)
    if value is None or value == "":
        return list(default or [])
    return [item.strip() for item in value.split(",") if item.strip()]


def env_destinations(name: str) -> tuple[str, ...]:
    """A comma-separated list of network destinations (``OUTBOUND_ALLOW``), each trimmed and
    lower-cased. What an entry may say is apps/outbound/allowlist.py's to read, so the settings
    and the check cannot disagree; the system check agenticos.E010 names an entry it cannot read
    at start, and until it is fixed that entry allows nothing."""
    value = _raw(name)
    if not value:
        return ()
    return tuple(item.strip().lower() for item in value.split(",") if item.strip())


def env_path(name: str, default: Path) -> Path:
    value = _raw(name)
    return Path(value).expanduser().resolve() if value else default


def parse_database_url(url: str, *, name: str = "DATABASE_URL") -> dict:
    """Turn ``postgres://user:pass@host:port/db?host=/socket/dir`` into Django's dict."""
    parts = urlsplit(url)
    if parts.scheme not in {"postgres", "postgresql"}:
        raise ImproperlyConfigured(
            f"{name} must be a postgres:// URL (PostgreSQL only), got scheme {parts.scheme!r}"
        )
    query = parse_qs(parts.query)
    host = query.get("host", [parts.hostname or ""])[0]
    database = unquote(parts.path.lstrip("/"))
    if not database:
        raise ImproperlyConfigured(f"{name} must name a database")
    try:
        port = parts.port
    except ValueError:
        raise ImproperlyConfigured(f"{name} has an invalid port") from None
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": database,
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": host,
        "PORT": str(port or ""),
        "CONN_MAX_AGE": 0,
    }


def check_redis_url(url: str, *, name: str = "REDIS_URL") -> str:
    if urlsplit(url).scheme not in {"redis", "rediss", "unix"}:
        raise ImproperlyConfigured(f"{name} must be a redis:// URL, got {url!r}")
    return url


def database_url_of(database: dict) -> str:
    """The inverse of `parse_database_url`, for handing Django's connection to a child process
    (a socket directory as HOST becomes `?host=`, as libpq spells it)."""
    user = quote(database.get("USER") or "", safe="")
    password = database.get("PASSWORD")
    credentials = f"{user}:{quote(password, safe='')}" if password else user
    host = database.get("HOST") or ""
    name = quote(database["NAME"], safe="")
    if host.startswith("/"):
        return f"postgresql://{credentials}@/{name}?host={quote(host, safe='/')}"
    port = f":{database['PORT']}" if database.get("PORT") else ""
    return f"postgresql://{credentials}@{host or '127.0.0.1'}{port}/{name}"
