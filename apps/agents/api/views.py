"""Agents, versions, grants and model profiles over the API: parse, call a service, shape.

Tenancy and grants come from ``apps.agents.selectors``: an agent the caller cannot see — another
organization's, or one they hold no grant on — is a 404 with the same body as an id that never
existed; one they can see but not change is a 403 naming the permission.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from agenticos.params import ID_PATH_PATTERN
from apps.agents import selectors, services
from apps.agents.manifest import tool_manifest
from apps.agents.services import PublishRefused
from apps.orgs import permissions as perms
from apps.orgs.api.exceptions import UnprocessableEntity
from apps.orgs.api.permissions import request_organization
from apps.orgs.selectors import members_of

from .serializers import (
    AgentCreateSerializer,
    AgentDetailSerializer,
    AgentListSerializer,
    AgentUpdateSerializer,
    AgentVersionSerializer,
    GrantSerializer,
    ModelProfileSerializer,
    PublishSerializer,
)

AGENT_ID = OpenApiParameter("id", int, OpenApiParameter.PATH, description="The agent's id.")
PROFILE_ID = OpenApiParameter("id", int, OpenApiParameter.PATH, description="The profile's id.")
PUBLISH_REFUSED = OpenApiResponse(
    response={
        "type": "object",
        "properties": {
            "errors": {
                "type": "array",
                "items": {"type": "object", "additionalProperties": True},
                "description": "Each error names its `binding` and `field`.",
            }
        },
        "additionalProperties": True,
    },
    description="The draft does not publish (each error names the binding and the field), or a "
    "value outside its type.",
)

_TRUE = {"true", "1", "yes"}
_FALSE = {"false", "0", "no", ""}


def _bool_param(request, name: str) -> bool:
    raw = request.query_params.get(name)
    if raw is None:
        return False
    if raw.lower() in _TRUE:
        return True
    if raw.lower() in _FALSE:
        return False
    # A query value outside its type is a 422, never an empty page.
    raise UnprocessableEntity({name: ["must be true or false"]})


@extend_schema_view(
    list=extend_schema(
        parameters=[OpenApiParameter("include_archived", bool)],
        responses={200: AgentListSerializer(many=True)},
    ),
    retrieve=extend_schema(parameters=[AGENT_ID], responses={200: AgentDetailSerializer}),
    create=extend_schema(request=AgentCreateSerializer, responses={201: AgentDetailSerializer}),
    partial_update=extend_schema(
        parameters=[AGENT_ID], request=AgentUpdateSerializer, responses={200: AgentDetailSerializer}
    ),
    destroy=extend_schema(parameters=[AGENT_ID], responses={204: None}),
    publish=extend_schema(
        parameters=[AGENT_ID],
        request=PublishSerializer,
        responses={201: AgentVersionSerializer, 422: PUBLISH_REFUSED},
    ),
    versions=extend_schema(
        parameters=[AGENT_ID], responses={200: AgentVersionSerializer(many=True)}
    ),
    tools=extend_schema(
        parameters=[AGENT_ID, OpenApiParameter("draft", bool)],
        responses={200: OpenApiTypes.OBJECT},
        description="Every tool a run of the published version gets (or of the draft).",
    ),
    grants=extend_schema(
        parameters=[AGENT_ID], request=GrantSerializer, responses={200: AgentDetailSerializer}
    ),
)
class AgentViewSet(viewsets.ViewSet):
    """Agents of the caller's organization. `GET` lists what you may see (with
    `budget_monthly_usd` of the published version); `POST` creates one (no `spec`: New agent, the
    AgenticOS template); `PATCH` changes the draft; `DELETE` archives."""

    # Path ids are ASCII digits: "5 ", "²" and "abc" do not route (a 404 like a missing id).
    lookup_value_regex = ID_PATH_PATTERN

    # No role gate here: an object grant can widen a role (a viewer who may edit one agent), so
    # each action asks selectors.can() on the row, and agent_create checks agents:edit.

    def _agent(self, pk, action: str = "view"):
        agent = selectors.agent_for(self.request.user, request_organization(self.request), pk)
        if agent is None:
            raise Http404
        if action != "view" and not selectors.can(self.request.user, agent, action):
            raise PermissionDenied(f"{selectors.ACTIONS[action][0]} is required on this agent")
        return agent

    def _detail(self, agent):
        return AgentDetailSerializer(agent, context={"request": self.request}).data

    def list(self, request):
        agents = selectors.agents_visible_to(
            request.user,
            request.organization,
            include_archived=_bool_param(request, "include_archived"),
        )
        return Response(AgentListSerializer(agents, many=True).data)

    def retrieve(self, request, pk=None):
        return Response(self._detail(self._agent(pk)))

    def create(self, request):
        # Permission before the body: a caller who may not create agents learns nothing from
        # validation messages (agent_create checks it again, as every service does).
        if not perms.has_org_permission(request.user, request.organization, perms.AGENTS_EDIT):
            raise PermissionDenied(f"{perms.AGENTS_EDIT} is required")
        data = AgentCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        agent = services.agent_create(
            actor=request.user,
            organization=request.organization,
            name=values["name"],
            description=values.get("description", ""),
            spec=values.get("spec"),
        )
        agent.refresh_from_db()
        return Response(self._detail(agent), status=status.HTTP_201_CREATED)

    def partial_update(self, request, pk=None):
        agent = self._agent(pk, "edit")
        data = AgentUpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        agent = services.agent_update_draft(actor=request.user, agent=agent, **data.validated_data)
        return Response(self._detail(agent))

    def destroy(self, request, pk=None):
        services.agent_archive(actor=request.user, agent=self._agent(pk, "edit"))
        return Response(status=status.HTTP_204_NO_CONTENT)

    @action(detail=True, methods=["post"])
    def publish(self, request, pk=None):
        agent = self._agent(pk, "publish")
        data = PublishSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            version = services.agent_publish(
                actor=request.user, agent=agent, note=data.validated_data["note"]
            )
        except PublishRefused as refused:
            return Response(
                {"errors": [e.as_dict() for e in refused.errors]},
                status=status.HTTP_422_UNPROCESSABLE_ENTITY,
            )
        return Response(AgentVersionSerializer(version).data, status=status.HTTP_201_CREATED)

    @action(detail=True, methods=["get"])
    def versions(self, request, pk=None):
        agent = self._agent(pk)
        return Response(AgentVersionSerializer(selectors.versions_of(agent), many=True).data)

    @action(detail=True, methods=["get"])
    def tools(self, request, pk=None):
        """Every tool a run of the published version gets (or of the draft with `?draft=true`)."""
        agent = self._agent(pk)
        if _bool_param(request, "draft"):
            spec = agent.draft_spec
        elif agent.current_version_id:
            spec = agent.current_version.spec
        else:
            raise UnprocessableEntity(
                {"draft": ["this agent has no published version; ask for ?draft=true"]}
            )
        return Response(tool_manifest(spec, organization_id=agent.organization_id).as_json())

    @action(detail=True, methods=["post", "delete"])
    def grants(self, request, pk=None):
        """`POST` gives a member object grants on this agent; `DELETE` takes them back."""
        agent = self._agent(pk, "edit")
        data = GrantSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        # Only a member of the agent's organization: anyone else is a 404 like a missing id, so
        # walking ids reveals no account (or its email) outside the organization.
        user = get_object_or_404(
            members_of(request.organization), pk=data.validated_data["user_id"]
        )
        service = services.agent_grant if request.method == "POST" else services.agent_revoke
        service(actor=request.user, agent=agent, user=user, actions=data.validated_data["actions"])
        return Response(self._detail(agent))


@extend_schema_view(
    list=extend_schema(responses={200: ModelProfileSerializer(many=True)}),
    retrieve=extend_schema(parameters=[PROFILE_ID], responses={200: ModelProfileSerializer}),
    create=extend_schema(request=ModelProfileSerializer, responses={201: ModelProfileSerializer}),
    partial_update=extend_schema(
        parameters=[PROFILE_ID],
        request=ModelProfileSerializer,
        responses={200: ModelProfileSerializer},
    ),
)
class ModelProfileViewSet(viewsets.ViewSet):
    """The organization's model profiles. Any member reads them; settings:manage changes them.
    `secret_id` is write-only: a response says `has_secret`, never the key."""

    # Path ids are ASCII digits: "5 ", "²" and "abc" do not route (a 404 like a missing id).
    lookup_value_regex = ID_PATH_PATTERN

    required_permission = {
        "GET": None,
        "POST": perms.SETTINGS_MANAGE,
        "PATCH": perms.SETTINGS_MANAGE,
    }

    def _profile(self, pk):
        try:
            pk = int(pk)
        except (TypeError, ValueError):
            raise Http404 from None
        return get_object_or_404(selectors.model_profiles_for(self.request.organization), pk=pk)

    def list(self, request):
        return Response(
            ModelProfileSerializer(
                selectors.model_profiles_for(request.organization), many=True
            ).data
        )

    def retrieve(self, request, pk=None):
        return Response(ModelProfileSerializer(self._profile(pk)).data)

    def create(self, request):
        data = ModelProfileSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        profile = services.model_profile_create(
            actor=request.user, organization=request.organization, **data.validated_data
        )
        return Response(ModelProfileSerializer(profile).data, status=status.HTTP_201_CREATED)

    def partial_update(self, request, pk=None):
        profile = self._profile(pk)
        data = ModelProfileSerializer(profile, data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        profile = services.model_profile_update(
            actor=request.user, profile=profile, **data.validated_data
        )
        return Response(ModelProfileSerializer(profile).data)
