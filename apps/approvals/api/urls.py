"""API routes of the approvals app (included under /api/v1/ by agenticos/api_urls.py)."""

from django.urls import path

from .views import (
    ApprovalDecideView,
    ApprovalExportView,
    ApprovalListView,
    RunAnswersView,
    RunParkedView,
    RunQuestionsView,
    RunResumeView,
)

urlpatterns = [
    path("approvals/", ApprovalListView.as_view(), name="approval-list"),
    path("approvals/export/", ApprovalExportView.as_view(), name="approval-export"),
    path("approvals/<int:pk>/decide/", ApprovalDecideView.as_view(), name="approval-decide"),
    path("runs/<int:pk>/parked/", RunParkedView.as_view(), name="run-parked"),
    path("runs/<int:pk>/resume/", RunResumeView.as_view(), name="run-resume"),
    path("runs/<int:pk>/questions/", RunQuestionsView.as_view(), name="run-questions"),
    path("runs/<int:pk>/answers/", RunAnswersView.as_view(), name="run-answers"),
]
