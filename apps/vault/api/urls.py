from rest_framework.routers import SimpleRouter

from .views import SecretViewSet

router = SimpleRouter()
router.register("secrets", SecretViewSet, basename="secret")

urlpatterns = router.urls
