from django.utils import timezone
from rest_framework import serializers

from agenticos.params import StrictJSONMixin
from apps.orgs.choices import Role
from apps.orgs.models import ApiKey, Invitation, Membership, Organization


class OrganizationSerializer(serializers.ModelSerializer):
    class Meta:
        model = Organization
        fields = [
            "id",
            "name",
            "slug",
            "monthly_budget_usd",
            "chat_may_waive_approvals",
            "budget_warn_at",
            "created_at",
        ]
        read_only_fields = ["id", "slug", "created_at"]


class OrganizationUpdateSerializer(StrictJSONMixin, serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False)
    # null means "no cap"
    monthly_budget_usd = serializers.DecimalField(
        max_digits=12, decimal_places=2, min_value=0, allow_null=True, required=False
    )
    chat_may_waive_approvals = serializers.BooleanField(required=False)
    # Fractions of the monthly cap that warn the admins first (budgets:manage); [] turns it off.
    budget_warn_at = serializers.ListField(
        child=serializers.DecimalField(max_digits=5, decimal_places=4),
        required=False,
        max_length=5,
    )


class MembershipSerializer(serializers.ModelSerializer):
    email = serializers.EmailField(source="user.email", read_only=True)
    user_id = serializers.IntegerField(read_only=True)
    name = serializers.CharField(source="user.display_name", read_only=True)

    class Meta:
        model = Membership
        fields = ["id", "user_id", "email", "name", "role", "created_at"]


class MembershipCreateSerializer(StrictJSONMixin, serializers.Serializer):
    email = serializers.EmailField()
    role = serializers.ChoiceField(choices=Role.choices, default=Role.MEMBER)


class InvitationSentSerializer(serializers.Serializer):
    """The answer to an invitation: the same whether the address has an account or not — no
    user id, no name, no invitation id (nothing that differs between the two)."""

    email = serializers.EmailField()
    role = serializers.ChoiceField(choices=Role.choices)
    status = serializers.CharField(help_text='Always "invited".')
    detail = serializers.CharField()


class InvitationSerializer(serializers.ModelSerializer):
    """An invitation as its organization's managers see it (never the token)."""

    invited_by_user_id = serializers.IntegerField(
        source="invited_by_id", read_only=True, allow_null=True
    )
    status = serializers.CharField(read_only=True)

    class Meta:
        model = Invitation
        fields = [
            "id",
            "email",
            "role",
            "status",
            "invited_by_user_id",
            "created_at",
            "expires_at",
            "accepted_at",
            "revoked_at",
        ]


class InvitationAcceptSerializer(StrictJSONMixin, serializers.Serializer):
    token = serializers.CharField(max_length=200)


class MembershipUpdateSerializer(StrictJSONMixin, serializers.Serializer):
    role = serializers.ChoiceField(choices=Role.choices)


class ApiKeySerializer(serializers.ModelSerializer):
    user_id = serializers.IntegerField(read_only=True)
    active = serializers.BooleanField(source="is_active", read_only=True)

    class Meta:
        model = ApiKey
        fields = [
            "id",
            "name",
            "prefix",
            "user_id",
            "created_at",
            "last_used_at",
            "revoked_at",
            "expires_at",
            "active",
        ]


class ApiKeyCreatedSerializer(ApiKeySerializer):
    """The creation answer: the key itself, shown this once."""

    key = serializers.CharField(read_only=True, help_text="The key; it is never shown again.")

    class Meta(ApiKeySerializer.Meta):
        fields = [*ApiKeySerializer.Meta.fields, "key"]


class ApiKeyCreateSerializer(StrictJSONMixin, serializers.Serializer):
    """A key acts as the person who mints it; there is no minting for someone else."""

    name = serializers.CharField(max_length=100)
    user_id = serializers.IntegerField(
        required=False,
        help_text="Only the caller's own id: a key is minted by the person it acts as.",
    )

    expires_at = serializers.DateTimeField(
        required=False,
        allow_null=True,
        help_text="When the key stops working by itself (in the future); omit or null: never.",
    )

    def validate_expires_at(self, value):
        if value is not None and value <= timezone.now():
            raise serializers.ValidationError("must be in the future")
        if value is not None and value.year > 9998:
            raise serializers.ValidationError("must be before 9999")
        return value

    def validate_user_id(self, value):
        request = self.context["request"]
        if value != request.user.pk:
            raise serializers.ValidationError(
                "a key is minted by the person it acts as; ask them to create it"
            )
        return value
