"""The console's Chat and Activity pages. Parse, call a service or a selector, render.

Chat: pick an agent and the conversation's approval mode, send a message; the page follows the
run's frames over the websocket (static/runs/chat.js) and reopening a conversation shows its
transcript with each turn's state, its charts (drawn on the server from the stored data) and the
approval / question cards of a run that is still parked.
Activity: the run history with every filter in the URL (the same parser and selector as
``GET /api/v1/runs/``), Started and Took headers that order the whole filtered set, a slow-runs
view, and a run's detail at ``?run=``; ``?tab=approvals`` is the approvals queue (apps.approvals'
own view context and template) for someone with approvals:decide, the run history for anyone else.
``/runs/`` (the approval alert's link) is Activity under its older name.
"""

from __future__ import annotations

import re

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.db.models import Min
from django.http import (
    Http404,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseRedirect,
    JsonResponse,
)
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from apps.agents.selectors import agent_for
from apps.approvals.choices import ApprovalMode
from apps.approvals.views import queue_context
from apps.audit.exports import console_download, with_shown_window
from apps.orgs import permissions as perms
from apps.orgs.access import organization_from_request

from . import selectors, services
from .choices import TERMINAL_STATUSES, RunStatus, Surface
from .events import newest_seq
from .exports import runs_export
from .filters import ORDERS, SLOW_RUN_MS, parse_run_history
from .transcript import chat_turns, run_trace, run_turn, step_timeline

PAGE_SIZE = 25


@login_required
def chat(request, conversation_id: int | None = None):
    organization = organization_from_request(request)
    conversation = None
    turns = []
    live_run = None
    live_run_seq = 0
    if conversation_id is not None:
        conversation = get_object_or_404(
            selectors.own_conversations(request.user, organization), pk=conversation_id
        )
        live_run = selectors.live_run_of(conversation)
        if live_run is not None:
            # Read before the turns: the page follows the run from here, so a frame that lands
            # while the turns are read arrives once (and the turn is redrawn when the run stops).
            live_run_seq = newest_seq(live_run.pk)
        turns = chat_turns(conversation)
    agents = selectors.runnable_agents(request.user, organization)
    selected_agent_id = (
        conversation.agent_id if conversation else _int_or_none(request.GET.get("agent"))
    )
    # The mode is the conversation's: the next turn keeps what the last one was sent with.
    last_run = conversation.runs.order_by("-created_at", "-pk").first() if conversation else None
    modes, mode_note = _approval_modes(request.user, organization)
    approval_mode = last_run.approval_mode if last_run else ApprovalMode.FOLLOW
    if approval_mode not in dict(modes):
        approval_mode = ApprovalMode.FOLLOW
    return render(
        request,
        "runs/chat.html",
        {
            "agents": agents,
            "selected_agent_id": selected_agent_id,
            "conversation": conversation,
            "conversations": selectors.own_conversations(request.user, organization)
            .select_related("agent")
            .order_by("-updated_at")[:50],
            "turns": turns,
            "last_gauge": next((t["context"] for t in reversed(turns) if t["context"]), None),
            "live_run": live_run,
            "live_run_seq": live_run_seq,
            "can_run": agents.exists(),
            "can_decide": perms.has_org_permission(
                request.user, organization, perms.APPROVALS_DECIDE
            ),
            # A written or inline specialist's panel offers to keep it as a draft agent.
            "can_edit_agents": perms.has_org_permission(
                request.user, organization, perms.AGENTS_EDIT
            ),
            "approval_modes": modes,
            "approval_mode": approval_mode,
            "approval_mode_note": mode_note,
            "terminal_statuses": sorted(TERMINAL_STATUSES),
            "status_labels": dict(RunStatus.choices),
        },
    )


def _approval_modes(user, organization) -> tuple[list[tuple[str, str]], str]:
    """The approval modes this person may choose in a chat, and why one is missing. The same
    conditions the approval gate enforces on the run (apps.approvals.gate.check_approval_mode):
    offering a mode that then fails the turn is a trap."""
    modes: list[tuple[str, str]] = [
        (ApprovalMode.FOLLOW, ApprovalMode.FOLLOW.label),
        (ApprovalMode.ASK_ALL, ApprovalMode.ASK_ALL.label),
    ]
    if not perms.has_org_permission(user, organization, perms.APPROVALS_DECIDE):
        return modes, (
            "“Approve everything” needs the approvals:decide permission (owners, admins and "
            "operators)."
        )
    if not organization.chat_may_waive_approvals:
        # Whoever may decide approvals may also turn the switch on (apps.orgs.services).
        return modes, (
            "“Approve everything” is off for this organization: turn on “Chat may waive "
            "approvals” in Settings → Organization to offer it."
        )
    modes.insert(1, (ApprovalMode.APPROVE_ALL, ApprovalMode.APPROVE_ALL.label))
    return (
        modes,
        "“Approve everything” runs gated tools without asking, for this conversation only.",
    )


@login_required
def chat_turn(request, conversation_id: int, run_id: int):
    """One run's assistant turn as the transcript draws it (the live page swaps it in when the
    run ends, so what it shows is what a reload shows)."""
    organization = organization_from_request(request)
    conversation = get_object_or_404(
        selectors.own_conversations(request.user, organization), pk=conversation_id
    )
    turn = run_turn(conversation, run_id)
    if turn is None:
        raise Http404("That run has no turn in this conversation yet.")
    return render(
        request,
        "runs/_turn.html",
        {
            "turn": turn,
            "agent_name": conversation.agent.name,
            "thumbs": True,
            "can_decide": perms.has_org_permission(
                request.user, organization, perms.APPROVALS_DECIDE
            ),
        },
    )


@login_required
@require_POST
def conversation_delete(request, conversation_id: int):
    """Delete one of your conversations (its messages and stored media; its runs stay in
    Activity). Back to the chat; a conversation with a run still going says so instead (409)."""
    organization = organization_from_request(request)
    conversation = get_object_or_404(
        selectors.own_conversations(request.user, organization), pk=conversation_id
    )
    try:
        services.conversation_delete(actor=request.user, conversation=conversation)
    except services.ConversationBusy as busy:
        return HttpResponse(busy.sentence, status=409, content_type="text/plain")
    return redirect("runs:chat")


@login_required
@require_POST
def chat_send(request):
    """Start a chat turn. Answers JSON for the page's script, a redirect without one."""
    organization = organization_from_request(request)
    # Any agent the person can see; whether they may run it is run_create's to say (a 403).
    agent = agent_for(request.user, organization, _int_or_none(request.POST.get("agent_id")))
    if agent is None:
        raise Http404
    conversation = None
    if request.POST.get("conversation_id"):
        conversation = selectors.conversation_for_writer(
            request.user, organization, _int_or_none(request.POST["conversation_id"])
        )
        if conversation is None:
            raise Http404("No such conversation.")
    approval_mode = request.POST.get("approval_mode") or ApprovalMode.FOLLOW
    if approval_mode not in ApprovalMode.values:
        # Whether the session may have a known mode is prepare()'s to say, in the turn itself.
        message = f"{approval_mode!r} is not an approval mode (use follow, approve_all or ask_all)."
        if request.headers.get("accept") == "application/json":
            return JsonResponse({"error": message}, status=422)
        return HttpResponseBadRequest(message)
    try:
        run = services.run_create(
            actor=request.user,
            organization=organization,
            agent=agent,
            input=request.POST.get("message", ""),
            conversation=conversation,
            surface=Surface.CHAT,
            approval_mode=approval_mode,
        )
    except PermissionDenied as denied:
        return JsonResponse({"error": str(denied)}, status=403)
    except ValidationError as error:
        if request.headers.get("accept") == "application/json":
            return JsonResponse({"error": " ".join(error.messages)}, status=422)
        return HttpResponseBadRequest(" ".join(error.messages))
    url = reverse("runs:conversation", args=[run.conversation_id])
    if request.headers.get("accept") == "application/json":
        return JsonResponse(
            {"run_id": run.pk, "conversation_id": run.conversation_id, "url": url}, status=201
        )
    return redirect(url)


def _int_or_none(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


# --- Activity ------------------------------------------------------------------------------

# Seed 003 names for links from the dashboard: ?sort=duration and ?agent=<id>.
_ALIASES = {"sort": "order_by", "agent": "agent_id"}
# What the page's own controls add besides the filters; never passed to the parser.
_PAGE_PARAMS = {"page", "run", "view", "tab"}


def _history_params(request):
    params = request.GET.copy()
    for alias, name in _ALIASES.items():
        if alias in params and name not in params:
            params.setlist(name, params.getlist(alias))
        params.pop(alias, None)
    if request.GET.get("view") == "slow":
        # The slow-runs view: the duration order plus a 30 s threshold, in one click.
        params.setdefault("took_over_ms", str(SLOW_RUN_MS))
        params.setdefault("order_by", "duration")
    for name in _PAGE_PARAMS:
        params.pop(name, None)
    return params


@login_required
def runs_redirect(request):
    """``/runs`` is Activity under the name the approval alert links to (``?tab=approvals&org=``)."""
    target = reverse("runs:activity")
    query = request.META.get("QUERY_STRING", "")
    return HttpResponseRedirect(f"{target}?{query}" if query else target)


@login_required
def activity(request):
    organization = organization_from_request(request)
    can_decide = perms.has_org_permission(request.user, organization, perms.APPROVALS_DECIDE)
    if request.GET.get("tab") == "approvals" and can_decide:
        return render(
            request,
            "runs/activity_approvals.html",
            queue_context(request, organization, back_to=request.get_full_path())
            | {"history_link": reverse("runs:activity")},
        )
    params = _history_params(request)
    errors = {}
    try:
        filters = parse_run_history(params)
        runs = selectors.run_history(request.user, organization, filters)
    except ValidationError as error:
        errors = _human_errors(error.message_dict)
        filters = parse_run_history({})
        runs = selectors.run_history(request.user, organization, filters).none()
    page = Paginator(runs, PAGE_SIZE).get_page(request.GET.get("page"))

    detail = None
    if request.GET.get("run"):
        run = selectors.run_for_reader(request.user, organization, _int_or_none(request.GET["run"]))
        if run is not None:
            detail = {
                "run": run,
                "trace": run_trace(run),
                "transcript": (transcript := selectors.run_transcript(run)),
                "timeline": step_timeline(run, transcript["steps"]),
                "delegations": selectors.delegations_of(run),
                "parent": run.parent_run
                if run.parent_run_id
                and selectors.run_for_reader(request.user, organization, run.parent_run_id)
                else None,
            }

    def link(**changes) -> str:
        query = request.GET.copy()
        for name, value in changes.items():
            query.pop(name, None)
            if value is not None:
                query[name] = value
        return "?" + query.urlencode() if query else "?"

    def sort_link(order: str) -> str:
        current = filters.order_by == order
        descending = "false" if current and filters.descending else "true"
        return link(order_by=order, sort=None, descending=descending, page=None, run=None)

    return render(
        request,
        "runs/activity.html",
        {
            "page": page,
            "count": page.paginator.count,
            "filters": filters,
            "errors": errors,
            "detail": detail,
            "view": request.GET.get("view") or "all",
            "statuses": RunStatus.choices,
            "surfaces": Surface.choices,
            "orders": ORDERS,
            "selected_statuses": set(filters.statuses),
            "query": request.GET,
            "started_link": sort_link("started_at"),
            "took_link": sort_link("duration"),
            "rows": [{"run": run, "detail_link": link(run=run.pk)} for run in page],
            "previous_link": link(page=page.previous_page_number())
            if page.has_previous()
            else None,
            "next_link": link(page=page.next_page_number()) if page.has_next() else None,
            "all_runs_link": "?" + _window_only(request.GET),
            "slow_runs_link": "?" + _window_only(request.GET, view="slow"),
            "close_detail_link": link(run=None),
            "slow_threshold_s": SLOW_RUN_MS // 1000,
            "can_decide": can_decide,
            "can_download": perms.has_org_permission(request.user, organization, perms.RUNS_VIEW),
            "download_link": _download_link(request, runs, filters),
            "period_choices": _period_choices(filters),
        },
    )


# The filter form's own names for the parser's fields, and its sentences in the person's words.
_FILTER_LABELS = {
    "status": "Status",
    "surface": "Surface",
    "model_label": "Model",
    "started_from": "From",
    "started_to": "To",
    "took_over_ms": "Took over (ms)",
    "order_by": "Order",
    "descending": "Order",
    "agent_id": "Agent",
    "user_id": "Person",
    "rated": "Rated",
    "period": "Period",
}
_FILTER_SENTENCES = [
    (
        re.compile(r"^'(?P<v>.*)' is not an id \(a positive integer\)$"),
        "“{v}” is not a whole number",
    ),
    (re.compile(r"^'(?P<v>.*)' is not true or false$"), "“{v}” is neither yes nor no"),
]


def _human_errors(message_dict: dict) -> dict:
    """{label: [sentence]}: "took_over_ms: 'abc' is not an id" reads "Took over (ms): “abc” is
    not a whole number"."""
    out: dict[str, list[str]] = {}
    for field, problems in message_dict.items():
        label = _FILTER_LABELS.get(field, field.replace("_", " ").capitalize())
        for problem in problems:
            for pattern, sentence in _FILTER_SENTENCES:
                if match := pattern.match(problem):
                    problem = sentence.format(**match.groupdict())
                    break
            out.setdefault(label, []).append(problem)
    return out


@login_required
def activity_download(request):
    """The run history as shown, as CSV (seed 003, "Exportar a CSV"): runs:view, both ends of the
    date range, at most 10,000 rows, audited before the file leaves."""
    organization_from_request(request, perms.RUNS_VIEW)

    def export(**kwargs):
        return runs_export(**{**kwargs, "params": _history_params(request)})

    return console_download(request, export, page_url=reverse("runs:activity"))


def _download_link(request, runs, filters) -> str:
    """The CSV link of the history as shown: its filters, and the window the page shows made
    explicit (an export needs both dates; a page without them shows every run up to now)."""
    query = request.GET.copy()
    for name in ("page", "run"):
        query.pop(name, None)
    if query.get("period") and filters.period_days:
        # An export takes both ends as dates: the period's first day through today.
        query.pop("period")
        query["started_from"] = filters.started_from.date().isoformat()
    earliest = runs.order_by().aggregate(earliest=Min("started"))["earliest"]
    query = with_shown_window(query, ("started_from", "started_to"), earliest=earliest)
    return f"{reverse('runs:activity-download')}?{query.urlencode()}"


# The window is its own axis of the page: "All runs" and "Slow runs" keep it.
WINDOW_PARAMS = ("started_from", "started_to", "period")
# The periods the filter form offers; a link may carry any other (1d..366d), which is then added.
PERIOD_CHOICES = (7, 30, 90)


def _period_choices(filters) -> list[tuple[str, str]]:
    days = sorted({*PERIOD_CHOICES, *([filters.period_days] if filters.period_days else [])})
    return [(f"{n}d", f"Last {n} day{'s' if n != 1 else ''}") for n in days]


def _window_only(query, **extra) -> str:
    """ "All runs" and "Slow runs" keep the date window (its own axis) and drop everything else."""
    kept = query.copy()
    for name in list(kept.keys()):
        if name not in WINDOW_PARAMS:
            kept.pop(name)
    for name, value in extra.items():
        kept[name] = value
    return kept.urlencode()
