"""The OpenAI chat message format and a session file's records, read and written in this one
place.

Eonyx keeps its messages as records in OpenAI's shape (role, content as text or content
parts, tool calls with `function.name` and `function.arguments`, tool results with
`tool_call_id`), and meets the same shape from models (wire.py), from clients (the facade,
images, bundles) and in its own clients. What a message's text is, how big it is to a model,
which records a model is sent and in what form, how a record is built (message, meta,
supersede), which message is a final answer and which is inside a tool step, and the
`[system, user]` prompt of a background job: all of it is decided here, so that no two places
disagree.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict, cast

from shared.core.clock import isoformat, utcnow


class MessageRecord(TypedDict, total=False):
    """A message as a session file keeps it: OpenAI's shape, with Eonyx's id and time."""

    type: Literal["message"]
    id: str
    role: str  # user, assistant, tool (system only from an imported bundle)
    content: Any  # text, content parts, or None beside tool calls
    created_at: str
    tool_calls: list[dict[str, Any]]
    tool_call_id: str
    images: list[str]  # a user message's image files, kept beside the session file
    name: str


class MetaRecord(TypedDict):
    """A `meta` record: fields of the session (its own, or bookkeeping of the packages above
    it) set at `at`. What the fields are is the folding's business (shared/files)."""

    type: Literal["meta"]
    at: str
    set: dict[str, Any]


class SupersedeRecord(TypedDict):
    """A `supersede` record: takes messages out of the session's state (they stay in the
    file), with their counts so that a fold keeping no messages (the index's) can subtract."""

    type: Literal["supersede"]
    at: str
    ids: list[str]
    messages: int  # user and assistant messages among them
    images: int


class JobMessage(TypedDict):
    """A message of a background job's prompt: plain text from the system or the user."""

    role: Literal["system", "user"]
    content: str


CHAT_ROLES = ("user", "assistant")
MAX_MESSAGE_CHARS = 200_000  # a message's text, as the API accepts it (the clients stop there)
MODEL_ROLES = ("user", "assistant", "tool")  # the records a model is sent


def new_message_id() -> str:
    return secrets.token_hex(8)


def message_record(role: str, content: Any, **extra: Any) -> MessageRecord:
    """A new message, now, with a fresh id; `extra` fields that are None are left out."""
    record = {"type": "message", "id": new_message_id(), "role": role, "content": content}
    record["created_at"] = isoformat(utcnow())
    return cast(MessageRecord, record | {k: v for k, v in extra.items() if v is not None})


def meta_record(changes: Mapping[str, Any], at: str | None = None) -> MetaRecord:
    """A record setting `changes`, at `at` (an ISO time; now by default)."""
    return {"type": "meta", "at": at or isoformat(utcnow()), "set": dict(changes)}


def supersede_record(records: Sequence[Mapping[str, Any]]) -> SupersedeRecord:
    """The record that takes `records` out of the session's state (they stay in the file)."""
    return {
        "type": "supersede",
        "at": isoformat(utcnow()),
        "ids": [record["id"] for record in records],
        "messages": sum(1 for record in records if record.get("role") in CHAT_ROLES),
        "images": sum(len(record.get("images") or ()) for record in records),
    }


def job_prompt(instructions: str, material: str) -> list[JobMessage]:
    """What a background job (a title, an extraction, a curation, a summary) sends its model:
    the job's instructions as the system message, what to work on as the one user message."""
    return [{"role": "system", "content": instructions}, {"role": "user", "content": material}]


def text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def image_part(url: str) -> dict[str, Any]:
    """An image as a content part: `url` is a data: URL or, from a client, an http(s) one."""
    return {"type": "image_url", "image_url": {"url": url}}


def answer_text(content: Any) -> str | None:
    """A model's answer as text (None when it wrote none): a string, or its text parts."""
    return None if content is None else content_text(content, placeholders=False)


def content_text(content: Any, *, placeholders: bool = True) -> str:
    """A message's text: the text parts of multi-part content joined by line breaks, other
    parts as `[type]` (or left out, without `placeholders`)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif isinstance(part, Mapping) and part.get("type") and placeholders:
                texts.append(f"[{part['type']}]")
            elif isinstance(part, str):
                texts.append(part)
        return "\n".join(texts)
    return str(content)


def content_chars(content: Any) -> int:
    """Characters of a message's content the model reads (text parts only)."""
    if content is None:
        return 0
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):  # OpenAI content parts: only text is counted
        total = 0
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                total += len(part["text"])
            elif isinstance(part, str):
                total += len(part)
        return total
    return len(str(content))


def arguments_text(arguments: Any) -> str:
    """A tool call's arguments as JSON text: as the model wrote them (possibly malformed), or
    encoded when a server sent them as an object."""
    if arguments is None:
        return ""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))


def tool_call_parts(call: Any) -> tuple[str, str]:
    """(name, arguments as text) of a tool call in OpenAI or flat form."""
    if not isinstance(call, Mapping):
        return "", ""
    function = call.get("function")
    source = function if isinstance(function, Mapping) else call
    name = source.get("name")
    return (name if isinstance(name, str) else ""), arguments_text(source.get("arguments"))


def tool_call_problem(call: Any) -> str | None:
    """Why `call` is not a tool call as Eonyx keeps and sends them (OpenAI's
    `{id, type: "function", function: {name, arguments}}`, arguments as JSON text or an
    object), or None. Every place that takes calls from outside (the facade, imports) holds
    them to this, so no later reader (a prompt, an export) meets a call it cannot read."""
    if not isinstance(call, Mapping):
        return "must be an object"
    if call.get("type", "function") != "function":
        return "type must be function"
    if not isinstance(call.get("id", ""), str | None):
        return "id must be text"
    function = call.get("function")
    if not isinstance(function, Mapping):
        return "needs a function object {name, arguments}"
    name = function.get("name")
    if not isinstance(name, str) or not name:
        return "function.name must be text"
    if not isinstance(function.get("arguments"), str | Mapping | None):
        return "function.arguments must be JSON text"
    return None


def message_chars(message: Mapping[str, Any]) -> int:
    """A message's size as the model sees it: content text plus tool calls' names and
    arguments (the basis of every token estimate)."""
    total = content_chars(message.get("content"))
    for call in message.get("tool_calls") or ():
        name, arguments = tool_call_parts(call)
        total += len(name) + len(arguments)
    return total


def calls_tools(record: Mapping[str, Any]) -> bool:
    """An assistant message that calls tools: it opens a tool step, it does not end a turn."""
    return record.get("role") == "assistant" and bool(record.get("tool_calls"))


def is_final_answer(record: Mapping[str, Any]) -> bool:
    """An assistant message that calls no tool: the answer that ends a turn."""
    return record.get("role") == "assistant" and not record.get("tool_calls")


def in_tool_step(record: Mapping[str, Any]) -> bool:
    """A tool call or a tool's result: inside a turn, never a point a fork or a like names."""
    return record.get("role") == "tool" or calls_tools(record)


def is_model_message(record: Mapping[str, Any]) -> bool:
    """A record the model is sent: a user, assistant or tool message."""
    return record.get("type", "message") == "message" and record.get("role") in MODEL_ROLES


def model_tool_call(call: Any) -> dict[str, Any]:
    """A tool call as OpenAI's API takes it back: `{id, type, function: {name, arguments}}`."""
    name, arguments = tool_call_parts(call)
    call_id = call.get("id") if isinstance(call, Mapping) else None
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


def model_message(record: Mapping[str, Any]) -> dict[str, Any]:
    """A model message record as an OpenAI chat message: role, content, and tool calls or
    the call it answers; ids, times and images are left out. The content is the record's."""
    role = record["role"]
    message: dict[str, Any] = {"role": role, "content": record.get("content")}
    if calls_tools(record):
        message["tool_calls"] = [model_tool_call(call) for call in record["tool_calls"]]
    elif role == "tool":
        message["tool_call_id"] = record.get("tool_call_id")
    if message["content"] is None and role != "assistant":
        message["content"] = ""
    return message


@dataclass(frozen=True)
class Exchange:
    """A user's message and the assistant's final answer to it (None while unanswered): what
    a like marks, what extraction and curation read."""

    user: Mapping[str, Any]
    answer: Mapping[str, Any] | None


def exchanges(messages: Sequence[Mapping[str, Any]]) -> list[Exchange]:
    """A session's exchanges in order; tool calls and tool results are not part of them."""
    found: list[Exchange] = []
    for message in messages:
        role = message.get("role")
        if role == "user":
            found.append(Exchange(message, None))
        elif is_final_answer(message) and found:
            found[-1] = Exchange(found[-1].user, message)
    return found


def count_answered(found: list[Exchange]) -> int:
    """Exchanges that are over: all of them but a last one still waiting for its answer (the
    user turns the extraction marker counts)."""
    return len(found) - 1 if found and found[-1].answer is None else len(found)
