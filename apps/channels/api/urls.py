"""API routes of chat channels (included under /api/v1/ by agenticos/api_urls.py)."""

from rest_framework.routers import SimpleRouter

from .views import BindingViewSet

router = SimpleRouter()
router.register("channels/bindings", BindingViewSet, basename="channel-binding")

urlpatterns = router.urls
