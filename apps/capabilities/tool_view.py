"""One view of a tool: the name and description the model sees, and whether a run gets it at all.

Four places used to answer this on their own — the manifest (``agenticos tools ls``, ``GET
agents/{id}/tools/``, the Builder), publish validation, the run's toolsets and the transcript —
and they disagreed: the manifest listed ``search_documents`` for a knowledge binding with no
collection connected and ``read_skill_resource`` for skills that ship no file, tools no run ever
got, and showed a re-described tool's raw text where the model read it with its ``<returns>``.
Each of them asks here now.

Two questions, two functions:

- :func:`seen_tool`: a declared tool under a binding's ``tool_overrides`` — the name and the
  description the model reads.
- :func:`withheld_from_run`: beyond the binding's configuration, a tool reaches a run only when
  what it works on exists — collections for ``search_documents``, a bound skill (with a file,
  for ``read_skill_resource``). :class:`RunFacts` carries those facts: the runner derives them
  from the resources it resolved (:meth:`RunFacts.of_resources`), the manifest from the same
  reads made without a run (:func:`run_facts_for`, answered by the app that owns them through
  :func:`on_run_facts` — capabilities is the ground floor and reads no knowledge itself).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .tool_text import render_tool_text, split_tool_text


@dataclass(frozen=True)
class SeenTool:
    """A tool as the model sees it: its stable id, and the name and text it is offered under."""

    tool_id: str
    name: str
    description: str

    @property
    def renamed(self) -> bool:
        return self.name != self.tool_id


def override_of(overrides: Mapping[str, Any], tool_id: str) -> tuple[str | None, str | None]:
    """A binding's rename and re-description of one tool (a spec's model or its stored dict)."""
    value = overrides.get(tool_id)
    if value is None:
        return None, None
    if isinstance(value, Mapping):
        return value.get("name"), value.get("description")
    return getattr(value, "name", None), getattr(value, "description", None)


def offered_description(declared, override_description: str | None) -> str:
    """The declared text, or a binding's re-description of what the tool is for — kept in the
    one shape (the declared ``<returns>`` stays: what comes back is the code's, not the author's)."""
    if not override_description:
        return declared.description
    _, returns = split_tool_text(declared.description)
    return render_tool_text(override_description, returns)


def seen_name(declared, overrides: Mapping[str, Any] | None) -> str:
    """The name the model calls ``declared`` by under a binding's ``tool_overrides``."""
    name, _ = override_of(overrides or {}, declared.id)
    return name or declared.id


def seen_tool(declared, overrides: Mapping[str, Any] | None) -> SeenTool:
    """``declared`` (a capability's ToolSpec) under a binding's ``tool_overrides``."""
    _, redescription = override_of(overrides or {}, declared.id)
    return SeenTool(
        tool_id=declared.id,
        name=seen_name(declared, overrides),
        description=offered_description(declared, redescription),
    )


@dataclass(frozen=True)
class RunFacts:
    """What a run of a spec has for its capabilities to work on, read in its organization."""

    # The spec's knowledge collections that exist in the organization.
    knowledge_collections: int = 0
    # The spec's skills that exist in the organization, and whether any ships a file.
    skills: int = 0
    skill_files: bool = False

    @classmethod
    def of_resources(cls, resources) -> RunFacts:
        """The facts of a run being assembled, from what its runner resolved (RunResources)."""
        searcher = resources.knowledge
        skills = list(resources.skills or ())
        return cls(
            knowledge_collections=len(searcher.collections) if searcher is not None else 0,
            skills=len(skills),
            skill_files=any(skill.files for skill in skills),
        )


def withheld_from_run(capability_id: str, tool_id: str, facts: RunFacts) -> str | None:
    """Why a tool the binding's configuration offers still does not reach the run; None: it does."""
    if capability_id == "knowledge" and not facts.knowledge_collections:
        return "no collection of this organization is connected (knowledge_collections)"
    if capability_id == "skills":
        if not facts.skills:
            return "no skill of this organization is bound (skill_ids)"
        if tool_id == "read_skill_resource" and not facts.skill_files:
            return "none of the bound skills ships a file"
    return None


# ``provider(organization_id, spec) -> dict`` of RunFacts fields: registered by the apps that own
# what a run works on (apps.knowledge: collections and skills) in their AppConfig.ready().
_RUN_FACT_PROVIDERS: list[Callable[[int, Any], dict]] = []


def on_run_facts(provider: Callable[[int, Any], dict]) -> None:
    if provider not in _RUN_FACT_PROVIDERS:
        _RUN_FACT_PROVIDERS.append(provider)


def run_facts_for(organization_id: int, spec) -> RunFacts:
    """The facts a run of ``spec`` in ``organization_id`` would be assembled with, read now."""
    fields: dict = {}
    for provider in _RUN_FACT_PROVIDERS:
        fields.update(provider(organization_id, spec))
    return RunFacts(**fields)
