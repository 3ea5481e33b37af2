"""Activities in and out, with the Activity schema of Microsoft's `microsoft-agents-activity`
package (the Agents SDK's successor of botbuilder-schema).

An incoming message becomes an `Inbound`: the few fields the worker needs to run the turn and
answer it, plain JSON so it can travel as a job argument. Replies and typing indicators are
built as Activities and serialised in the Bot Framework's wire format.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, TypedDict, cast

from microsoft_agents.activity import (
    Activity,
    ActivityTypes,
    ChannelAccount,
    ConversationAccount,
    TextFormatTypes,
)
from pydantic import ValidationError

from shared.core.encoding import InvalidJSON, decode_json
from shared.core.errors import InvalidInput

# Teams refuses a message over about 28 KB, envelope included: keep the text well under it.
MAX_TEXT_BYTES = 24_000


def parse(body: bytes) -> Activity:
    """The activity in a request body, or InvalidInput (400) naming what is wrong."""
    try:
        data = decode_json(body, what="the activity")
    except InvalidJSON as exc:
        raise InvalidInput(exc.message, code="invalid_activity") from None
    if not isinstance(data, dict):
        raise InvalidInput("an activity is a JSON object", code="invalid_activity")
    try:
        return Activity.model_validate(data)
    except ValidationError as exc:
        fields = ", ".join(".".join(map(str, e["loc"])) for e in exc.errors()) or "the body"
        raise InvalidInput(f"invalid activity: {fields}", code="invalid_activity") from None
    except Exception as exc:  # noqa: BLE001 - the schema raises plain exceptions too
        raise InvalidInput(f"invalid activity: {exc}", code="invalid_activity") from None


def channel_of(activity: Activity) -> str | None:
    """The channel the activity names (`msteams`), without a sub-channel (`msteams:COPILOT`
    is Teams too): what a signing key's endorsements list."""
    channel = activity.channel_id
    return channel.channel if channel else None


def tenant_of(activity: Activity) -> str | None:
    """The Azure AD tenant the activity comes from (Teams puts it in two places)."""
    if activity.conversation is not None and activity.conversation.tenant_id:
        return activity.conversation.tenant_id
    channel_data = activity.channel_data if isinstance(activity.channel_data, dict) else {}
    tenant = channel_data.get("tenant")
    return tenant.get("id") if isinstance(tenant, dict) else None


class InboundJob(TypedDict):
    """An `Inbound` as a job argument (JSON)."""

    activity_id: str
    service_url: str
    conversation_id: str
    user_id: str
    user_name: str | None
    aad_object_id: str | None
    bot_id: str
    bot_name: str | None
    text: str


@dataclass(frozen=True)
class Inbound:
    """A message to answer: where it came from, who sent it, and its text."""

    activity_id: str
    service_url: str
    conversation_id: str
    user_id: str  # the sender's channel account id (29:...)
    user_name: str | None
    aad_object_id: str | None
    bot_id: str
    bot_name: str | None
    text: str

    def to_dict(self) -> InboundJob:
        return cast(InboundJob, asdict(self))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Inbound:
        """From a job's argument: `to_dict()`'s JSON, fields checked by the constructor."""
        return cls(**data)


def inbound_message(activity: Activity) -> Inbound | None:
    """The message to answer, or None for activities that need no turn (typing, updates...).
    A message without the fields a reply needs is malformed (InvalidInput)."""
    if activity.type != ActivityTypes.message:
        return None
    sender, bot, conversation = activity.from_property, activity.recipient, activity.conversation
    missing = [
        name
        for name, value in (
            ("id", activity.id),
            ("serviceUrl", activity.service_url),
            ("conversation.id", conversation and conversation.id),
            ("from.id", sender and sender.id),
            ("recipient.id", bot and bot.id),
        )
        if not value
    ]
    if missing:
        raise InvalidInput(f"the message lacks {', '.join(missing)}", code="invalid_activity")
    assert sender
    assert bot
    assert conversation
    assert activity.id
    assert activity.service_url
    return Inbound(
        activity_id=activity.id,
        service_url=activity.service_url,
        conversation_id=conversation.id,
        user_id=sender.id,
        user_name=sender.name,
        aad_object_id=(sender.aad_object_id or "").lower() or None,
        bot_id=bot.id,
        bot_name=bot.name,
        text=activity.remove_recipient_mention().strip(),
    )


def _account(account_id: str, name: str | None) -> ChannelAccount:
    return ChannelAccount(id=account_id, name=name) if name else ChannelAccount(id=account_id)


def _outgoing(inbound: Inbound, **fields: Any) -> dict[str, object]:
    """An activity to send, as the connector takes it (JSON in the wire's field names)."""
    activity = Activity(
        from_property=_account(inbound.bot_id, inbound.bot_name),
        recipient=_account(inbound.user_id, inbound.user_name),
        conversation=ConversationAccount(id=inbound.conversation_id),
        **fields,
    )
    return activity.model_dump(mode="json", by_alias=True, exclude_none=True)


def reply_activity(inbound: Inbound, text: str) -> dict[str, object]:
    return _outgoing(
        inbound,
        type=ActivityTypes.message,
        text=text,
        text_format=TextFormatTypes.markdown,
        reply_to_id=inbound.activity_id,
    )


def typing_activity(inbound: Inbound) -> dict[str, object]:
    return _outgoing(inbound, type=ActivityTypes.typing)


def split_text(text: str, limit: int = MAX_TEXT_BYTES) -> list[str]:
    """Cut `text` into parts of at most `limit` UTF-8 bytes, at a paragraph break where
    possible, else a line break, else a space, else anywhere (between characters)."""
    parts: list[str] = []
    rest = text
    while len(rest.encode()) > limit:
        # the longest prefix within the limit, in characters
        window = rest.encode()[:limit].decode(errors="ignore")
        cut = next(
            (at for sep in ("\n\n", "\n", " ") if (at := window.rfind(sep)) > 0),
            len(window),
        )
        parts.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    if rest.strip() or not parts:
        parts.append(rest)
    return parts
