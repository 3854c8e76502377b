"""One error shape for the API: validation errors are 422 with the field named."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import exceptions, status
from rest_framework.response import Response

from apps.orgs.throttling import anonymous_refusal_hit, client_address


class UnprocessableEntity(exceptions.APIException):
    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    default_detail = "The request could not be processed."
    default_code = "invalid"


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "This was already decided."
    default_code = "conflict"


class Gone(exceptions.APIException):
    status_code = status.HTTP_410_GONE
    default_detail = "This is no longer available."
    default_code = "gone"


def _django_validation_detail(error: DjangoValidationError):
    if hasattr(error, "error_dict"):
        return {field: [str(m) for m in messages] for field, messages in error.message_dict.items()}
    return {"non_field_errors": error.messages}


def api_exception_handler(exc, context):
    from rest_framework.views import (
        exception_handler,  # rest_framework.views imports this module's setting
    )

    if isinstance(exc, RequestDataTooBig):
        # A form or multipart body over DATA_UPLOAD_MAX_MEMORY_SIZE: a 413 in JSON like a JSON
        # body's (apps/orgs/api/parsers.py), not Django's 400 page.
        return Response(
            {"detail": "The request body is larger than this API accepts."},
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
        # DRF throttles only after the permission check, so a refusal was never counted: a client
        # without credentials could be answered 401 as fast as it asked. Each 401 counts against
        # its address's anonymous limit; over it, the 429.
        wait = anonymous_refusal_hit(client_address(context["request"]))
        if wait is not None:
            exc = exceptions.Throttled(wait=wait)
    if isinstance(exc, DjangoValidationError):
        return Response(_django_validation_detail(exc), status=status.HTTP_422_UNPROCESSABLE_ENTITY)
    if isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)
    if isinstance(exc, exceptions.ValidationError):
        exc.status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    return exception_handler(exc, context)
