"""Knowledge routes, relative to /api/v1/ (included by agenticos/api_urls.py)."""

from rest_framework.routers import SimpleRouter

from agenticos.params import ID_PATH_PATTERN

from .views import CollectionViewSet, DocumentViewSet, SkillViewSet

router = SimpleRouter()
router.register("knowledge/skills", SkillViewSet, basename="knowledge-skill")
router.register("knowledge/collections", CollectionViewSet, basename="knowledge-collection")
router.register(
    rf"knowledge/collections/(?P<collection_id>{ID_PATH_PATTERN})/documents",
    DocumentViewSet,
    basename="knowledge-document",
)

urlpatterns = router.urls
