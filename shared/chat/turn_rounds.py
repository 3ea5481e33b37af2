"""A turn's second stage: model rounds until an answer.

Each round calls the model with Eonyx's tools and the client's; Eonyx's tool calls run at
once and their records are saved with the round, before the next model call. A round
that calls a client's tool ends the turn (the client runs it and sends the result with its
next request); a round without tool calls is the answer. The last round offers no tools,
so a turn always ends.

A round that calls Eonyx's tools may say something first ("Let me look that up."), and a
streaming client has shown it by the time the tools run. So what a client that shows one
text was told is every round's text, a blank line between rounds (`ROUND_BREAK`):
`TurnResult.told`. The facade streams that break and hashes that text as the session's head,
since it is what an OpenAI-style client sends back; Eonyx's own clients show the tool steps
between the rounds' texts instead.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from shared.accounts.people import Principal
from shared.chat.compaction import Usage, to_model_messages
from shared.chat.context import AssembledContext, assemble_context
from shared.chat.needs import ChatRuntime
from shared.chat.turn_input import ClientTurn
from shared.chat.turn_plan import TurnPlan
from shared.core import events
from shared.core.messages import MessageRecord, MetaRecord, message_record, meta_record
from shared.files.session_store import SessionState
from shared.infra import event_bus
from shared.llm.client import Messages
from shared.llm.tools import ToolContext
from shared.llm.wire import Completion, ToolCall, UsageSum
from shared.sessions import service as session_service


@dataclass(frozen=True)
class TextDelta:
    text: str


# A step of the turn as it happens, for a streaming client: the model asked for a tool, the
# tool's message record, a memory file changed. The records themselves are saved with their
# round, before the next model call.
StepEvent = events.ToolCall | events.ToolResult | events.MemoryWrite
ROUND_BREAK = "\n\n"  # between two rounds' texts in what the client is told


@dataclass
class TurnResult:
    session_id: str
    user_message: Mapping[str, Any]  # a saved record: read it, never change it
    assistant_message: MessageRecord  # the answer, or the call of a client's tools
    steps: list[MessageRecord]  # this turn's tool calls and results, in order
    context: Usage
    memory_writes: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str = "stop"  # the model's; "tool_calls" when a client's tool is called
    client_tool_calls: list[dict[str, Any]] = field(default_factory=list)  # OpenAI's form
    model_usage: dict[str, int] | None = None  # the model's token counts, every round summed
    told: str = ""  # every round's text, as the client was shown it (the module's docstring)


@dataclass
class Turn:
    """A turn in progress under its session's lock: its plan, the session's state, and the
    records saved so far (they go to the file as they happen and into the state's fold)."""

    rt: ChatRuntime
    principal: Principal
    plan: TurnPlan
    state: SessionState
    writer: session_service.SessionWriter  # appends, and indexes when the turn ends
    stream: bool
    user_message: Mapping[str, Any]  # the message the turn answers (a saved record)

    @property
    def client(self) -> ClientTurn:
        return self.plan.request.client

    def save(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Append and fsync before going on: nothing continues past the disk."""
        self.writer.append(records)
        for record in records:
            self.state.apply(record)


@dataclass
class _Conversation:
    """What the rounds carry from one to the next."""

    context: AssembledContext
    tools: ToolContext
    messages: list[Mapping[str, Any] | orjson.Fragment]
    steps: list[MessageRecord] = field(default_factory=list)
    usage: UsageSum = field(default_factory=UsageSum)
    said: list[str] = field(default_factory=list)  # each round's text, when it had one

    def told(self) -> str:
        return ROUND_BREAK.join(self.said)


def rounds(turn: Turn) -> Generator[TextDelta | StepEvent, None, TurnResult]:
    """Model rounds until an answer, or a call of the client's tools."""
    rt, principal = turn.rt, turn.principal
    context = assemble_context(
        rt, turn.state, turn.plan.project, turn.plan.offering, summarize=True
    )
    talk = _Conversation(
        context,
        ToolContext(
            principal,
            turn.state.id,
            temporary=turn.state.temporary,
            notify=lambda event: event_bus.publish(rt.redis, principal.user_id, event),
        ),
        [{"role": "system", "content": context.system_prompt}, *context.request_messages()],
    )
    for round_number in range(rt.settings.max_tool_rounds + 1):
        last_round = round_number == rt.settings.max_tool_rounds
        offered = None if last_round else [*rt.tools.specs(talk.tools), *turn.client.tools]
        completion = yield from _call_model(turn, talk.messages, offered)
        talk.usage.add(completion.usage)
        if completion.content:
            talk.said.append(completion.content)
        if completion.tool_calls and offered:
            ended = yield from _tool_round(turn, talk, completion)
            if ended is not None:
                return ended
            continue
        answer = message_record(
            "assistant", completion.content or "", offering=turn.plan.offering.id
        )
        turn.save([answer, *_answer_meta(turn.client, answer, [], talk.told())])
        return _result(turn, talk, answer, completion.finish_reason or "stop")
    raise AssertionError("the last round offers no tools, so it always answers")


def _tool_round(
    turn: Turn, talk: _Conversation, completion: Completion
) -> Generator[StepEvent, None, TurnResult | None]:
    """Run Eonyx's tool calls of a round and save them; the turn's result when the round
    also calls the client's tools (they end the turn), else None (the next round follows)."""
    calls = [
        message_record(
            "assistant",
            completion.content,
            tool_calls=[call.as_openai() for call in completion.tool_calls],
            offering=turn.plan.offering.id,
        )
    ]
    for call in completion.tool_calls:
        if not turn.client.runs(call.name):
            calls.append((yield from _run_tool(turn, talk.tools, call, calls[0]["id"])))
    client_calls = [c.as_openai() for c in completion.tool_calls if turn.client.runs(c.name)]
    turn.save(
        [*calls, *_answer_meta(turn.client, calls[0], client_calls, talk.told())]
        if client_calls
        else calls
    )
    talk.steps.extend(calls)
    if not client_calls:
        talk.messages.extend(to_model_messages(calls))
        return None
    result = _result(turn, talk, calls[0], "tool_calls")
    result.client_tool_calls = client_calls
    return result


def _run_tool(
    turn: Turn, tools: ToolContext, call: ToolCall, message_id: str
) -> Generator[StepEvent, None, MessageRecord]:
    """One of Eonyx's tools: its call, its result record and the memory writes it made."""
    yield events.ToolCall(message_id, call.id, events.FunctionCall(call.name, call.arguments))
    written = len(tools.events)
    output = turn.rt.tools.run(tools, call.name, call.arguments)
    record = message_record("tool", output, tool_call_id=call.id, name=call.name)
    yield events.ToolResult(record)
    for event in tools.events[written:]:
        yield events.MemoryWrite(event)
    return record


def _call_model(
    turn: Turn, messages: Messages, tools: list[dict[str, Any]] | None
) -> Generator[TextDelta, None, Completion]:
    """One round's model call, counted against the user (a stream asks for the model's
    token counts whatever the client asked: they are what the user's usage records)."""
    rt, offering = turn.rt, turn.plan.offering
    options, user_id = turn.client.options, turn.principal.user_id
    if not turn.stream:
        return rt.llm.complete(
            offering, messages, tools=tools or None, options=options, user_id=user_id
        )
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
                return event.completion
            if event.text:
                yield TextDelta(event.text)
    finally:
        close = getattr(events, "close", None)
        if close:
            close()
    raise AssertionError("a model stream ends with its completion")


def _answer_meta(
    client: ClientTurn, answer: MessageRecord, client_calls: list[dict[str, Any]], told: str
) -> list[MetaRecord]:
    """The metadata record the client asks to save with its answer, if any: of the answer
    as the client was shown it (every round's text, its own tools' calls)."""
    changes = client.answer_meta({**answer, "content": told, "tool_calls": client_calls or None})
    return [meta_record(changes, answer["created_at"])] if changes else []


def _result(
    turn: Turn,
    talk: _Conversation,
    answer: MessageRecord,
    finish_reason: str,
) -> TurnResult:
    return TurnResult(
        turn.state.id,
        turn.user_message,
        answer,
        talk.steps,
        talk.context.usage_now(),
        talk.tools.events,
        finish_reason=finish_reason,
        model_usage=talk.usage.total,
        told=talk.told(),
    )
