"""ASGI entry point: Django for HTTP, Channels for websockets (session cookie or API key)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agenticos.settings.base")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from .routing import websocket_urlpatterns  # noqa: E402
from .websocket_auth import BrowserOriginValidator, WebsocketAuthMiddleware  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        # Cookie sessions are origin-checked; a bearer key (no ambient credential) is not.
        "websocket": BrowserOriginValidator(
            WebsocketAuthMiddleware(URLRouter(websocket_urlpatterns))
        ),
    }
)
