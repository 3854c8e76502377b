"""API routes of this app (included under /api/v1/ by agenticos/api_urls.py)."""

from django.urls import path
from rest_framework.routers import SimpleRouter

from .views import (
    ConversationView,
    RunAnswersView,
    RunExportView,
    RunParkedView,
    RunQuestionsView,
    RunResumeView,
    RunViewSet,
)

router = SimpleRouter()
router.register("runs", RunViewSet, basename="run")

# Before the router: its runs/<pk>/ would otherwise take "export" for an id.
urlpatterns = [
    path("runs/export/", RunExportView.as_view(), name="run-export"),
    # A run's waits: its parked calls and questions, answering, resuming (apps.approvals decides).
    path("runs/<int:pk>/parked/", RunParkedView.as_view(), name="run-parked"),
    path("runs/<int:pk>/resume/", RunResumeView.as_view(), name="run-resume"),
    path("runs/<int:pk>/questions/", RunQuestionsView.as_view(), name="run-questions"),
    path("runs/<int:pk>/answers/", RunAnswersView.as_view(), name="run-answers"),
    path("conversations/<int:pk>/", ConversationView.as_view(), name="conversation"),
    *router.urls,
]
