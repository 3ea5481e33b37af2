"""Anthropic's Messages API on the facade (`POST /v1/messages`, `/v1/messages/count_tokens`),
so that Anthropic clients (the `anthropic` SDK, Claude Code) keep their conversations in Eonyx.

There is no second turn engine: a Messages request is read into the facade's Chat Completions
form (`read_chat_request`) and run by `facade.run_chat`, as the Responses API is, so sessions,
tools, memory and refusals follow the same rules. The mapping:

- `system` (a string or text blocks) is the client's instructions, and so is a message of
  role `system` among the messages (Claude Code sends its environment so, after the user's
  question); `cache_control` is a caching hint and is passed over wherever it is.
- A user message's `tool_result` blocks become `tool` messages, before the rest of its
  content (text and `image` blocks, base64 or url sources, as image_url parts; plain-text
  `document` blocks as text); images inside a tool result go to that user content, since a
  tool message carries text only.
- An assistant message's text blocks are its content and its `tool_use` blocks its tool
  calls (arguments as JSON text), so a resent answer hashes as the one Eonyx gave
  (`facade.head_key`) and the conversation stays in its session; thinking blocks carry
  nothing a chat model reads and are passed over.
- Custom tools become function tools; server tools (web search, bash, text editor...), which
  the upstream model cannot run, are dropped and named as ignored, like `top_k`, `thinking`,
  `service_tier`, `context_management`, `mcp_servers` and fields unknown to Eonyx.

The answer is an Anthropic `message`: text and `tool_use` blocks, the stop reason, and the
usage the facade reports (the model's counts, else Eonyx's estimate).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from shared.chat.compaction import CHARS_PER_TOKEN
from shared.chat.turns import TurnResult
from shared.core.errors import InvalidInput
from shared.core.messages import image_part, message_chars, text_part
from shared.integrations import facade
from shared.integrations.openai_request import ChatRequest, check_encodable, read_chat_request
from shared.integrations.response_object import item_id

SAME = ("model", "max_tokens", "temperature", "top_p", "metadata", "stream")
READ = ("messages", "system", "tools", "tool_choice", "stop_sequences")
STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "content_filter": "refusal",
}
SKIPPED_BLOCKS = ("thinking", "redacted_thinking")
CUSTOM_TOOL_TYPES = (None, "custom")


def _refuse(message: str, param: str) -> InvalidInput:
    return InvalidInput(message, code="invalid_request", param=param)


def _source(block: Mapping[str, Any], kind: str, *fields: str) -> list[str] | None:
    """The fields of a block's source of `kind`, when it is one and they are text."""
    source = block.get("source")
    if not isinstance(source, Mapping) or source.get("type") != kind:
        return None
    values = [source.get(name) for name in fields]
    texts = [value for value in values if isinstance(value, str)]
    return texts if len(texts) == len(fields) else None


def _image(block: Mapping[str, Any], where: str) -> dict[str, Any]:
    if (encoded := _source(block, "base64", "media_type", "data")) is not None:
        return image_part(f"data:{encoded[0]};base64,{encoded[1]}")
    if (url := _source(block, "url", "url")) is not None:
        return image_part(url[0])
    raise _refuse(f"{where}: an image source must be base64 or url", where)


def _document(block: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A plain-text document as text; any other (a PDF) the model behind Eonyx cannot read."""
    if (data := _source(block, "text", "data")) is not None:
        return text_part(data[0])
    raise _refuse(f"{where}: only documents with a text source are supported", where)


def _parts(blocks: Any, where: str, skip: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Text and image blocks as chat content parts (blocks of a kind in `skip` left out)."""
    if isinstance(blocks, str):
        return [text_part(blocks)]
    if not isinstance(blocks, list):
        raise _refuse(f"{where} must be a string or a list of content blocks", where)
    parts = []
    for number, block in enumerate(blocks):
        at = f"{where}[{number}]"
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "text" and isinstance(block, Mapping):
            parts.append(text_part(str(block.get("text") or "")))
        elif kind == "image" and isinstance(block, Mapping):
            parts.append(_image(block, at))
        elif kind == "document" and isinstance(block, Mapping):
            parts.append(_document(block, at))
        elif kind not in (*SKIPPED_BLOCKS, *skip):
            raise _refuse(f"{at}: blocks of type {kind!r} are not supported here", at)
    return parts


def _text(content: Any, where: str) -> str:
    """Instructions given as a string or text blocks (their images would be lost: refused)."""
    parts = _parts(content, where)
    if any(part["type"] != "text" for part in parts):
        raise _refuse(f"{where} must be text", where)
    return "\n\n".join(part["text"] for part in parts)


def _joined(parts: list[dict[str, Any]]) -> str | list[dict[str, Any]]:
    """Text alone as one string (as a client's plain string would read), else the parts."""
    if all(part["type"] == "text" for part in parts):
        return "\n".join(part["text"] for part in parts)
    return parts


def _user(content: Any, where: str) -> list[dict[str, Any]]:
    """A user message: its tool results as tool messages, then the rest of it (with the
    results' images, which a tool message cannot carry)."""
    if isinstance(content, str):
        return [{"role": "user", "content": content}]
    if not isinstance(content, list):
        raise _refuse(f"{where}.content must be a string or a list of content blocks", where)
    messages: list[dict[str, Any]] = []
    images: list[dict[str, Any]] = []
    for number, block in enumerate(content):
        if not (isinstance(block, Mapping) and block.get("type") == "tool_result"):
            continue
        parts = _parts(block.get("content") or [], f"{where}.content[{number}].content")
        images += [part for part in parts if part["type"] != "text"]
        said = "\n".join(part["text"] for part in parts if part["type"] == "text")
        if block.get("is_error"):
            said = f"Error: {said}"
        messages.append({"role": "tool", "tool_call_id": block.get("tool_use_id"), "content": said})
    parts = [*_parts(content, f"{where}.content", skip=("tool_result",)), *images]
    if parts or not messages:
        messages.append({"role": "user", "content": _joined(parts)})
    return messages


def _assistant(content: Any, where: str) -> list[dict[str, Any]]:
    """An assistant message: text blocks as its content, tool_use blocks as its calls."""
    if isinstance(content, str):
        return [{"role": "assistant", "content": content}]
    if not isinstance(content, list):
        raise _refuse(f"{where}.content must be a string or a list of content blocks", where)
    texts, calls = [], []
    for number, block in enumerate(content):
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "text" and isinstance(block, Mapping):
            texts.append(str(block.get("text") or ""))
        elif kind == "tool_use" and isinstance(block, Mapping):
            arguments = json.dumps(block.get("input") or {}, ensure_ascii=False)
            function = {"name": block.get("name"), "arguments": arguments}
            calls.append({"id": block.get("id"), "type": "function", "function": function})
        elif kind not in SKIPPED_BLOCKS:
            at = f"{where}.content[{number}]"
            raise _refuse(f"{at}: blocks of type {kind!r} are not supported here", at)
    text = "\n".join(texts)
    if not text and not calls:
        return []  # only thinking: nothing the model reads
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = calls
    return [message]


def _messages(messages: Any, system: Any) -> list[dict[str, Any]]:
    if not isinstance(messages, list) or not messages:
        raise _refuse("messages must be a non-empty list", "messages")
    chat: list[dict[str, Any]] = []
    if system:
        chat.append({"role": "system", "content": _text(system, "system")})
    for number, message in enumerate(messages):
        where = f"messages[{number}]"
        role = message.get("role") if isinstance(message, Mapping) else None
        if role == "user" and isinstance(message, Mapping):
            chat += _user(message.get("content"), where)
        elif role == "assistant" and isinstance(message, Mapping):
            chat += _assistant(message.get("content"), where)
        elif role == "system" and isinstance(message, Mapping):  # Claude Code's, mid-list
            chat.append({"role": "system", "content": _text(message.get("content"), where)})
        else:
            raise _refuse(f"{where}.role must be user, assistant or system", where)
    return chat


def _tools(tools: Any, ignored: list[str]) -> list[dict[str, Any]] | None:
    """Custom tools as function tools; server tools dropped and named in `ignored`."""
    if tools is None:
        return None
    if not isinstance(tools, list):
        raise _refuse("tools must be a list", "tools")
    kept = []
    for tool in tools:
        kind = tool.get("type") if isinstance(tool, Mapping) else None
        if kind not in CUSTOM_TOOL_TYPES or not isinstance(tool, Mapping):
            ignored.append(f"tools[{kind}]")
            continue
        function = {"name": tool.get("name"), "parameters": tool.get("input_schema") or {}}
        if tool.get("description"):
            function["description"] = tool["description"]
        kept.append({"type": "function", "function": function})
    return kept


def _tool_choice(choice: Any, chat: dict[str, Any]) -> None:
    if choice is None:
        return
    kind = choice.get("type") if isinstance(choice, Mapping) else None
    if kind in ("auto", "none"):
        chat["tool_choice"] = kind
    elif kind == "any":
        chat["tool_choice"] = "required"
    elif kind == "tool" and isinstance(choice, Mapping):
        chat["tool_choice"] = {"type": "function", "function": {"name": choice.get("name")}}
    else:
        raise _refuse("tool_choice.type must be auto, any, tool or none", "tool_choice")
    if isinstance(choice, Mapping) and choice.get("disable_parallel_tool_use"):
        chat["parallel_tool_calls"] = False


def read_messages_request(body: Mapping[str, Any]) -> ChatRequest:
    """The request in the facade's chat form, or InvalidInput naming the field at fault."""
    check_encodable(body)
    ignored = [name for name in body if name not in (*SAME, *READ) and body[name] is not None]
    chat: dict[str, Any] = {name: body[name] for name in SAME if body.get(name) is not None}
    chat["messages"] = _messages(body.get("messages"), body.get("system"))
    chat["tools"] = _tools(body.get("tools"), ignored)
    _tool_choice(body.get("tool_choice"), chat)
    if body.get("stop_sequences"):
        chat["stop"] = body["stop_sequences"]
    if body.get("stream"):
        chat["stream_options"] = {"include_usage": True}  # message_delta carries the usage
    return read_chat_request({k: v for k, v in chat.items() if v is not None}, ignored)


def estimate_tokens(chat: ChatRequest) -> int:
    """Eonyx's estimate of what the request's own text costs (about 4 characters a token,
    as the facade's `usage` estimates): its instructions, messages and tools."""
    chars = len(chat.instructions or "") + sum(message_chars(m) for m in chat.messages)
    chars += len(json.dumps(chat.tools, ensure_ascii=False)) if chat.tools else 0
    return max(1, math.ceil(chars / CHARS_PER_TOKEN))


def count_tokens(body: Mapping[str, Any]) -> dict[str, int]:
    """`POST /v1/messages/count_tokens`: the estimate of a request it would send."""
    return {"input_tokens": estimate_tokens(read_messages_request(body))}


def usage(result: TurnResult) -> dict[str, int]:
    counts = facade.usage(result)
    return {
        "input_tokens": counts.get("prompt_tokens", 0),
        "output_tokens": counts.get("completion_tokens", 0),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def stop_reason(result: TurnResult) -> str:
    return STOP_REASONS.get(result.finish_reason, "end_turn")


def tool_use(call: Mapping[str, Any]) -> dict[str, Any]:
    """A client's tool call (OpenAI's form) as a tool_use block; arguments that are not a
    JSON object (a model's slip) are given as `{}`."""
    function = call.get("function") or {}
    try:
        arguments = json.loads(function.get("arguments") or "{}")
    except ValueError:
        arguments = {}
    return {
        "type": "tool_use",
        "id": call.get("id"),
        "name": function.get("name"),
        "input": arguments if isinstance(arguments, dict) else {},
    }


def message_id() -> str:
    return item_id("msg")


def message_body(model: str, result: TurnResult) -> dict[str, Any]:
    """The turn's answer as an Anthropic message."""
    text = result.told
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += [tool_use(call) for call in result.client_tool_calls]
    return {
        "id": message_id(),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason(result),
        "stop_sequence": None,
        "usage": usage(result),
    }
