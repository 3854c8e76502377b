"""``GET /api/v1/agents/capabilities/``: the registry as it runs.

Seed 000: the API is the authority and the catalog page a snapshot; the Builder draws its picker
and its configuration forms from this response. Any member of the organization may read it.
"""

from drf_spectacular.plumbing import build_object_type
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.capabilities.registry import registry_payload


class CapabilityListView(APIView):
    """Every capability of this deployment: tools, scopes, key requirement, voice mode, and the
    config JSON schema (with `x-enum-labels` for every enumeration) and defaults."""

    @extend_schema(responses={200: {"type": "array", "items": build_object_type()}})
    def get(self, request):
        return Response(registry_payload())
