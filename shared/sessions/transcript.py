"""A session's transcript as its owner reads it, and the likes it records.

Likes live in the session file (a meta record `{"likes": {exchange_id: {...}}}`, written by the
memory package's curation, a layer above): reading them belongs here, with the session, so
the transcript route and the curation job read one record the same way.
"""

from __future__ import annotations

from typing import TypedDict, cast

from shared.accounts.people import Principal
from shared.core.messages import MessageRecord
from shared.files.session_state import meta_mapping
from shared.files.session_store import SessionState
from shared.sessions import service
from shared.sessions.needs import SessionsRuntime

LIKES = (
    "likes"  # the meta key holding a session's likes, keyed by exchange id (its user message's id)
)


class Like(TypedDict, total=False):
    """One exchange's like as the session file records it (memory's curation writes it)."""

    status: str  # saving, saved or failed
    message_ids: list[str]  # the exchange's user message and final answer
    liked_at: str
    updated_at: str
    detail: str | None  # failed: why
    changes: int  # saved: how many changes to MEMORY.md


class LikeView(TypedDict, total=False):
    """A like as a liked message of the transcript carries it."""

    status: str | None
    pair_id: str
    detail: str | None


class LikedMessage(MessageRecord, total=False):
    like: LikeView


def likes_of(state: SessionState) -> dict[str, Like]:
    """The session's likes as recorded (a copy: the caller may change it and write it back;
    none when the record is not a mapping, as in a hand-edited file)."""
    return cast(dict[str, Like], meta_mapping(state, LIKES) or {})


def current_likes(state: SessionState) -> dict[str, Like]:
    """The likes of exchanges the conversation still holds. An answer regenerated, or a turn
    edited away, leaves the conversation but stays in the file, and so does its like: kept
    (the file is lossless), it is not shown, not sent again to be remembered, and does not
    stop the exchange's new answer from being liked."""
    held = {message.get("id") for message in state.messages}
    return {
        exchange_id: like
        for exchange_id, like in likes_of(state).items()
        if all(message_id in held for message_id in like.get("message_ids") or [exchange_id])
    }


def messages_with_likes(
    rt: SessionsRuntime, principal: Principal, session_id: str
) -> list[LikedMessage]:
    """The transcript, both messages of a liked exchange carrying `like: {status, ...}`."""
    service.get_session(rt, principal, session_id)
    state, _ = rt.store.load(principal.user_id, session_id)
    by_message: dict[str, LikeView] = {}
    for exchange_id, like in current_likes(state).items():
        view: LikeView = {"status": like.get("status"), "pair_id": exchange_id}
        if like.get("detail"):
            view["detail"] = like["detail"]
        for message_id in like.get("message_ids") or [exchange_id]:
            by_message[message_id] = view
    liked: list[LikedMessage] = []
    for m in state.messages:
        message = cast(LikedMessage, dict(m))  # a copy, which a like is added to
        if m.get("id") in by_message:
            message["like"] = by_message[m["id"]]
        liked.append(message)
    return liked
