"""Websocket routes. Each app that streams adds its own `websocket_urlpatterns` here."""

websocket_urlpatterns: list = []
