"""Everything under /api/v1/: each app contributes its own `api/urls.py`."""

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(permission_classes=[]), name="schema"),
    path(
        "docs/",
        # The split view serves Swagger UI's init script as a file: no inline script (CSP).
        SpectacularSwaggerSplitView.as_view(url_name="api:schema", permission_classes=[]),
        name="docs",
    ),
    path("", include("apps.orgs.api.urls")),
    path("", include("apps.vault.api.urls")),
    path("", include("apps.mcp.api.urls")),
    path("", include("apps.audit.api.urls")),
    # agents/capabilities must come before the agents router's agents/<pk>/.
    path("", include("apps.capabilities.api.urls")),
    path("", include("apps.agents.api.urls")),
    path("", include("apps.runs.api.urls")),
    path("", include("apps.approvals.api.urls")),
    path("", include("apps.spend.api.urls")),
    path("", include("apps.memory.api.urls")),
    path("", include("apps.triggers.api.urls")),
    path("", include("apps.channels.api.urls")),
    path("", include("apps.ratings.api.urls")),
    path("", include("apps.knowledge.api.urls")),
]
