"""Console routes, included under /approvals/ by agenticos/urls.py."""

from django.urls import path

from . import views

app_name = "approvals"

urlpatterns = [
    path("", views.approvals_tab, name="queue"),
    path("<int:pk>/decide/", views.approval_decide_view, name="decide"),
]
