"""The project's routes plus one stand-in view for the credential-pinning endpoints (chat-account
linking, OAuth completion, bearer-token entry) that must refuse impersonation."""

from django.http import JsonResponse
from django.urls import path

from agenticos.urls import urlpatterns as project_urlpatterns
from apps.audit.impersonation import refuse_while_impersonating


def link_chat_account(request):
    """Stands for chat-account linking / OAuth completion / storing a bearer token."""
    refuse_while_impersonating(request)
    return JsonResponse({"linked": True})


urlpatterns = [path("test-only/link-chat-account/", link_chat_account), *project_urlpatterns]
