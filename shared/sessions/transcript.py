"""A session's transcript as its owner reads it, and the likes it records.

Likes live in the session file (a meta record `{"likes": {exchange_id: {...}}}`, written by the
memory package's curation, a layer above): reading them belongs here, with the session, so
the transcript route and the curation job read one record the same way.
"""

from __future__ import annotations

from typing import Any

from shared.accounts.people import Principal
from shared.files.session_state import meta_mapping
from shared.files.session_store import SessionState
from shared.sessions import service
from shared.sessions.needs import SessionsRuntime

LIKES = (
    "likes"  # the meta key holding a session's likes, keyed by exchange id (its user message's id)
)


def likes_of(state: SessionState) -> dict[str, dict[str, Any]]:
    """The session's likes as recorded (a copy: the caller may change it and write it back;
    none when the record is not a mapping, as in a hand-edited file)."""
    return meta_mapping(state, LIKES) or {}


def messages_with_likes(
    rt: SessionsRuntime, principal: Principal, session_id: str
) -> list[dict[str, Any]]:
    """The transcript, both messages of a liked exchange carrying `like: {status, ...}`."""
    service.get_session(rt, principal, session_id)
    state, _ = rt.store.load(principal.user_id, session_id)
    by_message: dict[str, dict[str, Any]] = {}
    for exchange_id, like in likes_of(state).items():
        view = {"status": like.get("status"), "pair_id": exchange_id}
        if like.get("detail"):
            view["detail"] = like["detail"]
        for message_id in like.get("message_ids") or [exchange_id]:
            by_message[message_id] = view
    return [
        {**m, "like": by_message[m["id"]]} if m.get("id") in by_message else dict(m)
        for m in state.messages
    ]
