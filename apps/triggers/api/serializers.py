from rest_framework import serializers

from agenticos.params import IdField, StrictJSONMixin
from apps.triggers.choices import FireOutcome, FireVia, TriggerKind
from apps.triggers.models import Trigger, TriggerFire
from apps.triggers.schedules import next_fire


class TriggerCreateSerializer(StrictJSONMixin, serializers.Serializer):
    agent_id = IdField()
    kind = serializers.ChoiceField(choices=TriggerKind.choices)
    name = serializers.CharField(max_length=120)
    prompt = serializers.CharField(max_length=20_000)
    # {"cron": "0 9 * * 1-5", "timezone": "Europe/Madrid"} or {"every_seconds": 3600}; checked by
    # apps.triggers.schedules.parse_schedule (a 422 naming schedule).
    schedule = serializers.JSONField(required=False, allow_null=True, default=None)
    run_as_creator = serializers.BooleanField(required=False, default=True)


class TriggerSerializer(serializers.ModelSerializer):
    last_run_status = serializers.SerializerMethodField()
    next_fire_at = serializers.SerializerMethodField()
    events_path = serializers.SerializerMethodField()

    def get_last_run_status(self, trigger) -> str | None:
        return trigger.last_run.status if trigger.last_run_id else None

    def get_next_fire_at(self, trigger) -> str | None:
        if not trigger.enabled or trigger.kind != TriggerKind.SCHEDULE:
            return None
        moment = next_fire(trigger.periodic_task)
        return moment.isoformat() if moment else None

    def get_events_path(self, trigger) -> str | None:
        if trigger.kind != TriggerKind.EVENT:
            return None
        return f"/api/v1/triggers/{trigger.pk}/events/"

    class Meta:
        model = Trigger
        fields = [
            "id",
            "agent_id",
            "kind",
            "name",
            "prompt",
            "run_as_creator",
            "schedule",
            "enabled",
            "disabled_reason",
            "created_by_id",
            "last_run_id",
            "last_run_status",
            "last_fired_at",
            "next_fire_at",
            "events_path",
            "created_at",
        ]
        read_only_fields = fields


class TriggerWithSecretSerializer(TriggerSerializer):
    """The answer that carries an event trigger's secret: its creation and a rotation, once."""

    secret = serializers.CharField(read_only=True, allow_null=True)

    class Meta(TriggerSerializer.Meta):
        fields = [*TriggerSerializer.Meta.fields, "secret"]
        read_only_fields = fields


class TriggerFireSerializer(serializers.ModelSerializer):
    via = serializers.ChoiceField(choices=FireVia.choices, read_only=True)
    outcome = serializers.ChoiceField(choices=FireOutcome.choices, read_only=True)
    run_status = serializers.SerializerMethodField()

    def get_run_status(self, fire) -> str | None:
        return fire.run.status if fire.run_id else None

    class Meta:
        model = TriggerFire
        fields = [
            "id",
            "via",
            "outcome",
            "detail",
            "run_id",
            "run_status",
            "fired_by_id",
            "created_at",
            "finished_at",
        ]
        read_only_fields = fields


class EventAcceptedSerializer(serializers.Serializer):
    run_id = serializers.IntegerField()
    fire_id = serializers.IntegerField()
