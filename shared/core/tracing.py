"""OpenTelemetry traces, exported over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT is set.

Without it nothing here is imported, let alone run: tracing costs nothing. With it, each
process gets one tracer provider with a batching exporter to `<endpoint>/v1/traces` (the
OTLP/HTTP convention for the endpoint variable), and every httpx client (model calls, Teams
replies) makes client spans that carry the trace on to the server they call. The API adds
Flask's server spans (api/observability.py), the worker Celery's (workers/app.py); Celery's
instrumentation also carries the trace from the API's request into the job it sends.
The other standard OTEL_* variables (headers, sampler, resource attributes) are read by
the SDK itself.
"""

from __future__ import annotations

import threading

from shared.core.settings import Settings, SettingsError

_lock = threading.Lock()
_started = False


def start(settings: Settings, service: str) -> bool:
    """Set up tracing for this process once; False when it is off."""
    global _started
    endpoint = settings.otel_exporter_otlp_endpoint
    if not endpoint:
        return False
    with _lock:
        if _started:
            return True
        try:
            from opentelemetry import trace
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
            from opentelemetry.sdk.resources import SERVICE_NAME, Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError as exc:
            raise SettingsError(
                "OTEL_EXPORTER_OTLP_ENDPOINT is set, but the tracing packages are not "
                f"installed ({exc.name}): pip install 'eonyx[otel]'"
            ) from None

        name = settings.otel_service_name or service
        provider = TracerProvider(resource=Resource.create({SERVICE_NAME: name}))
        exporter = OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces")
        provider.add_span_processor(BatchSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        HTTPXClientInstrumentor().instrument()
        _started = True
        return True


def shutdown() -> None:
    """Flush the spans still queued (at a process's exit)."""
    if not _started:
        return
    from opentelemetry import trace

    provider = trace.get_tracer_provider()
    flush = getattr(provider, "shutdown", None)
    if flush is not None:
        flush()
