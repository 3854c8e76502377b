"""Websocket routes. Each app that streams adds its own `websocket_urlpatterns` here."""

from apps.runs.routing import websocket_urlpatterns as runs_websocket_urlpatterns

websocket_urlpatterns: list = [*runs_websocket_urlpatterns]
