"""Every write of chat channels: bindings (create, disable, enable, test), inbound messages
(accept, handle), account links. Each under ``transaction.atomic`` and audited in the same
transaction where a person acted.

Who may bind an agent to a chat platform: whoever may publish it (``agents:publish`` or a
publish grant) — a binding puts the published agent in front of everyone in a workspace.
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets as token_source
from datetime import timedelta
from typing import TYPE_CHECKING, cast

from celery import current_app
from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from pydantic import ValidationError as PydanticValidationError

from apps.agents.selectors import can
from apps.approvals.models import Question
from apps.approvals.services import AlreadyDecided, question_answer
from apps.audit.services import record_audit
from apps.capabilities.registry import get_capability
from apps.notifications.links import approvals_queue_link
from apps.runs import services as run_services
from apps.runs.choices import RunStatus
from apps.runs.exposures import segment_observed
from apps.runs.models import Conversation, Run
from apps.runs.runner import execute_run
from apps.vault.models import Secret, SecretPurpose

from . import limits
from .bots import BotUnavailable, client_of, verification_secret
from .choices import SANDBOX_SCOPES, MessageOutcome, Platform, UnlinkedSenders
from .models import AccountLink, Binding, ChannelMessage, ChatThread, LinkRequest
from .platforms import Inbound, PlatformError, ServerRefused, check_server_url
from .relay import ENDINGS

if TYPE_CHECKING:
    from apps.capabilities.catalog.channels import ChannelToolsConfig

logger = logging.getLogger(__name__)

HANDLE_TASK = "apps.channels.tasks.handle_message"
MAX_PROMPT_CHARS = 20_000
LINK_WORD = "link"
# What Telegram's platform cannot answer a bot (no directory of chats, no history of messages it
# was not sent): granting them on a Telegram binding is refused, not silently dropped.
UNANSWERABLE: dict[str, set[str]] = {Platform.TELEGRAM: {"search_channels", "read_channel_history"}}


def _require_publish(actor, agent) -> None:
    if not can(actor, agent, "publish"):
        raise PermissionDenied(
            f"Binding {agent.name} to a chat platform needs agents:publish on it."
        )


def _secret(organization, field: str, secret_id) -> Secret | None:
    if secret_id is None:
        return None
    secret = Secret.objects.filter(organization=organization, pk=secret_id).first()
    if secret is None:
        raise ValidationError({field: "no such secret in this organization's vault"})
    if secret.purpose != SecretPurpose.CHANNEL:
        raise ValidationError(
            {field: f"the secret is stored for {secret.get_purpose_display()}, not a chat platform"}
        )
    return secret


def _channel_tools(platform: str, value) -> dict:
    if value in (None, {}):
        return {}
    if not isinstance(value, dict):
        raise ValidationError({"channel_tools": "must be an object with tools and default_limit"})
    try:
        config = cast("ChannelToolsConfig", get_capability("channel_tools").parse_config(value))
    except PydanticValidationError as exc:
        problems = [f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}" for e in exc.errors()]
        raise ValidationError({"channel_tools": problems}) from None
    unanswerable = sorted(set(config.tools) & UNANSWERABLE.get(platform, set()))
    if unanswerable:
        raise ValidationError(
            {
                "channel_tools": (
                    f"{Platform(platform).label} cannot answer {', '.join(unanswerable)}: it gives "
                    "a bot no directory of chats and no history of messages it was not sent"
                )
            }
        )
    return config.model_dump()


@transaction.atomic
def binding_create(
    *,
    actor,
    organization,
    agent,
    platform,
    name,
    bot_token_secret_id,
    verification_secret_id,
    server_url: str = "",
    prompt: str = "",
    sandbox_scope: str = "",
    channel_tools=None,
    unlinked_senders: str = UnlinkedSenders.RUN,
    sender_limit_per_minute: int | None = None,
) -> Binding:
    """A new binding of a published agent to one bot; 422s name the field at fault."""
    if agent.organization_id != organization.pk:
        raise ValidationError({"agent_id": "no such agent"})
    _require_publish(actor, agent)
    errors: dict = {}
    if agent.current_version_id is None:
        errors["agent_id"] = "the agent has no published version yet; publish it first"
    if platform not in Platform.values:
        errors["platform"] = f"must be one of {', '.join(Platform.values)}"
    if not isinstance(name, str) or not name.strip() or len(name) > 120:
        errors["name"] = "must be 1 to 120 characters"
    if not isinstance(prompt, str) or len(prompt) > MAX_PROMPT_CHARS:
        errors["prompt"] = f"at most {MAX_PROMPT_CHARS} characters"
    if sandbox_scope not in ("", *SANDBOX_SCOPES):
        errors["sandbox_scope"] = f"blank (the spec's) or one of {', '.join(SANDBOX_SCOPES)}"
    if unlinked_senders not in UnlinkedSenders.values:
        errors["unlinked_senders"] = f"must be one of {', '.join(UnlinkedSenders.values)}"
    if sender_limit_per_minute is not None and not 1 <= sender_limit_per_minute <= 1000:
        errors["sender_limit_per_minute"] = "from 1 to 1000, or null for the deployment's"
    if bot_token_secret_id is None:
        errors["bot_token_secret_id"] = "the bot's token is required (a vault secret id)"
    if verification_secret_id is None:
        errors["verification_secret_id"] = (
            "required: without it every webhook call would be refused (Slack's signing secret, "
            "Telegram's secret token, Mattermost's outgoing webhook token)"
        )
    if platform == Platform.MATTERMOST:
        try:
            server_url = check_server_url(server_url)
        except ServerRefused as exc:
            errors["server_url"] = exc.sentence
    elif server_url:
        errors["server_url"] = "only a Mattermost binding names a server"
    bot_token = verification = None
    tools: dict = {}
    try:
        bot_token = _secret(organization, "bot_token_secret_id", bot_token_secret_id)
    except ValidationError as exc:
        errors.update(exc.message_dict)
    try:
        verification = _secret(organization, "verification_secret_id", verification_secret_id)
    except ValidationError as exc:
        errors.update(exc.message_dict)
    if platform in Platform.values:
        try:
            tools = _channel_tools(platform, channel_tools)
        except ValidationError as exc:
            errors.update(exc.message_dict)
    if errors:
        raise ValidationError(errors)
    binding = Binding.objects.create(
        organization=organization,
        agent=agent,
        platform=platform,
        name=name.strip(),
        bot_token=bot_token,
        verification_secret=verification,
        server_url=server_url,
        prompt=prompt,
        sandbox_scope=sandbox_scope,
        channel_tools=tools,
        unlinked_senders=unlinked_senders,
        sender_limit_per_minute=sender_limit_per_minute,
        created_by=actor,
    )
    record_audit(
        actor=actor,
        organization=organization,
        action="channel.binding.create",
        subject=binding,
        details={
            "agent_id": agent.pk,
            "platform": platform,
            "channel_tools": binding.channel_tools,
            "unlinked_senders": unlinked_senders,
        },
    )
    return binding


def _set_enabled(*, actor, binding: Binding, enabled: bool) -> Binding:
    _require_publish(actor, binding.agent)
    binding.enabled = enabled
    binding.disabled_reason = ""
    binding.save(update_fields=["enabled", "disabled_reason"])
    record_audit(
        actor=actor,
        organization=binding.organization,
        action="channel.binding.enable" if enabled else "channel.binding.disable",
        subject=binding,
    )
    return binding


@transaction.atomic
def binding_disable(*, actor, binding: Binding) -> Binding:
    """Stop answering: the webhook still verifies (so the platform stops retrying), and nothing
    reaches the runner."""
    return _set_enabled(actor=actor, binding=binding, enabled=False)


@transaction.atomic
def binding_enable(*, actor, binding: Binding) -> Binding:
    return _set_enabled(actor=actor, binding=binding, enabled=True)


def binding_test(*, actor, binding: Binding) -> tuple[bool, str]:
    """Ask the platform who the bot is with its token: (worked, what the platform said)."""
    _require_publish(actor, binding.agent)
    try:
        return True, client_of(binding).check()
    except (BotUnavailable, PlatformError) as exc:
        return False, getattr(exc, "sentence", str(exc))


def binding_register_webhook(*, actor, binding: Binding) -> tuple[bool, str]:
    """Telegram only: hand Telegram the webhook URL and the binding's secret token
    (``setWebhook``), which is what makes its calls carry the token this deployment checks.
    Slack and Mattermost are pointed at the URL in their own settings."""
    _require_publish(actor, binding.agent)
    if binding.platform != Platform.TELEGRAM:
        raise ValidationError(
            {
                "platform": "only a Telegram webhook is registered from here; paste the URL into "
                f"{Platform(binding.platform).label}'s settings"
            }
        )
    secret = verification_secret(binding)
    if not secret:
        return False, "The binding's secret token cannot be read, so nothing was registered."
    try:
        client_of(binding).set_webhook(webhook_url(binding), secret)
    except (BotUnavailable, PlatformError) as exc:
        return False, getattr(exc, "sentence", str(exc))
    with transaction.atomic():
        record_audit(
            actor=actor,
            organization=binding.organization,
            action="channel.binding.register_webhook",
            subject=binding,
            details={"url": webhook_url(binding)},
        )
    return True, f"Telegram now sends this bot's messages to {webhook_url(binding)}."


def webhook_path(binding: Binding) -> str:
    leaf = "events" if binding.platform == Platform.SLACK else "webhook"
    return f"/channels/{binding.platform}/{binding.pk}/{leaf}/"


def webhook_url(binding: Binding) -> str:
    return settings.AGENTICOS_PUBLIC_URL.rstrip("/") + webhook_path(binding)


# --- inbound ------------------------------------------------------------------------------------


def message_accept(*, binding: Binding, inbound: Inbound) -> ChannelMessage | None:
    """Record a verified message and hand it to a worker on commit; None for a platform retry of
    one already accepted (the unique delivery id lets exactly one through)."""
    try:
        with transaction.atomic():
            message = ChannelMessage.objects.create(
                binding=binding,
                delivery_id=inbound.delivery_id,
                sender_id=inbound.account_key[:128],
                event=inbound.as_json(),
            )
    except IntegrityError:
        return None

    def after_commit() -> None:
        # By the task's registered name: tasks.py imports this module, not the other way round.
        current_app.tasks[HANDLE_TASK].delay(message.pk)

    transaction.on_commit(after_commit)
    return message


def inbound_admit(
    *, binding: Binding, inbound: Inbound | None
) -> tuple[str, ChannelMessage | None]:
    """The one admission path of a verified inbound message, whichever way it arrived (a
    platform's webhook, or the Mattermost event stream): what the bot does not answer is
    ``ignored``, a disabled binding runs nothing (``disabled``), a message already accepted —
    a platform retry, or the same post seen by both the webhook and the stream — is a
    ``duplicate``; otherwise it is ``accepted`` and handed to a worker on commit."""
    if inbound is None:
        return "ignored", None
    if not binding.enabled:
        return "disabled", None
    with transaction.atomic():
        message = message_accept(binding=binding, inbound=inbound)
    if message is None:
        return "duplicate", None
    return "accepted", message


def _finish(message: ChannelMessage, outcome: str, detail: str = "", **fields) -> ChannelMessage:
    message.outcome = outcome
    message.detail = detail[:500]
    for name, value in fields.items():
        setattr(message, name, value)
    message.save(update_fields=["outcome", "detail", *fields])
    return message


def _reply(client, inbound: Inbound, text: str) -> list[str]:
    try:
        return [client.post(inbound.target, text)]
    except PlatformError as exc:
        logger.info("channel reply refused: %s", exc.sentence)
        return []


def linked_user(organization, platform: str, account_key: str):
    link = (
        AccountLink.objects.filter(
            organization=organization, platform=platform, account_key=account_key
        )
        .select_related("user")
        .first()
    )
    return link.user if link is not None and link.user.is_active else None


def owner_refusal(binding: Binding) -> str | None:
    """Why the person who bound the agent can no longer vouch for it, or None."""
    owner = binding.created_by
    if owner is None or not owner.is_active:
        return "the person who bound this agent is no longer active"
    if not owner.is_superuser and binding.organization.role_of(owner) is None:
        return "the person who bound this agent left the organization"
    if not can(owner, binding.agent, "run"):
        return "the person who bound this agent may no longer run it"
    return None


def thread_for(binding: Binding, inbound: Inbound, user) -> ChatThread:
    """The chat's thread, opened with its conversation on the first message. A group chat's
    conversation carries the room as ``group_chat_key``: its own memory store, and conversation
    search refused there (apps.memory.ownership); a direct message's belongs to its sender."""
    thread = (
        ChatThread.objects.filter(binding=binding, chat_key=inbound.chat_key)
        .select_related("conversation")
        .first()
    )
    if thread is not None:
        return thread
    conversation = Conversation.objects.create(
        organization=binding.organization,
        agent=binding.agent,
        user=user if inbound.is_direct else None,
        surface=binding.platform,
        title=inbound.text.strip()[:200],
        group_chat_key="" if inbound.is_direct else inbound.room_key[:255],
    )
    return ChatThread.objects.create(
        binding=binding, chat_key=inbound.chat_key[:255], conversation=conversation
    )


def _parked_run(conversation) -> Run | None:
    return (
        Run.objects.filter(
            conversation=conversation,
            status__in=[RunStatus.AWAITING_APPROVAL, RunStatus.AWAITING_ANSWER],
        )
        .order_by("-created_at")
        .first()
    )


_NUMBERS = re.compile(r"^\s*\d+(\s*,\s*\d+)*\s*$")


def answers_from_text(questions: list[dict], text: str) -> list[dict]:
    """A thread reply as the answers to a question card: option numbers ("2", "1, 3") or words
    of its own; several questions take their answers separated by ';' in order."""
    parts = [part.strip() for part in text.split(";")] if len(questions) > 1 else [text.strip()]
    answers = []
    for index, question in enumerate(questions):
        part = parts[index] if index < len(parts) else ""
        options = [option.get("label", "") for option in question.get("options") or []]
        if _NUMBERS.match(part):
            picked = [int(n) for n in part.replace(" ", "").split(",")]
            if any(not 1 <= n <= len(options) for n in picked):
                raise ValidationError(
                    {
                        "answers": f"choose a number from 1 to {len(options)} for “{question.get('header')}”"
                    }
                )
            answers.append(
                {"header": question.get("header", ""), "selected": [options[n - 1] for n in picked]}
            )
        else:
            answers.append(
                {"header": question.get("header", ""), "selected": [], "custom_answer": part}
            )
    return answers


def link_request_create(*, binding: Binding, inbound: Inbound) -> str:
    """A private link for the sender of ``link``; returns its URL (the token only lives there)."""
    token = token_source.token_urlsafe(32)
    LinkRequest.objects.create(
        binding=binding,
        token_hash=hashlib.sha256(token.encode()).hexdigest(),
        account_key=inbound.account_key,
        display_name=inbound.sender_name[:200],
        expires_at=timezone.now() + timedelta(minutes=settings.CHANNEL_LINK_EXPIRY_MINUTES),
    )
    return f"{settings.AGENTICOS_PUBLIC_URL.rstrip('/')}/channels/link/{token}/"


def message_handle(message_id: int) -> ChannelMessage:
    """The worker's half: decide what an accepted message gets — a private link, a "try again
    in N s", a refusal, the answer to a parked question, or a run (left ``queued`` for
    :func:`message_drive`)."""
    with transaction.atomic():
        message = (
            ChannelMessage.objects.select_for_update(of=("self",))
            .select_related(
                "binding__organization",
                "binding__agent",
                "binding__created_by",
                "binding__bot_token",
            )
            .get(pk=message_id)
        )
        if message.outcome != MessageOutcome.QUEUED:
            return message
        binding = message.binding
        inbound = Inbound.from_json(message.event)
        try:
            client = client_of(binding, team_id=inbound.target.get("team_id", ""))
        except (BotUnavailable, PlatformError) as exc:
            return _finish(message, MessageOutcome.REFUSED, f"The bot cannot be used: {exc}")
        if not binding.enabled:
            return _finish(message, MessageOutcome.REFUSED, "The binding is disabled.")
        wait = limits.sender_admit(binding, inbound.account_key)
        if wait is not None:
            sentence = (
                f"You are sending messages faster than this bot answers "
                f"({limits.limit_of(binding)} a minute). Try again in {wait} s."
            )
            return _finish(
                message,
                MessageOutcome.LIMITED,
                sentence,
                reply_ids=_reply(client, inbound, sentence),
            )
        if inbound.text.strip().lower() == LINK_WORD:
            return _link(message, binding, inbound, client)
        user = linked_user(binding.organization, binding.platform, inbound.account_key)
        refusal = _who_refusal(binding, user)
        if refusal is not None:
            return _finish(
                message, MessageOutcome.REFUSED, refusal, reply_ids=_reply(client, inbound, refusal)
            )
        thread = thread_for(binding, inbound, user)
        parked = _parked_run(thread.conversation)
        if parked is not None:
            return _continue_parked(message, parked, thread, user, inbound, client)
        try:
            run = run_services.run_create(
                actor=user,
                organization=binding.organization,
                agent=binding.agent,
                input=inbound.text,
                conversation=thread.conversation,
                surface=binding.platform,
                enqueue=False,
                exposure_id=binding.pk,
            )
        except (ValidationError, PermissionDenied) as exc:
            sentence = " ".join(getattr(exc, "messages", [str(exc)]))
            return _finish(
                message,
                MessageOutcome.REFUSED,
                sentence,
                reply_ids=_reply(client, inbound, sentence),
            )
        return _finish(message, MessageOutcome.RUN, run=run, thread=thread)


def _who_refusal(binding: Binding, user) -> str | None:
    if user is not None:
        if binding.organization.role_of(user) is None and not user.is_superuser:
            return "Your linked account is no longer in this organization, so the agent does not run for it."
        if not can(user, binding.agent, "run"):
            return f"Your linked account may not run {binding.agent.name}, so nothing was run."
        return None
    if binding.unlinked_senders == UnlinkedSenders.REQUIRE_LINK:
        return (
            "This bot answers linked accounts only. Send me `link` in a direct message to link "
            "your account, then ask again."
        )
    refusal = owner_refusal(binding)
    return f"This bot is not answering: {refusal}." if refusal else None


def _link(message, binding, inbound, client) -> ChannelMessage:
    # A link opened by anyone but the sender would pin the sender's platform account to the
    # opener's AgenticOS account, so it only ever goes to the sender privately.
    if not inbound.is_direct and binding.platform != Platform.MATTERMOST:
        sentence = "Send `link` to me in a direct message: the link is private."
        return _finish(
            message, MessageOutcome.REFUSED, sentence, reply_ids=_reply(client, inbound, sentence)
        )
    url = link_request_create(binding=binding, inbound=inbound)
    text = (
        f"Open this private link while signed in to AgenticOS and confirm, then come back: {url} "
        f"(it works once, for {settings.CHANNEL_LINK_EXPIRY_MINUTES} minutes)."
    )
    try:
        client.send_direct(inbound, text)
    except PlatformError as exc:
        return _finish(
            message, MessageOutcome.REFUSED, f"The link could not be sent: {exc.sentence}"
        )
    return _finish(message, MessageOutcome.LINK, "A private link was sent.")


def _continue_parked(message, parked: Run, thread, user, inbound, client) -> ChannelMessage:
    """A message in a thread whose run is parked: the answer to its question (from the person
    asked), or a reminder that its approval is decided in the queue — never by the thread."""
    if parked.status == RunStatus.AWAITING_APPROVAL:
        sentence = (
            "The agent's last run here is waiting for a person to approve a call, which a chat "
            f"cannot do. Decide it in the approvals queue: {approvals_queue_link(parked.organization)}"
        )
        return _finish(
            message,
            MessageOutcome.REFUSED,
            sentence,
            reply_ids=_reply(client, inbound, sentence),
            thread=thread,
        )
    question = Question.objects.filter(run=parked, status="pending").order_by("created_at").first()
    if question is None:
        return _finish(
            message, MessageOutcome.REFUSED, "Nothing is waiting for an answer.", thread=thread
        )
    try:
        question_answer(
            actor=user,
            question=question,
            answers=answers_from_text(question.questions, inbound.text),
        )
    except PermissionDenied:
        sentence = "Only the person the agent asked may answer it."
        return _finish(
            message,
            MessageOutcome.REFUSED,
            sentence,
            reply_ids=_reply(client, inbound, sentence),
            thread=thread,
        )
    except ValidationError as exc:
        sentence = f"That is not an answer to the question: {' '.join(exc.messages)}"
        return _finish(
            message,
            MessageOutcome.REFUSED,
            sentence,
            reply_ids=_reply(client, inbound, sentence),
            thread=thread,
        )
    except AlreadyDecided:
        return _finish(
            message, MessageOutcome.REFUSED, "The question was already answered.", thread=thread
        )
    # The answer resumes the run on commit (apps.runs.resume), relayed to this thread.
    return _finish(message, MessageOutcome.ANSWER, run=parked, thread=thread)


def message_drive(message: ChannelMessage) -> str | None:
    """Run the message's run here, relayed into its thread while it executes."""
    if message.outcome != MessageOutcome.RUN or message.run_id is None:
        return None
    run = Run.objects.get(pk=message.run_id)
    if run.status != RunStatus.QUEUED:
        # A redelivered task (its worker died): the run was already claimed, and the stale-run
        # sweep ends it if nobody holds it; the thread is not told twice.
        return run.status
    with segment_observed(run):
        return execute_run(run.pk)


ANNOUNCE_TASK = "apps.channels.tasks.announce_in_thread"
# The same sentence the relay ends a cancelled running segment with.
CANCELLED_SENTENCE = ENDINGS["cancelled"]


def run_expired_in_thread(*, run_id, waiting_for, sentence, after_hours, now) -> None:
    """The approvals sweep's hook: a channel's parked run that nobody decided (or answered) in
    time was cancelled without a segment to relay it, so its thread is told once it commits."""
    message = ChannelMessage.objects.filter(run_id=run_id).order_by("created_at", "pk").first()
    if message is None:
        return
    message_id = message.pk
    transaction.on_commit(lambda: current_app.tasks[ANNOUNCE_TASK].delay(message_id, sentence))


def run_cancelled_in_thread(*, run_id) -> None:
    """The runs app's cancel hook (``apps.runs.hooks.on_run_cancelled``), after the cancel
    committed: a channel's run the cancel itself ended — parked on an approval or a question,
    or never started — has no segment whose relay would say so, so its thread is told here. A
    running run is not announced twice: its worker ends it and its relay writes the end."""
    message = ChannelMessage.objects.filter(run_id=run_id).order_by("created_at", "pk").first()
    if message is None:
        return  # not a channel's run
    current_app.tasks[ANNOUNCE_TASK].delay(message.pk, CANCELLED_SENTENCE)


def thread_announce(message_id: int, text: str) -> None:
    """Post ``text`` in the thread a message came from (its bot, its target)."""
    message = ChannelMessage.objects.select_related("binding__bot_token").get(pk=message_id)
    inbound = Inbound.from_json(message.event)
    try:
        client = client_of(message.binding, team_id=inbound.target.get("team_id", ""))
    except (BotUnavailable, PlatformError) as exc:
        logger.warning("channel message %s: cannot announce: %s", message_id, exc)
        return
    posted = _reply(client, inbound, text)
    if posted:
        ChannelMessage.objects.filter(pk=message_id).update(reply_ids=[*message.reply_ids, *posted])


# --- account links ------------------------------------------------------------------------------


def link_request_for(token: str) -> LinkRequest | None:
    """The open link request a token names (unused, unexpired), or None."""
    if not token:
        return None
    return (
        LinkRequest.objects.filter(
            token_hash=hashlib.sha256(token.encode()).hexdigest(),
            used_at__isnull=True,
            expires_at__gt=timezone.now(),
        )
        .select_related("binding__organization", "binding__agent")
        .first()
    )


@transaction.atomic
def account_link_confirm(*, actor, request: LinkRequest) -> AccountLink:
    """Link the platform account to ``actor`` (who is signed in, as themselves: the view refuses
    an impersonation before calling this). A second confirmation of the same link is refused."""
    binding = request.binding
    organization = binding.organization
    if organization.role_of(actor) is None:
        raise PermissionDenied(f"You are not a member of {organization.name}.")
    claimed = LinkRequest.objects.filter(pk=request.pk, used_at__isnull=True).update(
        used_at=timezone.now()
    )
    if not claimed:
        raise PermissionDenied("This link was already used.")
    link, _ = AccountLink.objects.update_or_create(
        organization=organization,
        platform=binding.platform,
        account_key=request.account_key,
        defaults={"user": actor, "display_name": request.display_name},
    )
    record_audit(
        actor=actor,
        organization=organization,
        action="channel.account.link",
        subject=link,
        details={
            "platform": binding.platform,
            "account_key": request.account_key,
            "binding_id": binding.pk,
        },
    )
    return link
