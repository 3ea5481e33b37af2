"""The OpenAI-compatible facade under `/v1`: the views (views.py, models.py; Anthropic's
Messages API in anthropic.py), their errors in OpenAI's shape (errors.py) and CORS for
browser clients (cors.py). What they all name and read is here."""

from __future__ import annotations

from flask import request

PREFIX = "/v1"  # where OpenAI clients look for it: /v1, not /api/v1
SESSION_HEADER = "X-Eonyx-Session"  # names the session of a request, and of every answer
TEMPORARY_HEADER = "X-Eonyx-Temporary"  # true: a session that is never listed (helper calls)
IGNORED_HEADER = "X-Eonyx-Ignored"  # what a request asked that was accepted, not honoured
TRUE = ("1", "true", "yes", "on")


def under_facade(path: str) -> bool:
    """Whether a request path is the facade's (as opposed to /api/v1 and the web client)."""
    return path == PREFIX or path.startswith(PREFIX + "/")


def asks_temporary() -> bool:
    """Whether the request asks for a session that is never listed (`X-Eonyx-Temporary`)."""
    return (request.headers.get(TEMPORARY_HEADER) or "").strip().lower() in TRUE


def answer_headers(session_id: str, ignored: tuple[str, ...]) -> dict[str, str]:
    """The answer's headers: its session (when it has one), and what was accepted but not
    honoured."""
    headers = {SESSION_HEADER: session_id} if session_id else {}
    if ignored:
        headers[IGNORED_HEADER] = ",".join(ignored)
    return headers
