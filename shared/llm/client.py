"""The one model client: OpenAI-compatible chat completions over httpx.

Every model call of Eonyx (chat turns, titles, memory extraction and curation, summaries) goes
through an `LLMClient`: `complete()` for a whole answer, `stream()` for an answer piece by piece.
Each Runtime builds one client (shared/runtime.py) and closes it with the runtime; the client
keeps one pooled `httpx.Client` with explicit timeouts. An offering (`Offering`) says where a
model lives and how to reach it; what an answer is, and how it is read off the wire, is in
wire.py.

A call made for a user (`user_id=`) is counted against them by the client's `UsageMeter`
(shared/llm/usage.py: per user, month, offering and role) once its answer is in, with the
model's own token counts or, when it gives none, an estimate.

Failed attempts are retried with exponential backoff and jitter: on 429, on 5xx, on timeouts and
on connections that fail or drop. A `Retry-After` header (seconds or an HTTP date) on a 429 or
503 is honoured, up to the client's longest wait. Any other 4xx is the caller's problem and is
not retried. A stream is retried only while nothing of its body has been read; once data has
arrived, a failure surfaces at once.

Every failure is an `LLMError` naming the offering and the reason:

LLMError                  a model call failed; `.offering_id` says which offering, the message why
├── LLMTimeout            no answer within a timeout (connect, read, write or pool), after retries
├── LLMUnavailable        no connection, a dropped connection, 5xx after retries, or a stream
│                         that ended early
├── LLMRateLimited        429 after retries; `.retry_after` holds the provider's last wish
├── LLMRejected           another 4xx: the provider refused this request (bad key, context
│                         length exceeded, unknown model...); never retried
└── LLMInvalidResponse    a 2xx whose body is not a chat completion

Each carries `.status` (the last HTTP status, if any), `.provider_message` (the provider's own
error text, if any), `.attempts`, and for a stream that broke, `.partial` (what had arrived).
The message holds all of that, for the log and for administrators; `public_message()` is what
anyone else may see (see there).
"""

from __future__ import annotations

import email.utils
import functools
import itertools
import json
import logging
import math
import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple, Protocol

import httpx
import orjson

from shared.core import observability, sse
from shared.core.encoding import encode_json
from shared.core.errors import EonyxError
from shared.llm.usage import counts as usage_counts
from shared.llm.wire import (
    Completion,
    StreamAssembler,
    StreamEvent,
    error_message,
    parse_completion,
    provider_message,
)

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = httpx.Timeout(connect=10.0, read=120.0, write=30.0, pool=30.0)
# No cap on connections at once: every turn waiting on the model holds one, and a process
# serves as many turns at once as its users send (the model, or the CPU, is the limit; a cap
# here would queue turns behind a pool). Idle ones kept for reuse: up to 100.
DEFAULT_LIMITS = httpx.Limits(max_connections=None, max_keepalive_connections=100)
DEFAULT_RETRIES = 3
DEFAULT_BACKOFF = 0.5  # seconds before the first retry, doubled for each further one
DEFAULT_MAX_WAIT = 30.0  # no single wait between attempts is longer, Retry-After included
RETRY_AFTER_STATUSES = frozenset({429, 503})
USER_AGENT = "eonyx"

# A message is a mapping, or one already encoded as JSON (a turn's history is encoded once,
# when the session is read, and not again for every request that carries it).
Messages = Sequence[Mapping[str, Any] | orjson.Fragment]


# -- errors -------------------------------------------------------------------------------


class LLMError(EonyxError):
    """A model call failed. The message names the offering and says why."""

    code = "llm_error"

    def __init__(
        self,
        offering_id: str,
        reason: str,
        *,
        status: int | None = None,
        provider_message: str | None = None,
        attempts: int = 1,
        retry_after: float | None = None,
        partial: Completion | None = None,
    ) -> None:
        message = f"model offering {offering_id!r} {reason}"
        if attempts > 1:
            message += f" (gave up after {attempts} attempts)"
        super().__init__(message)
        self.offering_id = offering_id
        self.reason = reason
        self.status = status
        self.provider_message = provider_message
        self.attempts = attempts
        self.retry_after = retry_after
        self.partial = partial

    def public_message(self, request_id: str | None = None) -> str:
        """The failure as a user who is not an administrator may see it: its kind and HTTP
        status, never the provider's error text (it may quote part of a key, or come from an
        internal service an offering points at), the offering's address or the exception's
        detail. Those are in `message`, which goes to the log under `request_id`."""
        said = f"model offering {self.offering_id!r} {PUBLIC_REASONS.get(self.code, 'failed')}"
        if self.status:
            said += f" (HTTP {self.status})"
        if request_id:
            said += f"; an administrator finds the details in the log (request id {request_id})"
        return said


class LLMTimeout(LLMError):
    code = "llm_timeout"


class LLMUnavailable(LLMError):
    code = "llm_unavailable"


class LLMRateLimited(LLMError):
    code = "llm_rate_limited"


class LLMRejected(LLMError):
    code = "llm_rejected"


class LLMInvalidResponse(LLMError):
    code = "llm_invalid_response"


PUBLIC_REASONS = {
    LLMError.code: "could not be used",
    LLMTimeout.code: "did not answer in time",
    LLMUnavailable.code: "is unavailable",
    LLMRateLimited.code: "is busy (rate limited); try again later",
    LLMRejected.code: "refused the request",
    LLMInvalidResponse.code: "sent an answer that could not be read",
}


# -- where a model lives ------------------------------------------------------------------


@dataclass(frozen=True)
class Offering:
    """Where a model lives: an OpenAI-compatible `base_url` (ending in /v1 or the like)."""

    id: str
    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    context_window: int | None = None
    max_output_tokens: int | None = None
    role: str = field(default="chat", compare=False)  # the task it serves (metrics label)

    @property
    def completions_url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"


# -- helpers ------------------------------------------------------------------------------


def _observe(
    offering: Offering, started: float, error: str | None, usage: Mapping[str, Any] | None
) -> None:
    """Report a finished call (its retries included) to the process's metrics, if any."""
    tokens = usage or {}
    prompt, completion = tokens.get("prompt_tokens"), tokens.get("completion_tokens")
    observability.model_call_finished(
        offering.role,
        offering.id,
        time.perf_counter() - started,
        error,
        prompt if isinstance(prompt, int) else None,
        completion if isinstance(completion, int) else None,
    )


def parse_retry_after(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """Seconds the provider asks us to wait: `retry-after-ms`, or `Retry-After` as seconds or
    as an HTTP date. None when absent or unreadable."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            millis = float(raw_ms)
        except ValueError:
            millis = math.nan
        if math.isfinite(millis):
            return max(0.0, millis / 1000)
    raw = (headers.get("retry-after") or "").strip()
    if not raw:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


@functools.lru_cache(maxsize=64)
def _url(text: str) -> httpx.URL:
    """An offering's URL parsed once, not on every request (httpx parses a string each time:
    about a tenth of a call's CPU). InvalidURL is raised, and not kept, for a bad one."""
    return httpx.URL(text)


def _encoded(message: Mapping[str, Any] | orjson.Fragment) -> orjson.Fragment:
    if isinstance(message, orjson.Fragment):
        return message
    return orjson.Fragment(encode_json(dict(message)))


class _Answer(NamedTuple):
    response: httpx.Response
    content: bytes  # the whole body, or the first piece of a stream
    rest: Iterator[bytes]  # the rest of a stream (nothing when not streaming)


class _Failure(NamedTuple):
    kind: type[LLMError]
    reason: str
    status: int | None = None
    provider_message: str | None = None
    retry_after: float | None = None
    retryable: bool = True


_TIMEOUT_KINDS: dict[type[httpx.TimeoutException], tuple[str, str]] = {
    httpx.ConnectTimeout: ("connect", "could not connect"),
    httpx.ReadTimeout: ("read", "sent nothing"),
    httpx.WriteTimeout: ("write", "could not take the request"),
    httpx.PoolTimeout: ("pool", "got no free connection"),
}


def _timeout_kind(exc: httpx.TimeoutException) -> tuple[str, str]:
    return next(
        (kind for cls, kind in _TIMEOUT_KINDS.items() if isinstance(exc, cls)),
        ("read", "sent nothing"),
    )


# -- the client ---------------------------------------------------------------------------


class UsageMeter(Protocol):
    """Where the tokens of a call made for a user are counted (usage.TokenMeter)."""

    def record(
        self, user_id: str, offering: str, role: str, prompt_tokens: int, completion_tokens: int
    ) -> None: ...


class ModelClient(Protocol):
    """What the domain asks of a model client. `LLMClient` is the one every deployment uses;
    a test of the turn loop may pass an in-process fake instead of a server on loopback.
    `user_id`: the user the call serves, whose tokens it counts."""

    max_wait: float  # the longest single wait between attempts

    def complete(
        self,
        offering: Offering,
        messages: Messages,
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        options: Mapping[str, Any] | None = None,
        user_id: str | None = None,
    ) -> Completion:
        """One whole answer; an LLMError on failure."""
        ...

    def stream(
        self,
        offering: Offering,
        messages: Messages,
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        include_usage: bool = False,
        options: Mapping[str, Any] | None = None,
        user_id: str | None = None,
    ) -> Iterator[StreamEvent]:
        """Text events, then one last event carrying the whole `Completion`."""
        ...

    def close(self) -> None: ...


class LLMClient:
    """Chat completions against any OpenAI-compatible server, with timeouts and retries.

    `retries` is how many times a failed attempt is tried again (so at most retries + 1
    requests). Waits grow from `backoff` seconds, doubling, with jitter, and never exceed
    `max_wait`. `transport`, `sleep` and `jitter` (a number in [0, 1)) are there for tests.
    `meter` counts the tokens of the calls made for a user (see the module's docstring).
    """

    def __init__(
        self,
        *,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        retries: int = DEFAULT_RETRIES,
        backoff: float = DEFAULT_BACKOFF,
        max_wait: float = DEFAULT_MAX_WAIT,
        limits: httpx.Limits = DEFAULT_LIMITS,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
        meter: UsageMeter | None = None,
    ) -> None:
        if retries < 0:
            raise ValueError("retries must be zero or more")
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_wait = max_wait
        self._sleep = sleep
        self._jitter = jitter
        self.meter = meter
        self._http = httpx.Client(
            timeout=timeout,
            limits=limits,
            transport=transport,
            headers={"User-Agent": USER_AGENT},
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- public calls --

    def complete(
        self,
        offering: Offering,
        messages: Messages,
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        options: Mapping[str, Any] | None = None,
        user_id: str | None = None,
    ) -> Completion:
        """One whole answer. Raises an LLMError subclass on failure. `options` are further
        request fields (`top_p`, `stop`, `response_format`...), sent as they are given.
        `user_id`: the user the call serves, whose tokens it counts."""
        body = self._body(offering, messages, tools, tool_choice, temperature, max_tokens)
        self._add_options(body, options, offering.max_output_tokens)
        started = time.perf_counter()
        try:
            response, content, _ = self._send(offering, body, streaming=False)
            try:
                completion = parse_completion(json.loads(content))
            except ValueError as exc:
                raise LLMInvalidResponse(
                    offering.id,
                    f"answered HTTP {response.status_code} with something that is not a chat "
                    f"completion: {exc}",
                    status=response.status_code,
                ) from exc
        except LLMError as exc:
            _observe(offering, started, exc.code, None)
            raise
        _observe(offering, started, None, completion.usage)
        self._count(user_id, offering, messages, completion.usage, completion.message())
        return completion

    def stream(
        self,
        offering: Offering,
        messages: Messages,
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        include_usage: bool = False,
        options: Mapping[str, Any] | None = None,
        user_id: str | None = None,
    ) -> Iterator[StreamEvent]:
        """The answer as it is written: text events, then one last event with the Completion.

        Tool calls are assembled from their deltas and arrive in that last event. The request
        is made on the first `next()`. Close the iterator when leaving it early (a `for` loop
        that runs to the end, or `contextlib.closing`), so the connection is released.
        `include_usage` asks for token counts (`stream_options`), which not every server takes.
        `user_id`: the user the call serves, whose tokens it counts (the text that arrived,
        estimated, when the caller leaves early).
        """
        body = self._body(offering, messages, tools, tool_choice, temperature, max_tokens)
        self._add_options(body, options, offering.max_output_tokens)
        body["stream"] = True
        if include_usage:
            body["stream_options"] = {"include_usage": True}
        started = time.perf_counter()
        error: str | None = None  # a caller that leaves early is not a failure
        usage = None
        answered = False
        final: Completion | None = None
        said: list[str] = []  # the text so far, for the estimate of an answer left early
        try:
            answer = self._send(offering, body, streaming=True)
            answered = True
            try:
                for event in self._events(offering, answer):
                    if event.completion is not None:
                        final = event.completion
                        usage = final.usage
                    elif event.text:
                        said.append(event.text)
                    yield event
            finally:
                answer.response.close()
        except LLMError as exc:
            error = exc.code
            raise
        finally:
            _observe(offering, started, error, usage)
            if answered and error is None:
                told = final.message() if final else {"role": "assistant", "content": "".join(said)}
                self._count(user_id, offering, messages, usage, told)

    # -- internals --

    def _count(
        self,
        user_id: str | None,
        offering: Offering,
        messages: Messages,
        usage: Mapping[str, Any] | None,
        answer: Mapping[str, Any],
    ) -> None:
        """Count a call's tokens against the user it served. A count that cannot be written
        is logged, never raised: the user has their answer, and the next call counts."""
        if self.meter is None or user_id is None:
            return
        prompt, completion = usage_counts(usage, messages, answer)
        try:
            self.meter.record(user_id, offering.id, offering.role, prompt, completion)
        except Exception:  # the database's failure, whatever its driver raises
            log.exception("the tokens of a call for user %s were not counted", user_id)

    @staticmethod
    def _body(
        offering: Offering,
        messages: Messages,
        tools: Sequence[Mapping[str, Any]] | None,
        tool_choice: str | Mapping[str, Any] | None,
        temperature: float | None,
        max_tokens: int | None,
    ) -> dict[str, object]:
        """The request's JSON body: Eonyx's fields, which a caller's `options` then extend."""
        body: dict[str, object] = {
            "model": offering.model,
            "messages": [_encoded(message) for message in messages],
        }
        if tools:
            body["tools"] = [dict(tool) for tool in tools]
        if tool_choice is not None:
            body["tool_choice"] = tool_choice if isinstance(tool_choice, str) else dict(tool_choice)
        if temperature is not None:
            body["temperature"] = temperature
        limit = max_tokens if max_tokens is not None else offering.max_output_tokens
        if limit is not None:
            body["max_tokens"] = limit
        return body

    @staticmethod
    def _add_options(
        body: dict[str, object], options: Mapping[str, object] | None, most: int | None
    ) -> None:
        """The caller's request fields over the defaults. A limit of the caller's own replaces
        the offering's, up to the offering's `most` output tokens, which the model would
        refuse to exceed (Claude Code asks for 32,000 whatever the model); a tool choice
        needs tools to choose from."""
        if not options:
            return
        if "max_completion_tokens" in options:
            body.pop("max_tokens", None)
        body.update(options)
        for name in ("max_tokens", "max_completion_tokens"):
            asked = body.get(name)
            if most is not None and isinstance(asked, int) and asked > most:
                body[name] = most
        if "tools" not in body:
            body.pop("tool_choice", None)
            body.pop("parallel_tool_calls", None)

    def _request(self, offering: Offering, body: Mapping[str, object]) -> httpx.Request:
        headers = {
            "Accept": "text/event-stream" if body.get("stream") else "application/json",
            "Content-Type": "application/json",
        }
        if offering.api_key:
            headers["Authorization"] = f"Bearer {offering.api_key}"
        try:
            return self._http.build_request(
                "POST", _url(offering.completions_url), content=orjson.dumps(body), headers=headers
            )
        except httpx.InvalidURL as exc:
            raise LLMError(
                offering.id, f"has an unusable base_url {offering.base_url!r}: {exc}"
            ) from exc

    def _send(self, offering: Offering, body: Mapping[str, object], *, streaming: bool) -> _Answer:
        """Make the request, retrying as long as nothing of the body has been consumed.

        Not streaming, the answer holds the whole body and the response is closed. Streaming,
        it holds the first piece of the body and an iterator over the rest; the response is
        open and the caller closes it.
        """
        request = self._request(offering, body)
        attempt = 0
        while True:
            attempt += 1
            failure, cause, result = self._attempt(offering, request, streaming)
            if result is not None:
                return result
            assert failure is not None
            if not failure.retryable or attempt > self.retries:
                raise failure.kind(
                    offering.id,
                    failure.reason,
                    status=failure.status,
                    provider_message=failure.provider_message,
                    attempts=attempt,
                    retry_after=failure.retry_after,
                ) from cause
            wait = self.wait_before_retry(attempt, failure.retry_after)
            log.warning(
                "model offering %r %s; retrying in %.2fs (attempt %d of %d)",
                offering.id,
                failure.reason,
                wait,
                attempt + 1,
                self.retries + 1,
            )
            self._sleep(wait)

    def _attempt(
        self, offering: Offering, request: httpx.Request, streaming: bool
    ) -> tuple[_Failure | None, BaseException | None, _Answer | None]:
        response: httpx.Response | None = None
        try:
            response = self._http.send(request, stream=True)
            if not response.is_success:
                response.read()
                response.close()
                return self._status_failure(response), None, None
            if not streaming:
                content = response.read()
                response.close()
                return None, None, _Answer(response, content, iter(()))
            rest = response.iter_bytes()
            first = next((piece for piece in rest if piece), b"")
            if not first:
                response.close()
                return (
                    _Failure(LLMUnavailable, "ended the stream before sending anything"),
                    None,
                    None,
                )
            return None, None, _Answer(response, first, rest)
        except httpx.TimeoutException as exc:
            if response is not None:
                response.close()
            return self._timeout_failure(exc), exc, None
        except httpx.TransportError as exc:
            if response is not None:
                response.close()
            return self._transport_failure(offering, exc), exc, None
        except BaseException:
            if response is not None:
                response.close()
            raise

    def _timeout_failure(self, exc: httpx.TimeoutException) -> _Failure:
        kind, what = _timeout_kind(exc)
        limit = getattr(self.timeout, kind)
        within = f"the {limit:g}s" if limit is not None else "the"
        return _Failure(LLMTimeout, f"timed out: {what} within {within} {kind} timeout")

    @staticmethod
    def _transport_failure(offering: Offering, exc: httpx.TransportError) -> _Failure:
        if isinstance(exc, httpx.UnsupportedProtocol | httpx.LocalProtocolError):
            return _Failure(
                LLMError, f"cannot be reached at {offering.base_url!r}: {exc}", retryable=False
            )
        if isinstance(exc, httpx.ConnectError):
            return _Failure(LLMUnavailable, f"could not be reached: {exc or 'connection failed'}")
        return _Failure(LLMUnavailable, f"dropped the connection: {exc or type(exc).__name__}")

    @staticmethod
    def _status_failure(response: httpx.Response) -> _Failure:
        status = response.status_code
        said = provider_message(response)
        label = f"HTTP {status}" if said else f"HTTP {status} {response.reason_phrase}".rstrip()
        detail = f"({label}): {said}" if said else f"({label})"
        retry_after = (
            parse_retry_after(response.headers) if status in RETRY_AFTER_STATUSES else None
        )
        if status == 429:
            return _Failure(LLMRateLimited, f"is rate limited {detail}", status, said, retry_after)
        if status >= 500:
            return _Failure(LLMUnavailable, f"failed {detail}", status, said, retry_after)
        return _Failure(
            LLMRejected,
            f"rejected the request {detail}",
            status,
            said,
            retryable=False,
        )

    def wait_before_retry(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait after failed attempt number `attempt` (1 for the first)."""
        if retry_after is not None:
            return min(retry_after, self.max_wait)
        ceiling = min(self.backoff * 2.0 ** (attempt - 1), self.max_wait)
        return ceiling / 2 + ceiling / 2 * self._jitter()  # "equal jitter"

    def _events(self, offering: Offering, answer: _Answer) -> Iterator[StreamEvent]:
        assembler = StreamAssembler()

        def broken(kind: type[LLMError], reason: str, detail: str, **extra: Any) -> LLMError:
            got = len(assembler.chunks)
            return kind(
                offering.id,
                f"{reason} after {got} chunk{'s' if got != 1 else ''} ({detail})",
                partial=assembler.completion(),
                **extra,
            )

        try:
            if answer.response.headers.get("content-type", "").startswith("application/json"):
                yield from self._whole_answer(offering, answer)
                return
            for event in sse.iter_events(itertools.chain([answer.content], answer.rest)):
                data = event.data
                if data.strip() == "[DONE]":
                    break
                try:
                    chunk = json.loads(data)
                except ValueError as exc:
                    raise broken(
                        LLMInvalidResponse, "sent a malformed stream event", f"not JSON: {exc}"
                    ) from exc
                if not isinstance(chunk, dict):
                    raise broken(
                        LLMInvalidResponse, "sent a malformed stream event", "not an object"
                    )
                if chunk.get("error"):
                    said = error_message(chunk)
                    raise broken(
                        LLMUnavailable,
                        "reported an error in the stream",
                        said or "no message",
                        provider_message=said,
                    )
                text = assembler.feed(chunk)
                if text:
                    yield StreamEvent(text=text)
            else:
                # The body ended without [DONE]: fine if the answer had said it was finished.
                if assembler.finish_reason is None:
                    raise broken(LLMUnavailable, "broke off: stream ended early", "no [DONE]")
        except httpx.TimeoutException as exc:
            kind, _ = _timeout_kind(exc)
            raise broken(LLMTimeout, "timed out: the stream stalled", f"{kind} timeout") from exc
        except httpx.TransportError as exc:
            detail = str(exc) or "connection lost"
            raise broken(LLMUnavailable, "broke off: stream ended early", detail) from exc
        yield StreamEvent(completion=assembler.completion())

    @staticmethod
    def _whole_answer(offering: Offering, answer: _Answer) -> Iterator[StreamEvent]:
        """A server that ignored "stream": true and sent the whole answer at once."""
        whole = answer.content + b"".join(answer.rest)
        try:
            completion = parse_completion(json.loads(whole))
        except ValueError as exc:
            raise LLMInvalidResponse(
                offering.id, f"sent something that is not a chat completion: {exc}"
            ) from exc
        if completion.content:
            yield StreamEvent(text=completion.content)
        yield StreamEvent(completion=completion)
