from rest_framework.routers import SimpleRouter

from .views import McpConnectionViewSet

router = SimpleRouter()
router.register("mcp/connections", McpConnectionViewSet, basename="mcp-connection")

urlpatterns = router.urls
