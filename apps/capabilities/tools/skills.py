"""skills: written know-how the agent loads only when it decides it is relevant (seed 000).

Each bound skill becomes one deferred capability of pydantic-ai-skills' ``SkillsCapability``
(programmatic skills, built from the snapshots the runner resolved in ``resources.skills``): its
name and description are in the catalog the model reads every turn, and the model brings in the
body with pydantic-ai's own ``load_capability`` — which is why that tool is not declared here and
a spec cannot grant, gate or rename it.

``read_skill_resource`` is the library's tool, offered only when at least one bound skill ships a
file, and re-described here with the registry's text and this deployment's metadata (so approvals,
the transcript and the drift tests see it like any other tool). ``run_skill_script`` is never
registered: a skill's scripts run through the sandbox's ``execute``, under its limits.

The library's bundled-file tools live on the capability (it owns their toolset; a toolset outside
it has no owner when the model calls it), so the toolset builder registered for ``skills``
contributes no toolset of its own: :func:`skills_capabilities` attaches the whole thing.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai_skills import Skill, SkillResource, SkillsCapability

from ..registry import get_capability
from ..run_context import RunResources
from ..tool_view import RunFacts, seen_tool, withheld_from_run
from ._toolsets import CAPABILITY_METADATA, TOOL_ID_METADATA, binding_overrides

CAPABILITY_ID = "skills"
READ_RESOURCE_ID = "read_skill_resource"


@dataclass(frozen=True)
class SkillSnapshot:
    """One bound skill as the run sees it (``apps.knowledge.selectors.skills_for_run``)."""

    name: str
    description: str
    body: str = ""
    files: dict[str, str] = field(default_factory=dict)


def _library_skill(snapshot: SkillSnapshot) -> Skill:
    return Skill(
        name=snapshot.name,
        description=snapshot.description,
        content=snapshot.body,
        resources=[
            SkillResource(name=name, content=text) for name, text in sorted(snapshot.files.items())
        ],
    )


def _redescribed(toolset, binding: Any = None):
    """The library's file tools under the registry's text (or the binding's re-description, the
    declared ``<returns>`` kept) and this deployment's metadata, under the binding's rename."""
    declared = get_capability(CAPABILITY_ID)
    seen = seen_tool(declared.tool(READ_RESOURCE_ID), binding_overrides(binding or {}))
    description = seen.description

    async def prepare(ctx, tool_defs):
        out = []
        for tool_def in tool_defs:
            if tool_def.name != READ_RESOURCE_ID:
                continue  # run_skill_script is never registered; anything new stays out too
            out.append(
                dataclasses.replace(
                    tool_def,
                    description=description,
                    metadata={
                        **(tool_def.metadata or {}),
                        TOOL_ID_METADATA: READ_RESOURCE_ID,
                        CAPABILITY_METADATA: CAPABILITY_ID,
                    },
                )
            )
        return out

    prepared = toolset.prepared(prepare)
    if seen.renamed:
        return prepared.renamed({seen.name: READ_RESOURCE_ID})
    return prepared


def skills_capability(
    snapshots: list[SkillSnapshot], binding: Any = None
) -> SkillsCapability | None:
    facts = RunFacts(skills=len(snapshots), skill_files=any(s.files for s in snapshots))
    if withheld_from_run(CAPABILITY_ID, "load_capability", facts):
        return None
    capability = SkillsCapability(
        skills=[_library_skill(s) for s in snapshots],
        # The manifest asks the same question (apps.capabilities.tool_view), so `tools ls` lists
        # read_skill_resource exactly when a run gets it.
        resources=withheld_from_run(CAPABILITY_ID, READ_RESOURCE_ID, facts) is None,
        scripts=False,
    )
    if capability._files_toolset is not None:
        # The library keeps its files toolset on the capability (get_toolset returns it, apply
        # maps it to its owner): the re-described wrapper takes its place there.
        capability._files_toolset = _redescribed(capability._files_toolset, binding)
    return capability


def skills_capabilities(binding: Any, resources: RunResources) -> list[Any]:
    capability = skills_capability(list(resources.skills), binding)
    return [capability] if capability is not None else []


def build_skills_toolset(binding, context):
    # The catalog, load_capability and read_skill_resource all come with the capability
    # (skills_capabilities): there is no separate toolset to offer.
    return None
