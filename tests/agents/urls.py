"""The project's URLs plus the Builder at /agents/, for tests that run before (or without) the
project's own include of ``apps.agents.urls``."""

from django.urls import include, path

from agenticos.urls import urlpatterns as project_urlpatterns

urlpatterns = [path("agents/", include("apps.agents.urls")), *project_urlpatterns]
