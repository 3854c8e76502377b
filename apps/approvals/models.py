"""Tool approvals and questions to the person: the rows a parked run waits on."""

from __future__ import annotations

from django.db import models

from .choices import ApprovalStatus, DecidedVia, QuestionStatus


class ToolApproval(models.Model):
    """One gated tool call, parked until a person decides (or the sweep expires it).

    Written when the run parks, never as each call is gated: calls run concurrently and the run's
    database session is not safe for that (seed 003, #169). ``arguments`` are what the person
    reads, and approving executes exactly those. ``decided_by`` NULL with ``status = expired``
    means the sweep and nothing else. A standing row (a waived call in an "approve everything"
    conversation) is written approved, naming the consenting account, ``decided_via = standing``.

    The agent and the run cascade (an approval cannot outlive either); both people are SET_NULL
    because a decision must survive the decider's account being deleted. ``delegate_name`` keeps
    who asked even when that delegate's agent is deleted.
    """

    organization = models.ForeignKey(
        "orgs.Organization", on_delete=models.CASCADE, related_name="tool_approvals"
    )
    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="approvals")
    agent = models.ForeignKey(
        "agents.Agent", on_delete=models.CASCADE, related_name="tool_approvals"
    )
    # The delegate whose own gate parked the call; NULL for the top-level agent.
    delegate_agent = models.ForeignKey(
        "agents.Agent",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="delegated_tool_approvals",
    )
    delegate_name = models.CharField(max_length=200, blank=True)
    tool_call_id = models.CharField(max_length=200)
    tool_name = models.CharField(max_length=200)
    # The stable tool id the gate resolved (empty for a tool outside any capability).
    tool_id = models.CharField(max_length=200, blank=True)
    capability_id = models.CharField(max_length=100, blank=True)
    arguments = models.JSONField(default=dict, blank=True)
    status = models.CharField(
        max_length=16, choices=ApprovalStatus.choices, default=ApprovalStatus.PENDING
    )
    decided_via = models.CharField(max_length=16, choices=DecidedVia.choices, blank=True)
    decided_by = models.ForeignKey(
        "orgs.User",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="approvals_decided",
    )
    note = models.TextField(blank=True)
    # What the approved call returned, once a resume settled it.
    result = models.TextField(blank=True)
    # When the expiry reminder went out (APPROVAL_EXPIRY_WARNING_HOURS before the sweep denies the
    # call); set once, by the claim that sends it, so a call is reminded at most once.
    expiry_reminder_sent_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "tool_call_id"], name="approval_run_call_unique"
            ),
        ]
        indexes = [
            # The queue: an organization's rows by status, oldest first.
            models.Index(
                fields=["organization", "status", "created_at"], name="approval_org_status_idx"
            ),
            # The sweep: pending rows older than the expiry window, across organizations.
            models.Index(
                fields=["created_at"],
                condition=models.Q(status="pending"),
                name="approval_pending_created_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tool_name} on run {self.run_id} ({self.status})"


class Question(models.Model):
    """One ``ask_user_question`` call the run parked on (``awaiting_answer``).

    Only the person asked (``asked_user``, the run's initiator) may answer. After
    QUESTION_EXPIRY_HOURS the sweep marks it expired and cancels the run.
    """

    organization = models.ForeignKey(
        "orgs.Organization", on_delete=models.CASCADE, related_name="questions"
    )
    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="questions")
    asked_user = models.ForeignKey(
        "orgs.User",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="questions_asked",
    )
    tool_call_id = models.CharField(max_length=200)
    # The validated questions as the card shows them (header, question, options, multi_select).
    questions = models.JSONField(default=list)
    status = models.CharField(
        max_length=16, choices=QuestionStatus.choices, default=QuestionStatus.PENDING
    )
    answers = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    answered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "tool_call_id"], name="question_run_call_unique"
            ),
        ]
        indexes = [
            # The question sweep: pending cards older than the expiry window.
            models.Index(
                fields=["created_at"],
                condition=models.Q(status="pending"),
                name="question_pending_created_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"Question {self.tool_call_id} on run {self.run_id} ({self.status})"
