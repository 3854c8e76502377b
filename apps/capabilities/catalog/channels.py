"""Chat channels: what a bot bound to a channel may look up there.

The one capability an agent's spec cannot bind (publish refuses ``channel_tools`` in a spec): it
is granted per chat binding, under "Where this agent is available", because one organization can
bind an agent to two Mattermost servers and three Slack workspaces and "may it read what was said
in this channel?" has a different answer in each. It is still an ordinary registry capability so
``tool_approval`` and ``tool_overrides`` reach its tools.
"""

from __future__ import annotations

from typing import Literal

from pydantic import field_validator

from ..conditions import Predicate
from ..registry import VoiceMode, register, tool
from ..schema import CapabilityConfig, setting

# Seed 000: "any of the four ids". send_channel_file is the fifth declared tool; it answers a
# request for a workspace file rather than reading the channel, so it is not among the grants.
GRANTABLE_CHANNEL_TOOLS = (
    "get_channel_info",
    "list_channel_members",
    "search_channels",
    "read_channel_history",
)


class ChannelToolsConfig(CapabilityConfig):
    """Chat channel info settings, set on a chat binding."""

    tools: list[Literal[GRANTABLE_CHANNEL_TOOLS]] = setting(  # type: ignore[valid-type]
        default_factory=list,
        description="Which lookups this binding grants; nothing is granted by default.",
        labels={
            "get_channel_info": "Describe this channel",
            "list_channel_members": "List this channel's members",
            "search_channels": "Find other channels by name or purpose",
            "read_channel_history": "Read this channel's recent messages",
        },
    )
    default_limit: int = setting(
        20,
        ge=1,
        le=200,
        description="Items returned by a listing when the model asks for no number.",
    )

    @field_validator("tools")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        if len(value) != len(set(value)):
            raise ValueError("a tool is listed twice")
        return value


def _granted(tool_id: str) -> Predicate:
    return Predicate(lambda c: tool_id in c.tools, f"`tools` includes `{tool_id}`")


_BOUND = (
    "It is bound on the server to the channel this message arrived in (in a thread, the channel "
    "containing it); you never name a channel. The bot's membership is the whole permission "
    "boundary: you see exactly what the bot sees."
)

register(
    id="channel_tools",
    name="Chat channel info",
    category="channels",
    does=(
        "Lets an agent answering in a chat channel look at that channel: describe it, list its "
        "members, find other channels, read recent messages, and send a requested workspace file."
    ),
    examples=(
        "“who in this channel owns billing?”",
        "summarize what was discussed here this morning",
        "point someone to the right channel for a question",
    ),
    needs="A chat binding that grants it; outside a channel it is left out.",
    never=(
        "Is bound in an agent's spec (publish refuses it); reads a channel the bot is not in; "
        "offers what a platform cannot answer (Telegram has no channel directory)."
    ),
    tools=(
        tool(
            "get_channel_info",
            does="Describe the channel this conversation is happening in.",
            when=f"Use it for the channel's name, topic, purpose and size. {_BOUND}",
            args={},
            returns="The channel's name, topic, purpose, member count and platform; a line saying what the platform cannot tell.",
            offered_when=_granted("get_channel_info"),
        ),
        tool(
            "list_channel_members",
            does="List the people in this channel.",
            when=f"Use it to find who is here, e.g. to mention the right person. {_BOUND}",
            args={"limit": "How many; default the binding's default_limit (20), at most 200."},
            returns="One line per member: display name and handle; the list says when it was cut at the limit.",
            offered_when=_granted("list_channel_members"),
        ),
        tool(
            "search_channels",
            does="Find other channels by name or purpose, without reading them.",
            when="Use it to point someone to the right place. It never reads another channel's messages.",
            args={
                "query": "Words from the name or purpose. Required.",
                "limit": "How many; default the binding's default_limit (20), at most 200.",
            },
            returns="Matching channels with name and purpose; a line saying none matched, or that the platform has no directory.",
            offered_when=_granted("search_channels"),
        ),
        tool(
            "read_channel_history",
            does="Read this channel's most recent messages, the newest last.",
            when=f"Use it when the request depends on what was said here before you were asked. {_BOUND}",
            args={
                "limit": "How many messages; default the binding's default_limit (20), at most 200."
            },
            returns=(
                "The messages, oldest first and newest last, each with author and time; the "
                "answer says when older messages exist beyond the limit. A channel the bot "
                "cannot read is a result saying so."
            ),
            offered_when=_granted("read_channel_history"),
        ),
        tool(
            "send_channel_file",
            does="Send a requested file from the workspace to this channel.",
            when=(
                "Use it only when someone in the channel asked for a file that is in your "
                f"workspace. {_BOUND}"
            ),
            args={
                "path": "The workspace file. Required.",
                "comment": "Optional message posted with it.",
            },
            returns="A line confirming the upload, or saying why the platform refused it (size, type, permissions).",
            side_effecting=True,
            # Offered once a run has a workspace to send from (the sandbox is not built yet).
            offered_when=Predicate(lambda c: False, "the run has a workspace (not built yet)"),
        ),
    ),
    voice=VoiceMode.NEVER,
    voice_note="not available: a call never happens in a channel",
    config_model=ChannelToolsConfig,
)
