"""Request bodies of the approvals API (responses are the selectors' read models)."""

from rest_framework import serializers

from agenticos.params import IdField, validate_storable_json


class DecideSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(choices=["approve", "reject"])
    note = serializers.CharField(required=False, allow_blank=True, max_length=2000)


class AnswerSerializer(serializers.Serializer):
    question_id = IdField(required=False)
    answers = serializers.ListField(
        child=serializers.DictField(), required=False, validators=[validate_storable_json]
    )
    declined = serializers.BooleanField(required=False, default=False)
