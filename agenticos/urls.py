from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from .health import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # Invitations send a set-password link; these two pages complete it.
    path(
        "accounts/reset/<uidb64>/<token>/",
        auth_views.PasswordResetConfirmView.as_view(),
        name="password_reset_confirm",
    ),
    path(
        "accounts/reset/done/",
        auth_views.PasswordResetCompleteView.as_view(),
        name="password_reset_complete",
    ),
    path("api/v1/", include(("agenticos.api_urls", "api"))),
    path("audit/", include("apps.audit.urls")),
    path("approvals/", include("apps.approvals.urls")),
    path("", include("apps.orgs.urls")),
    path("", include("apps.triggers.urls")),
    path("", include("apps.channels.urls")),
    path("agents/", include("apps.agents.urls")),
    path("knowledge/", include("apps.knowledge.urls")),
    path("", include("apps.runs.urls")),
    path("", include("apps.notifications.urls")),
    path("", include("apps.memory.urls")),
    path("", include("apps.vault.urls")),
    path("", include("apps.mcp.urls")),
    path("", include("apps.spend.urls")),
    path("", include("apps.console.urls")),
]

handler404 = "agenticos.errors.not_found"
handler500 = "agenticos.errors.server_error"
