"""Request bodies of the approvals API (responses are the selectors' read models)."""

from rest_framework import serializers


class DecideSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(choices=["approve", "reject"])
    note = serializers.CharField(required=False, allow_blank=True, max_length=2000)


class AnswerSerializer(serializers.Serializer):
    question_id = serializers.IntegerField(required=False)
    answers = serializers.ListField(child=serializers.DictField(), required=False)
    declined = serializers.BooleanField(required=False, default=False)
