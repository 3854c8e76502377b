"""Error pages: under /api/ a JSON body like the API's own errors, elsewhere Django's pages.

A URL that matches no route (``/api/v1/runs/abc/``: path ids are digits) never reaches DRF, so
without this the API would answer it with an HTML page, a content type its schema does not
document.
"""

from __future__ import annotations

from django.http import JsonResponse
from django.views import defaults

API_PREFIX = "/api/"


def not_found(request, exception=None):
    if request.path.startswith(API_PREFIX):
        return JsonResponse({"detail": "Not found."}, status=404)
    return defaults.page_not_found(request, exception)


def server_error(request):
    if request.path.startswith(API_PREFIX):
        return JsonResponse({"detail": "A server error occurred."}, status=500)
    return defaults.server_error(request)
