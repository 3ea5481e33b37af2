"""The Responses API's `response` object (`POST /v1/responses`, `GET /v1/responses/<id>`).

The output is a `message` item with the answer's text (when there is text) and one
`function_call` item per call of a client's tool. The response echoes what the request set
(instructions, tools, sampling, `text.format`), as OpenAI's does.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from typing import Any

from shared.chat.turns import TurnResult
from shared.integrations import facade

ECHOED = ("instructions", "max_output_tokens", "previous_response_id", "temperature", "top_p")


def item_id(prefix: str) -> str:
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


def _usage(result: TurnResult) -> dict[str, Any]:
    counts = facade.usage(result)
    return {
        "input_tokens": counts["prompt_tokens"],
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": counts["completion_tokens"],
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": counts["total_tokens"],
    }


def text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def message_item(item_id: str, text: str, status: str = "completed") -> dict[str, Any]:
    content = [text_part(text)] if status == "completed" else []
    return {
        "type": "message",
        "id": item_id,
        "status": status,
        "role": "assistant",
        "content": content,
    }


def _call_items(result: TurnResult) -> list[dict[str, Any]]:
    return [
        {
            "type": "function_call",
            "id": item_id("fc"),
            "call_id": call["id"],
            "name": call["function"]["name"],
            "arguments": call["function"]["arguments"],
            "status": "completed",
        }
        for call in result.client_tool_calls
    ]


def finished(
    response: dict[str, Any], result: TurnResult, message_id: str | None = None
) -> dict[str, Any]:
    """The response with its output, its usage and its status."""
    text = result.told
    output = [message_item(message_id or item_id("msg"), text)] if text else []
    incomplete = result.finish_reason == "length"
    return {
        **response,
        "status": "incomplete" if incomplete else "completed",
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "output": output + _call_items(result),
        "usage": _usage(result),
    }
