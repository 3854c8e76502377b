from django.apps import AppConfig


class ChatChannelsConfig(AppConfig):
    """Agents where people already talk: Slack, Telegram and Mattermost bots bound to published
    agents ("exposures"), their verified inbound webhooks, replies streamed into the thread by
    editing, chat-account linking, per-sender rate limits and the ``channel_tools`` lookups.

    Its own app (an edge, like triggers): a binding *starts runs* and follows their frames, so it
    imports ``apps.runs``; runs learns about a binding only through the hooks registered below.
    The label is ``chat_channels`` because Django Channels already owns ``channels``.
    """

    name = "apps.channels"
    label = "chat_channels"
    verbose_name = "Chat channels"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registered in every process: the webhook enqueues the handling task by name
        # (services.enqueue_handle), and a resume in a worker asks the relay hook below.
        from apps.approvals.services import on_run_expired
        from apps.runs import exposures
        from apps.runs.hooks import on_run_cancelled

        from . import assembly, services, tasks  # noqa: F401

        exposures.register_exposure_resolver(assembly.exposure_for_run)
        exposures.register_segment_observer(assembly.observe_segment)
        # A parked run the sweep cancels has no segment to relay: its thread is told here.
        on_run_expired(services.run_expired_in_thread)
        # Nor has one a person cancels while it waits (from the console or the API).
        on_run_cancelled(services.run_cancelled_in_thread)
