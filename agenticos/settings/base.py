"""Settings shared by every environment. Values come from the environment (see README.md)."""

from __future__ import annotations

import json
import secrets
from decimal import Decimal
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from .env import (
    check_redis_url,
    env_bool,
    env_destinations,
    env_forwarded_allow_ips,
    env_int,
    env_list,
    env_optional_decimal,
    env_path,
    env_rate,
    env_str,
    parse_database_url,
)

BASE_DIR = Path(__file__).resolve().parent.parent.parent
DATA_DIR = env_path("AGENTICOS_DATA_DIR", BASE_DIR / ".agenticos")
# Written by `agenticos up` when it starts embedded PostgreSQL/Redis, so that `agenticos` and
# `manage.py` in another terminal reach the same services with no environment set.
SERVICES_FILE = DATA_DIR / "services.json"


def _recorded_services() -> dict:
    try:
        return json.loads(SERVICES_FILE.read_text())
    except FileNotFoundError:
        return {}
    except ValueError:
        raise ImproperlyConfigured(
            f"{SERVICES_FILE} is not valid JSON; delete it and restart"
        ) from None


def _local_secret(filename: str, make) -> str:
    """A secret generated once and kept (0600) under the data directory, for local runs."""
    path = DATA_DIR / filename
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        DATA_DIR.mkdir(parents=True, exist_ok=True)
        value = make()
        path.write_text(value)
        path.chmod(0o600)
        return value


_recorded = _recorded_services()
DATABASE_URL = env_str("DATABASE_URL", None) or _recorded.get("database_url") or ""
REDIS_URL = env_str("REDIS_URL", None) or _recorded.get("redis_url") or ""
# True when neither the environment nor a running launcher named the services; the system
# check agenticos.W001 says so, and the first database access fails with a clear error.
SERVICES_UNCONFIGURED = not (DATABASE_URL and REDIS_URL)
DATABASES = {
    "default": parse_database_url(
        DATABASE_URL or f"postgresql://postgres@/agenticos?host={DATA_DIR / 'pg'}"
    )
}
# --- Bounded database connections (docs/runner.md "Many runs per worker") ------------------------
# Every process (web, each worker) borrows its threads' connections from one pool of at most
# this many: a burst of requests or tasks waits for a free connection instead of opening one
# more ("too many clients" on a 100-connection server).
AGENTICOS_DB_POOL_SIZE = env_int("AGENTICOS_DB_POOL_SIZE", 6, minimum=2)
# A worker's event loop sends its runs' statements (the budget guard, cancel looks, leases) on
# a pool of its own of at most this many; a worker process holds at most the sum of both.
AGENTICOS_RUN_DB_POOL_SIZE = env_int("AGENTICOS_RUN_DB_POOL_SIZE", 4, minimum=1)
if not SERVICES_UNCONFIGURED:
    # (With no services named, the first query fails at once with libpq's error, not after the
    # pool's wait: `makemigrations --check` and the system checks run without a database.)
    DATABASES["default"]["OPTIONS"] = {
        "pool": {
            "min_size": 1,
            "max_size": AGENTICOS_DB_POOL_SIZE,
            # How long a thread waits for a free connection before its query fails.
            "timeout": env_int("AGENTICOS_DB_POOL_TIMEOUT_SECONDS", 30, minimum=1),
        }
    }
    # Django's backend with a pool that replaces a session whose server went away (a PostgreSQL
    # restart) before handing it out, without a round trip (agenticos/pgbackend/base.py).
    DATABASES["default"]["ENGINE"] = "agenticos.pgbackend"
REDIS_URL = check_redis_url(REDIS_URL or "redis://127.0.0.1:6379/0")

DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY", None) or _local_secret(
    "secret_key", lambda: secrets.token_urlsafe(50)
)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "guardian",
    "django_celery_beat",
    "axes",
    "apps.orgs",
    "apps.audit",
    "apps.capabilities",
    "apps.vault",
    "apps.mcp",
    "apps.agents",
    "apps.spend",
    "apps.runs",
    "apps.approvals",
    "apps.notifications",
    "apps.memory",
    "apps.triggers",
    "apps.channels",
    "apps.ratings",
    "apps.knowledge",
    "apps.sandbox",
    "apps.console",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "agenticos.csp.ContentSecurityPolicyMiddleware",
    "servestatic.middleware.ServeStaticMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Before the organization is chosen: an impersonating admin acts in the account's orgs.
    "apps.audit.middleware.ImpersonationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "apps.orgs.middleware.CurrentOrganizationMiddleware",
    # Last, as django-axes asks: it turns a locked-out sign-in into its 429 answer.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "agenticos.urls"
ASGI_APPLICATION = "agenticos.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "apps.orgs.context_processors.organization",
                "apps.notifications.context_processors.unread_notifications",
                "apps.console.context_processors.navigation",
            ],
        },
    },
]

AUTH_USER_MODEL = "orgs.User"
AUTHENTICATION_BACKENDS = [
    # First, as django-axes asks: a locked-out sign-in is refused before the password is checked.
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
    "guardian.backends.ObjectPermissionBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {
        "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
        "OPTIONS": {"min_length": 10},
    },
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "console:dashboard"
LOGOUT_REDIRECT_URL = "login"
# django-guardian: no anonymous user row; grants are for real accounts and groups only.
ANONYMOUS_USER_NAME = None
GUARDIAN_MONKEY_PATCH_USER = False

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Only production collects static files (the Dockerfile sets STATIC_ROOT); locally the finders serve them.
STATIC_ROOT = env_str("STATIC_ROOT", None)
# Static files are served by ServeStatic (an ASGI-aware WhiteNoise: under uvicorn a file streams
# asynchronously instead of being read whole first). Straight from the finders, so `make run`
# needs no collectstatic step; from STATIC_ROOT as well where it was collected (Docker).
SERVESTATIC_USE_FINDERS = True
# Django's default storage: where the media capability keeps a history's large parts
# (media/<org>/<conversation>/<digest>). A filesystem under the data directory here; production
# points STORAGES["default"] at an S3-compatible backend. Never served over HTTP (no MEDIA_URL).
MEDIA_ROOT = env_path("MEDIA_ROOT", DATA_DIR / "files")
SERVESTATIC_USE_STATIC_ROOT = STATIC_ROOT is not None
SERVESTATIC_AUTOREFRESH = DEBUG
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# The largest request body accepted (bytes): Django's own limit for form bodies, and the API's JSON
# parser applies it too (a 413 in JSON). 2.5 MB is Django's default.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 2_621_440, minimum=1024)

# --- Knowledge: docs/knowledge.md --------------------------------------------------------------
# The largest document an upload may carry (bytes); a larger one is refused with the limit named.
KNOWLEDGE_MAX_UPLOAD_BYTES = env_int("KNOWLEDGE_MAX_UPLOAD_BYTES", 20 * 1024 * 1024, minimum=1024)
# The most text one document is indexed to (characters); the rest is left out and the document
# says so in its status line.
KNOWLEDGE_MAX_DOCUMENT_CHARS = env_int("KNOWLEDGE_MAX_DOCUMENT_CHARS", 5_000_000, minimum=1000)
# Documents one organization may have indexing at once; more wait queued until one ends
# (docs/knowledge.md, "Indexing"), so one organization's uploads cannot hold every worker.
KNOWLEDGE_MAX_INDEXING_PER_ORG = env_int("KNOWLEDGE_MAX_INDEXING_PER_ORG", 2, minimum=1)
# BLAS threads the built-in embedder uses per call. One: a worker embeds for many runs at once,
# and on a small machine BLAS threads that spin against each other made a query 10x slower.
KNOWLEDGE_EMBEDDER_THREADS = env_int("KNOWLEDGE_EMBEDDER_THREADS", 1, minimum=1)
# PostgreSQL's text search configuration for the full-text half of hybrid retrieval.
KNOWLEDGE_TEXT_SEARCH_CONFIG = env_str("KNOWLEDGE_TEXT_SEARCH_CONFIG", "english")

# --- Transport and browser hardening: docs/security.md -------------------------------------
# Off by default so `make run` works over plain http on 127.0.0.1; the docker production path
# turns them on (docker/compose.yml), where `manage.py check --deploy` is clean.
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
# HSTS: browsers keep to https for this many seconds once they have seen it (0: not sent).
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
# /healthz is probed over plain http from inside the compose network.
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
# Behind a TLS-terminating proxy that sets X-Forwarded-Proto (only then: a client could send it).
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("SECURE_PROXY_SSL_HEADER", False) else None
)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# The Content-Security-Policy (agenticos/csp.py): on by default, everywhere; report-only lets an
# operator try a change without breaking pages.
CSP_ENABLED = env_bool("CSP_ENABLED", True)
CSP_REPORT_ONLY = env_bool("CSP_REPORT_ONLY", False)
CSP_INLINE_STYLE_PATHS = ("/api/v1/docs/",)

# --- Sign-in lockout (django-axes) and API rate limits: docs/security.md ---------------------
# After AXES_FAILURE_LIMIT wrong passwords for one account from one address, that pair is locked
# out for AXES_COOLOFF_MINUTES (a 429); a right password resets the count. Each lockout is
# audited (auth.lockout). Keyed on the pair so a stranger cannot lock a person out everywhere.
AXES_ENABLED = env_bool("AXES_ENABLED", True)
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = __import__("datetime").timedelta(
    minutes=env_int("AXES_COOLOFF_MINUTES", 15, minimum=1)
)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# Django's login form posts the email as "username".
AXES_USERNAME_FORM_FIELD = "username"
AXES_HTTP_RESPONSE_CODE = 429
# Axes' database handler plus a per-account ceiling (apps/orgs/lockout.py): after
# ACCOUNT_LOCKOUT_FAILURE_LIMIT wrong passwords for one account from any addresses within the
# cool-off, it is locked out from every address (0 turns the ceiling off).
AXES_HANDLER = "apps.orgs.lockout.AccountCeilingHandler"
ACCOUNT_LOCKOUT_FAILURE_LIMIT = env_int("ACCOUNT_LOCKOUT_FAILURE_LIMIT", 20, minimum=0)
# The client's address is REMOTE_ADDR. The server sets it from X-Forwarded-For only for a
# connection from one of FORWARDED_ALLOW_IPS (comma-separated addresses or networks, or *):
# default none, so a client cannot forge its address (docs/security.md, "Proxies").
FORWARDED_ALLOW_IPS = env_forwarded_allow_ips("FORWARDED_ALLOW_IPS")
# Requests per window ("N/second|minute|hour|day"); set to empty, a limit is off
# (apps/orgs/throttling.py: an atomic fixed-window counter in Redis).
API_RATE_LIMIT = env_rate("API_RATE_LIMIT", "600/minute")
API_ANON_RATE_LIMIT = env_rate("API_ANON_RATE_LIMIT", "60/minute")
API_KEY_FAILURE_LIMIT = env_int("API_KEY_FAILURE_LIMIT", 20, minimum=0)
API_KEY_FAILURE_WINDOW_SECONDS = env_int("API_KEY_FAILURE_WINDOW_SECONDS", 600, minimum=1)
THROTTLE_KEY_PREFIX = "agenticos"

# --- Invitations: docs/security.md ("Invitations") --------------------------------------------
# How long an invitation to join an organization can be accepted.
INVITATION_EXPIRY_DAYS = env_int("INVITATION_EXPIRY_DAYS", 7, minimum=1)

# --- Email -------------------------------------------------------------------------------
EMAIL_HOST = env_str("EMAIL_HOST", "")
EMAIL_PORT = env_int("EMAIL_PORT", 587, minimum=1)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", True)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "AgenticOS <agenticos@localhost>")
EMAIL_BACKEND = (
    "django.core.mail.backends.smtp.EmailBackend"
    if EMAIL_HOST
    else "django.core.mail.backends.console.EmailBackend"
)

# --- Redis: cache, channels, celery --------------------------------------------------------
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        # A stalled Redis fails a request in seconds (a 503, agenticos/outage.py), instead of
        # holding every web thread until the client gives up on its own.
        "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 5},
    }
}
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {"hosts": [REDIS_URL]},
    }
}
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = "UTC"
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Surviving a broker outage (docs/deployment.md "When Redis or PostgreSQL goes away"). Kombu's
# Redis transport as agenticos/broker.py fixes it: a run that ends after the worker reconnected
# acknowledges its message instead of stopping the worker.
CELERY_BROKER_TRANSPORT = "agenticos.broker:Transport"
# A worker waits for the broker as long as it takes (the default gives up after 100 tries and
# exits); it holds runs whose leases it is still renewing in PostgreSQL.
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_BROKER_TRANSPORT_OPTIONS = {
    # A stalled Redis is noticed in seconds; above kombu's 1 s blocking read of the queue.
    "socket_connect_timeout": 3,
    "socket_timeout": 10,
}
# Enqueuing (a new run, a resume) rides over a Redis restart: about 10 s of retries before the
# request answers 503 (agenticos/outage.py).
CELERY_TASK_PUBLISH_RETRY_POLICY = {
    "max_retries": 12,
    "interval_start": 0,
    "interval_step": 0.5,
    "interval_max": 1,
}
# The worker writes a heartbeat key this often; /healthz calls the worker down when the newest
# heartbeat is older than WORKER_HEARTBEAT_STALE_SECONDS.
WORKER_HEARTBEAT_SECONDS = 5
WORKER_HEARTBEAT_STALE_SECONDS = 30

# --- API ------------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "apps.orgs.api.authentication.ApiKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["apps.orgs.api.permissions.OrganizationPermission"],
    # The API speaks JSON (a form body is a 415): DRF's JSON parser with a size limit (413) and a
    # nesting limit (422). The console posts its forms to its own views, not to the API.
    "DEFAULT_PARSER_CLASSES": ["apps.orgs.api.parsers.BoundedJSONParser"],
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_THROTTLE_CLASSES": [
        "apps.orgs.throttling.ApiCallerRateThrottle",
        "apps.orgs.throttling.ApiAnonymousRateThrottle",
    ],
    # A ceiling on limit (500) and a 422 for a limit or offset outside its type.
    "DEFAULT_PAGINATION_CLASS": "apps.orgs.api.pagination.BoundedLimitOffsetPagination",
    "PAGE_SIZE": 50,
    # drf-spectacular's, adding the errors every operation can answer (apps/orgs/api/schema.py).
    "DEFAULT_SCHEMA_CLASS": "apps.orgs.api.schema.AgenticosAutoSchema",
    "EXCEPTION_HANDLER": "apps.orgs.api.exceptions.api_exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "AgenticOS API",
    "DESCRIPTION": (
        "Build agents out of capabilities and run them under governance.\n\n"
        "Authenticate with `Authorization: Bearer <api key>` (the key acts as its person, in its "
        "organization) or the console's session. A session chooses its organization with the "
        "`X-Organization-Id` header (an integer; default: the console's current organization); a "
        "key ignores the header. An organization the caller cannot see is a 404; a header that "
        "is not an id is a 422.\n\n"
        "Errors: 401 no or a bad credential, 403 a missing permission (named), 404 nothing the "
        "caller can see (another organization's rows read the same as missing ones), 409 a "
        "second decision, 413 a body over the limit, 422 a value outside its type or a body key "
        "the endpoint does not take (the body names each one; an unknown key's message lists "
        "the keys the endpoint takes), 429 a rate limit (Retry-After)."
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # A request body is its own component: read-only fields never appear as inputs, write-only
    # ones (a secret's value) never as outputs.
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "AgentStatusEnum": "apps.agents.models.AgentStatus",
        "RunStatusEnum": "apps.runs.choices.RunStatus",
    },
    # Swagger UI from the installed sidecar package, not a CDN: the docs page works offline.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
}

# --- Product settings (MAP.md "Settings") ---------------------------------------------------
# A new organization's monthly cap; an existing organization is never changed by this value.
# Set but empty means new organizations start uncapped.
DEFAULT_ORG_MONTHLY_BUDGET_USD = env_optional_decimal(
    "DEFAULT_ORG_MONTHLY_BUDGET_USD", Decimal("100")
)
APPROVAL_EXPIRY_HOURS = env_int("APPROVAL_EXPIRY_HOURS", 72, minimum=1)
# How long before APPROVAL_EXPIRY_HOURS runs out the approval audience gets one reminder (the
# hourly sweep sends it); 0 turns the reminder off.
APPROVAL_EXPIRY_WARNING_HOURS = env_int("APPROVAL_EXPIRY_WARNING_HOURS", 12, minimum=0)
STALE_RUN_REAPED_AFTER_HOURS = env_int("STALE_RUN_REAPED_AFTER_HOURS", 6, minimum=0)
# A run still queued this long after it was created has its task sent again (the broker may have
# lost it, or the enqueue failed after the commit); then again after twice as long, and so on
# (docs/runner.md "Requeue"). 0 turns the requeue sweep off.
RUN_REQUEUE_AFTER_SECONDS = env_int("RUN_REQUEUE_AFTER_SECONDS", 30, minimum=0)
# Runs one worker process holds at once on its event loop (Celery's thread pool size).
AGENTICOS_RUNS_PER_WORKER = env_int("AGENTICOS_RUNS_PER_WORKER", 250, minimum=1)
# A running run's lease: its worker renews it (every min(10 s, a third of it)); the lease sweep
# fails a run whose lease lapsed, so a dead worker's runs end within about a minute.
RUN_LEASE_SECONDS = env_int("RUN_LEASE_SECONDS", 45, minimum=3)
QUESTION_EXPIRY_HOURS = env_int("QUESTION_EXPIRY_HOURS", 24, minimum=1)
# An event trigger's signed timestamp may be this far from the server's clock (docs/triggers.md):
# older is a stale replay, refused with a 403 before anything reaches the runner.
TRIGGER_EVENT_TOLERANCE_SECONDS = env_int("TRIGGER_EVENT_TOLERANCE_SECONDS", 300, minimum=1)
# The largest event body a trigger accepts (it is handed to the run's prompt as data).
TRIGGER_EVENT_MAX_BYTES = env_int("TRIGGER_EVENT_MAX_BYTES", 64 * 1024, minimum=1024)
MEM0_ALLOWED_HOSTS = env_list("MEM0_ALLOWED_HOSTS")
# Internal destinations a URL an organization chose may reach — a self-hosted model, embedding
# server, MCP server, Mattermost or mem0 behind the VPN (apps/outbound/allowlist.py has the
# syntax, docs/security.md "Where the product dials" the places it applies). Empty: no private,
# loopback or link-local address is dialled; a cloud metadata address never is.
OUTBOUND_ALLOW = env_destinations("OUTBOUND_ALLOW")
# The per-feature lists OUTBOUND_ALLOW replaced: still set in an environment, they would look
# like they allow something; the system check agenticos.W010 says to move them.
RETIRED_OUTBOUND_SETTINGS = tuple(
    name for name in ("MCP_ALLOWED_HOSTS", "CHANNEL_ALLOWED_HOSTS") if env_list(name)
)
# Chat channels (apps/channels, docs/channels.md). Messages one sender may send a binding per
# minute (a binding may set its own); how long the private link of `link` works.
CHANNEL_SENDER_MESSAGES_PER_MINUTE = env_int("CHANNEL_SENDER_MESSAGES_PER_MINUTE", 10, minimum=1)
CHANNEL_LINK_EXPIRY_MINUTES = env_int("CHANNEL_LINK_EXPIRY_MINUTES", 15, minimum=1)
# Where Slack's and Telegram's APIs are: deliberately not read from the environment — the tests
# point it at a fake platform on 127.0.0.1, and a deployment never needs another address.
CHANNEL_API_BASE_URLS: dict[str, str] = {}
BROWSER_CDP_ALLOWED_HOSTS = env_list("BROWSER_CDP_ALLOWED_HOSTS")
# Connecting and the initialize handshake; then one tool call's limit (a failed result after it).
MCP_CONNECT_TIMEOUT_SECONDS = env_int("MCP_CONNECT_TIMEOUT_SECONDS", 10, minimum=1)
MCP_TOOL_TIMEOUT_SECONDS = env_int("MCP_TOOL_TIMEOUT_SECONDS", 120, minimum=1)
BROWSER_SIGN_IN_CDP_URL = env_str("BROWSER_SIGN_IN_CDP_URL", "")
SANDBOX_STATE_MAX_BYTES = env_int("SANDBOX_STATE_MAX_BYTES", 50 * 1024 * 1024, minimum=0)
# The service backend ("This deployment's sandbox"): where each workspace's directory lives on
# this host, and the limits every command runs under (apps/sandbox/bubblewrap.py).
SANDBOX_WORKSPACES_DIR = env_path("SANDBOX_WORKSPACES_DIR", DATA_DIR / "sandboxes")
SANDBOX_COMMAND_TIMEOUT_SECONDS = env_int("SANDBOX_COMMAND_TIMEOUT_SECONDS", 120, minimum=1)
SANDBOX_COMMAND_CPU_SECONDS = env_int("SANDBOX_COMMAND_CPU_SECONDS", 60, minimum=1)
SANDBOX_COMMAND_MEMORY_BYTES = env_int(
    "SANDBOX_COMMAND_MEMORY_BYTES", 1024 * 1024 * 1024, minimum=64 * 1024 * 1024
)
SANDBOX_COMMAND_MAX_PROCESSES = env_int("SANDBOX_COMMAND_MAX_PROCESSES", 128, minimum=8)
SANDBOX_COMMAND_FILE_BYTES = env_int("SANDBOX_COMMAND_FILE_BYTES", 20 * 1024 * 1024, minimum=1024)
SANDBOX_COMMAND_OUTPUT_BYTES = env_int("SANDBOX_COMMAND_OUTPUT_BYTES", 100_000, minimum=1024)
ARTIFACT_MAX_BYTES = env_int("ARTIFACT_MAX_BYTES", 10 * 1024 * 1024, minimum=0)
MAX_DYNAMIC_SPECIALISTS = env_int("MAX_DYNAMIC_SPECIALISTS", 5, minimum=0)
VISUAL_MAP_TILES = env_str("VISUAL_MAP_TILES", "")
BROWSER_TZ = env_str("BROWSER_TZ", "UTC")
BROWSER_LANG = env_str("BROWSER_LANG", "en-US")
ALL_SCOPES = (
    "knowledge:read",
    "conversations:read",
    "web:read",
    "web:fetch",
    "web:browse",
    "code:execute",
    "sandbox:execute",
    "agents:delegate",
)
# Every scope is granted unless the deployment removes it (comma-separated list to remove).
REVOKED_SCOPES = env_list("AGENTICOS_REVOKED_SCOPES")
DEFAULT_GRANTED_SCOPES = tuple(scope for scope in ALL_SCOPES if scope not in REVOKED_SCOPES)
# Key for the secrets vault (Fernet, urlsafe base64 of 32 bytes). Locally generated and kept
# under the data directory when unset; production must set it (system check agenticos.E002).
AGENTICOS_VAULT_KEY = env_str("AGENTICOS_VAULT_KEY", None) or _local_secret(
    "vault.key", lambda: __import__("base64").urlsafe_b64encode(secrets.token_bytes(32)).decode()
)
# Where the audit checkpoints are written: outside the database's reach (see docs/audit.md).
AUDIT_CHECKPOINT_DIR = env_path("AUDIT_CHECKPOINT_DIR", DATA_DIR / "audit-checkpoints")
AUDIT_CHECKPOINT_KEY = env_str("AUDIT_CHECKPOINT_KEY", None) or _local_secret(
    "audit-checkpoint.key", lambda: secrets.token_hex(32)
)

# Where people reach the console; e-mailed links start with it.
AGENTICOS_PUBLIC_URL = (
    env_str("AGENTICOS_PUBLIC_URL", None) or _recorded.get("public_url") or "http://127.0.0.1:8000"
)

# First organization and owner, used by `agenticos bootstrap`.
AGENTICOS_ORG_NAME = env_str("AGENTICOS_ORG_NAME", "Default")
AGENTICOS_ADMIN_EMAIL = env_str("AGENTICOS_ADMIN_EMAIL", "admin@agenticos.local")
AGENTICOS_ADMIN_PASSWORD = env_str("AGENTICOS_ADMIN_PASSWORD", None)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        # The provider SDKs' HTTP clients log every request's URL at INFO: a line per model
        # request in the worker's log, and a URL may carry what a provider takes as a query key.
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
    },
}
