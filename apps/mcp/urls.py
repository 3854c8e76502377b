from django.urls import path

from . import views

app_name = "mcp"

urlpatterns = [
    path("settings/connections/", views.connections, name="connections"),
    path("settings/connections/<int:connection_id>/test/", views.test, name="test"),
    path("settings/connections/<int:connection_id>/tools/", views.list_tools, name="tools"),
    path("settings/connections/<int:connection_id>/token/", views.token, name="token"),
    path("settings/connections/<int:connection_id>/delete/", views.delete, name="delete"),
]
