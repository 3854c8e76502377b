"""Console routes of the Builder; the project includes them at /agents/ (namespace "agents")."""

from django.urls import path

from . import views

app_name = "agents"

urlpatterns = [
    path("", views.agent_list, name="list"),
    path("new/", views.agent_new, name="new"),
    path("promote/", views.specialist_promote, name="promote"),
    path("<int:agent_id>/", views.builder, name="builder"),
    path("<int:agent_id>/archive/", views.agent_archive, name="archive"),
    path("<int:agent_id>/pins/<int:delegate_id>/move/", views.pin_move, name="pin-move"),
    path("<int:agent_id>/versions/<int:number>/", views.version_detail, name="version"),
]
