"""``agenticos channels-listen``: hold the Mattermost bots' event streams (apps/channels/stream.py)
until SIGINT or SIGTERM. ``agenticos up`` starts it beside web, worker and beat; in Docker it is
the ``channels`` service. One per deployment is enough — a second is harmless (a post both see
is admitted once) but opens every socket twice."""

from __future__ import annotations

import asyncio
import signal

from django.core.management.base import BaseCommand

from apps.channels.stream import Listener


class Command(BaseCommand):
    help = "Hold a websocket per enabled Mattermost binding (DMs and mentions reach the bot)."

    def handle(self, *args, **options) -> None:
        asyncio.run(self._listen())

    async def _listen(self) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        self.stdout.write("channels-listen: holding the Mattermost event streams")
        await Listener().run(stop)
        self.stdout.write("channels-listen: stopped")
