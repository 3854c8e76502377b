from rest_framework.routers import SimpleRouter

from .views import ApiKeyViewSet, InvitationViewSet, MembershipViewSet, OrganizationViewSet

router = SimpleRouter()
router.register("orgs", OrganizationViewSet, basename="org")
router.register("memberships", MembershipViewSet, basename="membership")
router.register("invitations", InvitationViewSet, basename="invitation")
router.register("api-keys", ApiKeyViewSet, basename="api-key")

urlpatterns = router.urls
