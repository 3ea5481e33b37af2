"""The OpenAI-compatible facade under `/v1`: the views (views.py, models.py), their errors in
OpenAI's shape (errors.py) and CORS for browser clients (cors.py). What they all name is here."""

from __future__ import annotations

PREFIX = "/v1"  # where OpenAI clients look for it: /v1, not /api/v1
SESSION_HEADER = "X-Eonyx-Session"  # names the session of a request, and of every answer
TEMPORARY_HEADER = "X-Eonyx-Temporary"  # true: a session that is never listed (helper calls)
IGNORED_HEADER = "X-Eonyx-Ignored"  # what a request asked that was accepted, not honoured


def under_facade(path: str) -> bool:
    """Whether a request path is the facade's (as opposed to /api/v1 and the web client)."""
    return path == PREFIX or path.startswith(PREFIX + "/")
