"""A turn's events as Anthropic's Messages stream: `message_start`, a text block's
`content_block_start` / `content_block_delta` (text_delta) / `content_block_stop`, one block
per client tool call (its input in one input_json_delta), `message_delta` with the stop
reason and usage, `message_stop`; a failure is an `error` event in Anthropic's shape."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from api.facade.anthropic_errors import ERROR, anthropic_error
from shared.chat import turns
from shared.chat.turns import TurnEvent
from shared.core import sse
from shared.core.errors import EonyxError
from shared.integrations import anthropic_messages


def _event(kind: str, **data: Any) -> str:
    return sse.encode({"type": kind, **data}, kind)


def _tool_block(index: int, call: dict[str, Any]) -> str:
    block = anthropic_messages.tool_use(call)
    partial = json.dumps(block["input"], ensure_ascii=False)
    return (
        _event("content_block_start", index=index, content_block={**block, "input": {}})
        + _event(
            "content_block_delta",
            index=index,
            delta={"type": "input_json_delta", "partial_json": partial},
        )
        + _event("content_block_stop", index=index)
    )


def _closing(result: turns.TurnResult, index: int) -> str:
    """The client's tool calls from block `index` on, then the message's end."""
    usage = anthropic_messages.usage(result)
    tools = [_tool_block(index + n, call) for n, call in enumerate(result.client_tool_calls)]
    delta = {"stop_reason": anthropic_messages.stop_reason(result), "stop_sequence": None}
    return "".join(
        [*tools, _event("message_delta", delta=delta, usage=usage), _event("message_stop")]
    )


def message_events(model: str, input_tokens: int, events: Iterator[TurnEvent]) -> Iterator[str]:
    """The turn's events as the Messages stream (a failure is the caller's: api/streaming.py);
    `message_start` counts the request's estimated input, `message_delta` the turn's usage."""
    start: dict[str, Any] = {
        "id": anthropic_messages.message_id(),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 0},
    }
    yield _event("message_start", message=start)
    text_open = False
    for item in events:
        if isinstance(item, turns.TextDelta) and item.text:
            opening = ""
            if not text_open:
                block = {"type": "text", "text": ""}
                opening = _event("content_block_start", index=0, content_block=block)
            text_open = True
            delta = {"type": "text_delta", "text": item.text}
            yield opening + _event("content_block_delta", index=0, delta=delta)
        elif isinstance(item, turns.TurnResult):
            ending = _event("content_block_stop", index=0) if text_open else ""
            yield ending + _closing(item, 1 if text_open else 0)


def error_event(status: int, body: dict[str, Any], exc: EonyxError | None) -> str:
    """The event that ends a failed stream: the error in Anthropic's shape."""
    error = anthropic_error(status, body["error"]["message"], body["error"]["code"])
    return _event(ERROR, error=error["error"])
