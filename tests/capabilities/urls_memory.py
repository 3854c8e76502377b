"""agenticos.urls plus the memory API under /api/v1/ (see settings_memory.py)."""

from django.urls import include, path

from agenticos.urls import urlpatterns as project_urlpatterns

urlpatterns = [
    path("api/v1/", include(("apps.memory.api.urls", "memory-api"))),
    *project_urlpatterns,
]
