from rest_framework import serializers

from agenticos.params import IdField, StrictJSONMixin
from apps.approvals.choices import ApprovalMode
from apps.runs.choices import StopReason
from apps.runs.models import Run
from apps.runs.selectors import run_is_down_rated
from apps.runs.totals import in_flight_totals


class RunCreateSerializer(StrictJSONMixin, serializers.Serializer):
    agent_id = IdField()
    input = serializers.CharField(trim_whitespace=False, allow_blank=False)
    conversation_id = IdField(required=False, allow_null=True)
    # Whether the caller may have the mode is prepare()'s to decide (approve_all is a web chat's
    # only): an API run asking for it fails its turn with the sentence, never runs under the spec.
    approval_mode = serializers.ChoiceField(
        choices=ApprovalMode.choices, required=False, default=ApprovalMode.FOLLOW
    )


class RunSerializer(serializers.ModelSerializer):
    # Blank while the run has not ended.
    stop_reason = serializers.ChoiceField(
        choices=StopReason.choices, allow_blank=True, read_only=True
    )
    # Money as a string: a float would round what a finance team reconciles.
    cost_usd = serializers.DecimalField(max_digits=14, decimal_places=8, coerce_to_string=True)
    # ended_at - started_at; null while the run has not finished (it has no duration yet).
    duration_ms = serializers.SerializerMethodField()
    # Someone thumbed down a turn this run produced (apps.ratings).
    down_rated = serializers.SerializerMethodField()
    subagent_task_id = serializers.SerializerMethodField()

    def to_representation(self, run):
        data = super().to_representation(run)
        # A row that is not final (in flight, parked, or still accruing after its answer) shows
        # what its ledger already holds, request by request, never the 0 it was created with.
        live = in_flight_totals(run)
        if live:
            data.update(
                input_tokens=live["input_tokens"],
                output_tokens=live["output_tokens"],
                request_count=live["request_count"],
                cost_usd=self.fields["cost_usd"].to_representation(live["cost_usd"]),
                cost_is_partial=live["cost_is_partial"],
            )
        return data

    def get_duration_ms(self, run) -> int | None:
        if run.started_at is None or run.ended_at is None:
            return None
        return int((run.ended_at - run.started_at).total_seconds() * 1000)

    def get_down_rated(self, run) -> bool:
        annotated = getattr(run, "down_rated", None)  # the history's annotation
        return bool(annotated) if annotated is not None else run_is_down_rated(run)

    def get_subagent_task_id(self, run) -> str | None:
        # An orphaned delegation (its parent deleted, parent_run_id nulled) keeps its row but not
        # a task id that names a transcript gone with the parent (seed 003).
        return (run.subagent_task_id or None) if run.parent_run_id else None

    class Meta:
        model = Run
        fields = [
            "id",
            "agent_id",
            "agent_version_id",
            "conversation_id",
            "parent_run_id",
            "subagent_task_id",
            "user_id",
            "surface",
            "approval_mode",
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
            # True while an answered run's background delegations still book under it: its
            # totals and its delegated rows are not final yet (docs/delegation.md).
            "accruing",
            "created_at",
            "started_at",
            "ended_at",
            "duration_ms",
            "down_rated",
        ]
        read_only_fields = fields


class ContextGaugeSerializer(serializers.Serializer):
    input_tokens = serializers.IntegerField()
    window = serializers.IntegerField(required=False)
    ratio = serializers.FloatField(required=False)


class TurnSerializer(serializers.Serializer):
    """One turn of a run's transcript: what was said, the run's state when it was written, its
    cost share, and the context gauge (``context`` omits window and ratio when unknown)."""

    id = serializers.IntegerField()
    role = serializers.CharField()
    content = serializers.CharField()
    run_status = serializers.CharField()
    cost_usd = serializers.DecimalField(
        max_digits=14, decimal_places=8, coerce_to_string=True, allow_null=True
    )
    cost_is_partial = serializers.BooleanField(allow_null=True)
    context_tokens = serializers.IntegerField(allow_null=True)
    # A field named like Field.context: the serializer's metaclass moves it into the fields.
    context = ContextGaugeSerializer(allow_null=True)  # type: ignore[assignment]
    created_at = serializers.DateTimeField()
    # The ratings people left on the turn (apps.ratings): the reader's own thumb, the
    # organization's counts, the latest negative comment. Empty on a turn nobody rated.
    my_rating = serializers.CharField(allow_null=True, required=False, default=None)
    ratings_up = serializers.IntegerField(required=False, default=0)
    ratings_down = serializers.IntegerField(required=False, default=0)
    latest_down_comment = serializers.CharField(allow_blank=True, required=False, default="")


class StepSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    kind = serializers.CharField()
    detail = serializers.JSONField()
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    cost_usd = serializers.DecimalField(max_digits=14, decimal_places=8, coerce_to_string=True)


class RunTranscriptSerializer(serializers.Serializer):
    """A run's transcript: its conversation's turns (null for a run without a conversation) and
    the run's own steps."""

    run_id = serializers.IntegerField()
    conversation_id = serializers.IntegerField(allow_null=True)
    turns = TurnSerializer(many=True, allow_null=True)
    steps = StepSerializer(many=True)
