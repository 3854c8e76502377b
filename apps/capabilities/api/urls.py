"""API routes of the capability registry (included under /api/v1/ before the agents router)."""

from django.urls import path

from .views import CapabilityListView

urlpatterns = [
    path("agents/capabilities/", CapabilityListView.as_view(), name="capability-list"),
]
