"""The seam between the domain and whatever watches it: request ids, and metric hooks.

The domain says what happened (a turn ended, a model answered) by calling the plain
functions below; it never imports Prometheus, Flask or Celery. An entry point (the app
factory, the Celery app) installs a `Recorder` (shared/core/metrics.py) when metrics are on;
until then every call costs one attribute check.

The request id is a context variable: the API sets it for each request, the job queue sends
it along in the job's headers, and the worker sets it again while the job runs, so a log line
of either process names the request it serves (shared/core/logs.py adds it to every record).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol

REQUEST_ID_HEADER = "X-Request-Id"
# What an incoming id may look like to be kept (a proxy's or a client's); anything else is
# replaced, so a log line never carries a client's control characters or a megabyte of text.
SANE_REQUEST_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@/+=-]{0,127}")

request_id_var: ContextVar[str | None] = ContextVar("eonyx_request_id", default=None)
job_var: ContextVar[tuple[str, str] | None] = ContextVar("eonyx_job", default=None)


def new_request_id() -> str:
    return uuid.uuid4().hex


def accept_request_id(incoming: str | None) -> str:
    """The incoming id when it looks sane, else a new one."""
    if incoming and SANE_REQUEST_ID.fullmatch(incoming):
        return incoming
    return new_request_id()


def current_request_id() -> str | None:
    return request_id_var.get()


@contextmanager
def job_context(request_id: str | None, task: str, job_id: str) -> Iterator[None]:
    """While a job runs: the request id it was sent with, its name and id in every log line."""
    rid_token = request_id_var.set(request_id)
    job_token = job_var.set((task, job_id))
    try:
        yield
    finally:
        job_var.reset(job_token)
        request_id_var.reset(rid_token)


class Recorder(Protocol):
    """What the domain reports. Every method must be cheap and must never raise."""

    def turn_finished(self, outcome: str, seconds: float) -> None: ...

    def model_call_finished(
        self,
        role: str,
        offering: str,
        seconds: float,
        error: str | None,
        prompt_tokens: int | None,
        completion_tokens: int | None,
    ) -> None: ...


_recorder: Recorder | None = None


def install(recorder: Recorder | None) -> None:
    """Set (or with None, remove) the process's recorder: metrics are per process."""
    global _recorder
    _recorder = recorder


def turn_finished(outcome: str, seconds: float) -> None:
    """A chat turn ended: `ok`, `model_error`, `rejected` (a 4xx), `stopped` or `error`."""
    if _recorder is not None:
        _recorder.turn_finished(outcome, seconds)


def model_call_finished(
    role: str,
    offering: str,
    seconds: float,
    error: str | None = None,
    prompt_tokens: int | None = None,
    completion_tokens: int | None = None,
) -> None:
    """A model call ended (after its retries); `error` is the LLMError's code, if it failed."""
    if _recorder is not None:
        _recorder.model_call_finished(
            role, offering, seconds, error, prompt_tokens, completion_tokens
        )
