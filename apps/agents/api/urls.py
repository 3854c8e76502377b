"""API routes of this app (included under /api/v1/ by agenticos/api_urls.py)."""

from rest_framework.routers import SimpleRouter

from .views import AgentViewSet, ModelProfileViewSet

router = SimpleRouter()
router.register("agents", AgentViewSet, basename="agent")
router.register("model-profiles", ModelProfileViewSet, basename="model-profile")

urlpatterns = router.urls
