"""Chat bindings over the API: create (``agents:publish`` on the agent), list, read, disable,
enable, test the credentials. Parse, call a service, shape."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.utils import extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from apps.agents.api.agent_rows import AgentRowsMixin
from apps.agents.selectors import agent_for
from apps.channels import selectors, services
from apps.channels.models import Binding

from .serializers import BindingCreateSerializer, BindingSerializer, BindingTestSerializer


class BindingViewSet(AgentRowsMixin, viewsets.GenericViewSet):
    """`POST` binds a published agent to one bot (`agents:publish` on it): `platform` `slack`,
    `telegram` or `mattermost` (with `server_url`), credentials as vault secret ids
    (`bot_token_secret_id`, `verification_secret_id`), an optional `prompt` appended to the
    agent's instructions, `channel_tools` (`{"tools", "default_limit"}`), `unlinked_senders`
    (`run` | `require_link`) and `sender_limit_per_minute`. The answer carries `webhook_url`, the
    address to give the platform. `GET` lists the bindings of the agents you can see (`agent_id`
    narrows); `{id}/disable/`, `{id}/enable/`, `{id}/test/` (asks the platform who the bot is),
    `{id}/register-webhook/` (Telegram: `setWebhook` with the URL and the secret token)."""

    serializer_class = BindingSerializer
    queryset = Binding.objects.none()
    required_permission = None  # membership; the services decide who may bind
    rows_visible_to = staticmethod(selectors.bindings_visible_to)
    row_for = staticmethod(selectors.binding_for)

    @extend_schema(request=BindingCreateSerializer, responses={201: BindingSerializer})
    def create(self, request):
        data = BindingCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        agent = agent_for(request.user, request.organization, values.pop("agent_id"))
        if agent is None:
            raise Http404
        binding = services.binding_create(
            actor=request.user, organization=request.organization, agent=agent, **values
        )
        return Response(BindingSerializer(binding).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: BindingSerializer})
    @action(detail=True, methods=["post"])
    def disable(self, request, pk=None):
        binding = services.binding_disable(actor=request.user, binding=self.get_object())
        return Response(BindingSerializer(binding).data)

    @extend_schema(request=None, responses={200: BindingSerializer})
    @action(detail=True, methods=["post"])
    def enable(self, request, pk=None):
        binding = services.binding_enable(actor=request.user, binding=self.get_object())
        return Response(BindingSerializer(binding).data)

    @extend_schema(request=None, responses={200: BindingTestSerializer})
    @action(detail=True, methods=["post"])
    def test(self, request, pk=None):
        worked, said = services.binding_test(actor=request.user, binding=self.get_object())
        return Response({"ok": worked, "detail": said})

    @extend_schema(request=None, responses={200: BindingTestSerializer})
    @action(detail=True, methods=["post"], url_path="register-webhook")
    def register_webhook(self, request, pk=None):
        worked, said = services.binding_register_webhook(
            actor=request.user, binding=self.get_object()
        )
        return Response({"ok": worked, "detail": said})
