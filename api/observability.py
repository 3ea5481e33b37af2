"""What the API tells its operators: request ids, /metrics, traces.

- Every request gets an id: the client's `X-Request-Id` when it looks sane (1-128 letters,
  digits and `._:@/+=-`, as a proxy would send), else a new one. It is in the response's
  `X-Request-Id`, in every log line written while the request runs, and in the headers of
  the jobs the request sends (workers/queue.py), so the job's log lines carry it too.
- `GET /metrics` is Prometheus's text format, for `Authorization: Bearer <METRICS_TOKEN>`;
  without METRICS_TOKEN metrics are off and the path answers 404.
- With OTEL_EXPORTER_OTLP_ENDPOINT, Flask's server spans (shared/core/tracing.py).
"""

from __future__ import annotations

import hmac

from flask import Blueprint, Flask, Response, g, request

from api.context import runtime
from api.extensions import error_payload
from shared.core import observability, tracing
from shared.runtime import Runtime

blp = Blueprint("metrics", __name__)


def register_observability(app: Flask, rt: Runtime) -> None:
    app.before_request(_take_request_id)
    app.after_request(_give_request_id)
    app.teardown_request(_forget_request_id)
    if rt.settings.metrics_token:
        from shared.core import metrics

        metrics.enable(rt.settings)
    app.register_blueprint(blp)
    if tracing.start(rt.settings, "eonyx-api"):
        from opentelemetry.instrumentation.flask import FlaskInstrumentor

        FlaskInstrumentor().instrument_app(app, excluded_urls="healthz,readyz,metrics")


def _take_request_id() -> None:
    rid = observability.accept_request_id(request.headers.get(observability.REQUEST_ID_HEADER))
    g.request_id = rid
    observability.request_id_var.set(rid)


def _give_request_id(response: Response) -> Response:
    rid = g.get("request_id")
    if rid:
        response.headers[observability.REQUEST_ID_HEADER] = rid
    return response


def _forget_request_id(_exc: BaseException | None = None) -> None:
    # Set, not reset: a streamed response may end in another context than it began in.
    observability.request_id_var.set(None)


@blp.get("/metrics")
def metrics_view() -> Response | tuple[dict[str, object], int, dict[str, str]]:
    rt = runtime()
    expected = rt.settings.metrics_token
    if not expected:
        return error_payload("not_found", "metrics are off (set METRICS_TOKEN)"), 404, {}
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    given = token.strip().encode()
    if scheme.lower() != "bearer" or not hmac.compare_digest(given, expected.encode()):
        body = error_payload("invalid_token", "send 'Authorization: Bearer <METRICS_TOKEN>'")
        return body, 401, {"WWW-Authenticate": "Bearer"}
    from shared.core import metrics

    recorder = metrics.enable(rt.settings)
    return Response(recorder.render(rt.redis), content_type=metrics.CONTENT_TYPE)


def socket_opened() -> None:
    """An events socket was accepted (a gauge of open sockets, when metrics are on)."""
    if runtime().settings.metrics_token:
        from shared.core import metrics

        metrics.enable(runtime().settings).sockets_open.inc()


def socket_closed() -> None:
    if runtime().settings.metrics_token:
        from shared.core import metrics

        metrics.enable(runtime().settings).sockets_open.dec()
