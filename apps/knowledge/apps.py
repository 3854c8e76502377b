from django.apps import AppConfig


class KnowledgeConfig(AppConfig):
    """Knowledge: what an organization has written down — collections of documents, their
    extracted text in chunks with positions, the chunks' embeddings (pgvector) and full-text
    vectors, indexing jobs and hybrid retrieval (docs/knowledge.md).

    Its own app because it owns a life no other app has: uploads, an asynchronous index job with
    progress, a vector column and its HNSW index, and ingestion spend that belongs to no run.
    The ``search_documents`` tool (apps.capabilities, the ground floor) never imports it: the
    runner resolves a :class:`~apps.knowledge.search.CollectionSearch` before the run and hands it
    over, so a tool reaches only the collections its spec names.
    """

    name = "apps.knowledge"
    label = "knowledge"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.agents.validation import register_spec_check

        from .validation import check_knowledge_collections, check_skill_ids

        register_spec_check(check_knowledge_collections, with_actor=True)
        register_spec_check(check_skill_ids)
        # `tools ls` and the Builder list a tool only when a run would get it: what this app
        # holds (collections, skills) is read with the runner's own selectors.
        from apps.capabilities.tool_view import on_run_facts

        from .selectors import run_facts

        on_run_facts(run_facts)
        # Services enqueue the index job by name; its task is registered in every process.
        from . import tasks  # noqa: F401
