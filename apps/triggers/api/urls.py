"""API routes of triggers (included under /api/v1/ by agenticos/api_urls.py)."""

from django.urls import path
from rest_framework.routers import SimpleRouter

from .views import TriggerEventView, TriggerViewSet

router = SimpleRouter()
router.register("triggers", TriggerViewSet, basename="trigger")

urlpatterns = [
    path("triggers/<int:pk>/events/", TriggerEventView.as_view(), name="trigger-events"),
    *router.urls,
]
