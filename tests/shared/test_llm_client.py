"""The model client against the fake OpenAI-compatible server (a real HTTP exchange), and a
few edge cases on httpx.MockTransport. Waits between retries go to an injected `sleep`."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from shared.llm.client import (
    LLMClient,
    LLMError,
    LLMInvalidResponse,
    LLMRateLimited,
    LLMRejected,
    LLMTimeout,
    LLMUnavailable,
    Offering,
    parse_retry_after,
)
from shared.llm.wire import Completion, StreamEvent, ToolCall
from tests.fake_llm import (  # noqa: F401  (fake_llm is the fixture)
    FakeLLM,
    broken_stream,
    error,
    fake_llm,
    text,
    tool_call,
    tool_calls,
)

HELLO = [{"role": "user", "content": "Hello?"}]
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


@pytest.fixture
def sleeps() -> list[float]:
    return []


def make_client(sleeps: list[float], *, read: float = 5.0, **options: Any) -> LLMClient:
    return LLMClient(
        timeout=httpx.Timeout(connect=5.0, read=read, write=5.0, pool=5.0),
        backoff=0.01,
        sleep=sleeps.append,
        jitter=lambda: 0.5,
        **options,
    )


@pytest.fixture
def client(sleeps: list[float]) -> Iterator[LLMClient]:
    with make_client(sleeps, retries=2) as llm_client:
        yield llm_client


def collect(events: Iterator[StreamEvent]) -> tuple[list[str], Completion]:
    texts: list[str] = []
    for event in events:
        if event.done:
            assert event.completion is not None
            return texts, event.completion
        texts.append(event.text)
    raise AssertionError("the stream gave no final event")


# -- through the fake server --


def test_plain_completion(fake_llm: FakeLLM, client: LLMClient) -> None:  # noqa: F811
    fake_llm.script(text("Hello there!"))
    offering = fake_llm.offering(max_output_tokens=256)

    answer = client.complete(offering, HELLO, temperature=0.2)

    assert answer.content == "Hello there!"
    assert answer.tool_calls == []
    assert answer.finish_reason == "stop"
    assert answer.usage is not None
    assert answer.usage["total_tokens"] > 0
    assert answer.message() == {"role": "assistant", "content": "Hello there!"}
    [seen] = fake_llm.requests
    assert seen.method == "POST"
    assert seen.path == "/v1/chat/completions"
    assert seen.body == {
        "model": "fake-model",
        "messages": HELLO,
        "temperature": 0.2,
        "max_tokens": 256,
    }


def test_default_answer_echoes_the_last_user_message(
    fake_llm: FakeLLM,  # noqa: F811
    client: LLMClient,
) -> None:
    messages = [*HELLO, {"role": "assistant", "content": "Yes?"}, {"role": "user", "content": "X"}]
    assert client.complete(fake_llm.offering(), messages).content == "X"
    texts, completion = collect(client.stream(fake_llm.offering(), HELLO))
    assert "".join(texts) == completion.content == "Hello?"


def test_tool_call_completion(fake_llm: FakeLLM, client: LLMClient) -> None:  # noqa: F811
    fake_llm.script(tool_calls(tool_call("get_weather", {"city": "Paris"}, id="call_1")))

    answer = client.complete(fake_llm.offering(), HELLO, tools=[WEATHER_TOOL], tool_choice="auto")

    assert answer.content is None
    assert answer.finish_reason == "tool_calls"
    assert answer.tool_calls == [ToolCall("call_1", "get_weather", '{"city": "Paris"}')]
    assert answer.message()["tool_calls"][0]["function"]["name"] == "get_weather"
    body = fake_llm.last_request.body
    assert body["tools"] == [WEATHER_TOOL]
    assert body["tool_choice"] == "auto"


def test_streaming_text(fake_llm: FakeLLM, client: LLMClient) -> None:  # noqa: F811
    fake_llm.script(text("Streaming, one piece at a time.", chunk_size=5))

    texts, completion = collect(client.stream(fake_llm.offering(), HELLO, include_usage=True))

    assert len(texts) == 7
    assert "".join(texts) == completion.content == "Streaming, one piece at a time."
    assert completion.finish_reason == "stop"
    assert completion.usage is not None
    assert completion.usage["completion_tokens"] > 0
    seen = fake_llm.last_request
    assert seen.body["stream"] is True
    assert seen.body["stream_options"] == {"include_usage": True}
    assert seen.headers["accept"] == "text/event-stream"


def test_streamed_tool_calls_are_assembled(
    fake_llm: FakeLLM,  # noqa: F811
    client: LLMClient,
) -> None:
    fake_llm.script(
        tool_calls(
            tool_call("get_weather", {"city": "Paris", "unit": "celsius"}, id="call_a"),
            tool_call("get_weather", {"city": "Zürich\u2028"}, id="call_b"),
            content="Let me look.",
            chunk_size=3,
        )
    )

    texts, completion = collect(client.stream(fake_llm.offering(), HELLO, tools=[WEATHER_TOOL]))

    assert "".join(texts) == completion.content == "Let me look."
    assert completion.finish_reason == "tool_calls"
    assert [(c.id, c.name) for c in completion.tool_calls] == [
        ("call_a", "get_weather"),
        ("call_b", "get_weather"),
    ]
    assert json.loads(completion.tool_calls[0].arguments) == {"city": "Paris", "unit": "celsius"}
    assert json.loads(completion.tool_calls[1].arguments) == {"city": "Zürich\u2028"}
    assert completion.usage is None  # not asked for


def test_read_timeout_is_retried_then_raises_llm_timeout(
    fake_llm: FakeLLM,  # noqa: F811
    sleeps: list[float],
) -> None:
    fake_llm.script(*[text("too late", delay=5.0) for _ in range(3)])

    with (
        make_client(sleeps, read=0.2, retries=2) as slow_client,
        pytest.raises(LLMTimeout) as caught,
    ):
        slow_client.complete(fake_llm.offering("slowpoke"), HELLO)

    assert caught.value.offering_id == "slowpoke"
    assert "'slowpoke'" in str(caught.value)
    assert "0.2s read timeout" in str(caught.value)
    assert caught.value.attempts == 3
    assert "after 3 attempts" in str(caught.value)
    assert isinstance(caught.value.__cause__, httpx.ReadTimeout)
    assert len(fake_llm.completions) == 3
    assert len(sleeps) == 2


def test_server_error_then_success(
    fake_llm: FakeLLM,  # noqa: F811
    client: LLMClient,
    sleeps: list[float],
) -> None:
    fake_llm.script(error(500, "The server had an error", type="server_error"), text("Recovered"))

    assert client.complete(fake_llm.offering(), HELLO).content == "Recovered"
    assert len(fake_llm.completions) == 2
    assert sleeps == [pytest.approx(0.0075)]  # backoff 0.01, equal jitter at 0.5


def test_retry_after_is_honoured_on_429(
    fake_llm: FakeLLM,  # noqa: F811
    client: LLMClient,
    sleeps: list[float],
) -> None:
    fake_llm.script(
        error(429, "Rate limit reached", type="requests", headers={"Retry-After": "1"}),
        text("Finally"),
    )

    assert client.complete(fake_llm.offering(), HELLO).content == "Finally"
    assert len(sleeps) == 1
    assert sleeps[0] >= 1
    assert len(fake_llm.completions) == 2


def test_429_after_retries_raises_rate_limited(
    fake_llm: FakeLLM,  # noqa: F811
    client: LLMClient,
    sleeps: list[float],
) -> None:
    limited = error(429, "Rate limit reached", headers={"Retry-After": "2"})
    fake_llm.script(limited, limited, limited)

    with pytest.raises(LLMRateLimited) as caught:
        client.complete(fake_llm.offering(), HELLO)

    assert caught.value.status == 429
    assert caught.value.retry_after == 2
    assert "Rate limit reached" in str(caught.value)
    assert sleeps == [2, 2]


def test_5xx_after_retries_raises_unavailable(
    fake_llm: FakeLLM,  # noqa: F811
    client: LLMClient,
) -> None:
    fake_llm.script(*[error(502, body="<html>Bad Gateway</html>") for _ in range(3)])

    with pytest.raises(LLMUnavailable, match=r"HTTP 502.*Bad Gateway") as caught:
        client.complete(fake_llm.offering(), HELLO)

    assert caught.value.attempts == 3
    assert len(fake_llm.completions) == 3


def test_400_is_not_retried_and_carries_the_provider_message(
    fake_llm: FakeLLM,  # noqa: F811
    client: LLMClient,
    sleeps: list[float],
) -> None:
    said = "This model's maximum context length is 8192 tokens. However, you requested 9000."
    fake_llm.script(error(400, said, code="context_length_exceeded"), text("never served"))

    with pytest.raises(LLMRejected) as caught:
        client.complete(fake_llm.offering("small"), HELLO)

    assert caught.value.status == 400
    assert caught.value.provider_message == said
    assert str(caught.value) == f"model offering 'small' rejected the request (HTTP 400): {said}"
    assert caught.value.code == "llm_rejected"
    assert len(fake_llm.completions) == 1
    assert sleeps == []
    assert fake_llm.pending == 1


def test_stream_dying_midway_raises_unavailable(
    fake_llm: FakeLLM,  # noqa: F811
    client: LLMClient,
) -> None:
    fake_llm.script(broken_stream("This answer will not get to its end.", after=3))
    texts: list[str] = []

    def read_all() -> None:
        texts.extend(event.text for event in client.stream(fake_llm.offering(), HELLO))

    with pytest.raises(LLMUnavailable, match="'fake' broke off: stream ended early") as caught:
        read_all()

    assert texts == ["This", " ans"]  # the role chunk, then two pieces of four
    assert caught.value.partial is not None
    assert caught.value.partial.content == "This ans"
    assert len(fake_llm.completions) == 1  # data had arrived: no retry


def test_stream_is_retried_before_its_first_byte(
    fake_llm: FakeLLM,  # noqa: F811
    client: LLMClient,
    sleeps: list[float],
) -> None:
    fake_llm.script(error(503, "Overloaded", headers={"Retry-After": "0"}), text("Back"))

    texts, completion = collect(client.stream(fake_llm.offering(), HELLO))

    assert "".join(texts) == completion.content == "Back"
    assert sleeps == [0]
    assert len(fake_llm.completions) == 2


def test_stream_left_early_releases_the_connection(
    fake_llm: FakeLLM,  # noqa: F811
    client: LLMClient,
) -> None:
    fake_llm.script(text("a b c d e f g h", chunk_size=2))
    events = client.stream(fake_llm.offering(), HELLO)
    assert next(events).text == "a "
    events.close()  # a ResourceWarning (an error here) would follow an unclosed response


def test_api_key_is_sent_as_bearer(fake_llm: FakeLLM, client: LLMClient) -> None:  # noqa: F811
    client.complete(fake_llm.offering(api_key="sk-test-123"), HELLO)
    assert fake_llm.last_request.headers["authorization"] == "Bearer sk-test-123"


def test_no_authorization_without_a_key(fake_llm: FakeLLM, client: LLMClient) -> None:  # noqa: F811
    client.complete(fake_llm.offering(api_key=None), HELLO)
    assert "authorization" not in fake_llm.last_request.headers


def test_unreachable_server_raises_unavailable(client: LLMClient, sleeps: list[float]) -> None:
    import socket

    with socket.socket() as probe:  # a port where nothing listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    offering = Offering("gone", f"http://127.0.0.1:{port}/v1", "m")

    with pytest.raises(LLMUnavailable, match="'gone' could not be reached") as caught:
        client.complete(offering, HELLO)

    assert caught.value.attempts == 3
    assert len(sleeps) == 2


# -- on httpx.MockTransport --


def mock_client(
    handler: Callable[[httpx.Request], httpx.Response], sleeps: list[float], **options: Any
) -> LLMClient:
    return LLMClient(
        transport=httpx.MockTransport(handler),
        backoff=1.0,
        max_wait=10.0,
        sleep=sleeps.append,
        jitter=lambda: 0.5,
        **options,
    )


MOCK = Offering("mock", "https://llm.example/v1/", "m", api_key="k")


class Pieces(httpx.SyncByteStream):
    """A body that arrives in the given pieces, then optionally fails."""

    def __init__(self, *pieces: bytes, then: Exception | None = None) -> None:
        self.pieces = pieces
        self.then = then

    def __iter__(self) -> Iterator[bytes]:
        yield from self.pieces
        if self.then is not None:
            raise self.then


def sse(*payloads: dict[str, Any] | str) -> bytes:
    return b"".join(
        f"data: {p if isinstance(p, str) else json.dumps(p, ensure_ascii=False)}\r\n\r\n".encode()
        for p in payloads
    )


def delta(content: str | None = None, finish: str | None = None, **more: Any) -> dict[str, Any]:
    piece = {"content": content, **more} if content is not None else dict(more)
    return {"choices": [{"index": 0, "delta": piece, "finish_reason": finish}]}


def test_backoff_doubles_with_jitter_and_is_capped() -> None:
    draws = iter([0.0, 1.0, 0.5, 0.0, 0.99])
    with LLMClient(backoff=1.0, max_wait=6.0, jitter=lambda: next(draws)) as backoff_client:
        waits = [backoff_client.wait_before_retry(attempt) for attempt in range(1, 6)]
        assert waits == pytest.approx([0.5, 2.0, 3.0, 3.0, 5.97])
        assert backoff_client.wait_before_retry(1, retry_after=4.5) == 4.5
        assert backoff_client.wait_before_retry(1, retry_after=3600) == 6.0


def test_parse_retry_after() -> None:
    now = datetime(2026, 7, 5, 9, 15, 0, tzinfo=UTC)
    assert parse_retry_after({"retry-after": "3"}) == 3
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after": "Sun, 05 Jul 2026 09:15:20 GMT"}, now) == 20
    assert parse_retry_after({"retry-after": "Sun, 05 Jul 2026 09:14:00 GMT"}, now) == 0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({"retry-after": "-4"}) == 0
    assert parse_retry_after({}) is None


def test_retry_after_as_http_date_on_503(sleeps: list[float]) -> None:
    answers = iter(
        [
            httpx.Response(503, headers={"Retry-After": "Wed, 21 Oct 2099 07:28:00 GMT"}),
            httpx.Response(200, json={"choices": [{"message": {"content": "ok"}}]}),
        ]
    )
    with mock_client(lambda request: next(answers), sleeps) as mocked:
        assert mocked.complete(MOCK, HELLO).content == "ok"
    assert sleeps == [10.0]  # far in the future: capped by max_wait


def test_status_without_a_provider_message(sleeps: list[float]) -> None:
    with (
        mock_client(lambda request: httpx.Response(404), sleeps) as mocked,
        pytest.raises(LLMRejected) as caught,
    ):
        mocked.complete(MOCK, HELLO)
    assert str(caught.value) == "model offering 'mock' rejected the request (HTTP 404 Not Found)"
    assert caught.value.provider_message is None


def test_unusable_base_url_is_not_retried(client: LLMClient, sleeps: list[float]) -> None:
    with pytest.raises(LLMError, match="'odd' cannot be reached at 'ftp://x/v1'") as caught:
        client.complete(Offering("odd", "ftp://x/v1", "m"), HELLO)
    assert type(caught.value) is LLMError
    assert sleeps == []


def test_request_shape_on_the_wire(sleeps: list[float]) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"choices": [{"message": {"content": "ok"}}]})

    with mock_client(handler, sleeps) as mocked:
        mocked.complete(MOCK, HELLO, max_tokens=10)
    [request] = seen
    assert str(request.url) == "https://llm.example/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer k"
    assert json.loads(request.content) == {"model": "m", "messages": HELLO, "max_tokens": 10}


def test_stream_parsing_across_awkward_byte_boundaries(sleeps: list[float]) -> None:
    body = sse(
        {"choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]},
        delta("Grüße\u2028"),
        delta("🙂 end"),
        delta(finish="stop"),
        {"choices": [], "usage": {"total_tokens": 7}},
        "[DONE]",
    )
    pieces = [body[i : i + 3] for i in range(0, len(body), 3)]  # splits lines and characters

    def handler(request: httpx.Request) -> httpx.Response:
        headers = {"content-type": "text/event-stream"}
        return httpx.Response(200, headers=headers, stream=Pieces(b": keep-alive\n\n", *pieces))

    with mock_client(handler, sleeps) as mocked:
        texts, completion = collect(mocked.stream(MOCK, HELLO))
    assert texts == ["Grüße\u2028", "🙂 end"]
    assert completion.content == "Grüße\u2028🙂 end"
    assert completion.usage == {"total_tokens": 7}


def test_stream_read_error_midway(sleeps: list[float]) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        body = Pieces(sse(delta("Hal")), then=httpx.ReadError("connection reset"))
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=body)

    with (
        mock_client(handler, sleeps) as mocked,
        pytest.raises(
            LLMUnavailable, match="'mock' broke off: stream ended early after 1 chunk"
        ) as caught,
    ):
        collect(mocked.stream(MOCK, HELLO))
    assert caught.value.partial is not None
    assert caught.value.partial.content == "Hal"
    assert sleeps == []


def test_stream_stall_midway_is_a_timeout(sleeps: list[float]) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        body = Pieces(sse(delta("Hal")), then=httpx.ReadTimeout("stalled"))
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=body)

    with mock_client(handler, sleeps) as mocked, pytest.raises(LLMTimeout, match="stream stalled"):
        collect(mocked.stream(MOCK, HELLO))


def test_stream_without_done_but_finished_is_accepted(sleeps: list[float]) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        body = Pieces(sse(delta("Hi"), delta(finish="stop")))
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=body)

    with mock_client(handler, sleeps) as mocked:
        assert collect(mocked.stream(MOCK, HELLO))[1].content == "Hi"


def test_stream_error_event_raises(sleeps: list[float]) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        body = Pieces(sse(delta("Hi"), {"error": {"message": "model overloaded"}}))
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=body)

    with (
        mock_client(handler, sleeps) as mocked,
        pytest.raises(LLMUnavailable, match="model overloaded"),
    ):
        collect(mocked.stream(MOCK, HELLO))


def test_stream_answered_as_plain_json(sleeps: list[float]) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"choices": [{"message": {"content": "whole"}}]})

    with mock_client(handler, sleeps) as mocked:
        texts, completion = collect(mocked.stream(MOCK, HELLO))
    assert texts == ["whole"]
    assert completion.content == "whole"


def test_invalid_success_body(sleeps: list[float]) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text="<html>captive portal</html>")

    with (
        mock_client(handler, sleeps) as mocked,
        pytest.raises(LLMInvalidResponse, match="'mock'.*not a chat completion"),
    ):
        mocked.complete(MOCK, HELLO)
    assert sleeps == []


def test_error_tree_and_repr() -> None:
    for kind in (LLMTimeout, LLMUnavailable, LLMRateLimited, LLMRejected, LLMInvalidResponse):
        assert issubclass(kind, LLMError)
    assert "sk-secret" not in repr(Offering("o", "http://x/v1", "m", api_key="sk-secret"))


def test_a_callers_output_limit_is_kept_up_to_the_offerings(
    fake_llm: FakeLLM,  # noqa: F811
    client: LLMClient,
) -> None:
    """Claude Code asks for 32,000 output tokens whatever the model: the offering's limit
    (256 here) is what the model is sent; a smaller limit of the caller's stands."""
    offering = fake_llm.offering(max_output_tokens=256)
    client.complete(offering, HELLO, options={"max_tokens": 32000})
    assert fake_llm.last_request.body["max_tokens"] == 256
    client.complete(offering, HELLO, options={"max_completion_tokens": 100})
    body = fake_llm.last_request.body
    assert body["max_completion_tokens"] == 100
    assert "max_tokens" not in body
    collect(client.stream(offering, HELLO, options={"max_completion_tokens": 9000}))
    assert fake_llm.last_request.body["max_completion_tokens"] == 256
