"""Domain errors to HTTP statuses, in one place.

A failure of something outside Eonyx (the model, Redis, the job queue) is logged as one line
with its reason: the operator needs the reason, not a traceback of Eonyx's own code. Any other
5xx is logged with its traceback.

A model's failure is told in full to administrators only; anyone else gets its kind, status
and the request id (`LLMError.public_message`), since the provider's error text may quote a
key or describe an internal service an offering points at. The full text is in the log line.
"""

from __future__ import annotations

import errno
import logging
import os
from typing import Any

import redis
from flask import Flask, g, has_request_context

from api.extensions import error_payload
from shared.accounts.groups import UnknownIds
from shared.accounts.people import Principal
from shared.core import errors, observability
from shared.core.settings import SettingsError
from shared.llm.client import LLMError
from shared.llm.models import NoModel

log = logging.getLogger(__name__)

STATUS = {
    UnknownIds: 422,  # well formed, but naming users or groups that do not exist
    errors.InvalidInput: 400,
    errors.Unauthorized: 401,
    errors.Forbidden: 403,
    errors.NotFound: 404,
    errors.Conflict: 409,
    errors.Gone: 410,
    errors.TooLarge: 413,
    errors.TooManyRequests: 429,
    errors.QuotaExceeded: 507,  # Insufficient Storage (413 when the request alone is larger)
    errors.StorageError: 503,
    errors.Unavailable: 503,
    LLMError: 502,
    NoModel: 503,
}
OUTAGES = (LLMError, NoModel, errors.Unavailable)  # one line each, no traceback
DISK_REFUSALS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS}


def render_error(exc: errors.EonyxError) -> tuple[dict[str, Any], int]:
    status = next((s for cls, s in STATUS.items() if isinstance(exc, cls)), 500)
    if isinstance(exc, errors.QuotaExceeded) and exc.never_fits:
        status = 413
    rid = _request_id()
    extra = {"request_id": rid} if rid else None  # a streamed answer's error is logged late
    if isinstance(exc, OUTAGES):
        log.warning("request failed (%s %s): %s", status, exc.code, exc.message, extra=extra)
    elif status >= 500 and not isinstance(exc, errors.QuotaExceeded):  # the caller's doing
        log.error("request failed: %s", exc.message, exc_info=exc, extra=extra)
    return error_payload(exc.code, shown_message(exc, rid), exc.details), status


def shown_message(exc: errors.EonyxError, request_id: str | None) -> str:
    """The error's message as the caller may see it (a model's failure in full for admins)."""
    if not isinstance(exc, LLMError):
        return exc.message
    caller: Principal | None = g.get("principal") if has_request_context() else None
    if caller is not None and caller.is_admin:
        return exc.message
    return exc.public_message(request_id)


def _request_id() -> str | None:
    """This request's id. While a streamed answer is sent the view has returned, and only
    `g` (kept by `stream_with_context`) still holds it."""
    found = observability.current_request_id()
    if found is None and has_request_context():
        found = g.get("request_id")
    return found


def error_headers(exc: errors.EonyxError, status: int) -> dict[str, str]:
    if status == 401:
        return {"WWW-Authenticate": "Bearer"}
    if isinstance(exc, errors.TooManyRequests):
        return {"Retry-After": str(exc.retry_after)}
    return {}


def register_error_handlers(app: Flask) -> None:
    @app.errorhandler(errors.EonyxError)
    def _domain_error(exc: errors.EonyxError):  # type: ignore[no-untyped-def]
        body, status = render_error(exc)
        return body, status, error_headers(exc, status)

    @app.errorhandler(OSError)
    def _os_error(exc: OSError):  # type: ignore[no-untyped-def]
        """A disk that refused a write somewhere no domain code wrapped it: 503, not 500."""
        if exc.errno not in DISK_REFUSALS:
            raise exc
        reason = f"the disk refused a write: {os.strerror(exc.errno or 0)}"
        return _domain_error(errors.StorageError(reason))

    @app.errorhandler(redis.exceptions.ResponseError)
    def _redis_refused(exc: redis.exceptions.ResponseError):  # type: ignore[no-untyped-def]
        """Redis refuses writes when its own disk is full (MISCONF: its append-only file
        cannot be written) or when it is a read-only replica: the store cannot write."""
        message = str(exc)
        if not message.startswith(("MISCONF", "READONLY")):
            raise exc
        return _domain_error(errors.StorageError(f"Redis cannot write: {message}"))

    @app.errorhandler(SettingsError)
    def _settings_error(exc: SettingsError):  # type: ignore[no-untyped-def]
        return error_payload("misconfigured", str(exc)), 500
