"""Websocket routes of the runs app (added to agenticos/routing.py)."""

from django.urls import path

from .consumers import ConversationFramesConsumer, RunFramesConsumer

websocket_urlpatterns = [
    path("ws/runs/<int:run_id>/", RunFramesConsumer.as_asgi()),
    path("ws/conversations/<int:conversation_id>/", ConversationFramesConsumer.as_asgi()),
]
