"""The project's routes plus the audit routes (in case the lead has not included them yet), and
one stand-in view for the credential-pinning endpoints that must refuse impersonation."""

from django.http import JsonResponse
from django.urls import include, path, resolve
from django.urls.exceptions import Resolver404

from agenticos.urls import urlpatterns as project_urlpatterns
from apps.audit.impersonation import refuse_while_impersonating


def link_chat_account(request):
    """Stands for chat-account linking / OAuth completion / storing a bearer token."""
    refuse_while_impersonating(request)
    return JsonResponse({"linked": True})


def _routed(url: str) -> bool:
    try:
        resolve(url, urlconf="agenticos.urls")
    except Resolver404:
        return False
    return True


urlpatterns = [path("test-only/link-chat-account/", link_chat_account)]
if not _routed("/api/v1/audit/"):
    urlpatterns.append(path("api/v1/", include(("apps.audit.api.urls", "audit-api"))))
if not _routed("/audit/impersonate/"):
    urlpatterns.append(path("audit/", include("apps.audit.urls")))
urlpatterns += project_urlpatterns
