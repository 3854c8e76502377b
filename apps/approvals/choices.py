"""Approval and question statuses, how a decision was made, and a session's approval mode."""

from django.db import models


class ApprovalStatus(models.TextChoices):
    """pending → approved | rejected (a person) | expired (the sweep, no decider).

    A standing (waived) call is written approved at once, ``decided_via = standing``.
    Transitions are claimed with ``filter(status=pending).update(...)``: the second decision finds
    nothing to claim and is refused (409), including one a second after the sweep.
    """

    PENDING = "pending", "Pending"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"
    EXPIRED = "expired", "Expired"


RESOLVED_APPROVAL_STATUSES = frozenset(
    {ApprovalStatus.APPROVED, ApprovalStatus.REJECTED, ApprovalStatus.EXPIRED}
)


class DecidedVia(models.TextChoices):
    PERSON = "person", "A person"
    STANDING = "standing", "Standing consent for the conversation"
    SWEEP = "sweep", "The expiry sweep"


class ApprovalMode(models.TextChoices):
    """A chat session's approval mode (seed 003, "Cuánto quiere una conversación que se le pregunte")."""

    FOLLOW = "follow", "Follow the agent"
    APPROVE_ALL = "approve_all", "Approve everything"
    ASK_ALL = "ask_all", "Ask about everything"


class QuestionStatus(models.TextChoices):
    PENDING = "pending", "Waiting for an answer"
    ANSWERED = "answered", "Answered"
    DECLINED = "declined", "Declined"
    EXPIRED = "expired", "Not answered in time"
