"""What a turn takes besides its message, checked against the session before it is saved.

An OpenAI-style client (the facade, /v1) brings its own part to a turn (`ClientTurn`): its
instructions, its tools, model parameters, and messages the session has not seen yet. Those
messages must keep the conversation valid for any model: every tool call answered by one
tool result, and nothing else in between (`check_tool_results`).

A retry answers the last user message when it has no answer; a regenerate answers it again
when it has one. An edit replaces a user message of the conversation and everything after
it with a new message (`edited_branch`). What is replaced stays in the file, and a
`supersede` record after it takes it out of the state, so the transcript, the exports, forks
and the next prompt show only the current branch (shared/files/session_state.py folds it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from shared.core.errors import Conflict, InvalidInput, NotFound
from shared.core.messages import MessageRecord, calls_tools, is_final_answer
from shared.files.session_state import SessionState


@dataclass(frozen=True)
class ClientTurn:
    """What an OpenAI-style client brings to a turn beside its message; a plain turn has
    the empty one. The turn asks it at fixed points, and a client that keeps bookkeeping of
    its own (the facade's session head) overrides `answer_meta`.

    `instructions` are its system and developer messages (a section of the system prompt);
    `tools` are offered beside Eonyx's own, and a call of one ends the turn, for the client
    to run (`runs`); `options` are model parameters sent as given (`temperature`,
    `response_format`, `tool_choice`...). `messages` are records to save before the turn's
    own message: what the client sent that the session has not seen (tool results, an
    opening it wrote itself)."""

    instructions: str | None = None
    tools: tuple[dict[str, Any], ...] = ()
    options: Mapping[str, Any] = field(default_factory=dict)
    messages: tuple[MessageRecord, ...] = ()
    include_usage: bool = False

    @property
    def tool_names(self) -> frozenset[str]:
        return frozenset(tool["function"]["name"] for tool in self.tools)

    def runs(self, tool_name: str) -> bool:
        """Whether a call of `tool_name` is the client's to run."""
        return tool_name in self.tool_names

    def answer_meta(self, answer: Mapping[str, Any]) -> dict[str, Any]:
        """Metadata to save with the answer, in the same write; `answer` is the answer as the
        client sees it (its text and the client's tool calls)."""
        return {}


def unanswered_calls(state: SessionState) -> list[str]:
    """Ids of the session's last tool calls that have no result yet (a client's, awaited)."""
    answered: set[str] = set()
    for record in reversed(state.messages):
        role = record.get("role")
        if role == "tool":
            answered.add(record.get("tool_call_id") or "")
            continue
        if calls_tools(record):
            ids = [call.get("id") or "" for call in record["tool_calls"]]
            return [call_id for call_id in ids if call_id not in answered]
        return []
    return []


def check_tool_results(state: SessionState, records: Sequence[Mapping[str, Any]]) -> None:
    """InvalidInput unless `records`, saved after the session's messages, answer every tool
    call with exactly one result before anything else is said."""
    pending = unanswered_calls(state)
    for record in records:
        role = record.get("role")
        if role == "tool":
            call_id = record.get("tool_call_id")
            if call_id not in pending:
                raise InvalidInput(
                    f"a tool message answers {call_id!r}, which is no tool call awaiting its "
                    "result",
                    code="unexpected_tool_result",
                    param="messages",
                )
            pending.remove(call_id)
            continue
        _no_call_left(pending)
        if calls_tools(record):
            pending = [call.get("id") for call in record["tool_calls"]]
    _no_call_left(pending)


def _no_call_left(pending: list[str]) -> None:
    if pending:
        raise InvalidInput(
            f"the tool calls {', '.join(map(repr, pending))} have no result: send one "
            "message with role 'tool' for each, after the assistant message that made them",
            code="missing_tool_result",
            param="messages",
        )


def message_to_answer(
    state: SessionState, *, regenerate: bool
) -> tuple[MessageRecord, list[MessageRecord]]:
    """(the user message to answer, the records a regenerate supersedes): a retry answers
    the last user message when no final answer follows it; a regenerate answers it anyway,
    superseding what followed it."""
    messages = state.messages
    for position in range(len(messages) - 1, -1, -1):
        record = messages[position]
        role = record.get("role")
        if role == "user":
            return record, list(messages[position + 1 :]) if regenerate else []
        if is_final_answer(record) and not regenerate:
            break
    if regenerate:
        raise InvalidInput(
            "the session has no message to answer again", code="nothing_to_regenerate"
        )
    raise Conflict("the last turn was answered; send a new message", code="nothing_to_retry")


def edited_branch(state: SessionState, message_id: str) -> list[MessageRecord]:
    """The records an edit of `message_id` supersedes: that user message of the current
    conversation and all after it (NotFound for an id the conversation does not hold, a
    superseded one included; InvalidInput for a message that is not the user's)."""
    messages = state.messages
    for position, record in enumerate(messages):
        if record.get("id") != message_id:
            continue
        if record.get("role") != "user":
            raise InvalidInput(
                "only a user message can be edited", code="not_a_user_message", param="edit"
            )
        return list(messages[position:])
    raise NotFound("no such message in the conversation", code="message_not_found")
