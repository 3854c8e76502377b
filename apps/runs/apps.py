from django.apps import AppConfig


class RunsConfig(AppConfig):
    """Conversations, messages, runs and their transcript; the runner and its Celery tasks."""

    name = "apps.runs"
    label = "runs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Approvals sits below runs and never touches a Run: it tells runs what its decisions
        # and its expiry sweeps mean for a run through these hooks (STYLE.md).
        from apps.approvals.services import (
            on_parked_calls_expired,
            on_run_calls_decided,
            on_run_expired,
        )
        from apps.capabilities.tools.ambient import on_ambient_usage
        from apps.spend.guard import current_meter
        from apps.spend.reprice import on_runs_repriced

        from .repricing import runs_apply_repricing
        from .resume import run_calls_decided
        from .services import run_close_expired_steps, run_expire_parked

        # Summaries written by agents the harness builds (compaction, tool output) are booked to
        # the run's ledger through its meter (apps.capabilities.tools.ambient).
        on_ambient_usage(current_meter)
        on_run_calls_decided(run_calls_decided)
        on_parked_calls_expired(run_close_expired_steps)
        on_run_expired(run_expire_parked)
        # Repricing a floor changes run rows and turns: spend computes the deltas, runs writes them.
        on_runs_repriced(runs_apply_repricing)
        # Registered in every process, not only a worker's: services enqueue them by name
        # (apps/runs/queue.py) without importing the module that defines them.
        from . import tasks  # noqa: F401

        # The subagents capability is built here (a delegation is a run inside a run), which is
        # what makes it available (apps.capabilities.implementations).
        from .delegation.tools import register as register_subagents

        register_subagents()
