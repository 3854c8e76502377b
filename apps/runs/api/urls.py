"""API routes of this app (included under /api/v1/ by agenticos/api_urls.py)."""

from django.urls import path
from rest_framework.routers import SimpleRouter

from .views import RunExportView, RunViewSet

router = SimpleRouter()
router.register("runs", RunViewSet, basename="run")

# Before the router: its runs/<pk>/ would otherwise take "export" for an id.
urlpatterns = [path("runs/export/", RunExportView.as_view(), name="run-export"), *router.urls]
