"""Gunicorn's own log lines in the format of the rest of Eonyx (LOG_FORMAT, JSON by default).

gunicorn.error (start, stop, worker exits) and gunicorn.access (one line per request) have
handlers of their own, set up by gunicorn's Logger before the app is loaded. This logger
gives them Eonyx's formatter. In JSON, each access line is an object with the request's
method, path (never the query string: a browser's events socket sends its token there),
status, bytes, duration in ms, the client's address and user agent, and the request id the
app answered with (`X-Request-Id`), so it joins the app's own lines and its jobs'.
"""

from __future__ import annotations

import os
from typing import Any

from gunicorn.glogging import Logger

from shared.core.logs import ContextFilter, formatter


def log_format() -> str:
    return (os.environ.get("LOG_FORMAT") or "").strip().lower() or "json"


class EonyxLogger(Logger):
    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        self.json = log_format() == "json"
        if not self.json:
            return
        for log in (self.error_log, self.access_log):
            for handler in log.handlers:
                if getattr(handler, "_gunicorn", False):
                    handler.setFormatter(formatter("json"))
                    handler.addFilter(ContextFilter())

    def access(self, resp: Any, req: Any, environ: dict[str, Any], request_time: Any) -> None:
        if not getattr(self, "json", False):
            super().access(resp, req, environ, request_time)
            return
        if not self.access_log_enabled:
            return
        status = resp.status.split(None, 1)[0] if isinstance(resp.status, str) else resp.status
        headers = resp.headers.items() if hasattr(resp.headers, "items") else resp.headers
        request_id = next((v for k, v in headers if k.lower() == "x-request-id"), "-")
        ms = request_time.seconds * 1000 + request_time.microseconds / 1000
        self.access_log.info(
            "%s %s %s",
            environ.get("REQUEST_METHOD"),
            environ.get("PATH_INFO"),
            status,
            extra={
                "method": environ.get("REQUEST_METHOD"),
                "path": environ.get("PATH_INFO"),
                "status": int(status) if str(status).isdigit() else status,
                "bytes": getattr(resp, "sent", None),
                "ms": round(ms, 1),
                "remote": environ.get("REMOTE_ADDR", "-"),
                "user_agent": environ.get("HTTP_USER_AGENT", "-"),
                "request_id": request_id,
            },
        )
