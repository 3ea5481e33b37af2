"""One chat turn, from the user's words to the model's final answer.

The user's message is on disk (fsynced) before the model is called. The context is then
assembled (context.py: the prompt in the design's order, old turns compacted when the history
nears the window), and the model is called with the registered tools, round after round,
until it answers; every tool call, tool result and the final answer is appended as it
happens. A failure of the model leaves the session consistent: what was saved stays saved
and the turn can be retried (`retry=True`). Turns on one session are serialised by a lock;
turns on different sessions run side by side. A process that dies mid-turn frees its session
within the lock's 30 s (shared/sessions/turn_lock.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from shared.accounts import storage
from shared.accounts.people import Principal
from shared.chat.compaction import Usage, to_model_messages
from shared.chat.context import (
    ProjectInput,
    assemble_context,
    check_fits,
    describe_context,
    precompute_summary,
)
from shared.chat.needs import ChatRuntime
from shared.chat.project_context import (
    ContextFile,
    load_server_context,
    project_context_window,
    validate_project_context,
)
from shared.chat.prompt import choose_override
from shared.chat.turn_input import (
    ClientTurn,
    check_tool_results,
    message_to_answer,
    supersede_record,
)
from shared.core import observability, registry
from shared.core import text as text_rule
from shared.core.clock import isoformat, utcnow
from shared.core.errors import (
    Conflict,
    EonyxError,
    Forbidden,
    InvalidInput,
    NotFound,
    TooLarge,
    TooManyRequests,
    Unauthorized,
)
from shared.core.job_names import PRECOMPUTE_SUMMARY, SESSION_TITLE
from shared.files.session_state import MetaRecord, meta_record
from shared.files.session_store import SessionState, new_message_id
from shared.infra import event_bus
from shared.llm import access, models
from shared.llm.client import LLMError, Messages, Offering
from shared.llm.tools import ToolContext
from shared.llm.wire import Completion, UsageSum
from shared.memory import extraction
from shared.sessions import image_store, title_job, titles
from shared.sessions import service as session_service
from shared.sessions.turn_lock import hold_turn_lock

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TurnRequest:
    content: str | list[dict[str, Any]] | None = None  # text, or OpenAI-style content parts
    project_context: list[dict[str, Any]] | None = None
    cwd: str | None = None
    system_prompt: str | None = None
    context_window: int | None = None  # the project's bound on the window (eonyx.json)
    retry: bool = False
    regenerate: bool = False  # answer the last user message again; its answer is superseded
    offering: str | None = None  # an offering id; None: the one bound to the chat role
    images: tuple[bytes, ...] = ()  # uploaded image files, beside any in the content parts
    client: ClientTurn | None = None


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class StepEvent:
    """A step of the turn as it happens, for a streaming client: `tool_call` (the model asked
    for a tool), `tool_result` (the tool's message record) or `memory_write` (a memory file
    changed). The records themselves are saved with their round, before the next model call."""

    kind: str
    data: dict[str, Any]


@dataclass
class TurnResult:
    user_message: Mapping[str, Any]  # a saved record: read it, never change it
    assistant_message: dict[str, Any]  # the answer, or the call of a client's tools
    steps: list[dict[str, Any]]  # this turn's tool calls and results, in order
    context: Usage
    memory_writes: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str = "stop"  # the model's; "tool_calls" when a client's tool is called
    client_tool_calls: list[dict[str, Any]] = field(default_factory=list)  # OpenAI's form
    model_usage: dict[str, int] | None = None  # the model's token counts, every round summed


def message_record(role: str, content: Any, **extra: Any) -> dict[str, Any]:
    record = {"type": "message", "id": new_message_id(), "role": role, "content": content}
    record["created_at"] = isoformat(utcnow())
    return record | {k: v for k, v in extra.items() if v is not None}


def resolve_project(rt: ChatRuntime, request: TurnRequest) -> ProjectInput:
    """Request `system_prompt` beats eonyx.json's, which beats generation; an override
    attaches no AGENTS.md. `cwd` is walked on the server, `project_context` comes walked."""
    if request.cwd is not None and request.project_context is not None:
        raise InvalidInput("give either cwd or project_context, not both")
    files: list[ContextFile] = []
    config_prompt, window = None, request.context_window
    if request.cwd is not None:
        project = load_server_context(rt.settings.projects_dir, request.cwd)
        files, config_prompt = project.files, project.system_prompt
        window = window or project_context_window(project.config)
    elif request.project_context is not None:
        files = validate_project_context(request.project_context)
    override = choose_override(request.system_prompt, config_prompt)
    instructions = request.client.instructions if request.client else None
    if override:
        return ProjectInput((), override, instructions, window)
    return ProjectInput(tuple(files), client_instructions=instructions, context_window=window)


def _call_model(
    rt: ChatRuntime,
    user_id: str,
    offering: Offering,
    messages: Messages,
    tools: list[dict[str, Any]] | None,
    stream: bool,
    client: ClientTurn | None,
) -> Iterator[TextDelta | Completion]:
    """One round's model call, counted against `user_id` (a stream asks for the model's
    token counts whatever the client asked: they are what the user's usage records)."""
    options = client.options if client else None
    if not stream:
        yield rt.llm.complete(
            offering, messages, tools=tools or None, options=options, user_id=user_id
        )
        return
    events = rt.llm.stream(
        offering,
        messages,
        tools=tools or None,
        include_usage=True,
        options=options,
        user_id=user_id,
    )
    try:
        for event in events:
            if event.completion is not None:
                yield event.completion
            elif event.text:
                yield TextDelta(event.text)
    finally:
        close = getattr(events, "close", None)
        if close:
            close()


REJECTIONS = (InvalidInput, NotFound, Conflict, TooLarge, Forbidden, Unauthorized, TooManyRequests)


def iter_turn(
    rt: ChatRuntime,
    principal: Principal,
    session_id: str,
    request: TurnRequest,
    *,
    stream: bool = False,
) -> Iterator[TextDelta | StepEvent | TurnResult]:
    """Run a turn, yielding text as it streams, each tool step, and the `TurnResult` last.

    Every turn ends with one log line and one observation of its latency and outcome: `ok`,
    `model_error` (the model failed; the message stays saved), `rejected` (a 4xx: nothing
    was asked of the model), `stopped` (the client left a streamed answer) or `error`."""
    started = time.perf_counter()
    outcome = "stopped"
    steps = _turn_steps(rt, principal, session_id, request, stream=stream)
    try:
        for item in steps:
            if isinstance(item, TurnResult):
                outcome = "ok"
            yield item
    except LLMError:
        outcome = "model_error"
        raise
    except REJECTIONS:
        outcome = "rejected"
        raise
    except (EonyxError, Exception):
        outcome = "error"
        raise
    finally:
        steps.close()  # a stopped stream releases the session's lock and the model's answer
        if outcome == "stopped":  # indexed only now, after the client looked: tell it
            event = {"type": registry.EVENT_SESSION_UPDATED, "session_id": session_id}
            event_bus.publish(rt.redis, principal.user_id, event)
        seconds = time.perf_counter() - started
        observability.turn_finished(outcome, seconds)
        log.info(
            "turn %s",
            outcome,
            extra={"session_id": session_id, "outcome": outcome, "ms": round(seconds * 1000, 1)},
        )


def _turn_steps(
    rt: ChatRuntime,
    principal: Principal,
    session_id: str,
    request: TurnRequest,
    *,
    stream: bool = False,
) -> Generator[TextDelta | StepEvent | TurnResult, None, None]:
    """The turn itself (see `iter_turn`).

    Records go to the file as they happen; the index row is brought up to date once, at the
    end, whether the turn succeeded or not (the index is a cache of the file)."""
    if not rt.store.path(principal.user_id, session_id).is_file():
        raise NotFound("session not found")  # another user's session is not under this user
    rt.usage.check(principal.user_id)  # 429 budget_exceeded, before anything is written
    clash = request.client.tool_names & rt.tools.names if request.client else None
    if clash:
        raise InvalidInput(
            f"the tools {', '.join(sorted(clash))} are Eonyx's own: rename yours",
            code="tool_name_taken",
            param="tools",
        )
    fetch = (
        image_store.url_fetcher(rt.settings.max_image_bytes)
        if rt.settings.fetch_image_urls
        else None
    )
    message_text, inline = image_store.split_content(request.content, fetch)
    checked = image_store.check_all(rt, [*inline, *request.images])
    answers_again = request.retry or request.regenerate
    client_messages = request.client.messages if request.client else ()
    if not answers_again and not (message_text or "").strip() and not checked:
        if not client_messages:
            raise InvalidInput("content must not be empty", code="empty_message")
        message_text = None  # the client's messages (tool results) are the turn
    for name, value in (("content", message_text), ("system_prompt", request.system_prompt)):
        if value is not None:
            text_rule.check(value, name)
    project = resolve_project(rt, request)  # every 4xx before anything is written
    # The message and its images; the answer is not known yet (it may pass the quota a little).
    adding = len((message_text or "").encode()) + sum(len(image.data) for image in checked)
    storage.check(rt, principal.user_id, adding)
    offering = (
        models.offering_named(rt, request.offering)
        if request.offering
        else models.offering_for(rt, "chat")
    )
    if request.offering:
        access.check(rt, principal, request.offering)  # 403 offering_not_allowed
    with hold_turn_lock(rt, session_id):
        state, loaded = rt.store.load(principal.user_id, session_id)
        session_service.refuse_in_trash(state)
        # The writer indexes what the turn saved when it closes, also after a failed model
        # call (the user's message is indexed).
        with session_service.SessionWriter(
            rt, principal.user_id, session_id, size_before=loaded.size
        ) as writer:
            turn = Turn(
                rt,
                principal,
                state,
                request,
                project,
                offering,
                stream,
                message_text,
                checked,
                writer,
            )
            opening = not titles.answered(state)  # this turn may give the first answer
            try:
                result = yield from _converse(turn)
            except BaseException:  # a failed model call, a stopped stream (GeneratorExit)...
                if opening:
                    _end_pending_title(turn)
                raise

    if opening and state.title_pending:
        _ask_for_title(turn)
    if (result.context.percent or 0) >= 100:
        result.context = _compacted_now(rt, principal, session_id, result.context)
    elif result.context.over_threshold:
        rt.hint(PRECOMPUTE_SUMMARY, principal.user_id, session_id)
    extraction.maybe_enqueue_extraction(rt, state)  # a hint for a worker; never waited on
    yield result


def _compacted_now(rt: ChatRuntime, principal: Principal, session_id: str, usage: Usage) -> Usage:
    """The answer took the history past the model's window: it is compacted before the turn
    ends (not left to a worker), so the gauge every client shows never passes 100 %, and the
    figure the turn reports is the one GET /context gives. A failed summary keeps the figure;
    the next turn compacts before it asks."""
    if not precompute_summary(rt, principal.user_id, session_id):
        return usage
    return describe_context(rt, principal, session_id).usage


@dataclass
class Turn:
    """A turn in progress under its session's lock: who asks what, of which model, and the
    records saved so far (they go to the file as they happen and into the state's fold)."""

    rt: ChatRuntime
    principal: Principal
    state: SessionState
    request: TurnRequest
    project: ProjectInput
    offering: Offering
    stream: bool
    text: str | None  # the new message's text, and its checked images
    images: list[image_store.CheckedImage]
    writer: session_service.SessionWriter  # appends, and indexes when the turn ends

    def save(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Append and fsync before going on: nothing continues past the disk."""
        self.writer.append(records)
        for record in records:
            self.state.apply(record)


def _converse(turn: Turn) -> Generator[TextDelta | StepEvent, None, TurnResult]:
    """The turn under its lock: save the user's message, then model rounds until an answer
    (or until the model calls a client's tool, which the client runs)."""
    rt, principal, state, request, offering = (
        turn.rt,
        turn.principal,
        turn.state,
        turn.request,
        turn.offering,
    )
    client = request.client or ClientTurn()
    if request.retry or request.regenerate:
        user_message: Mapping[str, Any]
        user_message, superseded = message_to_answer(state, regenerate=request.regenerate)
        check_fits(rt, state, turn.project, offering, user_message.get("content"))
        records: list[Mapping[str, Any]] = [supersede_record(superseded)] if superseded else []
    else:
        check_fits(rt, state, turn.project, offering, turn.text)  # before anything is saved
        records = list[Mapping[str, Any]](client.messages)
        if turn.text is not None or turn.images:
            names = image_store.save(rt.store, principal.user_id, state.id, turn.images)
            records.append(message_record("user", turn.text or "", images=names or None))
        check_tool_results(state, records)
        user_message = records[-1]
    meta = _meta_changes(rt, state, turn.project, turn.text)
    if meta:
        records.append(meta_record(meta))
    if records:
        turn.save(records)  # on disk before the model is called

    context = assemble_context(rt, state, turn.project, offering, summarize=True)
    tool_context = ToolContext(
        principal,
        state.id,
        temporary=state.temporary,
        notify=lambda event: event_bus.publish(rt.redis, principal.user_id, event),
    )
    messages: list[Mapping[str, Any] | orjson.Fragment] = [
        {"role": "system", "content": context.system_prompt},
        *context.request_messages(),
    ]
    steps: list[dict[str, Any]] = []
    usage = UsageSum()
    client_names = client.tool_names
    for round_number in range(rt.settings.max_tool_rounds + 1):
        last_round = round_number == rt.settings.max_tool_rounds
        tools = None if last_round else [*rt.tools.specs(tool_context), *client.tools]
        completion: Completion | None = None
        for item in _call_model(
            rt, principal.user_id, offering, messages, tools, turn.stream, client
        ):
            if isinstance(item, Completion):
                completion = item
            else:
                yield item
        assert completion is not None
        usage.add(completion.usage)
        if completion.tool_calls and tools:
            calls = [
                message_record(
                    "assistant",
                    completion.content,
                    tool_calls=[call.as_openai() for call in completion.tool_calls],
                    offering=offering.id,
                )
            ]
            for call in completion.tool_calls:
                if call.name in client_names:
                    continue  # the client runs it and sends the result with its next request
                yield StepEvent("tool_call", {"message_id": calls[0]["id"], **call.as_openai()})
                written = len(tool_context.events)
                result = rt.tools.run(tool_context, call.name, call.arguments)
                calls.append(message_record("tool", result, tool_call_id=call.id, name=call.name))
                yield StepEvent("tool_result", calls[-1])
                for event in tool_context.events[written:]:
                    yield StepEvent("memory_write", event)
            client_calls = [c.as_openai() for c in completion.tool_calls if c.name in client_names]
            turn.save(
                [*calls, *_answer_meta(client, calls[0], client_calls)] if client_calls else calls
            )
            steps.extend(calls)
            if client_calls:  # the answer, for now: the client runs them
                return TurnResult(
                    user_message,
                    calls[0],
                    steps,
                    context.usage_now(),
                    tool_context.events,
                    finish_reason="tool_calls",
                    client_tool_calls=client_calls,
                    model_usage=usage.total,
                )
            messages.extend(to_model_messages(calls))
            continue
        answer = message_record("assistant", completion.content or "", offering=offering.id)
        turn.save([answer, *_answer_meta(client, answer, [])])
        return TurnResult(
            user_message,
            answer,
            steps,
            context.usage_now(),
            tool_context.events,
            finish_reason=completion.finish_reason or "stop",
            model_usage=usage.total,
        )
    raise AssertionError("the last round offers no tools, so it always answers")


def _answer_meta(
    client: ClientTurn, answer: dict[str, Any], client_calls: list[dict[str, Any]]
) -> list[MetaRecord]:
    """The metadata record the client asks to save with its answer, if any."""
    if client.answer_meta is None:
        return []
    changes = client.answer_meta({**answer, "tool_calls": client_calls or None})
    return [meta_record(changes, answer["created_at"])] if changes else []


def _end_pending_title(turn: Turn) -> None:
    """The first reply failed or was stopped: the spinner ends and the truncated title stays."""
    state = turn.state
    if not state.title_pending or titles.is_locked(state) or not state.message_count:
        return
    try:
        turn.save([meta_record({"title_pending": False})])
    except Exception:  # the turn's own error matters more; the sweep ends it
        log.exception("could not end the pending title of %s", turn.state.id)
        return
    title_job.publish_title(turn.rt, turn.principal.user_id, turn.state.id, turn.state.title)


def _ask_for_title(turn: Turn) -> None:
    """The first answer is saved: a worker names the session. An answer without text, or no
    queue to send the job to, keeps the truncated title at once rather than a spinner."""
    rt, user_id, session_id = turn.rt, turn.principal.user_id, turn.state.id
    no_text = titles.opening_exchange(turn.state) is None
    if no_text or not rt.hint(SESSION_TITLE, user_id, session_id):
        title_job.finish(rt, user_id, session_id, None)


def _meta_changes(
    rt: ChatRuntime, state: SessionState, project: ProjectInput, content: str | None
) -> dict[str, Any]:
    """Metadata to record with the user's message: a first title, a changed project context."""
    changes = titles.first_message_changes(rt, state, content)
    record = project.to_record()
    if record != (state.project_context or ProjectInput().to_record()):
        changes["project_context"] = record
    return changes


def run_turn(
    rt: ChatRuntime, principal: Principal, session_id: str, request: TurnRequest
) -> TurnResult:
    """A whole turn without streaming."""
    result = None
    for item in iter_turn(rt, principal, session_id, request):
        if isinstance(item, TurnResult):
            result = item
    assert result is not None
    return result
