"""The person in the conversation: asking them, and suggesting what to do next.

Both are category ``utility`` in the seed's table; they sit after ``channel_tools`` there, which
is why they live in their own module (the registry keeps the table's order).
"""

from __future__ import annotations

from ..conditions import NEVER_OFFERED
from ..registry import VoiceMode, register, tool
from ..schema import CapabilityConfig, setting

# --- ask_user --------------------------------------------------------------------------------


class AskUserConfig(CapabilityConfig):
    """Ask the user has no settings."""


register(
    id="ask_user",
    name="Ask the user",
    category="utility",
    does=(
        "When the agent needs a decision only the person can make, it asks instead of guessing: "
        "multiple-choice questions shown as a card, with room for a written answer."
    ),
    examples=(
        "“which of these two accounts should I close?”",
        "confirm the tone before drafting a sensitive e-mail",
        "pick a date among three available slots",
    ),
    needs="Someone who can answer; a schedule, a webhook or the API gets “the person declined”.",
    never="Waits forever: an unanswered card parks the run, which is cancelled after QUESTION_EXPIRY_HOURS (24).",
    tools=(
        tool(
            "ask_user_question",
            does="Ask the person one or more multiple-choice questions and wait for the answers.",
            when=(
                "Use it when the request is ambiguous and the answer is not in anything you can "
                "read — a preference, a choice between options, a confirmation only they can give. "
                "Offer concrete options; the person may also write their own answer."
            ),
            args={
                "questions": (
                    "One to ten questions, each with a short `header`, the `question`, two to "
                    "six `options` (each a label and what it means) and `multi_select` "
                    "(default false). Required."
                ),
            },
            returns=(
                "The answers keyed by each question's header: the picked labels, or a one-item "
                "list with the written answer; or a line saying the person declined to answer, "
                "after which you continue without it."
            ),
        ),
    ),
    voice=VoiceMode.LIVE,
    voice_note="on screen: questions appear on the card of the call's view in /chat",
    recommended=True,
    config_model=AskUserConfig,
)

# --- follow_ups ------------------------------------------------------------------------------


class FollowUpsConfig(CapabilityConfig):
    """Follow-ups settings."""

    model_profile_id: str | None = setting(
        None,
        description=(
            "Model for next steps: a separate model writes the suggestion buttons after the "
            "answer. Empty turns suggestions off."
        ),
    )


register(
    id="follow_ups",
    name="Follow-ups",
    category="utility",
    does=(
        "Offers the person next steps after an answer — up to three suggestion buttons written "
        "by a separate model — and lets the agent propose things to set up as cards: an agent, "
        "a routine, or a service to connect."
    ),
    examples=(
        "after a report, offer “Send it to the team” and “Compare with last month”",
        "propose connecting the calendar when a request needs it",
        "offer to turn a repeated request into a routine",
    ),
    needs="A model profile for the suggestion buttons (without one they are off); the console or a chat app to show them.",
    never="Makes the main model wait for suggestions, or starts a paid follow-up run from a public widget.",
    tools=(
        tool(
            "suggest_next_steps",
            does="Suggest up to three short next steps as buttons under the answer.",
            when=(
                "Declared so its identity stays in history and existing specs; it is called "
                "by the separate next-steps model after the answer, never by the main model."
            ),
            args={"steps": "Up to three short steps in the person's language."},
            returns="A line confirming the buttons were saved.",
            offered_when=NEVER_OFFERED,
        ),
        tool(
            "propose_setup",
            does="Propose up to three things to set up, drawn as cards under the answer.",
            when=(
                "Use it when a request needs something the person has not set up: an agent of "
                "their own, a routine, or a service to connect. A connection that names its "
                "server by catalog key becomes that service's Connect card."
            ),
            args={
                "proposals": (
                    "One to three cards, each a kind (`agent`, `routine` or `connection`), a "
                    "title and what it would do; a connection may name a catalog key. Required."
                ),
            },
            returns=(
                "A line confirming the cards were shown. Chat apps do not draw them, and the "
                "line says so there."
            ),
        ),
    ),
    voice=VoiceMode.NEVER,
    voice_note="not available: a call has nowhere to show buttons",
    recommended=True,
    config_model=FollowUpsConfig,
)
