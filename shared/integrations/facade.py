"""The OpenAI-compatible facade's domain: which session a chat-completions request continues,
and which message is its turn.

OpenAI-style clients resend the whole conversation with every request. Eonyx keeps the
conversation itself, so only the last message, which must be the user's, is the turn. The
session is the one named by the `X-Eonyx-Session` header; without it, the request's leading
messages (all but the last) are hashed, and a session whose earlier turn ended with exactly
that history is continued. After every turn the history including the new answer is bound
to the session, so the client's next request, which resends that history, lands in the same
session. A request whose leading messages contain no answer yet starts a new session. The
hash covers each message's role and text, trimmed (SHA-256 over canonical JSON).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shared.accounts import Principal
from shared.core.errors import InvalidInput
from shared.integrations import bindings
from shared.llm import catalog
from shared.sessions import service as session_service
from shared.storage.session_store import check_session_id

if TYPE_CHECKING:  # the runtime is passed in, never imported: it sits above this package
    from shared.runtime import Runtime

SOURCE = CHANNEL = "api"
ROLES = ("system", "developer", "user", "assistant", "tool", "function")


@dataclass(frozen=True)
class Conversation:
    """A request's messages: the history before the turn, and the turn's text."""

    history: tuple[tuple[str, str], ...]  # (role, text) of every message before the last
    content: str

    def key(self, answer: str | None = None) -> str:
        """The binding key of the history (plus this turn and its answer, once answered)."""
        messages = list(self.history)
        if answer is not None:
            messages += [("user", self.content), ("assistant", answer.strip())]
        return bindings.digest(json.dumps(messages, ensure_ascii=False, separators=(",", ":")))

    @property
    def continues(self) -> bool:
        """Only a history with an answer in it can continue a session."""
        return any(role == "assistant" for role, _ in self.history)


def _text(content: Any, where: str) -> str:
    """The text of an OpenAI message content: a string, or the text parts of a list."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        texts = [
            part["text"]
            for part in content
            if isinstance(part, Mapping)
            and part.get("type") == "text"
            and isinstance(part.get("text"), str)
        ]
        return "\n".join(texts).strip()
    raise InvalidInput(f"{where}.content must be a string or a list of parts")


def read_messages(messages: Sequence[Any]) -> Conversation:
    """The conversation in `messages`, or InvalidInput naming the message that is wrong."""
    if not messages:
        raise InvalidInput("messages must not be empty")
    pairs: list[tuple[str, str]] = []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, Mapping):
            raise InvalidInput(f"{where} must be an object")
        role = message.get("role")
        if role not in ROLES:
            raise InvalidInput(f"{where}.role must be one of {', '.join(ROLES)}")
        pairs.append((role, _text(message.get("content"), where)))
    role, content = pairs[-1]
    if role != "user":
        raise InvalidInput("the last message must be the user's: it is the turn")
    if not content:
        raise InvalidInput("the last message has no text")
    return Conversation(tuple(pairs[:-1]), content)


def caller(principal: Principal) -> Principal:
    """The facade's sessions have source `api`, whatever token the client holds."""
    return dataclasses.replace(principal, source=SOURCE)


def choose_session(
    rt: Runtime, principal: Principal, conversation: Conversation, header: str | None, model: str
) -> tuple[str, bool]:
    """(session id, whether it was created): the header's session, else the session the
    history continues, else a new one, made only once `model` is known to name an offering.

    The header's session is not looked up here: the turn finds it under the caller's own
    sessions or answers 404 before writing anything, as it checks the model."""
    if header:
        return check_session_id(header.strip()), False

    def create() -> str:
        catalog.offering_named(rt, model)  # NotFound (model_not_found) leaves nothing behind
        return session_service.create_session(rt, principal).id

    if not conversation.continues:
        return create(), True
    return bindings.bound_session(rt, principal, CHANNEL, conversation.key(), create)


def remember(
    rt: Runtime, principal: Principal, session_id: str, conversation: Conversation, answer: str
) -> None:
    """Bind the history as the client will resend it next time to this session."""
    bindings.bind(rt, principal.user_id, CHANNEL, conversation.key(answer), session_id)
