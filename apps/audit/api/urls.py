"""Audit API routes, relative to /api/v1/ (included by agenticos/urls.py)."""

from django.urls import path
from rest_framework.routers import SimpleRouter

from .views import AuditEntryViewSet, AuditExportView

router = SimpleRouter()
router.register("audit", AuditEntryViewSet, basename="audit-entry")

# The export comes first: the router's detail route would otherwise read "export" as an id.
urlpatterns = [
    path("audit/export/", AuditExportView.as_view(), name="audit-export"),
    *router.urls,
]
