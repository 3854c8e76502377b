"""Sandbox: the agent's workspace — files that survive between turns, and a shell.

Its own app because a workspace is neither a capability's tool nor part of a run: it is a
resource with its own life (it outlives runs, is shared according to a data-sharing scope, is
deleted with the conversation it belongs to) and its own rows (files, the operation log), and it
owns something no other app does — a process boundary on this host (``bubblewrap``). The runs app
resolves a run's workspace here before the run (``selectors.workspace_for_run``) and hands it to
the ``sandbox`` capability's tools in the typed run context; the tools never open one themselves.

- ``scopes``     the workspace key, derived on the server from the binding's ``session_scope``
- ``refusals``   what is refused whatever the approval policy (credentials, the system tree)
- ``state``      the ``state`` backend: files as rows in PostgreSQL, capped, no shell
- ``bubblewrap`` one command under bubblewrap with limits (the command-runner seam)
- ``service``    the ``service`` backend on this host: a directory plus ``bubblewrap``
- ``toolset``    the capability's tools: pydantic-ai-backend's console tools on the workspace
"""
