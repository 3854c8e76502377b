"""API routes of this app (included under /api/v1/ by agenticos/api_urls.py)."""

from django.urls import path

from .views import SpendExportView, SpendView, UsageStatsView

urlpatterns = [
    path("spend/", SpendView.as_view(), name="spend"),
    path("spend/export/", SpendExportView.as_view(), name="spend-export"),
    path("stats/usage/", UsageStatsView.as_view(), name="stats-usage"),
]
