"""The knowledge app's publish rule, registered with the agents app's validation: every id in
``knowledge_collections`` names a collection of this organization the publisher may read. It runs
again at assembly (on the frozen version, as its publisher), so a collection moved out of reach
since publishing refuses the run instead of being searched."""

from apps.agents.validation import PublishError

from .selectors import missing_skill_ids, unreadable_collection_ids


def check_knowledge_collections(spec, organization, actor) -> list[PublishError]:
    missing = unreadable_collection_ids(organization, spec.knowledge_collections, actor)
    return [
        PublishError(
            "knowledge",
            "knowledge_collections",
            f"there is no collection {collection_id} in this organization that you may read; "
            "remove it or pick another",
        )
        for collection_id in missing
    ]


def check_skill_ids(spec, organization) -> list[PublishError]:
    """Every id in ``skill_ids`` names a skill of this organization (again at assembly, so a skill
    deleted since publishing refuses the run instead of vanishing from it)."""
    return [
        PublishError(
            "skills",
            "skill_ids",
            f"there is no skill {skill_id} in this organization; remove it or pick another",
        )
        for skill_id in missing_skill_ids(organization.pk, spec.skill_ids)
    ]
