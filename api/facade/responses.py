"""A turn's result as a Responses API `response` object, and as its stream of typed events
(`response.created`, `response.output_text.delta`, ..., `response.completed`).

The output is a `message` item with the answer's text (when there is text) and one
`function_call` item per call of a client's tool. The response echoes what the request set
(instructions, tools, sampling, `text.format`), as OpenAI's does.
"""

from __future__ import annotations

import itertools
import logging
import secrets
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from api.errors import render_error
from shared.chat import turns
from shared.core import sse
from shared.core.errors import EonyxError
from shared.integrations import facade

log = logging.getLogger(__name__)
ECHOED = ("instructions", "max_output_tokens", "previous_response_id", "temperature", "top_p")


def _item_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(16)}"


def skeleton(response_id: str, request: Mapping[str, Any], model: str) -> dict[str, Any]:
    """The response before its output: what the request asked, echoed."""
    echoed = {name: request.get(name) for name in ECHOED}
    return {
        "id": response_id,
        "object": "response",
        "created_at": int(time.time()),
        "status": "in_progress",
        "model": model,
        "output": [],
        "error": None,
        "incomplete_details": None,
        "tools": request.get("tools") or [],
        "tool_choice": request.get("tool_choice") or "auto",
        "parallel_tool_calls": request.get("parallel_tool_calls", True),
        "text": request.get("text") or {"format": {"type": "text"}},
        "truncation": request.get("truncation") or "disabled",
        "store": request.get("store", True),
        "metadata": request.get("metadata") or {},
        "user": request.get("user"),
        "usage": None,
        **echoed,
    }


def _usage(result: turns.TurnResult) -> dict[str, Any]:
    counts = facade.usage(result)
    return {
        "input_tokens": counts["prompt_tokens"],
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": counts["completion_tokens"],
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": counts["total_tokens"],
    }


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _message_item(item_id: str, text: str, status: str = "completed") -> dict[str, Any]:
    content = [_text_part(text)] if status == "completed" else []
    return {
        "type": "message",
        "id": item_id,
        "status": status,
        "role": "assistant",
        "content": content,
    }


def _call_items(result: turns.TurnResult) -> list[dict[str, Any]]:
    return [
        {
            "type": "function_call",
            "id": _item_id("fc"),
            "call_id": call["id"],
            "name": call["function"]["name"],
            "arguments": call["function"]["arguments"],
            "status": "completed",
        }
        for call in result.client_tool_calls
    ]


def finished(
    response: dict[str, Any], result: turns.TurnResult, message_id: str | None = None
) -> dict[str, Any]:
    """The response with its output, its usage and its status."""
    text = result.assistant_message.get("content") or ""
    output = [_message_item(message_id or _item_id("msg"), text)] if text else []
    incomplete = result.finish_reason == "length"
    return {
        **response,
        "status": "incomplete" if incomplete else "completed",
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "output": output + _call_items(result),
        "usage": _usage(result),
    }


def _closing(
    final: dict[str, Any],
    streamed: bool,
    where: dict[str, Any],
    event: Callable[..., str],
) -> Iterator[str]:
    """The events that end a stream: the message's text done, the client's calls, and the
    finished response."""
    message = next((o for o in final["output"] if o["type"] == "message"), None)
    if streamed and message is not None:
        text = message["content"][0]["text"]
        yield event("response.output_text.done", **where, text=text, logprobs=[])
        yield event("response.content_part.done", **where, part=message["content"][0])
        yield event("response.output_item.done", output_index=0, item=message)
    calls = [o for o in final["output"] if o["type"] == "function_call"]
    for index, call in enumerate(calls, start=len(final["output"]) - len(calls)):
        at = {"output_index": index}
        yield event("response.output_item.added", **at, item={**call, "arguments": ""})
        text = call["arguments"]
        on = {"item_id": call["id"], **at}
        yield event("response.function_call_arguments.delta", **on, delta=text)
        yield event("response.function_call_arguments.done", **on, arguments=text)
        yield event("response.output_item.done", **at, item=call)
    yield event(f"response.{final['status']}", response=final)


def response_events(
    response: dict[str, Any],
    first: Any,
    rest: Iterator[Any],
    *,
    done: Callable[[turns.TurnResult, str], dict[str, Any]],
) -> Iterator[str]:
    """The stream of a response; `done(result, message_id)` gives the finished response
    (and keeps it)."""
    numbers = itertools.count()

    def event(kind: str, **data: Any) -> str:
        return sse.encode({"type": kind, "sequence_number": next(numbers), **data}, kind)

    message_id = _item_id("msg")
    where = {"item_id": message_id, "output_index": 0, "content_index": 0}
    # Events that come together are written together: one write each, not one per event.
    yield event("response.created", response=response) + event(
        "response.in_progress", response=response
    )
    streamed: list[str] = []
    item = first
    try:
        while not isinstance(item, turns.TurnResult):
            if isinstance(item, turns.TextDelta) and item.text:
                opening = ""
                if not streamed:
                    added = _message_item(message_id, "", "in_progress")
                    opening = event("response.output_item.added", output_index=0, item=added)
                    opening += event("response.content_part.added", **where, part=_text_part(""))
                streamed.append(item.text)
                delta = event("response.output_text.delta", **where, delta=item.text, logprobs=[])
                yield opening + delta
            item = next(rest)
        yield "".join(_closing(done(item, message_id), bool(streamed), where, event))
    except EonyxError as exc:
        body, status = render_error(exc)
        error = body["error"]
        yield event("error", code=error["code"], message=error["message"], param=exc.param)
        failure = {"code": error["code"], "message": error["message"]}
        yield event("response.failed", response={**response, "status": "failed", "error": failure})
    except Exception:  # the headers are sent: the stream itself must say what went wrong
        log.exception("a streamed response failed")
        yield event("error", code="internal_error", message="the turn failed on the server")
