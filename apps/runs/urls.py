"""Console routes of Chat and Activity; the project includes them at the root (namespace "runs")."""

from django.urls import path

from . import views

app_name = "runs"

urlpatterns = [
    path("chat/", views.chat, name="chat"),
    path("chat/send/", views.chat_send, name="chat-send"),
    path("chat/<int:conversation_id>/", views.chat, name="conversation"),
    path("chat/<int:conversation_id>/runs/<int:run_id>/turn/", views.chat_turn, name="chat-turn"),
    path(
        "chat/<int:conversation_id>/delete/",
        views.conversation_delete,
        name="conversation-delete",
    ),
    path("activity/", views.activity, name="activity"),
    path("activity/download/", views.activity_download, name="activity-download"),
    # The approval alert links to /runs?tab=approvals&org=<id> (apps.notifications.links).
    path("runs", views.runs_redirect),
    path("runs/", views.runs_redirect, name="runs-redirect"),
]
