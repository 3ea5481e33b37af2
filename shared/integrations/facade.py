"""The OpenAI-compatible facade's domain: which session a request continues, and what of
the request goes into the turn.

OpenAI-style clients resend the whole conversation with every request; Eonyx keeps the
conversation itself. A request continues a session when its history holds the answer that
Eonyx gave as that session's latest: the answer's exact text and tool calls, hashed
(`head_key`), name the session (a binding, shared/integrations/bindings.py) and are saved with
the answer in the session's file (its `api_head`). What the request holds after that answer
is the new turn. The answer alone is hashed, not the messages that asked for it: clients
such as aider append a reminder to the current question and resend it without one next
time. The answer with what asked for it (`exchange_key`) is bound too, and looked up first,
so two conversations whose answers happen to read the same ("OK.") stay apart while their
questions differ. So:

- a history that only repeats a greeting, few-shot examples or a system prompt, none of
  them Eonyx's answers, starts a new session: two conversations are never merged;
- a client that trims or rewrites older messages, or its own earlier questions, still
  continues its session; system and developer messages are never hashed;
- a request that sends the session's last question again without the answer Eonyx gave
  (a "regenerate") answers it anew, superseding the old answer;
- a history that matches an older answer of a session (the client edited its past) starts
  a new session with the whole conversation, rather than mixing two branches in one.

Sessions saved before answers were hashed alone hold an exchange key as their head; it is
still read, so they go on.

The `X-Eonyx-Session` header names the session outright; the history then only says which
of the request's messages are new.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NamedTuple

from shared.accounts.people import Principal
from shared.chat import turns
from shared.chat.compaction import CHARS_PER_TOKEN
from shared.chat.turn_input import ClientTurn
from shared.chat.turn_rounds import ROUND_BREAK
from shared.chat.turns import NewSession, TurnEvent, TurnRequest, TurnResult
from shared.core.encoding import InvalidJSON, decode_json
from shared.core.errors import InvalidInput, NotFound
from shared.core.messages import (
    MessageRecord,
    content_text,
    message_chars,
    message_record,
    tool_call_parts,
)
from shared.files.session_store import SessionState, check_session_id
from shared.integrations import api_head, bindings, tasks
from shared.integrations.needs import IntegrationsRuntime
from shared.integrations.openai_request import ChatRequest

SOURCE = CHANNEL = "api"
MAX_CANDIDATES = 32  # assistant messages of a history tried as the session's head, newest first


def caller(principal: Principal) -> Principal:
    """The facade's sessions have source `api`, whatever token the client holds."""
    return dataclasses.replace(principal, source=SOURCE)


# -- what is hashed -----------------------------------------------------------------------


def _arguments(arguments: str) -> Any:
    """Arguments as data when they are JSON, so a client that re-encodes them (spacing,
    key order) still matches."""
    try:
        return decode_json(arguments, what="arguments")
    except InvalidJSON:
        return arguments


def _canonical(message: Mapping[str, Any]) -> list[Any]:
    calls = []
    for call in message.get("tool_calls") or ():
        name, arguments = tool_call_parts(call)
        calls.append([call.get("id"), name, _arguments(arguments)])
    text = content_text(message.get("content")).strip()
    return [message.get("role"), text, calls, message.get("tool_call_id")]


def _digest(messages: Sequence[Mapping[str, Any]]) -> str:
    data = [_canonical(message) for message in messages]
    return bindings.digest(json.dumps(data, ensure_ascii=False, separators=(",", ":")))


def head_key(answer: Mapping[str, Any]) -> str:
    """The key of an answer of Eonyx's: its text and tool calls, which no other
    conversation has, whatever the client later does to the questions before it."""
    return _digest([answer])


def exchange_key(asked: Sequence[Mapping[str, Any]], answer: Mapping[str, Any]) -> str:
    """The key of an answer with the messages since the assistant message before it: looked
    up first (two answers that read the same, each of its own question), and the head of
    sessions saved before answers were hashed alone."""
    return _digest([*asked, answer])


class Keys(NamedTuple):
    """The keys a request's assistant message may be known by, the surest first."""

    exchange: str
    answer: str


def _trailing(messages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The messages after the last assistant message (all of them when there is none)."""
    for position in range(len(messages) - 1, -1, -1):
        if messages[position].get("role") == "assistant":
            return list(messages[position + 1 :])
    return list(messages)


def _candidates(messages: Sequence[Mapping[str, Any]]) -> Iterator[tuple[int, Keys]]:
    """(position, keys) of the last MAX_CANDIDATES assistant messages, newest first, each
    computed only when asked for (the first one usually matches)."""
    positions = [i for i, message in enumerate(messages) if message.get("role") == "assistant"]
    for n in range(len(positions) - 1, max(-1, len(positions) - 1 - MAX_CANDIDATES), -1):
        start = positions[n - 1] + 1 if n else 0
        position = positions[n]
        answer = messages[position]
        yield position, Keys(exchange_key(messages[start:position], answer), head_key(answer))


# -- which session ------------------------------------------------------------------------


@dataclass(frozen=True)
class Continuation:
    """Where a request goes: the session (None: a new one, made by the turn once its
    message is accepted), the request's messages that are new to it, the head they follow
    (None for a new session), and whether the request asks its last question again."""

    session_id: str | None
    new: tuple[Mapping[str, Any], ...]
    parent: str | None
    regenerate: bool = False  # the last question again, its answer superseded
    retry: bool = False  # the last question again, after its answer failed


def _follows(
    state: SessionState, messages: Sequence[Mapping[str, Any]], position: int, keys: Keys
) -> Continuation | None:
    """How the request continues `state` from its assistant message at `position`, if the
    session's own latest answer (or, for a regenerate, the answer before it) is that one."""
    new = tuple(messages[position + 1 :])
    if api_head.head(state) in keys:
        return Continuation(state.id, new, keys.answer, retry=_asks_again(state, new))
    if api_head.parent(state) in keys and _digest(new) == api_head.input_digest(state):
        return Continuation(state.id, new, keys.answer, regenerate=True)
    return None


def _asks_again(state: SessionState, new: Sequence[Mapping[str, Any]]) -> bool:
    """Whether `new` is only the session's last message, saved and never answered (the
    client sends a request again after the model failed)."""
    last = state.messages[-1] if state.messages else None
    if len(new) != 1 or last is None or last.get("role") != "user":
        return False
    return _canonical(new[0]) == _canonical({"role": "user", "content": last.get("content")})


def _load(rt: IntegrationsRuntime, principal: Principal, session_id: str) -> SessionState | None:
    try:
        state, _ = rt.store.load(principal.user_id, session_id)
    except NotFound:
        return None
    return None if state.deleted_at is not None else state


def choose_session(
    rt: IntegrationsRuntime, principal: Principal, request: ChatRequest, header: str | None
) -> Continuation:
    """The session the request continues, or None for a new one."""
    messages = request.messages
    candidates = _candidates(messages)
    if header:
        session_id = check_session_id(header.strip())
        state, _ = rt.store.load(principal.user_id, session_id)  # NotFound: not the caller's
        for position, keys in candidates:
            if (found := _follows(state, messages, position, keys)) is not None:
                return found
        return Continuation(session_id, tuple(_trailing(messages)), None)
    for position, keys in candidates:
        bound = _bound(rt, principal, keys)
        if bound is None:
            continue
        kept = _load(rt, principal, bound)
        found = _follows(kept, messages, position, keys) if kept else None
        if found is not None:
            return found
        break  # an older answer of a session: the client changed its past; start anew
    return Continuation(None, tuple(messages), None)


def _bound(rt: IntegrationsRuntime, principal: Principal, keys: Keys) -> str | None:
    """The session bound to an assistant message, by its surest key first."""
    for key in keys:
        if (bound := bindings.lookup(rt, principal.user_id, CHANNEL, key)) is not None:
            return bound
    return None


# -- the turn -----------------------------------------------------------------------------


def _record(message: Mapping[str, Any]) -> MessageRecord:
    """A message of the client's, as a session record (text only: earlier images are not
    the turn's, and are left out)."""
    role = message["role"]
    content = message.get("content")
    if role != "assistant" or content is not None:
        content = content_text(content)
    calls = [dict(call) for call in message.get("tool_calls") or ()] or None
    return message_record(
        role,
        content,
        tool_calls=calls,
        tool_call_id=message.get("tool_call_id"),
        name=message.get("name") if role == "tool" else None,
        source="client",
    )


@dataclass(frozen=True)
class FacadeClient(ClientTurn):
    """The facade's part of a turn: it saves, with the answer, the session's new head (the
    key of the answer) and what the request said of itself."""

    asked: tuple[Mapping[str, Any], ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)

    def keys(self, answer: Mapping[str, Any]) -> Keys:
        """The keys the client's next request will know the answer by."""
        return Keys(exchange_key(self.asked, answer), head_key(answer))

    def answer_meta(self, answer: Mapping[str, Any]) -> dict[str, Any]:
        return {**self.meta, api_head.HEAD: head_key(answer)}


@dataclass(frozen=True)
class PlannedTurn:
    """The turn a request makes, on its session or on a new one."""

    continuation: Continuation
    request: TurnRequest
    client: FacadeClient
    temporary: bool = False

    @property
    def target(self) -> str | NewSession:
        """The session, or the one to make: gone again if its first turn is not answered
        (the client sends the whole request again, which would make another)."""
        session_id = self.continuation.session_id
        return session_id or NewSession(temporary=self.temporary, keep_unanswered=False)

    def keys(self, result: TurnResult) -> Keys:
        """The keys of `result`'s answer, as the client will send it back."""
        calls = result.client_tool_calls or None
        answer = {**result.assistant_message, "content": result.told, "tool_calls": calls}
        return self.client.keys(answer)


def plan_turn(chat: ChatRequest, continuation: Continuation, *, temporary: bool) -> PlannedTurn:
    """The turn for the request's new messages: the last one, when it is the user's, is the
    turn's message; the others are saved before it (tool results, an opening of the
    client's own); its answer is saved with the session's new head."""
    new = list(continuation.new)
    if not new or new[-1].get("role") not in ("user", "tool"):
        raise InvalidInput(
            "the last message must be the user's or a tool's result: it is the turn",
            param="messages",
        )
    again = continuation.regenerate or continuation.retry
    content: Any = None
    if new[-1]["role"] == "user" and not again:
        content = new.pop()["content"]
    asked = _trailing(continuation.new)
    meta: dict[str, Any] = {api_head.PARENT: continuation.parent, api_head.INPUT: _digest(asked)}
    if chat.user:
        meta[api_head.USER] = chat.user
    if chat.metadata:
        meta[api_head.METADATA] = dict(chat.metadata)
    client = FacadeClient(
        instructions=chat.instructions,
        tools=chat.tools,
        options=chat.options,
        messages=() if again else tuple(_record(m) for m in new),
        include_usage=chat.include_usage,
        asked=tuple(asked),
        meta=meta,
    )
    turn = TurnRequest(
        content=content,
        offering=chat.model,
        retry=continuation.retry,
        regenerate=continuation.regenerate,
        client=client,
    )
    return PlannedTurn(continuation, turn, client, temporary)


def remember(
    rt: IntegrationsRuntime, principal: Principal, planned: PlannedTurn, result: TurnResult
) -> None:
    """Bind the session's new head, so the client's next request, which resends it, lands
    in the same session (by both its keys, the answer's alone for a client that edits the
    question)."""
    with rt.db.transaction() as db:  # one commit for both
        for key in planned.keys(result):
            bindings.bind_in(db, principal.user_id, CHANNEL, key, result.session_id)


# -- the request, from start to end -------------------------------------------------------


@dataclass
class FacadeRun:
    """A request's turn under way: its session ("" for a front end's task, which has none:
    shared/integrations/tasks.py), and its result (without stream) or its
    events (with stream: the result last, its head bound before it is yielded)."""

    session_id: str
    result: TurnResult | None = None
    events: Iterator[TurnEvent] = iter(())


def plan_request(
    rt: IntegrationsRuntime,
    principal: Principal,
    chat: ChatRequest,
    header: str | None,
    *,
    temporary: bool,
) -> PlannedTurn:
    """The session a request continues (`X-Eonyx-Session` names it outright), and its turn.
    A new session is temporary when the request's header asks."""
    continuation = choose_session(rt, principal, chat, header)
    return plan_turn(chat, continuation, temporary=temporary)


def run_chat(
    rt: IntegrationsRuntime,
    principal: Principal,
    chat: ChatRequest,
    header: str | None,
    *,
    temporary: bool,
    done: Callable[[PlannedTurn, TurnResult], None] | None = None,
) -> FacadeRun:
    """A request from start to end: its session and turn (`plan_request`), the turn run,
    and `done(planned, result)` (by default: bind the new head) once the answer is saved,
    before a stream yields it. A streamed turn runs up to its first answer event here, so
    errors before the model speaks are plain errors."""
    if not rt.settings.front_end_tasks_as_chats and tasks.is_front_end_task(chat):
        task = tasks.run_task(rt, principal, chat)  # no session: nothing to finish
        if not chat.stream:
            return FacadeRun("", task)
        text = turns.TextDelta(str(task.assistant_message.get("content") or ""))
        return FacadeRun("", events=iter([text, task]))
    planned = plan_request(rt, principal, chat, header, temporary=temporary)
    finish = partial(done or partial(remember, rt, principal), planned)
    if not chat.stream:
        result = turns.run_turn(rt, principal, planned.target, planned.request)
        finish(result)
        return FacadeRun(result.session_id, result)
    started = turns.start_streamed(rt, principal, planned.target, planned.request)
    return FacadeRun(started.session_id, events=_as_one_text(started.events, finish))


def _as_one_text(
    events: Iterator[TurnEvent], finish: Callable[[TurnResult], None]
) -> Iterator[TurnEvent]:
    """The turn's events for a client that shows one text: a blank line before a round's
    text when an earlier round spoke (`TurnResult.told`, the head the client sends back),
    and `finish` once the answer is saved."""
    spoke = stepped = False
    for item in events:
        if isinstance(item, TurnResult):
            finish(item)
        elif isinstance(item, turns.TextDelta):
            if spoke and stepped:
                yield turns.TextDelta(ROUND_BREAK)
            spoke, stepped = True, False
        elif spoke:
            stepped = True  # a tool step: the next text is the next round's
        yield item


def usage(result: TurnResult) -> dict[str, int]:
    """OpenAI's `usage` of a turn: the model's own counts summed over the turn's model calls
    when it gave them, else Eonyx's estimate (about 4 characters a token)."""
    if result.model_usage is not None:
        return dict(result.model_usage)
    completion = max(1, message_chars(result.assistant_message) // CHARS_PER_TOKEN)
    prompt = max(1, result.context.tokens - completion)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
