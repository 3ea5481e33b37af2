"""A Responses API turn as its stream of typed events (`response.created`,
`response.output_text.delta`, ..., `response.completed`); the response object itself is
shared/integrations/response_object.py's."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

from shared.chat import turns
from shared.core import sse
from shared.core.errors import EonyxError
from shared.integrations.response_object import message_item, text_part
from shared.integrations.responses import ResponseRun


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


class ResponseStream:
    """A response's stream of typed events, numbered in order, its error event included."""

    def __init__(self, run: ResponseRun) -> None:
        self.run = run
        self.numbers = itertools.count()

    def event(self, kind: str, **data: Any) -> str:
        return sse.encode({"type": kind, "sequence_number": next(self.numbers), **data}, kind)

    def events(self) -> Iterator[str]:
        """The response's events (a failure is the caller's: api/streaming.py)."""
        event, response = self.event, self.run.response
        where = {"item_id": self.run.message_id, "output_index": 0, "content_index": 0}
        # Events that come together are written together: one write each, not one per event.
        yield event("response.created", response=response) + event(
            "response.in_progress", response=response
        )
        streamed = False
        for item in self.run.turn.events:
            if isinstance(item, turns.TextDelta) and item.text:
                opening = ""
                if not streamed:
                    added = message_item(self.run.message_id, "", "in_progress")
                    opening = event("response.output_item.added", output_index=0, item=added)
                    opening += event("response.content_part.added", **where, part=text_part(""))
                streamed = True
                delta = event("response.output_text.delta", **where, delta=item.text, logprobs=[])
                yield opening + delta
            elif isinstance(item, turns.TurnResult):
                assert self.run.answer is not None  # kept before the result is yielded
                yield "".join(_closing(self.run.answer, streamed, where, event))

    def error_event(self, status: int, body: dict[str, Any], exc: EonyxError | None) -> str:
        """`error`, then `response.failed` when the turn itself failed."""
        error = body["error"]
        param = exc.param if exc else None
        said = self.event("error", code=error["code"], message=error["message"], param=param)
        if exc is None:
            return said
        failure = {"code": error["code"], "message": error["message"]}
        failed = {**self.run.response, "status": "failed", "error": failure}
        return said + self.event("response.failed", response=failed)
