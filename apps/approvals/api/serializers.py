"""Request bodies of the approvals API (responses are the selectors' read models)."""

from rest_framework import serializers

from agenticos.params import IdField, StrictJSONMixin, validate_storable_json


class DecideSerializer(StrictJSONMixin, serializers.Serializer):
    decision = serializers.ChoiceField(choices=["approve", "reject"])
    note = serializers.CharField(required=False, allow_blank=True, max_length=2000)


class AnswerSerializer(StrictJSONMixin, serializers.Serializer):
    question_id = IdField(required=False)
    answers = serializers.ListField(
        child=serializers.DictField(), required=False, validators=[validate_storable_json]
    )
    declined = serializers.BooleanField(required=False, default=False)


# --- Read models, for the schema: the selectors build these rows (selectors.approval_row,
# selectors.question_row); the serializers describe them, they do not shape them.


class ApprovalRowSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    run_id = serializers.IntegerField()
    agent_id = serializers.IntegerField()
    agent_name = serializers.CharField()
    delegate_name = serializers.CharField(allow_null=True)
    tool_name = serializers.CharField()
    tool_id = serializers.CharField()
    capability_id = serializers.CharField()
    arguments = serializers.JSONField()
    status = serializers.CharField()
    decided_via = serializers.CharField(allow_null=True)
    decided_in_words = serializers.CharField(allow_null=True)
    triggered_by_user_id = serializers.IntegerField(allow_null=True)
    triggered_by_email = serializers.CharField(allow_null=True)
    decided_by_user_id = serializers.IntegerField(allow_null=True)
    decided_by_name = serializers.CharField(allow_null=True)
    decided_by_email = serializers.CharField(allow_null=True)
    note = serializers.CharField(allow_blank=True)
    result = serializers.JSONField(allow_null=True)
    created_at = serializers.DateTimeField()
    decided_at = serializers.DateTimeField(allow_null=True)
    age_seconds = serializers.IntegerField(
        allow_null=True, help_text="How long a pending call has waited; null once decided."
    )


class ApprovalPageSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = ApprovalRowSerializer(many=True)
    oldest_pending_age_seconds = serializers.IntegerField(allow_null=True)


class ParkedCallsSerializer(serializers.Serializer):
    run_id = serializers.IntegerField()
    status = serializers.CharField()
    calls = ApprovalRowSerializer(many=True)


class QuestionRowSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    run_id = serializers.IntegerField()
    tool_call_id = serializers.CharField()
    asked_user_id = serializers.IntegerField(allow_null=True)
    questions = serializers.JSONField()
    status = serializers.CharField()
    answers = serializers.JSONField(allow_null=True)
    created_at = serializers.DateTimeField()
    answered_at = serializers.DateTimeField(allow_null=True)


class RunQuestionsSerializer(serializers.Serializer):
    run_id = serializers.IntegerField()
    status = serializers.CharField()
    questions = QuestionRowSerializer(many=True)
