"""code_execution ("Calculations"): ``run_python`` in pydantic-monty's restricted interpreter.

A restricted sandbox with no network and no file system, which is why time and memory are the only
limits worth setting; both are per agent (``timeout_secs``, ``max_memory_mb``) and bounded.
Monty runs each program in a worker subprocess, so a program that exhausts its memory cannot take
the run's process with it.

How each outcome reaches the model (seed 000, "Un error, un resultado y un rechazo"):

- an exception raised by the model's own code (a NameError, a SyntaxError, a ZeroDivisionError,
  an import the interpreter does not have) is the model's argument: a retry with the error;
- hitting ``timeout_secs`` or ``max_memory_mb`` is a result that says which limit stopped it (the
  answer to "can this be computed here?", not a typo to fix);
- touching a file is a refusal: the sandbox has no file system, by design;
- a crashed or unreachable interpreter worker is a transient fault: a retry.

Output (what was printed, then the last expression's value) longer than 8,000 characters is cut,
with a marker saying so.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import RunContext

from ._toolsets import declared_toolset, parsed_config
from .failures import TransientFault, WrongArguments, budgeted, refusal

CAPABILITY_ID = "code_execution"
OUTPUT_LIMIT = 8_000
TRUNCATION_MARKER = "\n… [output cut at 8,000 characters; print less, or summarise before printing]"
# Monty reports these for a limit, not for a mistake in the code.
_LIMIT_ERRORS = {"TimeoutError", "MemoryError"}
# The interpreter's answer to reaching for a file: a refusal of the sandbox, not a bug.
_REFUSED_ERRORS = {"PermissionError", "FileNotFoundError", "OSError", "IsADirectoryError"}


def cut(text: str, limit: int = OUTPUT_LIMIT) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + TRUNCATION_MARKER


def _error_kind(error: Exception) -> str:
    try:
        return type(error.exception()).__name__  # type: ignore[attr-defined]
    except Exception:  # a MontyError without an inner exception: name it by its own class
        return type(error).__name__


def _error_text(error: Exception) -> str:
    display = getattr(error, "display", None)
    if callable(display):
        try:
            return display("traceback")
        except Exception:
            return str(error)
    return str(error)


def run_program(code: str, *, timeout_secs: float, max_memory_mb: int) -> str:
    """Run ``code`` under the limits and describe the outcome; raise a RetryRequest for the model's
    own errors and transient faults."""
    from pydantic_monty import (
        Monty,
        MontyCrashedError,
        MontyError,
        MontyRuntimeError,
        MontySyntaxError,
        ResourceLimits,
    )

    if not code.strip():
        raise WrongArguments("code is empty. Pass a Python program; print what you need to see.")
    printed: list[str] = []

    def on_print(_stream: str, text: str) -> None:
        # Keep a little more than the limit, so the cut can say it cut.
        if sum(len(p) for p in printed) <= OUTPUT_LIMIT:
            printed.append(text)

    limits: ResourceLimits = {
        "max_feed_duration_secs": float(timeout_secs),
        "max_memory": int(max_memory_mb) << 20,
    }
    try:
        with Monty(max_processes=1) as pool:
            with pool.checkout(limits=limits) as session:
                value = session.feed_run(code, print_callback=on_print)
    except MontySyntaxError as error:
        raise WrongArguments(
            f"The program does not parse: {error.display('type-msg')}. Fix the syntax and call run_python again."
        ) from error
    except MontyRuntimeError as error:
        kind = _error_kind(error)
        output = "".join(printed)
        if kind == "TimeoutError":
            return cut(
                f"Stopped: the program hit the time limit of {timeout_secs:g} seconds (timeout_secs) "
                f"before finishing.{_printed_before(output)}"
            )
        if kind == "MemoryError":
            return cut(
                f"Stopped: the program hit the memory limit of {max_memory_mb} MB (max_memory_mb).{_printed_before(output)}"
            )
        if kind in _REFUSED_ERRORS:
            return refusal(
                f"run_python has no file system ({error.display('type-msg')}). Put the data in the program "
                "itself; files that persist belong to the sandbox's tools."
            )
        if kind == "ModuleNotFoundError":
            raise WrongArguments(
                f"{error.display('type-msg')}. This interpreter has no network and only a few standard "
                "modules (math, re, json, datetime among them); compute it without that import."
            ) from error
        raise WrongArguments(
            f"The program raised {kind}:\n{cut(_error_text(error), 2000)}\nFix the code and call run_python again."
        ) from error
    except MontyCrashedError as error:
        raise TransientFault(
            "The Python interpreter crashed while running the program; call run_python again, "
            "perhaps with a smaller computation."
        ) from error
    except MontyError as error:
        raise TransientFault(
            f"The Python interpreter failed ({type(error).__name__}); call run_python again."
        ) from error
    output = "".join(printed)
    parts = []
    if output:
        parts.append(output.rstrip("\n"))
    if value is not None:
        parts.append(f"Value of the last expression: {value!r}")
    if not parts:
        return "The program ran and printed nothing (print what you need to see)."
    return cut("\n".join(parts))


def _printed_before(output: str) -> str:
    if not output:
        return " Nothing was printed before it stopped."
    return f" It printed before stopping:\n{output.rstrip()}"


def build_code_execution_toolset(binding, context):
    config = parsed_config(CAPABILITY_ID, binding)

    @budgeted
    def run_python(ctx: RunContext[Any], code: str = "") -> str:
        return run_program(
            code, timeout_secs=config.timeout_secs, max_memory_mb=config.max_memory_mb
        )

    return declared_toolset(
        CAPABILITY_ID, binding, {"run_python": run_python}, toolset_id="code_execution"
    )
