"""Every capability of this deployment, one ``register(...)`` call each.

Imported in the order of seed 000's table "Qué se entrega": the registry keeps registration
order, and ``all_capabilities()`` (hence the API and the Builder) lists them in it.
"""

# ruff: noqa: I001 — the import order IS the catalog order; do not sort.
from . import knowledge  # noqa: F401  knowledge … conversation_search
from . import research  # noqa: F401  web_research, web_fetch, browser_use
from . import analysis  # noqa: F401  code_execution … coding_agent
from . import reasoning  # noqa: F401  subagents, planning, thinking, system_reminders
from . import utility  # noqa: F401  tool_search … artifacts
from . import channels  # noqa: F401  channel_tools
from . import conversation  # noqa: F401  ask_user, follow_ups
