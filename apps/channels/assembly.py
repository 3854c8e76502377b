"""What the runner asks of a channel's run (the hooks registered in apps.runs.exposures).

- :func:`exposure_for_run`: the binding that admitted the run adds its prompt to the
  instructions and its ``channel_tools`` grant — assembled from the binding row, since a spec
  may not carry it — bound to the channel the message arrived in.
- :func:`observe_segment`: while a segment of the run executes (the first, or a resume after a
  decision or an answer), a relay streams it into the thread the message came from.
"""

from __future__ import annotations

import contextlib
import logging

from apps.agents.spec import CapabilityBinding
from apps.notifications.links import approvals_queue_link
from apps.runs.events import newest_seq
from apps.runs.exposures import ExposureAssembly
from apps.runs.runner import RunNotRunnable

from .bots import BotUnavailable, BoundChannel, client_of
from .models import Binding, ChannelMessage
from .platforms import Inbound, PlatformError
from .relay import Relay

logger = logging.getLogger(__name__)


def _admitting_message(run) -> ChannelMessage | None:
    return (
        ChannelMessage.objects.filter(run_id=run.pk, binding_id=run.exposure_id)
        .select_related("binding__bot_token", "binding__organization")
        .order_by("created_at", "pk")
        .first()
    )


def exposure_for_run(run) -> ExposureAssembly | None:
    message = _admitting_message(run)
    if message is None:
        binding = Binding.objects.filter(pk=run.exposure_id).first()
        return ExposureAssembly(instructions=binding.prompt) if binding is not None else None
    binding = message.binding
    inbound = Inbound.from_json(message.event)
    grants = list((binding.channel_tools or {}).get("tools") or [])
    bindings: tuple = ()
    channel = None
    if grants:
        try:
            client = client_of(binding, team_id=inbound.target.get("team_id", ""))
        except (BotUnavailable, PlatformError) as exc:
            raise RunNotRunnable(f"The channel's bot cannot be used: {exc}") from exc
        bindings = (CapabilityBinding(id="channel_tools", config=binding.channel_tools),)
        channel = BoundChannel(client=client, target=inbound.target, platform=binding.platform)
    return ExposureAssembly(
        instructions=binding.prompt,
        bindings=bindings,
        channel=channel,
        extras={"sandbox_scope": binding.sandbox_scope} if binding.sandbox_scope else {},
    )


@contextlib.contextmanager
def observe_segment(run):
    """Relay this segment of ``run`` to its thread; book the bot's reply ids afterwards."""
    message = _admitting_message(run)
    if message is None:
        yield
        return
    binding = message.binding
    inbound = Inbound.from_json(message.event)
    relay = None
    try:
        client = client_of(binding, team_id=inbound.target.get("team_id", ""))
        relay = Relay(
            client,
            inbound.target,
            run.pk,
            after_seq=newest_seq(run.pk),
            queue_link=approvals_queue_link(binding.organization),
        )
        relay.open()
    except (BotUnavailable, PlatformError) as exc:
        # The run still runs and is recorded; only its thread is not told.
        logger.warning("run %s: cannot post to the channel: %s", run.pk, exc)
        relay = None
    try:
        yield
    finally:
        if relay is not None:
            result = relay.close()
            ChannelMessage.objects.filter(pk=message.pk).update(
                reply_ids=[*message.reply_ids, *result.reply_ids]
            )
