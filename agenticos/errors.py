"""Error pages: under /api/ a JSON body like the API's own errors, elsewhere Django's pages.

A URL that matches no route (``/api/v1/runs/abc/``: path ids are digits) never reaches DRF, so
without this the API would answer it with an HTML page, a content type its schema does not
document.

A request that failed because PostgreSQL or Redis is away answers 503 with Retry-After instead
of 500 (agenticos/outage.py says why this is the one place).
"""

from __future__ import annotations

import sys

from django.http import HttpResponse, JsonResponse
from django.views import defaults

from .outage import RETRY_AFTER_SECONDS, outage_cause, service_named

API_PREFIX = "/api/"


def not_found(request, exception=None):
    if request.path.startswith(API_PREFIX):
        return JsonResponse({"detail": "Not found."}, status=404)
    return defaults.page_not_found(request, exception)


def server_error(request):
    # Django calls this inside its handling of the exception, so the exception is at hand.
    cause = outage_cause(sys.exc_info()[1])
    if cause is not None:
        return _unavailable(request, service_named(cause))
    if request.path.startswith(API_PREFIX):
        return JsonResponse({"detail": "A server error occurred."}, status=500)
    return defaults.server_error(request)


def _unavailable(request, service: str):
    message = (
        f"The service is briefly unavailable ({service} is not answering); "
        f"try again in {RETRY_AFTER_SECONDS} seconds."
    )
    response: HttpResponse
    if request.path.startswith(API_PREFIX):
        response = JsonResponse(
            {"detail": message, "code": "service_unavailable", "retry_after": RETRY_AFTER_SECONDS},
            status=503,
        )
    else:
        response = HttpResponse(
            f"<!doctype html><title>Briefly unavailable</title><h1>Briefly unavailable</h1>"
            f"<p>{message}</p>",
            status=503,
        )
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response
