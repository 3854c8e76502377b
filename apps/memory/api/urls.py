"""Context file and memory routes, relative to /api/v1/ (included by agenticos/api_urls.py)."""

from django.urls import path
from rest_framework.routers import SimpleRouter

from .views import ContextFileViewSet, MemoryPersonEraseView, MemoryPersonView

router = SimpleRouter()
router.register("context", ContextFileViewSet, basename="context-file")

urlpatterns = [
    *router.urls,
    path("memory/person/<int:pk>/", MemoryPersonView.as_view(), name="memory-person"),
    path(
        "memory/person/<int:pk>/erase/",
        MemoryPersonEraseView.as_view(),
        name="memory-person-erase",
    ),
]
