"""API routes of this app (included under /api/v1/ by agenticos/api_urls.py)."""

from rest_framework.routers import SimpleRouter

from .views import RunViewSet

router = SimpleRouter()
router.register("runs", RunViewSet, basename="run")

urlpatterns = router.urls
