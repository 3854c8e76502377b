"""The priced ledger and the budget counters that make the monthly caps strict."""

from __future__ import annotations

from decimal import Decimal

from django.db import models

from agenticos.money import usd_field


class Ledger(models.Model):
    """One per run: the sum of its priced entries. Survives a park and a resume, so finishing a
    continuation never overwrites the run's cost with what the continuation alone cost."""

    run = models.OneToOneField("runs.Run", on_delete=models.CASCADE, related_name="ledger")
    organization = models.ForeignKey(
        "orgs.Organization", on_delete=models.CASCADE, related_name="ledgers"
    )
    agent = models.ForeignKey("agents.Agent", on_delete=models.CASCADE, related_name="ledgers")
    cost_usd = usd_field(default=Decimal("0"))
    cost_is_partial = models.BooleanField(default=False)
    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    request_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"Ledger of run {self.run_id}: ${self.cost_usd}"


class EntryKind(models.TextChoices):
    MODEL_REQUEST = "model_request", "Model request"
    EMBEDDING = "embedding", "Embedding"
    COMPACTION = "compaction", "Context compaction"
    INGESTION = "ingestion", "Knowledge ingestion"


class LedgerEntry(models.Model):
    """One priced charge: a model request, an embedding, a compaction summary, an ingestion.

    ``priced`` is False when genai-prices had no price for the model: the entry is booked at 0 and
    its run's cost is a floor (``cost_is_partial``). ``month`` is the UTC calendar month the
    budget counters booked it in.
    """

    ledger = models.ForeignKey(
        Ledger, on_delete=models.CASCADE, null=True, blank=True, related_name="entries"
    )
    # No index of their own: the (organization, month) and (agent, month) indexes below start with
    # them, and every model request inserts an entry (each index is one more write).
    organization = models.ForeignKey(
        "orgs.Organization", on_delete=models.CASCADE, related_name="ledger_entries", db_index=False
    )
    agent = models.ForeignKey(
        "agents.Agent",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="ledger_entries",
        db_index=False,
    )
    kind = models.CharField(
        max_length=16, choices=EntryKind.choices, default=EntryKind.MODEL_REQUEST
    )
    provider = models.CharField(max_length=32, blank=True)
    model_name = models.CharField(max_length=200, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_usd = usd_field(default=Decimal("0"))
    priced = models.BooleanField(default=True)
    month = models.DateField()
    # Two attributions of one entry inside a run's one ledger (seed 003, "Cómo se registra un run
    # delegado"): the delegation that booked it (its task id; "" is the run's own agent), for the
    # delegation panel, and the nearest published delegation it bills to ("" is the run's row) —
    # the two differ only under an inline specialist, whose spend lands on its published
    # ancestor's row. ``agent`` is that row's agent.
    delegation = models.CharField(max_length=64, blank=True, default="", db_default="")
    billed_delegation = models.CharField(max_length=64, blank=True, default="", db_default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "ledger entries"
        ordering = ["created_at", "pk"]
        indexes = [
            # Seeding a counter: an organization's (or an agent's) entries of one month.
            models.Index(fields=["organization", "month"], name="ledger_entry_org_month_idx"),
            models.Index(fields=["agent", "month"], name="ledger_entry_agent_month_idx"),
            # The per-day rollup (apps/spend/rollup.py): one organization's entries of one UTC
            # day, and a window's ingestion on the days the rollup computes live.
            models.Index(
                fields=["organization", "created_at"], name="ledger_entry_org_created_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.model_name} ${self.cost_usd}"


class BudgetScope(models.TextChoices):
    AGENT = "agent", "Agent monthly cap"
    ORGANIZATION = "organization", "Organization monthly cap"


class BudgetCounter(models.Model):
    """Spend of one scope (an agent, or a whole organization) in one UTC month, shared by every
    worker: the single row a reservation locks (SELECT … FOR UPDATE), so concurrent runs see each
    other's in-flight requests. ``committed_usd`` is the sum of the scope's ledger entries of the
    month; ``reserved_usd`` the estimates of requests in flight. See docs/budgets.md."""

    organization = models.ForeignKey(
        "orgs.Organization", on_delete=models.CASCADE, related_name="budget_counters"
    )
    agent = models.ForeignKey(
        "agents.Agent",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="budget_counters",
    )
    scope = models.CharField(max_length=16, choices=BudgetScope.choices)
    month = models.DateField()
    committed_usd = usd_field(default=Decimal("0"))
    reserved_usd = usd_field(default=Decimal("0"))
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "month"],
                condition=models.Q(scope="organization"),
                name="budget_counter_one_per_org_month",
            ),
            models.UniqueConstraint(
                fields=["agent", "month"],
                condition=models.Q(scope="agent"),
                name="budget_counter_one_per_agent_month",
            ),
            models.CheckConstraint(
                condition=models.Q(scope="organization", agent__isnull=True)
                | models.Q(scope="agent", agent__isnull=False),
                name="budget_counter_scope_matches_agent",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.scope} {self.agent_id or self.organization_id} {self.month:%Y-%m}"

    @property
    def spent_usd(self) -> Decimal:
        return self.committed_usd + self.reserved_usd


class ModelPrice(models.Model):
    """An operator's price for a model genai-prices does not know (a custom or self-hosted one),
    from a date on. ``agenticos reprice`` prices the ledger's unpriced entries with it (the entry
    whose ``applies_from`` is the latest on or before the entry's day); a blank ``provider``
    matches the model under any provider. Deployment-wide: a model's price is the provider's, not
    a tenant's."""

    provider = models.CharField(max_length=32, blank=True)
    model_name = models.CharField(max_length=200)
    input_usd_per_million = models.DecimalField(max_digits=12, decimal_places=6)
    output_usd_per_million = models.DecimalField(max_digits=12, decimal_places=6)
    applies_from = models.DateField()
    note = models.CharField(max_length=300, blank=True)
    created_by = models.ForeignKey(
        "orgs.User", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["model_name", "provider", "-applies_from"]
        constraints = [
            models.UniqueConstraint(
                fields=["provider", "model_name", "applies_from"],
                name="model_price_one_per_model_and_day",
            ),
            models.CheckConstraint(
                condition=models.Q(input_usd_per_million__gte=0, output_usd_per_million__gte=0),
                name="model_price_not_negative",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.provider or '*'}/{self.model_name} from {self.applies_from}"

    def cost_usd(self, input_tokens: int, output_tokens: int) -> Decimal:
        return (
            Decimal(input_tokens) * self.input_usd_per_million
            + Decimal(output_tokens) * self.output_usd_per_million
        ) / Decimal(1_000_000)


# --- the per-day rollup (apps/spend/rollup.py, docs/spend.md "The per-day rollup") ------------
# Caches of one organization's UTC day, rebuilt whole when the day changed. Written only by
# rollup.py; the database's triggers on runs, ledgers, ledger entries and ratings log which days
# changed (SpendDayChange), so no write path can forget to invalidate one.


class SpendDayBuild(models.Model):
    """That a day's rollup rows were built, and from what: the snapshot and the change-log
    sequence they saw. The day's rows are current while no change logged for it is outside
    them (a later sequence number, or a transaction the snapshot did not see)."""

    organization = models.ForeignKey(
        "orgs.Organization", on_delete=models.CASCADE, related_name="+"
    )
    day = models.DateField()
    # None: the whole day (a closed one); 0–23: one hour of today, rebuilt alone after a write.
    hour = models.SmallIntegerField(null=True, blank=True)
    snapshot = models.TextField()
    built_seq = models.BigIntegerField()
    builder_xid = models.BigIntegerField()
    # The latest moment any row of the day had when it was built: a window ending after it holds
    # every row of the day (a window ending before it, today's, reads the day live).
    covers_until = models.DateTimeField(null=True, blank=True)
    built_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "day", "hour"],
                name="spend_day_build_one",
                nulls_distinct=False,
            )
        ]

    def __str__(self) -> str:
        return f"{self.organization_id} {self.day} built at seq {self.built_seq}"


class SpendDayChange(models.Model):
    """A transaction changed rows of an organization's day (written by the database's triggers,
    one row per day and transaction, ``seq`` from its last change). No foreign key: a trigger
    fired while the organization itself is being deleted must not fail that delete."""

    organization_id = models.BigIntegerField()
    day = models.DateField()
    hour = models.SmallIntegerField()
    xid = models.BigIntegerField()
    seq = models.BigIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["organization_id", "day", "hour", "xid"],
                name="spend_day_change_one_per_xact",
            )
        ]

    def __str__(self) -> str:
        return f"{self.organization_id} {self.day} changed by xact {self.xid}"


class SpendDayRuns(models.Model):
    """The runs that started on one UTC day (a queued one: asked for), grouped by everything a
    breakdown of GET /spend or GET /stats/usage asks for. ``cost_usd`` is what the rows spent
    (the larger of row and ledger); ``own_usd`` their own spend (a top-level row minus every
    delegated row of its tree, wherever it started)."""

    organization = models.ForeignKey(
        "orgs.Organization", on_delete=models.CASCADE, related_name="+"
    )
    day = models.DateField()
    hour = models.SmallIntegerField(null=True, blank=True)  # see SpendDayBuild.hour
    top_level = models.BooleanField()
    # Plain ids: names, e-mails and keys are read live, so a rename never stales a day.
    agent_id = models.BigIntegerField()
    agent_version_id = models.BigIntegerField()
    user_id = models.BigIntegerField(null=True, blank=True)
    provider = models.CharField(max_length=32, blank=True)
    status = models.CharField(max_length=24)
    surface = models.CharField(max_length=16)
    run_count = models.PositiveIntegerField()
    partial_run_count = models.PositiveIntegerField()
    cost_usd = usd_field()
    own_usd = usd_field()
    input_tokens = models.BigIntegerField()
    output_tokens = models.BigIntegerField()
    thumbs_up = models.PositiveIntegerField()
    thumbs_down = models.PositiveIntegerField()
    rated_run_count = models.PositiveIntegerField()
    down_rated_run_count = models.PositiveIntegerField()

    class Meta:
        verbose_name_plural = "spend day runs"
        indexes = [models.Index(fields=["organization", "day"], name="spend_day_runs_org_day_idx")]

    def __str__(self) -> str:
        return f"{self.organization_id} {self.day} agent {self.agent_id}: {self.run_count}"


class SpendDayLatency(models.Model):
    """How long the day's finished top-level runs took, per person, to the millisecond: the
    latency card's percentiles are computed from these counts."""

    organization = models.ForeignKey(
        "orgs.Organization", on_delete=models.CASCADE, related_name="+"
    )
    day = models.DateField()
    hour = models.SmallIntegerField(null=True, blank=True)
    user_id = models.BigIntegerField(null=True, blank=True)
    duration_ms = models.BigIntegerField()
    run_count = models.PositiveIntegerField()

    class Meta:
        verbose_name_plural = "spend day latencies"
        indexes = [
            models.Index(fields=["organization", "day"], name="spend_day_latency_org_day_idx")
        ]

    def __str__(self) -> str:
        return f"{self.organization_id} {self.day} {self.duration_ms} ms × {self.run_count}"


class SpendDayEntries(models.Model):
    """The ledger entries booked on one UTC day, per month they count in, kind, billed agent and
    the person whose run booked them: month to date and a window's ingestion."""

    organization = models.ForeignKey(
        "orgs.Organization", on_delete=models.CASCADE, related_name="+"
    )
    day = models.DateField()
    hour = models.SmallIntegerField(null=True, blank=True)
    month = models.DateField()
    kind = models.CharField(max_length=16, choices=EntryKind.choices)
    agent_id = models.BigIntegerField(null=True, blank=True)
    user_id = models.BigIntegerField(null=True, blank=True)
    cost_usd = usd_field()
    entry_count = models.PositiveIntegerField()
    unpriced_count = models.PositiveIntegerField()

    class Meta:
        verbose_name_plural = "spend day entries"
        indexes = [
            models.Index(fields=["organization", "day"], name="spend_day_entries_org_day_idx")
        ]

    def __str__(self) -> str:
        return f"{self.organization_id} {self.day} {self.kind}: ${self.cost_usd}"


class SpendDayCrossing(models.Model):
    """An unpriced delegated row of the day whose tree's top-level row started on an earlier
    day: the only rows a window starting at midnight can see cross its start (#620)."""

    organization = models.ForeignKey(
        "orgs.Organization", on_delete=models.CASCADE, related_name="+"
    )
    day = models.DateField()
    hour = models.SmallIntegerField(null=True, blank=True)
    run_id = models.BigIntegerField()
    root_id = models.BigIntegerField()
    root_started_at = models.DateTimeField()
    started_at = models.DateTimeField()
    agent_id = models.BigIntegerField()
    user_id = models.BigIntegerField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["organization", "day"], name="spend_day_crossing_org_day_idx")
        ]

    def __str__(self) -> str:
        return f"{self.organization_id} {self.day} run {self.run_id} under {self.root_id}"
