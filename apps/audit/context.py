"""Per-request facts that every audit entry picks up without each caller passing them.

`ImpersonationMiddleware` sets these for the duration of one request; Celery tasks and shell
commands never set them, so there they stay None. They are contextvars (not thread locals) so
that they follow a request across asgiref's sync/async boundaries.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

# The app admin acting as `request.user` during an impersonation, or None.
current_impersonator: ContextVar[Any | None] = ContextVar(
    "audit_current_impersonator", default=None
)
# The id of the ImpersonationSession row in force, or None.
current_impersonation_id: ContextVar[int | None] = ContextVar(
    "audit_current_impersonation_id", default=None
)
# The client address of the request, stored on the entry but never exposed by GET /audit.
current_ip_address: ContextVar[str | None] = ContextVar("audit_current_ip_address", default=None)
