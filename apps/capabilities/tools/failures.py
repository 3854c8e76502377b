"""How a tool reports trouble: the one place that decides (seed 000, "Un error, un resultado y un
rechazo").

How a tool reports a problem decides what the model does next, and the three are not
interchangeable:

=================================================  =================  ===================================
The trouble                                        What the tool does Why
=================================================  =================  ===================================
the model's own arguments (a chart series with     retry request      calling again differently is a
the wrong number of values, a context file that                       plausible fix, and the message says
does not exist, a NameError in its Python)                            what a correct call looks like
a transient fault behind the tool (a provider      retry request      an error shaped like a result reads
down, a time-out)                                                     as "nothing found", and the model
                                                                      answers from memory, confidently
bad news (a non-zero exit, an empty search)        returned as text   it is the answer; the model reasons
                                                                      on it and carries on
a refusal (a permission rule, a capability the     returned as text   a retry request invites the model to
deployment does not offer)                                            look for a way around it
=================================================  =================  ===================================

Retries are budgeted: a tool call has one attempt to correct itself (pydantic-ai's default
``max_retries=1``), and a ``ModelRetry`` raised past that budget ends the whole run instead of
the call. So on the last attempt (``RunContext.last_attempt``) the message comes back as the
tool's result instead of raising — steering while there is budget for it, and never worse than
the answer the model would have given anyway.

A tool body raises :class:`WrongArguments` or :class:`TransientFault` from wherever it finds the
problem (deep in a validator, say) and :func:`budgeted` turns it into the right outcome; a tool
returns bad news and refusals as plain text (:func:`refusal` only prefixes it so the model cannot
mistake it for data).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic_ai import RunContext
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ModelRetry, SkipToolExecution

F = TypeVar("F", bound=Callable[..., Any])


class RetryRequest(Exception):
    """Trouble a retry may fix. ``message`` says what a correct call looks like."""

    def __init__(self, message: str) -> None:
        self.message = " ".join(message.split())
        super().__init__(self.message)


class WrongArguments(RetryRequest):
    """The model's own arguments are wrong: a retry whose message shows a correct call."""


class TransientFault(RetryRequest):
    """What stands behind the tool failed for now (a time-out, a crashed worker): a retry."""


def ask_again(ctx: RunContext[Any], message: str) -> str:
    """Raise a retry request with ``message`` — or, on the call's last attempt, return it.

    Returning on the last attempt is the whole point: a retry raised past the budget ends the
    run, and one bad call must never end a run.
    """
    message = " ".join(message.split())
    if ctx.last_attempt:
        return message
    raise ModelRetry(message)


def refusal(message: str) -> str:
    """A refusal, returned as the tool's result: retrying would only invite a way around it."""
    return f"Refused: {' '.join(message.split())}"


def budgeted(func: F) -> F:
    """Wrap a tool function taking ``ctx: RunContext`` first: turn a :class:`RetryRequest` raised
    anywhere inside it into :func:`ask_again`. The signature (hence the tool's JSON schema) is
    kept as is."""
    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def async_wrapper(ctx: RunContext[Any], *args: Any, **kwargs: Any) -> Any:
            try:
                return await func(ctx, *args, **kwargs)
            except RetryRequest as trouble:
                return ask_again(ctx, trouble.message)

        return async_wrapper  # type: ignore[return-value]

    @functools.wraps(func)
    def wrapper(ctx: RunContext[Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return func(ctx, *args, **kwargs)
        except RetryRequest as trouble:
            return ask_again(ctx, trouble.message)

    return wrapper  # type: ignore[return-value]


# --- arguments that do not even match the schema --------------------------------------------------

# Key of the stand-in arguments a failed validation becomes on its last attempt; no tool of this
# deployment takes an argument of that name.
_INVALID_ARGUMENTS = "__agenticos_invalid_arguments__"


def _validation_sentence(tool_name: str, error: Exception) -> str:
    if isinstance(error, ModelRetry):
        return error.message
    errors = getattr(error, "errors", None)
    problems: list[str] = []
    if callable(errors):
        for item in errors(include_url=False)[:5]:
            where = ".".join(str(p) for p in item.get("loc", ())) or "arguments"
            problems.append(f"{where}: {item.get('msg', 'invalid')}")
    detail = "; ".join(problems) or str(error)
    return (
        f"The call to {tool_name} was not made: its arguments do not match the tool's schema "
        f"({detail}). Call it again with the arguments its description lists."
    )


class LastAttemptArguments(AbstractCapability[Any]):
    """Apply the same budget to arguments pydantic-ai rejects before a tool body ever runs.

    A schema mismatch is pydantic-ai's own retry request, and past the budget it ends the run
    like any other. On the call's last attempt this capability turns the failure into the tool's
    result instead (the call is not made), so one bad call never ends a run. The runner adds it
    once per agent: ``Agent(..., capabilities=[..., LastAttemptArguments()])``.
    """

    async def on_tool_validate_error(self, ctx, *, call, tool_def, args, error):
        if not ctx.last_attempt:
            raise error
        return {_INVALID_ARGUMENTS: _validation_sentence(call.tool_name, error)}

    async def before_tool_execute(self, ctx, *, call, tool_def, args):
        if isinstance(args, dict) and _INVALID_ARGUMENTS in args:
            raise SkipToolExecution(args[_INVALID_ARGUMENTS])
        return args
