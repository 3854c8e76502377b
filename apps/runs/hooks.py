"""What higher apps hear of a run's life through hooks they register (runs never imports them).

Apps above runs (notifications, channels, ratings) register a receiver in their
``AppConfig.ready()``; runs announces. So the import graph keeps pointing down (docs/layers.md)
and an alert is never silently off because an import failed: a receiver is either registered at
start or it is not part of the deployment.

- :data:`run_cancelled_hook`: ``receiver(run_id=...)``, for a run **the cancel itself ended** — a
  queued run, a parked one (waiting for an approval or an answer), or a running one whose worker
  had gone. No segment of such a run is executing, so nothing else tells the people following
  it: the channels app posts "cancelled" in the run's thread. A running run is not announced
  here: its worker ends it, and whoever follows its segment sees the end
  (``exposures.segment_observed``).
- :data:`run_parked_hook`: ``receiver(run_id=...)``, a run parked on a tool call waiting for a
  person's approval (or on a question): the approvals alert.
- :data:`run_budget_refused_hook`: ``receiver(run_id=...)``, a run ended ``budget_exceeded``
  because a cap bound; ``run.budget_refusal`` names the cap: the "budget reached" alert.

A receiver runs after the commit, so it never sees (or announces) something that rolled back; a
receiver that raises is logged and skips nothing else (``transaction.on_commit(..., robust=True)``).

A :class:`Provider` is the other direction: a read runs needs from an app above it, answered by
that app. :data:`message_ratings` is apps.ratings' table of thumbs, which the run history's
``rated`` filter and the chat's own thumbs read.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from django.db import transaction


class Hook:
    """One piece of news about runs, told to every registered receiver once the transaction that
    made it true commits."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._receivers: list[Callable[..., object]] = []

    def register(self, receiver: Callable[..., object]) -> None:
        # ready() may run twice (tests, autoreload): one registration per receiver.
        if receiver not in self._receivers:
            self._receivers.append(receiver)

    def send_on_commit(self, **news) -> None:
        for receiver in self._receivers:
            transaction.on_commit(partial(receiver, **news), robust=True)

    @property
    def receivers(self) -> tuple[Callable[..., object], ...]:
        return tuple(self._receivers)


run_cancelled_hook = Hook("run_cancelled")
run_parked_hook = Hook("run_parked")
run_budget_refused_hook = Hook("run_budget_refused")


def on_run_cancelled(receiver: Callable[..., object]) -> None:
    run_cancelled_hook.register(receiver)


def run_cancelled(run_id: int) -> None:
    """Tell every receiver, once the current transaction commits, that the cancel ended ``run_id``."""
    run_cancelled_hook.send_on_commit(run_id=run_id)


def on_run_parked(receiver: Callable[..., object]) -> None:
    run_parked_hook.register(receiver)


def run_parked(run_id: int) -> None:
    run_parked_hook.send_on_commit(run_id=run_id)


def on_run_budget_refused(receiver: Callable[..., object]) -> None:
    run_budget_refused_hook.register(receiver)


def run_budget_refused(run_id: int) -> None:
    run_budget_refused_hook.send_on_commit(run_id=run_id)


class Provider:
    """A read an app above runs answers for it, registered in that app's AppConfig.ready().

    Asking one nobody provided is an error naming it, never a silent empty answer."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._answer: Callable[..., object] | None = None

    def provide(self, answer: Callable[..., object]) -> None:
        self._answer = answer

    def __call__(self, *args, **kwargs):
        if self._answer is None:
            raise LookupError(f"nothing provides {self.name!r} (is its app installed?)")
        return self._answer(*args, **kwargs)


# ``message_ratings()`` -> the QuerySet of every rating (apps.ratings.MessageRating).
message_ratings = Provider("message_ratings")
