"""The HTTP server of `eonyx serve --dev`: werkzeug's development server, which restarts when
a source file changes. For people working on Eonyx itself; everyone else gets gunicorn.

`eonyx serve --dev` runs it as a child process (`python -m cli.devserver HOST PORT`) with the
settings in the environment, as it runs gunicorn otherwise. Only the API reloads: a change to
the worker's code needs `eonyx serve` started again.
"""

from __future__ import annotations

import os
import re
import sys

from werkzeug.serving import WSGIRequestHandler, run_simple

_QUERY = re.compile(r"\?[^\s\"']*")


class RequestLogHandler(WSGIRequestHandler):
    """werkzeug's request handler, logging each request without its query string: a
    browser's WebSocket sends its bearer token as `/api/v1/events?token=...`, and a token
    must never reach a log."""

    def log(self, type: str, message: str, *args: object) -> None:
        line = message % args if args else message
        super().log(type, "%s", _QUERY.sub("", line))


def main(host: str, port: int) -> None:
    from api.app import create_app
    from shared.core import logs
    from shared.core.lifetime import die_with_parent
    from shared.core.settings import load_settings
    from workers.queue import celery_jobs

    if os.environ.get("WERKZEUG_RUN_MAIN"):  # the reloader's child: it dies with the reloader
        die_with_parent(os.getppid())
    settings = load_settings()
    logs.configure(settings)
    app = create_app(settings, jobs_queue=celery_jobs(settings))
    run_simple(host, port, app, use_reloader=True, threaded=True, request_handler=RequestLogHandler)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
