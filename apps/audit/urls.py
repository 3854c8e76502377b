"""Console routes, included under /audit/ by agenticos/urls.py."""

from django.urls import path

from . import views

app_name = "audit"

urlpatterns = [
    path("", views.audit_log, name="log"),
    path("export/", views.audit_download, name="export"),
    path("impersonate/", views.impersonation_start_view, name="impersonate"),
    path("impersonate/stop/", views.impersonation_stop_view, name="impersonate-stop"),
]
