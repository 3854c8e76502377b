from rest_framework import serializers

from apps.audit.selectors import audit_entry_row


class AuditEntrySerializer(serializers.Serializer):
    """The read model of the trail (selectors.AUDIT_READ_FIELDS); exports carry the same fields."""

    id = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    action = serializers.CharField()
    actor_user_id = serializers.IntegerField(
        allow_null=True, help_text="Null: the approval sweep or an operator's shell command."
    )
    actor_email = serializers.EmailField(
        allow_null=True, help_text="The actor's email when the entry was written."
    )
    impersonator_user_id = serializers.IntegerField(
        allow_null=True,
        help_text="The app admin acting as the actor, when the action was impersonated.",
    )
    organization_id = serializers.IntegerField(allow_null=True)
    subject_type = serializers.CharField()
    subject_id = serializers.CharField()
    subject_label = serializers.CharField()
    details = serializers.JSONField()
    chain = serializers.CharField()
    sequence = serializers.IntegerField()
    prev_hash = serializers.CharField()
    entry_hash = serializers.CharField()

    def to_representation(self, instance):
        return audit_entry_row(instance)
