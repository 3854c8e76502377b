from django.urls import path

from . import views

app_name = "memory"

urlpatterns = [
    path("settings/memory/", views.memory_settings, name="settings"),
    path("settings/memory/erase/", views.memory_erase_mine, name="erase-mine"),
    path(
        "settings/members/<int:user_id>/erase-memory/",
        views.memory_erase_member,
        name="erase-person",
    ),
    path(
        "settings/memory/<int:note_id>/<slug:action>/",
        views.memory_note_action,
        name="note-action",
    ),
    path(
        "agents/<int:agent_id>/memory/empty/",
        views.agent_memory_empty_view,
        name="agent-empty",
    ),
]
