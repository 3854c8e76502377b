"""Context file routes, relative to /api/v1/ (included by agenticos/api_urls.py)."""

from rest_framework.routers import SimpleRouter

from .views import ContextFileViewSet

router = SimpleRouter()
router.register("context", ContextFileViewSet, basename="context-file")

urlpatterns = router.urls
