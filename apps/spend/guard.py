"""The run's meter and the budget guard, a pydantic-ai capability.

Seed 003, "Se aplica antes de la petición": the guard runs before every model request — not
after, or the request that broke the budget is already paid. It is ``wrap_model_request`` of an
``AbstractCapability``: reserve an estimate (refusing if a cap is reached), let the request go,
then settle the real, priced cost into the ledger and the counters (or release the reservation
when the request failed).

The meter belongs to the prepared run, not to the surface (seed 003, "Un run cuesta más que sus
peticiones al modelo"): opening it is not a step a surface can forget. Process-global services
that spend on a run's behalf (embeddings, a compaction summary) book against
``current_meter()``.
"""

from __future__ import annotations

import contextvars
import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from asgiref.sync import sync_to_async
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelResponse

from . import services
from .models import BudgetScope, EntryKind
from .pricing import price_usage
from .tokens import messages_chars, tokens_for, tool_definitions_chars

# What a request's answer is assumed to cost before it exists, when the request names no
# max_tokens: the reservation other runs see while it is in flight.
OUTPUT_RESERVE_TOKENS = 256

_current_meter: contextvars.ContextVar[RunMeter | None] = contextvars.ContextVar("agenticos_meter", default=None)


def current_meter() -> RunMeter | None:
    """The meter of the run being executed in this context, if any."""
    return _current_meter.get()


@dataclass
class RequestRecord:
    """One settled model request, for the run's steps and its cost frame."""

    number: int
    model_name: str
    input_tokens: int
    output_tokens: int
    cost_usd: Decimal
    priced: bool
    tool_calls: list[str]


@dataclass
class RunMeter:
    """Everything a run spends, booked as it happens. Synchronous; the guard calls it off-loop."""

    organization_id: int
    agent_id: int
    ledger_id: int
    provider: str
    model_name: str
    agent_limit_usd: Decimal | None
    org_limit_usd: Decimal | None
    records: list[RequestRecord] = field(default_factory=list)
    _month: dt.date | None = None
    _caps: list[services.Cap] = field(default_factory=list)

    @classmethod
    def open(cls, *, run, provider: str, model_name: str, agent_limit_usd, org_limit_usd) -> RunMeter:
        ledger = services.ledger_open(run=run)
        meter = cls(
            organization_id=run.organization_id,
            agent_id=run.agent_id,
            ledger_id=ledger.pk,
            provider=provider,
            model_name=model_name,
            agent_limit_usd=agent_limit_usd,
            org_limit_usd=org_limit_usd,
        )
        meter._counters()
        return meter

    def activate(self) -> contextvars.Token:
        return _current_meter.set(self)

    def _counters(self) -> list[services.Cap]:
        month = services.month_of()
        if month != self._month:  # first use, or the run crossed into a new month
            agent = services.budget_counter_for(organization_id=self.organization_id, agent_id=self.agent_id, month=month)
            org = services.budget_counter_for(organization_id=self.organization_id, agent_id=None, month=month)
            self._caps = [
                services.Cap(BudgetScope.AGENT, self.agent_limit_usd, agent.pk),
                services.Cap(BudgetScope.ORGANIZATION, self.org_limit_usd, org.pk),
            ]
            self._month = month
        return self._caps

    # -- the guard's three moves -----------------------------------------------------------

    def estimate(self, request_context: Any) -> Decimal:
        params = request_context.model_request_parameters
        chars = messages_chars(request_context.messages) + tool_definitions_chars(params.function_tools)
        chars += sum(len(getattr(part, "content", "") or "") for part in (params.instruction_parts or ()))
        max_tokens = (request_context.model_settings or {}).get("max_tokens") or OUTPUT_RESERVE_TOKENS
        return price_usage(self.provider, self.model_name, tokens_for(chars), max_tokens).cost_usd

    def reserve(self, estimate_usd: Decimal) -> None:
        services.budget_reserve(self._counters(), estimate_usd)

    def release(self, estimate_usd: Decimal) -> None:
        services.budget_release([cap.counter_id for cap in self._caps], estimate_usd)

    def settle(self, response: ModelResponse, estimate_usd: Decimal) -> RequestRecord:
        usage = response.usage
        charge = services.charge_record(
            organization_id=self.organization_id,
            agent_id=self.agent_id,
            ledger_id=self.ledger_id,
            counter_ids=[cap.counter_id for cap in self._caps],
            month=self._month,
            kind=EntryKind.MODEL_REQUEST,
            provider=self.provider,
            model_name=response.model_name or self.model_name,
            input_tokens=usage.input_tokens or 0,
            output_tokens=usage.output_tokens or 0,
            reserved_usd=estimate_usd,
        )
        record = RequestRecord(
            number=len(self.records) + 1,
            model_name=response.model_name or self.model_name,
            input_tokens=charge.input_tokens,
            output_tokens=charge.output_tokens,
            cost_usd=charge.cost_usd,
            priced=charge.priced,
            tool_calls=[call.tool_name for call in response.tool_calls],
        )
        self.records.append(record)
        return record

    def record_charge(self, *, kind: str, provider: str, model_name: str, input_tokens: int, output_tokens: int = 0):
        """Book spend the guard did not see (an embedding, a compaction summary) on this run."""
        return services.charge_record(
            organization_id=self.organization_id,
            agent_id=self.agent_id,
            ledger_id=self.ledger_id,
            counter_ids=[cap.counter_id for cap in self._counters()],
            month=self._month,
            kind=kind,
            provider=provider,
            model_name=model_name,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
        )


@dataclass
class BudgetGuard(AbstractCapability[Any]):
    """Checks both monthly caps before every model request and books its cost after it."""

    meter: RunMeter | None = None
    # Called with each settled RequestRecord (the runner publishes a cost frame).
    on_settled: Any = None

    async def wrap_model_request(self, ctx, *, request_context, handler):
        meter = self.meter
        estimate = meter.estimate(request_context)
        await sync_to_async(meter.reserve)(estimate)
        try:
            response = await handler(request_context)
        except BaseException:
            await sync_to_async(meter.release)(estimate)
            raise
        record = await sync_to_async(meter.settle)(response, estimate)
        if self.on_settled is not None:
            self.on_settled(record)
        return response
