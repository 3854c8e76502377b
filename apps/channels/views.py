"""The chat platforms' inbound webhooks, the private link page, and the writes of the Builder's
"Where this agent is available" section (drawn by ``builder.channels_section``).

Inbound, in this order: size, the binding the path names, the platform's proof (a bad, stale or
missing one is a 403 and nothing is written), then parse, deduplicate and hand the message to a
worker — the webhook answers within the platform's deadline (Slack wants an answer in three
seconds) and the run never runs in the request.
"""

from __future__ import annotations

import json
import logging

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, RequestDataTooBig, ValidationError
from django.http import Http404, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from apps.agents.selectors import agent_for
from apps.audit.impersonation import refuse_while_impersonating
from apps.orgs.access import organization_from_request

from . import selectors, services, verification
from .bots import server_host, verification_secret
from .builder import TEST_RESULT_SESSION_KEY
from .choices import Platform, UnlinkedSenders
from .platforms import parse_mattermost, parse_slack, parse_telegram

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 256 * 1024
REFUSED = {"detail": "The request is not signed by this binding's platform."}


def _refused(binding_id, reason: str) -> JsonResponse:
    logger.info("channel binding %s: inbound refused (%s)", binding_id, reason)
    return JsonResponse(REFUSED, status=403)


def _accept(binding, inbound) -> JsonResponse:
    outcome, message = services.inbound_admit(binding=binding, inbound=inbound)
    if outcome == "ignored":
        return JsonResponse({"ok": True, "ignored": True})
    if outcome == "disabled":
        # Verified, so the platform is told it arrived (and stops retrying); nothing runs.
        return JsonResponse({"ok": True, "ignored": "the binding is disabled"})
    if outcome == "duplicate" or message is None:
        return JsonResponse({"ok": True, "duplicate": True})
    return JsonResponse({"ok": True, "message_id": message.pk})


def _too_large(request):
    try:
        size = len(request.body)
    except RequestDataTooBig:
        # Over DATA_UPLOAD_MAX_MEMORY_SIZE Django will not read it: the same JSON 413, not its
        # HTML 400 page (a platform's retry logic reads the status and the JSON).
        size = None
    if size is None or size > MAX_BODY_BYTES:
        return JsonResponse({"detail": f"At most {MAX_BODY_BYTES} bytes."}, status=413)
    return None


@csrf_exempt
@require_POST
def slack_events(request, binding_id: int):
    """Slack's Events API: ``url_verification`` (answered with its challenge once signed) and
    ``event_callback`` (a DM or a mention). Retries carry the same ``event_id``: one run."""
    if (large := _too_large(request)) is not None:
        return large
    binding = selectors.binding_for_webhook(binding_id, Platform.SLACK)
    if binding is None:
        return _refused(binding_id, "no such Slack binding")
    try:
        verification.verify_slack(verification_secret(binding), request.body, request.META)
    except verification.NotFromPlatform as exc:
        return _refused(binding.pk, exc.reason)
    try:
        payload = json.loads(request.body or b"{}")
    except ValueError:
        return JsonResponse({"detail": "The body is not JSON."}, status=400)
    if not isinstance(payload, dict):
        return JsonResponse({"detail": "The body is not a JSON object."}, status=400)
    if payload.get("type") == "url_verification":
        return JsonResponse({"challenge": payload.get("challenge", "")})
    return _accept(binding, parse_slack(payload))


@csrf_exempt
@require_POST
def telegram_webhook(request, binding_id: int):
    """Telegram's webhook: one ``Update`` per call, proven by the secret token header."""
    if (large := _too_large(request)) is not None:
        return large
    binding = selectors.binding_for_webhook(binding_id, Platform.TELEGRAM)
    if binding is None:
        return _refused(binding_id, "no such Telegram binding")
    try:
        verification.verify_telegram(verification_secret(binding), request.META)
    except verification.NotFromPlatform as exc:
        return _refused(binding.pk, exc.reason)
    try:
        payload = json.loads(request.body or b"{}")
    except ValueError:
        return JsonResponse({"detail": "The body is not JSON."}, status=400)
    return _accept(binding, parse_telegram(payload) if isinstance(payload, dict) else None)


@csrf_exempt
@require_POST
def mattermost_webhook(request, binding_id: int):
    """A Mattermost outgoing webhook: the token in the payload is the whole check (Mattermost
    does not sign bodies). Mattermost shows the answer's ``text`` as a post, so the answer is
    empty: the reply comes from the bot, in the post's thread."""
    if (large := _too_large(request)) is not None:
        return large
    binding = selectors.binding_for_webhook(binding_id, Platform.MATTERMOST)
    if binding is None:
        return _refused(binding_id, "no such Mattermost binding")
    try:
        payload = verification.mattermost_payload(request.body, request.content_type or "")
        verification.verify_mattermost(verification_secret(binding), payload)
    except verification.NotFromPlatform as exc:
        return _refused(binding.pk, exc.reason)
    return _accept(binding, parse_mattermost(payload, server_host=server_host(binding)))


# --- the private link -----------------------------------------------------------------------


@login_required
def link_page(request, token: str):
    """Confirm linking the platform account that asked for this link to the account signed in.
    Refused with a 403 while impersonating: an admin's session would pin the platform account
    to someone else's account, past the impersonation's hour."""
    link_request = services.link_request_for(token)
    if link_request is None:
        raise Http404("This link is not valid any more: send `link` to the bot again.")
    if request.method == "POST":
        refuse_while_impersonating(request)
        link = services.account_link_confirm(actor=request.user, request=link_request)
        return render(request, "channels/link_done.html", {"link": link}, status=200)
    refuse_while_impersonating(request)
    return render(request, "channels/link_confirm.html", {"link_request": link_request})


# --- the console: the Builder's "Where this agent is available" section ----------------------


def _agent(request, agent_id):
    agent = agent_for(request.user, organization_from_request(request), agent_id)
    if agent is None:
        raise Http404("No such agent.")
    return agent


def _to_section(agent, anchor: str = "channels", *, query: str = ""):
    return redirect(reverse("agents:builder", args=[agent.pk]) + query + f"#{anchor}")


@login_required
def binding_list(request, agent_id):
    """The section lives in the Builder now; the old address of its tab leads there."""
    return _to_section(_agent(request, agent_id))


def _optional_int(raw):
    raw = (raw or "").strip()
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        return -1  # out of range: the service names the field


@login_required
@require_POST
def binding_new(request, agent_id):
    agent = _agent(request, agent_id)
    tools = request.POST.getlist("channel_tools")
    try:
        binding = services.binding_create(
            actor=request.user,
            organization=request.organization,
            agent=agent,
            platform=request.POST.get("platform", ""),
            name=request.POST.get("name", ""),
            bot_token_secret_id=_optional_int(request.POST.get("bot_token_secret_id")),
            verification_secret_id=_optional_int(request.POST.get("verification_secret_id")),
            server_url=request.POST.get("server_url", "").strip(),
            prompt=request.POST.get("prompt", ""),
            channel_tools={"tools": tools} if tools else None,
            unlinked_senders=request.POST.get("unlinked_senders", UnlinkedSenders.RUN),
            sender_limit_per_minute=_optional_int(request.POST.get("sender_limit_per_minute")),
        )
    except PermissionDenied as exc:
        messages.error(request, str(exc))
    except ValidationError as exc:
        for field, problems in exc.message_dict.items():
            messages.error(request, f"{field}: {' '.join(problems)}")
    else:
        messages.success(
            request, f"{binding.name} is bound. Point the platform at its webhook URL."
        )
        return _to_section(agent, f"binding-{binding.pk}")
    # Refused: back at the form, open, with the reasons above it.
    return _to_section(agent, "new-binding", query="?add_binding=1")


@login_required
@require_POST
def binding_action(request, agent_id, binding_id, verb):
    agent = _agent(request, agent_id)
    binding = selectors.binding_for(request.user, request.organization, binding_id)
    if binding is None or binding.agent_id != agent.pk:
        raise Http404("No such binding.")
    try:
        if verb == "disable":
            services.binding_disable(actor=request.user, binding=binding)
        elif verb == "enable":
            services.binding_enable(actor=request.user, binding=binding)
        elif verb in ("test", "register-webhook"):
            ask = services.binding_test if verb == "test" else services.binding_register_webhook
            worked, said = ask(actor=request.user, binding=binding)
            request.session[TEST_RESULT_SESSION_KEY] = {
                "binding_id": binding.pk,
                "ok": worked,
                "text": said,
            }
        else:
            raise Http404("No such action.")
    except PermissionDenied as exc:
        messages.error(request, str(exc))
    return _to_section(agent, f"binding-{binding.pk}")
