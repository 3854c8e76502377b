"""Delegation: an agent handing work to agents, inside one run, on one ledger (docs/delegation.md).

The package, module by module: ``types`` (what is resolved and what the run shares), ``scope``
(resolving the delegates before the run), ``tools`` (the subagents toolset and each
delegation's agent, built through the runner's one assembly), ``parked`` (the parked tree),
``booking`` (the delegated rows), ``lifetime`` (background delegations after the answer).

The ``subagents`` capability's toolset lives here, in the runs app, because a delegation is a
run inside a run: it needs the runner's assembly (model, toolsets, budget guard, approval gate),
the run's frames and its parking. It is registered with
``apps.capabilities.implementations.register_toolset`` from ``RunsConfig.ready()``, which is what
makes the capability available.

Three phases, each where it belongs:

1. **Resolve** (``scope.resolve_scope``, on the thread that prepares the run, the one place this module
   reads the database): the pinned delegates' published versions, their model profiles and keys,
   their own delegates down to the depth each agent's own spec allows; a pin to a missing version
   or an archived agent refuses the run naming the delegate.
2. **Run** (the tools, on the run's event loop, no database): ``task`` builds a fresh agent for the
   delegation from what was resolved — its own model, priced by its own provider, its own gate,
   a budget guard over the run's one ledger and the run's caps — and runs it, in place (sync) or
   on the library's task manager (async). A gated call inside a sync delegation parks the whole
   run with the delegation's state kept as one node of the parked tree; approving it continues
   that delegate where it stopped.
3. **Book** (``booking.book_delegations``, inside the transaction that books the run's end): one row per
   finished delegation of a published agent, costed from its own ledger entries.

subagents-pydantic-ai (pinned) supplies the background half: its ``TaskManager``, task handles
(which stamp when a delegate started and finished) and the six lifecycle tools. The sync half is
this module's, because continuing a parked delegate in place needs the delegate's message
history and its parked calls, which the library discards when it re-raises the suspension.
"""
