"""A turn's result as OpenAI's Chat Completions answer: a `chat.completion` body, or a stream
of `chat.completion.chunk` events that ends with `[DONE]`.

A client's tool calls come as `tool_calls` with `finish_reason: "tool_calls"`, streamed in
OpenAI's delta form; `usage` is on every body, and ends a stream that asked for it
(`stream_options.include_usage`) in a chunk of its own with `choices: []`, as OpenAI sends it.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from typing import Any

from api.facade.errors import openai_error
from shared.chat import turns
from shared.chat.turns import TurnEvent
from shared.core import sse
from shared.core.errors import EonyxError
from shared.integrations import facade


def completion_id() -> str:
    return "chatcmpl-" + secrets.token_hex(12)


def _message(result: turns.TurnResult) -> dict[str, Any]:
    answer = result.assistant_message
    message: dict[str, Any] = {
        "role": "assistant",
        "content": result.told or answer.get("content"),
        "refusal": None,
    }
    if result.client_tool_calls:
        message["tool_calls"] = result.client_tool_calls
    return message


def completion_body(model: str, result: turns.TurnResult) -> dict[str, Any]:
    choice = {
        "index": 0,
        "message": _message(result),
        "finish_reason": result.finish_reason,
        "logprobs": None,
    }
    return {
        "id": completion_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [choice],
        "usage": facade.usage(result),
        "system_fingerprint": None,
    }


def completion_chunks(
    model: str, events: Iterator[TurnEvent], *, include_usage: bool
) -> Iterator[str]:
    """The turn's events as chunks (a failure is the caller's: api/streaming.py)."""
    base = {"id": completion_id(), "object": "chat.completion.chunk", "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return sse.encode({**base, "created": int(time.time()), "choices": [choice]})

    yield chunk({"role": "assistant", "content": ""})
    for item in events:
        if isinstance(item, turns.TextDelta):  # steps have no place in OpenAI's chunks
            yield chunk({"content": item.text})
        elif isinstance(item, turns.TurnResult):
            closing = []  # written together, as one piece
            if item.client_tool_calls:
                calls = [{"index": i, **call} for i, call in enumerate(item.client_tool_calls)]
                closing.append(chunk({"tool_calls": calls}))
            closing.append(chunk({}, item.finish_reason))
            if include_usage:
                usage = facade.usage(item)
                closing.append(
                    sse.encode({**base, "created": int(time.time()), "choices": [], "usage": usage})
                )
            yield "".join([*closing, sse.frame("[DONE]")])


def error_chunk(status: int, body: dict[str, Any], exc: EonyxError | None) -> str:
    """The chunk that ends a failed stream: the error in OpenAI's shape."""
    error = body["error"]
    return sse.encode(openai_error(status, error["code"], error["message"]))
