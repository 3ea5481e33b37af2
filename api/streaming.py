"""A turn answered as a stream of server-sent events, ended by an error event if it fails.

The three streaming views (a session's turn, Chat Completions, Responses) render a turn's
events in their own format; this is what they share: the response's headers, and the error
that ends a stream already begun (the status is sent: the stream itself must say it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from flask import Response, stream_with_context

from api.errors import render_error
from api.extensions import error_payload
from shared.core.errors import EonyxError

log = logging.getLogger(__name__)
# The event that ends a failed stream: from (status, Eonyx's error body, the error if it
# is the domain's).
ErrorEvent = Callable[[int, dict[str, Any], EonyxError | None], str]


def event_stream(
    events: Iterator[str], error_event: ErrorEvent, headers: Mapping[str, str] | None = None
) -> Response:
    """`events` as a text/event-stream response; a failure while they are sent ends the
    stream with `error_event`'s event."""

    def guarded() -> Iterator[str]:
        try:
            yield from events
        except EonyxError as exc:
            body, status = render_error(exc)
            yield error_event(status, body, exc)
        except Exception:
            log.exception("a streamed turn failed")
            body = error_payload("internal_error", "the turn failed on the server")
            yield error_event(500, body, None)

    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no", **(headers or {})}
    return Response(stream_with_context(guarded()), mimetype="text/event-stream", headers=headers)
