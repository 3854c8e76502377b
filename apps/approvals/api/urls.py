"""API routes of the approvals app (included under /api/v1/ by agenticos/api_urls.py)."""

from django.urls import path

from .views import (
    ApprovalDecideView,
    ApprovalExportView,
    ApprovalListView,
)

urlpatterns = [
    path("approvals/", ApprovalListView.as_view(), name="approval-list"),
    path("approvals/export/", ApprovalExportView.as_view(), name="approval-export"),
    path("approvals/<int:pk>/decide/", ApprovalDecideView.as_view(), name="approval-decide"),
]
