"""The OpenAI chat-completions wire format, as Eonyx reads it.

What an answer is (`Completion`, its `ToolCall`s, and the `StreamEvent`s of a streamed one),
how a response body becomes one (`parse_completion`), how a stream's chunks are folded
(`StreamAssembler`; shared/core/sse.py reads the events they come in), and what an error body
says (`provider_message`). Tolerant where servers differ (content as a list of parts, arguments
sent as an object, tool calls streamed without an index); no I/O, no retries: the client in
client.py does those.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NotRequired, TypedDict

import httpx

from shared.core.messages import answer_text, arguments_text

PROVIDER_MESSAGE_LIMIT = 500


class FunctionCall(TypedDict):
    name: str
    arguments: str


class OpenAIToolCall(TypedDict):
    """A tool call as an assistant message carries it."""

    id: str
    type: Literal["function"]
    function: FunctionCall


class AssistantMessage(TypedDict):
    """An answer as the conversation takes it back (OpenAI's format)."""

    role: Literal["assistant"]
    content: str | None
    tool_calls: NotRequired[list[OpenAIToolCall]]


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text, as the model wrote it (it may be malformed)

    def openai(self) -> OpenAIToolCall:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }

    def as_openai(self) -> dict[str, object]:
        """`openai()` as a plain dict, for the turn's records and events that extend it."""
        return dict(self.openai())


@dataclass(frozen=True)
class Completion:
    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    usage: Mapping[str, object] | None = None  # the provider's counts, as it sent them
    raw: Any = field(default=None, repr=False)  # the response body; for a stream, its chunks

    def message(self) -> AssistantMessage:
        """The assistant message to append to the conversation, in OpenAI's format."""
        message: AssistantMessage = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [call.openai() for call in self.tool_calls]
        return message


class UsageSum:
    """Token counts over the model calls of one turn; None once a call reported none."""

    KEYS = ("prompt_tokens", "completion_tokens", "total_tokens")

    def __init__(self) -> None:
        self.total: dict[str, int] | None = dict.fromkeys(self.KEYS, 0)

    def add(self, usage: Mapping[str, object] | None) -> None:
        if self.total is None:
            return
        counts = [usage.get(key) if usage else None for key in self.KEYS[:2]]
        prompt, completion = (count if isinstance(count, int) else None for count in counts)
        if prompt is None or completion is None:
            self.total = None
            return
        self.total["prompt_tokens"] += prompt
        self.total["completion_tokens"] += completion
        self.total["total_tokens"] += prompt + completion


@dataclass(frozen=True)
class StreamEvent:
    """One step of a streamed answer: a piece of text, or (last of all) the whole completion."""

    text: str = ""
    completion: Completion | None = None

    @property
    def done(self) -> bool:
        return self.completion is not None


def provider_message(response: httpx.Response) -> str | None:
    """The provider's own explanation from an error body (OpenAI's `error.message` and the
    usual variants), or the start of a plain-text body."""
    try:
        data = response.json()
    except ValueError:
        text = " ".join(response.text.split())
        return text[:PROVIDER_MESSAGE_LIMIT] or None
    return error_message(data)


def error_message(data: Any) -> str | None:
    """The explanation in a decoded error body (or a stream's error chunk), clipped."""
    found: Any = None
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict):
            found = error.get("message") or error.get("code")
        elif error:
            found = error
        else:
            found = data.get("message") or data.get("detail")
    if found is None or found == "":
        return None
    text = found if isinstance(found, str) else json.dumps(found, ensure_ascii=False)
    return text[:PROVIDER_MESSAGE_LIMIT]


def parse_completion(data: Any) -> Completion:
    """A chat completion body into a Completion; ValueError when it is not one."""
    if not isinstance(data, dict):
        raise ValueError("the body is not a JSON object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ValueError("the body has no choices")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise ValueError("the first choice has no message")
    calls = []
    for position, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function") or {}
        calls.append(
            ToolCall(
                id=call.get("id") or f"call_{position}",
                name=function.get("name") or "",
                arguments=arguments_text(function.get("arguments")),
            )
        )
    usage = data.get("usage")
    return Completion(
        content=answer_text(message.get("content")),
        tool_calls=calls,
        finish_reason=choice.get("finish_reason"),
        usage=usage if isinstance(usage, dict) else None,
        raw=data,
    )


@dataclass
class _PartialCall:
    """A streamed tool call while its deltas arrive."""

    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


def _object(value: object) -> Mapping[str, object]:
    """`value` when it is a JSON object, else an empty one (servers differ in what they omit)."""
    return value if isinstance(value, dict) else {}


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


class StreamAssembler:
    """Folds `chat.completion.chunk` objects into text deltas and, in the end, a Completion."""

    def __init__(self) -> None:
        self.content: list[str] = []
        self.calls: dict[int, _PartialCall] = {}
        self.finish_reason: str | None = None
        self.usage: Mapping[str, object] | None = None
        self.chunks: list[Any] = []

    def feed(self, chunk: Mapping[str, object]) -> str:
        """Take one chunk; return the text it adds."""
        self.chunks.append(chunk)
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.usage = usage
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return ""
        choice: Mapping[str, object] = choices[0]
        if choice.get("finish_reason"):
            self.finish_reason = str(choice["finish_reason"])
        delta = _object(choice.get("delta"))
        calls = delta.get("tool_calls")
        for call in calls if isinstance(calls, list) else ():
            self._tool_call(_object(call))
        text = answer_text(delta.get("content")) or ""
        if text:
            self.content.append(text)
        return text

    def _tool_call(self, delta: Mapping[str, object]) -> None:
        index = delta.get("index")
        call_id = _text(delta.get("id"))
        if not isinstance(index, int):  # some servers send whole calls without an index
            by_id = [i for i, c in self.calls.items() if call_id and c.id == call_id]
            if by_id:
                index = by_id[0]
            elif call_id or not self.calls:
                index = len(self.calls)
            else:
                index = max(self.calls)
        call = self.calls.setdefault(index, _PartialCall())
        function = _object(delta.get("function"))
        if call_id and not call.id:
            call.id = call_id
        if function.get("name") and not call.name:
            call.name = _text(function["name"])
        call.arguments.append(arguments_text(function.get("arguments")))

    @property
    def started(self) -> bool:
        return bool(self.content or self.calls)

    def completion(self) -> Completion:
        return Completion(
            content="".join(self.content) if self.content or not self.calls else None,
            tool_calls=[
                ToolCall(
                    id=call.id or f"call_{index}",
                    name=call.name,
                    arguments="".join(call.arguments),
                )
                for index, call in sorted(self.calls.items())
            ],
            finish_reason=self.finish_reason,
            usage=self.usage,
            raw=self.chunks,
        )
