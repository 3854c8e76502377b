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

import asyncio
import contextvars
import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from asgiref.sync import sync_to_async
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelResponse

from agenticos.loopdb import LoopConnection, LoopSession

from . import services
from .models import BudgetScope, EntryKind
from .pricing import price_usage
from .tokens import CHARS_PER_TOKEN, messages_chars, schema_chars, tokens_for, tool_text_chars

# What a request's answer is assumed to cost before it exists, when the request names no
# max_tokens: the reservation other runs see while it is in flight.
OUTPUT_RESERVE_TOKENS = 256
# Room for tool results in the reservation made ahead of a run's next request: when the results
# are longer, the next request tops its reservation up before it is sent (one more round trip).
AHEAD_INPUT_TOKENS = 512

_current_meter: contextvars.ContextVar[RunMeter | None] = contextvars.ContextVar(
    "agenticos_meter", default=None
)


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
    """Everything a run spends, booked as it happens.

    Open it on the thread that owns the run's database session (``prepare()``); the guard's moves
    (reserve, settle, release) are then sent from the run's event loop on that same session.
    ``record_charge`` books from that thread."""

    organization_id: int
    agent_id: int
    ledger_id: int
    provider: str
    model_name: str
    agent_limit_usd: Decimal | None
    org_limit_usd: Decimal | None
    # The run's database session, used from its event loop (agenticos/loopdb.py): this thread's
    # own (LoopConnection) or the worker's shared pool (LoopPool); both answer ``fetch``.
    db: LoopSession
    records: list[RequestRecord] = field(default_factory=list)
    # A delegate's meter books into its run's ledger and counters (one ledger per run), stamped
    # with the delegation that booked and the one it bills to; ``agent_id`` is then the agent of
    # the row it bills to, and ``cap_agent_id`` the run's own agent, whose cap binds (seed 003: a
    # delegate's own monthly cap does not apply inside its parent's run).
    delegation: str = ""
    billed_delegation: str = ""
    cap_agent_id: int | None = None
    # The fractions of each cap at which its audience is warned (the agent's spec's
    # alerts.budget.warn_at; the organization's settings), checked as each booking commits.
    agent_warn_at: tuple[Decimal, ...] = ()
    org_warn_at: tuple[Decimal, ...] = ()
    # What is reserved on the counters for this run's request in flight or next request: the
    # estimate of a request being sent, or the reservation made ahead when the previous one was
    # settled (see BudgetGuard). Always released or settled before the run ends.
    held_usd: Decimal = Decimal("0")
    # The reservation ahead was refused: the next request asks again before it is sent.
    refused_ahead: bool = False
    # Characters of the latest request's input, to size the reservation ahead of the next one.
    _last_input_chars: int = 0
    _max_tokens: int = OUTPUT_RESERVE_TOKENS
    _counted: dict = field(default_factory=dict, repr=False)
    _schemas: dict = field(default_factory=dict, repr=False)
    _month: dt.date | None = None
    _caps: list[services.Cap] = field(default_factory=list)

    @classmethod
    def open(
        cls,
        *,
        run,
        provider: str,
        model_name: str,
        agent_limit_usd,
        org_limit_usd,
        db=None,
        agent_warn_at=(),
    ) -> RunMeter:
        """``db``: the session the run's loop sends the guard's moves on (a worker's shared
        ``LoopPool``); by default this thread's own session (``LoopConnection``).
        ``agent_warn_at``: the agent cap's warning fractions (its spec's alerts.budget.warn_at);
        the organization's are read from its settings."""
        ledger = services.ledger_open(run=run)
        meter = cls(
            organization_id=run.organization_id,
            agent_id=run.agent_id,
            ledger_id=ledger.pk,
            provider=provider,
            model_name=model_name,
            agent_limit_usd=agent_limit_usd,
            org_limit_usd=org_limit_usd,
            db=db if db is not None else LoopConnection(),
            agent_warn_at=tuple(Decimal(str(f)) for f in agent_warn_at),
            org_warn_at=services.organization_warn_at(run.organization),
        )
        meter._counters()
        return meter

    def for_delegate(
        self,
        *,
        provider: str,
        model_name: str,
        billing_agent_id: int,
        delegation: str,
        billed_delegation: str,
    ) -> RunMeter:
        """A meter for one delegation of this run: priced by the delegate's own provider and
        model, booking into this run's ledger against this run's caps (the same counters, so
        the parent's cap sees every delegate request before the next one)."""
        self._counters()
        return RunMeter(
            organization_id=self.organization_id,
            agent_id=billing_agent_id,
            ledger_id=self.ledger_id,
            provider=provider,
            model_name=model_name,
            agent_limit_usd=self.agent_limit_usd,
            org_limit_usd=self.org_limit_usd,
            db=self.db,
            delegation=delegation,
            billed_delegation=billed_delegation,
            cap_agent_id=self.cap_agent_id or self.agent_id,
            agent_warn_at=self.agent_warn_at,
            org_warn_at=self.org_warn_at,
            _month=self._month,
            _caps=list(self._caps),
        )

    def activate(self) -> contextvars.Token:
        return _current_meter.set(self)

    @staticmethod
    def deactivate(token: contextvars.Token) -> None:
        _current_meter.reset(token)

    def _counters(self) -> list[services.Cap]:
        month = services.month_of()
        if month != self._month:  # first use, or the run crossed into a new month
            agent, org = services.budget_counter_ids_for(
                organization_id=self.organization_id,
                agent_id=self.cap_agent_id or self.agent_id,
                month=month,
            )
            self._caps = [
                services.Cap(BudgetScope.AGENT, self.agent_limit_usd, agent, self.agent_warn_at),
                services.Cap(BudgetScope.ORGANIZATION, self.org_limit_usd, org, self.org_warn_at),
            ]
            self._month = month
        return self._caps

    # -- the guard's moves ------------------------------------------------------------------

    def estimate(self, request_context: Any) -> Decimal:
        params = request_context.model_request_parameters
        chars = self._messages_chars(request_context.messages) + self._tools_chars(
            params.function_tools
        )
        chars += sum(
            len(getattr(part, "content", "") or "") for part in (params.instruction_parts or ())
        )
        self._last_input_chars = chars
        self._max_tokens = (request_context.model_settings or {}).get(
            "max_tokens"
        ) or OUTPUT_RESERVE_TOKENS
        return price_usage(
            self.provider, self.model_name, tokens_for(chars), self._max_tokens
        ).cost_usd

    def _messages_chars(self, messages) -> int:
        # A run's history only grows and a sent message keeps its parts: each message is counted
        # once (kept by identity, with the message itself so the id cannot be reused, and counted
        # again if its parts change), not again before every later request.
        total = 0
        for message in messages:
            known = self._counted.get(id(message))
            if known is None or known[0] is not message or known[1] != len(message.parts):
                known = self._counted[id(message)] = (
                    message,
                    len(message.parts),
                    messages_chars([message]),
                )
            total += known[2]
        return total

    def _tools_chars(self, tool_defs) -> int:
        # A tool's definition is rebuilt for every request, but its parameter schema is the same
        # object each time: its JSON length is measured once per schema (kept, as above).
        total = 0
        for tool_def in tool_defs:
            schema = tool_def.parameters_json_schema
            known = self._schemas.get(id(schema))
            if known is None or known[0] is not schema:
                known = self._schemas[id(schema)] = (schema, schema_chars(schema))
            total += tool_text_chars(tool_def) + known[1]
        return total

    def covered(self, estimate_usd: Decimal) -> bool:
        """Does the reservation already held (made ahead, in this month's counters) cover this
        request? Then it may be sent without another round trip: its admission was decided when
        that reservation was made, and it has been visible to every other run since."""
        return (
            not self.refused_ahead
            and self._month == services.month_of()
            and self.held_usd > 0
            and estimate_usd <= self.held_usd
        )

    async def reserve(self, estimate_usd: Decimal) -> None:
        """Reserve this request's estimate (replacing anything held for it), or raise BudgetExceeded."""
        if self._month != services.month_of():
            caps_before = self._caps
            # The run crossed into a new month (rare): the new month's counters, found or created.
            await sync_to_async(self._counters)()
            if self.held_usd:
                # What it held is in last month's counters.
                await services.release_move(
                    [cap.counter_id for cap in caps_before], self.held_usd
                ).run_on(self.db)
                self.held_usd = Decimal("0")
        await services.reserve_move(self._caps, estimate_usd, held_usd=self.held_usd).run_on(
            self.db
        )
        self.held_usd = estimate_usd
        self.refused_ahead = False

    async def release(self) -> None:
        """Give back whatever is held (a request that failed, a reservation ahead never used)."""
        if self.held_usd:
            await services.release_move(
                [cap.counter_id for cap in self._caps], self.held_usd
            ).run_on(self.db)
            self.held_usd = Decimal("0")

    def next_estimate(self, response: ModelResponse) -> Decimal:
        """What to reserve ahead for the request after ``response``: nothing when the response
        asks for no tool (the run is answering), otherwise this request's input plus the
        response plus room for the tool results, with the same output allowance."""
        if not response.tool_calls:
            return Decimal("0")
        chars = (
            self._last_input_chars
            + messages_chars([response])
            + AHEAD_INPUT_TOKENS * CHARS_PER_TOKEN
        )
        return price_usage(
            self.provider, self.model_name, tokens_for(chars), self._max_tokens
        ).cost_usd

    async def settle(
        self, response: ModelResponse, next_estimate_usd: Decimal = Decimal("0")
    ) -> RequestRecord:
        """Book the request (its reservation ``held_usd`` becomes its priced cost) and, in the same
        statement, reserve ``next_estimate_usd`` ahead for the next request when a cap allows it."""
        usage = response.usage
        model_name = response.model_name or self.model_name
        if self._month is None:
            raise RuntimeError("a request was settled on a meter that was never opened")
        charge = await services.charge_move(
            organization_id=self.organization_id,
            agent_id=self.agent_id,
            ledger_id=self.ledger_id,
            counter_ids=[cap.counter_id for cap in self._caps],
            month=self._month,
            kind=EntryKind.MODEL_REQUEST,
            provider=self.provider,
            model_name=model_name,
            input_tokens=usage.input_tokens or 0,
            output_tokens=usage.output_tokens or 0,
            reserved_usd=self.held_usd,
            next_caps=self._caps,
            next_reserve_usd=next_estimate_usd,
            delegation=self.delegation,
            billed_delegation=self.billed_delegation,
            warn_caps=self._caps,
        ).run_on(self.db)
        self.refused_ahead = charge.next_refused is not None
        self.held_usd = Decimal("0") if self.refused_ahead else next_estimate_usd
        record = RequestRecord(
            number=len(self.records) + 1,
            model_name=model_name,
            input_tokens=charge.input_tokens,
            output_tokens=charge.output_tokens,
            cost_usd=charge.cost_usd,
            priced=charge.priced,
            tool_calls=[call.tool_name for call in response.tool_calls],
        )
        self.records.append(record)
        return record

    def record_charge(
        self,
        *,
        kind: str,
        provider: str,
        model_name: str,
        input_tokens: int,
        output_tokens: int = 0,
    ):
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
            delegation=self.delegation,
            billed_delegation=self.billed_delegation,
            warn_caps=self._caps,
        )

    # -- spend a capability makes on the run's behalf, from the run's loop --------------------

    async def charge(
        self,
        *,
        kind: str,
        provider: str,
        model_name: str,
        input_tokens: int,
        output_tokens: int = 0,
    ) -> services.Charge:
        """Book a charge the guard did not see (a query embedding) on this run, from its loop."""
        if self._month is None:
            raise RuntimeError("a charge was booked on a meter that was never opened")
        return await services.charge_move(
            organization_id=self.organization_id,
            agent_id=self.agent_id,
            ledger_id=self.ledger_id,
            counter_ids=[cap.counter_id for cap in self._caps],
            month=self._month,
            kind=kind,
            provider=provider,
            model_name=model_name,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            delegation=self.delegation,
            billed_delegation=self.billed_delegation,
            warn_caps=self._caps,
        ).run_on(self.db)

    def side_estimate(self, prompt_chars: int, max_tokens: int = OUTPUT_RESERVE_TOKENS) -> Decimal:
        return price_usage(
            self.provider, self.model_name, tokens_for(prompt_chars), max_tokens
        ).cost_usd

    async def admit_side_request(self, estimate_usd: Decimal) -> None:
        """Reserve a request a capability sends on its own (a query expansion) beside whatever
        the run holds for its next request; raise BudgetExceeded, sending nothing, when a cap is
        spent."""
        await services.reserve_move(self._caps, estimate_usd).run_on(self.db)

    async def release_side_request(self, estimate_usd: Decimal) -> None:
        await services.release_move([cap.counter_id for cap in self._caps], estimate_usd).run_on(
            self.db
        )

    async def settle_side_request(
        self, response: ModelResponse, estimate_usd: Decimal
    ) -> RequestRecord:
        """Book an admitted side request as one of the run's model requests."""
        usage = response.usage
        model_name = response.model_name or self.model_name
        if self._month is None:
            raise RuntimeError("a side request was settled on a meter that was never opened")
        charge = await services.charge_move(
            organization_id=self.organization_id,
            agent_id=self.agent_id,
            ledger_id=self.ledger_id,
            counter_ids=[cap.counter_id for cap in self._caps],
            month=self._month,
            kind=EntryKind.MODEL_REQUEST,
            provider=self.provider,
            model_name=model_name,
            input_tokens=usage.input_tokens or 0,
            output_tokens=usage.output_tokens or 0,
            reserved_usd=estimate_usd,
            delegation=self.delegation,
            billed_delegation=self.billed_delegation,
            warn_caps=self._caps,
        ).run_on(self.db)
        record = RequestRecord(
            number=len(self.records) + 1,
            model_name=model_name,
            input_tokens=charge.input_tokens,
            output_tokens=charge.output_tokens,
            cost_usd=charge.cost_usd,
            priced=charge.priced,
            tool_calls=[],
        )
        self.records.append(record)
        return record

    async def book_ambient(self, *, kind: str, input_tokens: int, output_tokens: int):
        """Book, from the run's event loop, spend of the run's model the guard did not see (a
        summary an agent the harness built wrote). Recorded, never refused: the next request asks
        the counters again, so a cap this crossed refuses that request (docs/budgets.md)."""
        charge = await self.charge(
            kind=kind,
            provider=self.provider,
            model_name=self.model_name,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
        )
        # A reservation made ahead was admitted before this spend: ask again before the next one.
        self.refused_ahead = True
        return charge


@dataclass
class BudgetGuard(AbstractCapability[Any]):
    """Checks both monthly caps before every model request and books its cost after it.

    Every request is admitted by a reservation committed before it is sent. The first request of
    a run reserves on its own; each later one was usually reserved ahead, by the statement that
    settled the request before it (same check, same locks, docs/budgets.md "Reserved ahead"), and
    that settle runs while the run goes on (its tool calls, the next prompt) — so the request path
    itself waits for no database round trip. A request the reservation ahead does not cover (a
    long tool result, a new month) or that was refused ahead asks again before it is sent. The
    booking is always complete before the next request and before the run ends (``wrap_run``),
    which also gives back a reservation ahead that no request used.
    """

    meter: RunMeter = field(kw_only=True)
    # Called with each settled RequestRecord (the runner publishes a cost frame).
    on_settled: Any = None
    # The booking of the latest response, still being written.
    _booking: asyncio.Future | None = field(default=None, repr=False)

    async def wrap_run(self, ctx, *, handler):
        try:
            return await handler()
        finally:
            try:
                await self.settled()
            finally:
                await self.meter.release()

    async def settled(self) -> None:
        """Wait until the latest response is booked (raising what its booking raised).

        A cancellation does not abandon a booking half way — the request was paid for: it is held
        back until the booking is written, then goes on."""
        booking = self._booking
        if booking is None:
            return
        cancelled = False
        while not booking.done():
            try:
                await asyncio.wait({booking})
            except asyncio.CancelledError:
                cancelled = True
        self._booking = None
        if cancelled:
            raise asyncio.CancelledError
        booking.result()

    async def wrap_model_request(self, ctx, *, request_context, handler):
        meter = self.meter
        # The previous request is in the ledger and the counters before this one is admitted.
        await self.settled()
        estimate = meter.estimate(request_context)
        if not meter.covered(estimate):
            await meter.reserve(estimate)
        try:
            response = await handler(request_context)
        except BaseException:
            await meter.release()
            raise
        self._booking = asyncio.ensure_future(self._book(response, meter.next_estimate(response)))
        return response

    async def _book(self, response: ModelResponse, next_estimate: Decimal) -> None:
        record = await self.meter.settle(response, next_estimate)
        if self.on_settled is not None:
            self.on_settled(record)
