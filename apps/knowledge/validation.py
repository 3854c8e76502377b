"""The knowledge app's publish rule, registered with the agents app's validation: every id in
``knowledge_collections`` names a collection of this organization the publisher may read. It runs
again at assembly (on the frozen version, as its publisher), so a collection moved out of reach
since publishing refuses the run instead of being searched."""

from apps.agents.validation import PublishError

from .selectors import unreadable_collection_ids


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
