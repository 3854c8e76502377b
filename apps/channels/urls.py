"""Routes of chat channels (namespace "chat_channels"): the platforms' inbound webhooks, the
private link page, and the writes of the Builder's "Where this agent is available" section (the
section's old address, ``agents/<id>/channels/``, leads to it)."""

from django.urls import path

from . import views

app_name = "chat_channels"

urlpatterns = [
    path("channels/slack/<int:binding_id>/events/", views.slack_events, name="slack-events"),
    path(
        "channels/telegram/<int:binding_id>/webhook/",
        views.telegram_webhook,
        name="telegram-webhook",
    ),
    path(
        "channels/mattermost/<int:binding_id>/webhook/",
        views.mattermost_webhook,
        name="mattermost-webhook",
    ),
    path("channels/link/<str:token>/", views.link_page, name="link"),
    path("agents/<int:agent_id>/channels/", views.binding_list, name="list"),
    path("agents/<int:agent_id>/channels/new/", views.binding_new, name="new"),
    path(
        "agents/<int:agent_id>/channels/<int:binding_id>/<str:verb>/",
        views.binding_action,
        name="action",
    ),
]
