"""Domain errors to HTTP statuses, in one place."""

from __future__ import annotations

import logging
from typing import Any

from flask import Flask

from api.extensions import error_payload
from shared.core import errors
from shared.core.settings import SettingsError
from shared.llm.catalog import NoModel
from shared.llm.client import LLMError

log = logging.getLogger(__name__)

STATUS = {
    errors.InvalidInput: 400,
    errors.Unauthorized: 401,
    errors.Forbidden: 403,
    errors.NotFound: 404,
    errors.Conflict: 409,
    errors.StorageError: 503,
    errors.Unavailable: 503,
    LLMError: 502,
    NoModel: 503,
}


def render_error(exc: errors.EonyxError) -> tuple[dict[str, Any], int]:
    status = next((s for cls, s in STATUS.items() if isinstance(exc, cls)), 500)
    if status >= 500:
        log.error("request failed: %s", exc.message, exc_info=exc)
    return error_payload(exc.code, exc.message), status


def register_error_handlers(app: Flask) -> None:
    @app.errorhandler(errors.EonyxError)
    def _domain_error(exc: errors.EonyxError):  # type: ignore[no-untyped-def]
        body, status = render_error(exc)
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else {}
        return body, status, headers

    @app.errorhandler(SettingsError)
    def _settings_error(exc: SettingsError):  # type: ignore[no-untyped-def]
        return error_payload("misconfigured", str(exc)), 500
