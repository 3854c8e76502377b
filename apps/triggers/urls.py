"""Console routes of triggers: the Triggers tab of an agent (namespace "triggers")."""

from django.urls import path

from . import views

app_name = "triggers"

urlpatterns = [
    path("agents/<int:agent_id>/triggers/", views.trigger_list, name="list"),
    path("agents/<int:agent_id>/triggers/new/", views.trigger_new, name="new"),
    path(
        "agents/<int:agent_id>/triggers/<int:trigger_id>/<str:verb>/",
        views.trigger_action,
        name="action",
    ),
]
