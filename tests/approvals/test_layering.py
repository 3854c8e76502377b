"""Approvals sits below runs (STYLE.md): no module of it imports apps.runs, even inside a function.
What a decision means for a run reaches runs through the hooks runs registers at start."""

import ast
from pathlib import Path

import apps.approvals
from apps.approvals import services

APPROVALS = Path(apps.approvals.__file__).parent


def _imported_modules(path: Path):
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module


def test_no_module_of_approvals_imports_the_runs_app():
    upward = {
        f"{path.relative_to(APPROVALS)}: {module}"
        for path in APPROVALS.rglob("*.py")
        for module in _imported_modules(path)
        if module == "apps.runs" or module.startswith("apps.runs.")
    }
    assert upward == set()


def test_the_runs_app_registers_its_hooks_at_start():
    from apps.runs.resume import run_calls_decided
    from apps.runs.services import run_close_expired_steps, run_expire_parked

    assert services._CALLS_DECIDED_HOOKS == [run_calls_decided]
    assert services._CALLS_EXPIRED_HOOKS == [run_close_expired_steps]
    # The runs app ends the run first; the channels app then tells its thread (apps/channels).
    from apps.channels.services import run_expired_in_thread

    assert services._RUN_EXPIRED_HOOKS == [run_expire_parked, run_expired_in_thread]
