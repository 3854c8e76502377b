from rest_framework import serializers

from apps.runs.models import Run


class RunCreateSerializer(serializers.Serializer):
    agent_id = serializers.IntegerField()
    input = serializers.CharField(trim_whitespace=False, allow_blank=False)
    conversation_id = serializers.IntegerField(required=False, allow_null=True)


class RunSerializer(serializers.ModelSerializer):
    # Money as a string: a float would round what a finance team reconciles.
    cost_usd = serializers.DecimalField(max_digits=14, decimal_places=8, coerce_to_string=True)

    class Meta:
        model = Run
        fields = [
            "id",
            "agent_id",
            "agent_version_id",
            "conversation_id",
            "parent_run_id",
            "user_id",
            "surface",
            "status",
            "stop_reason",
            "input",
            "output",
            "error",
            "budget_refusal",
            "model_label",
            "model_provider",
            "model_name",
            "input_tokens",
            "output_tokens",
            "request_count",
            "cost_usd",
            "cost_is_partial",
            "created_at",
            "started_at",
            "ended_at",
        ]
        read_only_fields = fields
