from rest_framework import serializers

from agenticos.params import IdField, StrictJSONMixin
from apps.agents.models import Agent, AgentVersion, ModelProfile, Provider

from .spec_schema import AgentSpecField


def _budget(spec: dict | None):
    if not spec:
        return None
    return (spec.get("budget") or {}).get("monthly_usd")


class AgentListSerializer(serializers.ModelSerializer):
    current_version = serializers.SerializerMethodField()
    budget_monthly_usd = serializers.SerializerMethodField(
        help_text="The monthly cap of the published version (null: unpublished or no cap of its own)."
    )

    class Meta:
        model = Agent
        fields = [
            "id",
            "name",
            "description",
            "status",
            "is_template",
            "current_version",
            "budget_monthly_usd",
            "created_at",
            "updated_at",
        ]

    def get_current_version(self, agent) -> int | None:
        return agent.current_version.number if agent.current_version_id else None

    def get_budget_monthly_usd(self, agent) -> str | None:
        return _budget(agent.current_version.spec) if agent.current_version_id else None


class AgentDetailSerializer(AgentListSerializer):
    spec = AgentSpecField(source="draft_spec", help_text="The draft spec (what PATCH changes).")
    published_spec = AgentSpecField(
        source="current_version.spec",
        read_only=True,
        allow_null=True,
        help_text="The published version's spec (null: never published).",
    )
    permissions = serializers.SerializerMethodField()

    class Meta(AgentListSerializer.Meta):
        fields = [*AgentListSerializer.Meta.fields, "spec", "published_spec", "permissions"]

    def get_permissions(self, agent) -> dict:
        from apps.agents.selectors import ACTIONS, can

        user = self.context["request"].user
        return {action: can(user, agent, action) for action in ACTIONS}


class AgentCreateSerializer(StrictJSONMixin, serializers.Serializer):
    name = serializers.CharField(max_length=120)
    description = serializers.CharField(
        max_length=500, required=False, allow_blank=True, default=""
    )
    spec = AgentSpecField(required=False, help_text="Omit for New agent: the AgenticOS template.")


class AgentUpdateSerializer(StrictJSONMixin, serializers.Serializer):
    name = serializers.CharField(max_length=120, required=False)
    description = serializers.CharField(max_length=500, required=False, allow_blank=True)
    spec = AgentSpecField(required=False, help_text="Replaces the whole draft spec.")


class PublishSerializer(StrictJSONMixin, serializers.Serializer):
    note = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")


class AgentVersionSerializer(serializers.ModelSerializer):
    agent_id = serializers.IntegerField(read_only=True)
    spec = AgentSpecField(read_only=True)
    published_by = serializers.SerializerMethodField()
    budget_monthly_usd = serializers.SerializerMethodField()

    class Meta:
        model = AgentVersion
        fields = [
            "id",
            "agent_id",
            "number",
            "spec",
            "budget_monthly_usd",
            "published_by",
            "published_at",
            "note",
        ]

    def get_published_by(self, version) -> str | None:
        return version.published_by.email if version.published_by_id else None

    def get_budget_monthly_usd(self, version) -> str | None:
        return _budget(version.spec)


class GrantSerializer(StrictJSONMixin, serializers.Serializer):
    user_id = IdField()
    actions = serializers.ListField(
        child=serializers.ChoiceField(choices=["view", "edit", "run", "publish"]), allow_empty=False
    )


class ModelProfileSerializer(StrictJSONMixin, serializers.ModelSerializer):
    secret_id = serializers.IntegerField(write_only=True, required=False, allow_null=True)
    has_secret = serializers.SerializerMethodField()
    is_offline = serializers.BooleanField(read_only=True)

    class Meta:
        model = ModelProfile
        fields = [
            "id",
            "label",
            "provider",
            "model_name",
            "base_url",
            "secret_id",
            "has_secret",
            "context_window",
            "request_timeout_seconds",
            "is_default",
            "is_offline",
            "created_at",
        ]
        read_only_fields = ["id", "created_at"]
        extra_kwargs = {"provider": {"choices": Provider.choices}}

    def get_has_secret(self, profile) -> bool:
        return profile.secret_id is not None
