"""The sandbox capability's tools: pydantic-ai-backend's console tools, on the run's workspace.

The console toolset (``create_console_toolset``) brings the seed's seven tools with the argument
names scripts rely on (``path``, ``content``, ``pattern``, ``command``), the stale-edit check,
and the permission guard that applies the refusal table. What it lacks, added here:

- the workspace comes from the run context (``RunResources.sandbox``, opened by the runner
  before the run), not from a pydantic-ai workspace capability, so the wrapper hands it to each
  call as ``ctx.workspace``;
- ``..`` and NUL bytes are refused before anything resolves a path;
- every call lands in the workspace's operation log (path, operation, run — never content).

Approval is not decided here: the ruleset allows everything it does not refuse, and the
platform's approval gate asks per tool as the spec says (only ``execute`` is side-effecting).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from pydantic_ai import ModelRetry
from pydantic_ai.workspaces import Workspace
from pydantic_ai_backends import create_console_toolset

from apps.capabilities.tools._blocking import run_blocking
from apps.capabilities.tools._toolsets import declared_toolset

from .choices import Outcome
from .refusals import PathRefused, check_path_argument, refusal_ruleset
from .services import OpenWorkspace, operation_record

PERMISSION_DENIED = "Permission denied"

# Which arguments of which tool name a path (grep's ``pattern`` is a regular expression).
PATH_ARGUMENTS: dict[str, tuple[str, ...]] = {
    "ls": ("path",),
    "read_file": ("path",),
    "write_file": ("path",),
    "edit_file": ("path",),
    "glob": ("pattern", "path"),
    "grep": ("path", "glob_pattern"),
    "execute": (),
}


class WorkspaceTools:
    """The console tools bound to one run's workspace: path checks, then the tool, then the log."""

    def __init__(self, opened: OpenWorkspace, workspace: Workspace | None) -> None:
        self.opened = opened
        self.workspace = workspace

    def bind(self, name: str, function):
        """``function`` (a console tool taking ``ctx`` first) on this workspace, same signature."""

        @functools.wraps(function)
        async def tool(ctx, *args, **kwargs):
            return await self.call(name, function, ctx, kwargs, args)

        return tool

    async def call(self, name, function, ctx, tool_args: dict[str, Any], args=()) -> Any:
        opened = self.opened
        if opened.refused:
            return opened.refused
        logged_path = str(tool_args.get("path") or tool_args.get("pattern") or "")
        if name in ("execute", "grep"):
            # A command line or a regular expression can carry content; the log keeps neither.
            logged_path = str(tool_args.get("path") or "") if name == "grep" else ""
        try:
            for argument in PATH_ARGUMENTS.get(name, ()):
                value = tool_args.get(argument)
                if isinstance(value, str):
                    check_path_argument(argument, value)
        except PathRefused as exc:
            await self._log(name, logged_path, Outcome.REFUSED)
            return f"{PERMISSION_DENIED}: {exc}"
        try:
            result = await function(
                dataclasses.replace(ctx, workspace=self.workspace), *args, **tool_args
            )
        except ModelRetry:
            await self._log(name, logged_path, Outcome.FAILED)
            raise
        outcome = Outcome.DONE
        if isinstance(result, str):
            if PERMISSION_DENIED in result[:200]:
                outcome = Outcome.REFUSED
            elif result.startswith("Error"):
                outcome = Outcome.FAILED
        await self._log(name, logged_path, outcome)
        return result

    async def _log(self, operation: str, path: str, outcome: str) -> None:
        if self.opened.workspace_id is None:
            return
        await run_blocking(
            operation_record,
            workspace_id=self.opened.workspace_id,
            run_id=self.opened.run_id,
            operation=operation,
            path=path,
            outcome=outcome,
        )


def build_sandbox_toolset(binding, context):
    """The builder the capabilities registry calls (registered in ``SandboxConfig.ready``).

    The tools go through the registry's ``declared_toolset`` like every capability's: the
    catalog's descriptions, the binding's renames and the metadata the approval gate reads.
    """
    opened: OpenWorkspace | None = getattr(context.resources, "sandbox", None)
    if opened is None:
        return None
    console = create_console_toolset(
        include_execute=True, permissions=refusal_ruleset(), profile="agent"
    )
    workspace = Workspace(opened.backend) if opened.backend is not None else None
    bound = WorkspaceTools(opened, workspace)
    functions = {name: bound.bind(name, tool.function) for name, tool in console.tools.items()}
    if not opened.include_execute:
        # The catalog's offered_when keeps execute from the model; this makes sure of it.
        functions["execute"] = bound.bind("execute", _no_shell)
    return declared_toolset("sandbox", binding, functions, toolset_id="sandbox")


async def _no_shell(ctx, command: str, timeout: int | None = None) -> str:
    return "This workspace has no shell: it keeps files only."
