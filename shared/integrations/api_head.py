"""The facade's bookkeeping in a session's meta records, and its typed readers.

An OpenAI-compatible client resends the whole conversation with every request. To find the
session a request continues, the facade records with each answer a key of the history it
ends (`api_head`), and with each request the answer it continued (`api_parent`) and a digest
of what it sent after that answer (`api_input`): the same request again is a regenerate.
It also keeps the client's `user` and `metadata` as sent. The session's state holds these as
plain `meta` values; the readers here give them back typed (a wrong type reads as unset).
"""

from __future__ import annotations

from typing import Any

from shared.files.session_state import SessionState, meta_mapping, meta_text

HEAD, PARENT, INPUT = "api_head", "api_parent", "api_input"
USER, METADATA = "api_user", "api_metadata"


def head(state: SessionState) -> str | None:
    """The key of the session's latest answer."""
    return meta_text(state, HEAD)


def parent(state: SessionState) -> str | None:
    """The key of the answer the last request continued."""
    return meta_text(state, PARENT)


def input_digest(state: SessionState) -> str | None:
    """The digest of what the last request sent after its parent answer."""
    return meta_text(state, INPUT)


def client_user(state: SessionState) -> str | None:
    """The client's `user` field, as its last request sent it."""
    return meta_text(state, USER)


def client_metadata(state: SessionState) -> dict[str, Any] | None:
    """The client's `metadata`, as its last request sent it."""
    return meta_mapping(state, METADATA)
