"""What a workspace refuses whatever the approval policy, and the path rules every tool obeys.

Credentials and the system tree cannot be read, written or edited; grep drops matches inside
them; a command naming one is refused; ls and glob still list names (a name is not a secret,
only the content is withheld). The patterns are the seed's list, applied through
pydantic-ai-backend's permission ruleset (its ``PermissionGuard`` checks every spelling of a path
and where a symlink leads). The library's own ``SECRETS_PATTERNS`` is wider (``*password*``,
``*secret*``) and would refuse an ordinary ``password-policy.md``; its ``SYSTEM_PATTERNS`` is the
system tree we want, with ``/dev``, ``/run``, ``/root``, ``/home`` and ``/lib*`` added as siblings.
"""

from __future__ import annotations

from pydantic_ai_backends.permissions import (
    SYSTEM_PATTERNS,
    OperationPermissions,
    PermissionRule,
    PermissionRuleset,
)

CREDENTIAL_PATTERNS: tuple[str, ...] = (
    "**/.env",
    "**/*.pem",
    "**/*.key",
    "**/credentials*",
    "**/.ssh/**",
    "**/.aws/**",
)

SYSTEM_TREE_PATTERNS: tuple[str, ...] = (
    *SYSTEM_PATTERNS,
    "/dev/**",
    "/run/**",
    "/root/**",
    "/home/**",
    "/lib/**",
    "/lib64/**",
    "/srv/**",
    "/opt/**",
    "/mnt/**",
    "/media/**",
)

CREDENTIALS_REASON = "a credential file: never read, written or edited in a workspace"
SYSTEM_REASON = "the system tree: outside the workspace, never read, written or edited"


def _deny(description_patterns: list[tuple[str, tuple[str, ...]]]) -> list[PermissionRule]:
    return [
        PermissionRule(pattern=pattern, action="deny", description=description)
        for description, patterns in description_patterns
        for pattern in patterns
    ]


_CONTENT_RULES = [(CREDENTIALS_REASON, CREDENTIAL_PATTERNS), (SYSTEM_REASON, SYSTEM_TREE_PATTERNS)]


def refusal_ruleset() -> PermissionRuleset:
    """Content and mutation refused on the table's paths; listings and everything else allowed.

    Every default is ``allow``: whether a person must approve a call is the platform's approval
    gate (per tool, from the spec), not this table's. ``ls`` and ``glob`` carry no rule, so names
    stay listed.
    """
    content = OperationPermissions(default="allow", rules=_deny(_CONTENT_RULES))
    return PermissionRuleset(
        default="allow",
        read=content,
        write=content,
        edit=content,
        grep=content,
        execute=OperationPermissions(default="allow", rules=[]),
    )


class PathRefused(ValueError):
    """A path argument no workspace accepts: a NUL byte or a ``..`` segment."""


def check_path_argument(name: str, value: str) -> None:
    """Refuse ``..`` and NUL bytes before anything resolves the path.

    Resolving ``a/../b`` as text would be harmless inside the workspace, but a ``..`` is how a
    path is walked out of one, and a model that writes it is better told plainly than silently
    normalised.
    """
    if "\x00" in value:
        raise PathRefused(f"{name} contains a NUL byte; paths cannot")
    if ".." in value.replace("\\", "/").split("/"):
        raise PathRefused(f"{name} {value!r} contains '..'; name the path inside the workspace")
