"""Anthropic's Messages API on the facade (`POST /v1/messages`, `/v1/messages/count_tokens`),
driven by the real `anthropic` package against the app on loopback; the model behind it is
tests/fake_llm.py (OpenAI-compatible), so each pass means the request crossed both ways."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Callable
from typing import Any

import anthropic
import httpx
import pytest
from PIL import Image

from tests.api.conftest import SESSION, Facade
from tests.fake_llm import broken_stream, text

EPHEMERAL = {"type": "ephemeral"}  # a caching hint: passed over
WEATHER: dict[str, Any] = {
    "name": "get_weather",
    "description": "The weather in a city",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}


def client(facade: Facade, **options: Any) -> anthropic.Anthropic:
    """The SDK as its users set it up, but for the base URL: the key goes as `x-api-key`."""
    options.setdefault("api_key", facade.user.token)
    return anthropic.Anthropic(base_url=facade.url, max_retries=0, **options)


def ask(content: Any) -> dict[str, Any]:
    return {"role": "user", "content": content}


def roles(facade: Facade) -> list[str]:
    """The roles of the facade user's one listed session."""
    [row] = facade.sessions()
    return [role for role, _ in facade.transcript(row["id"])]


def test_a_plain_answer_with_the_clients_system_prompt(facade: Facade) -> None:
    raw = client(facade).messages.with_raw_response.create(
        model="default",
        max_tokens=200,
        system=[
            {
                "type": "text",
                "text": "Talk like a pirate.",
                "cache_control": {"type": "ephemeral"},
            }
        ],
        messages=[ask("Hello there")],
    )
    message = raw.parse()
    assert message.content[0].type == "text"
    assert message.content[0].text == "Hello there"
    assert (message.role, message.stop_reason, message.model) == (
        "assistant",
        "end_turn",
        "default",
    )
    assert message.usage.input_tokens > 0
    assert message.usage.output_tokens > 0
    sent = facade.llm.completions[-1]
    assert sent.messages[0]["role"] == "system"
    assert "Talk like a pirate." in sent.messages[0]["content"]
    assert sent.messages[-1] == {"role": "user", "content": "Hello there"}
    assert sent.body["max_tokens"] == 200
    [row] = facade.sessions()
    assert raw.headers[SESSION] == row["id"]


def test_three_turns_continue_one_session(facade: Facade) -> None:
    sdk = client(facade)
    messages: list[Any] = []
    sessions = set()
    for question in ("My name is Ada.", "I live in Oslo.", "Who am I?"):
        messages.append(ask(question))
        raw = sdk.messages.with_raw_response.create(
            model="default", max_tokens=100, messages=messages
        )
        answer = raw.parse()
        assert answer.content[0].text == question  # the fake model echoes
        messages.append({"role": "assistant", "content": answer.content})
        sessions.add(raw.headers[SESSION])
    assert len(sessions) == 1
    assert roles(facade) == ["user", "assistant"] * 3
    sent = [m["content"] for m in facade.llm.completions[-1].messages[1:]]
    assert sent == ["My name is Ada.", "My name is Ada.", "I live in Oslo.", "I live in Oslo."] + [
        "Who am I?"
    ]


def test_a_streamed_answer_and_its_continuation(facade: Facade) -> None:
    sdk = client(facade)
    facade.llm.script(text("Streaming in several small pieces."))
    question = ask("Stream it, please.")
    with sdk.messages.stream(model="default", max_tokens=100, messages=[question]) as stream:
        streamed = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert streamed == "Streaming in several small pieces."
    assert final.content[0].text == streamed
    assert final.stop_reason == "end_turn"
    assert final.usage.output_tokens > 0
    assert facade.llm.completions[-1].streamed
    follow = [question, {"role": "assistant", "content": final.content}, ask("And again.")]
    with sdk.messages.stream(model="default", max_tokens=100, messages=follow) as stream:
        assert stream.get_final_message().content[0].text == "And again."
    assert roles(facade) == ["user", "assistant"] * 2


def test_a_client_tool_round_trip_stays_in_one_session(facade: Facade) -> None:
    sdk = client(facade)
    question = ask("use get_weather city=Paris")
    call = sdk.messages.create(
        model="default", max_tokens=100, messages=[question], tools=[WEATHER]
    )
    assert call.stop_reason == "tool_use"
    [use] = [block for block in call.content if block.type == "tool_use"]
    assert (use.name, use.input) == ("get_weather", {"city": "Paris"})
    result = {"type": "tool_result", "tool_use_id": use.id, "content": "sunny in Paris"}
    answer = sdk.messages.create(
        model="default",
        max_tokens=100,
        tools=[WEATHER],
        messages=[question, {"role": "assistant", "content": call.content}, ask([result])],
    )
    assert answer.content[0].text == "The tool said: sunny in Paris"
    assert answer.stop_reason == "end_turn"
    tool = facade.llm.completions[-1].messages[-1]
    assert (tool["role"], tool["tool_call_id"]) == ("tool", use.id)
    assert roles(facade) == ["user", "assistant", "tool", "assistant"]


def test_a_streamed_tool_call_arrives_whole(facade: Facade) -> None:
    with client(facade).messages.stream(
        model="default",
        max_tokens=100,
        messages=[ask("use get_weather city=Oslo")],
        tools=[WEATHER],
        tool_choice={"type": "any"},
    ) as stream:
        final = stream.get_final_message()
    assert final.stop_reason == "tool_use"
    [use] = final.content
    assert use.type == "tool_use"
    assert (use.name, use.input) == ("get_weather", {"city": "Oslo"})
    assert facade.llm.completions[-1].body["tool_choice"] == "required"


def _png() -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), "red").save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def test_an_image_block_reaches_the_model_as_an_image(facade: Facade) -> None:
    data = _png()
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
    content = [{"type": "text", "text": "What colour is this?"}, image]
    client(facade).messages.create(model="default", max_tokens=100, messages=[ask(content)])
    parts = facade.llm.completions[-1].messages[-1]["content"]
    assert [part["type"] for part in parts] == ["text", "image_url"]
    assert parts[1]["image_url"]["url"] == "data:image/png;base64," + data
    [row] = facade.sessions()
    assert row["image_count"] == 1


def test_count_tokens_estimates_the_request(facade: Facade) -> None:
    sdk = client(facade)
    short = sdk.messages.count_tokens(model="default", messages=[ask("Hi")])
    long = sdk.messages.count_tokens(
        model="default", system="Be brief.", messages=[ask("Hi " * 400)], tools=[WEATHER]
    )
    assert 0 < short.input_tokens < long.input_tokens
    assert facade.llm.requests == []  # counting asks no model


def test_bad_requests_get_anthropics_error_shape(facade: Facade) -> None:
    headers = {"x-api-key": facade.user.token, "anthropic-version": "2023-06-01"}
    missing = httpx.post(
        facade.url + "/v1/messages", json={"model": "default", "max_tokens": 10}, headers=headers
    )
    assert missing.status_code == 400
    assert missing.json()["type"] == "error"
    assert missing.json()["error"]["type"] == "invalid_request_error"
    assert "messages" in missing.json()["error"]["message"]
    sdk = client(facade)
    with pytest.raises(anthropic.NotFoundError) as unknown:
        sdk.messages.create(model="no-such-model", max_tokens=10, messages=[ask("hi")])
    assert unknown.value.body["error"]["type"] == "not_found_error"  # type: ignore[index]
    with pytest.raises(anthropic.BadRequestError) as last:
        sdk.messages.create(
            model="default",
            max_tokens=10,
            messages=[ask("hi"), {"role": "assistant", "content": "Prefilled"}],
        )
    assert "last message" in last.value.message
    assert facade.sessions() == []


def test_authentication_by_x_api_key_or_bearer(facade: Facade) -> None:
    with pytest.raises(anthropic.AuthenticationError) as wrong:
        client(facade, api_key="not-a-key").messages.create(
            model="default", max_tokens=10, messages=[ask("hi")]
        )
    assert wrong.value.status_code == 401
    assert wrong.value.body["error"]["type"] == "authentication_error"  # type: ignore[index]
    bearer = anthropic.Anthropic(
        base_url=facade.url, api_key=None, auth_token=facade.user.token, max_retries=0
    )
    answer = bearer.messages.create(model="default", max_tokens=10, messages=[ask("hi")])
    assert answer.content[0].text == "hi"


def test_what_cannot_be_honoured_is_accepted_and_named(facade: Facade) -> None:
    web_search = {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}
    raw = client(facade).beta.messages.with_raw_response.create(
        model="default",
        max_tokens=2000,
        messages=[ask("Search nothing.")],
        tools=[WEATHER, web_search],  # type: ignore[list-item]
        thinking={"type": "enabled", "budget_tokens": 1024},
        service_tier="auto",
        betas=["context-management-2025-06-27", "a-beta-from-the-future"],
        extra_body={"top_k": 5, "brand_new_field": {"x": 1}},
    )
    assert raw.parse().content[0].text == "Search nothing."
    ignored = raw.headers["X-Eonyx-Ignored"].split(",")
    expected = [
        "brand_new_field",
        "service_tier",
        "thinking",
        "tools[web_search_20250305]",
        "top_k",
    ]
    assert sorted(ignored) == expected
    sent = facade.llm.completions[-1].body
    names = [tool["function"]["name"] for tool in sent["tools"]]
    assert "get_weather" in names
    assert "web_search" not in names
    assert "top_k" not in sent


def test_eonyx_memory_tools_are_offered_to_the_model(facade: Facade) -> None:
    client(facade).messages.create(model="default", max_tokens=100, messages=[ask("hi")])
    names = [tool["function"]["name"] for tool in facade.llm.completions[-1].body["tools"]]
    assert "memory" in names


def _events(body: str) -> list[str]:
    return [line.removeprefix("event: ") for line in body.splitlines() if line.startswith("event:")]


def test_a_stream_is_anthropics_events_and_ends_in_an_error_event_on_failure(
    facade: Facade,
) -> None:
    headers = {"x-api-key": facade.user.token, "anthropic-version": "2023-06-01"}
    body = {"model": "default", "max_tokens": 50, "stream": True, "messages": [ask("Two parts")]}
    streamed = httpx.post(facade.url + "/v1/messages", json=body, headers=headers)
    assert streamed.headers["content-type"].startswith("text/event-stream")
    names = _events(streamed.text)
    assert names[:2] == ["message_start", "content_block_start"]
    assert set(names[2:-3]) == {"content_block_delta"}
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    facade.llm.script(broken_stream("This answer breaks off halfway", after=3))
    body["messages"] = [ask("Break it")]
    broken = httpx.post(facade.url + "/v1/messages", json=body, headers=headers)
    assert _events(broken.text)[-1] == "error"
    error = json.loads(broken.text.rstrip().splitlines()[-1].removeprefix("data: "))
    assert error["type"] == "error"
    assert error["error"]["type"] == "api_error", error  # the model's failure: a 502
    facade.llm.script(broken_stream("This answer breaks off halfway", after=3))
    with (
        client(facade).messages.stream(
            model="default", max_tokens=50, messages=[ask("Break it again")]
        ) as stream,
        pytest.raises(anthropic.APIStatusError) as failed,
    ):
        "".join(stream.text_stream)
    assert failed.value.body["error"]["type"] == error["error"]["type"]  # type: ignore[index]


def test_http_edges_of_the_messages_routes(facade: Facade) -> None:
    """A wrong method is a 405 in Anthropic's shape; a browser's preflight is answered (the
    facade's CORS covers /v1/messages) with the headers an Anthropic client sends."""
    wrong = httpx.get(facade.url + "/v1/messages", headers={"x-api-key": facade.user.token})
    assert wrong.status_code == 405
    assert "POST" in wrong.headers["Allow"]
    assert wrong.json()["type"] == "error"
    assert wrong.json()["error"]["type"] == "invalid_request_error"
    asked = "x-api-key, anthropic-version, content-type"
    preflight = httpx.options(
        facade.url + "/v1/messages?beta=true",
        headers={
            "Origin": "https://app.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": asked,
        },
    )
    assert preflight.status_code == 204
    assert "POST" in preflight.headers["Access-Control-Allow-Methods"]
    allowed = preflight.headers["Access-Control-Allow-Headers"].lower()
    assert {"x-api-key", "anthropic-version"} <= {h.strip() for h in allowed.split(",")}


def test_messages_spend_the_turn_budget_and_a_refusal_is_anthropics_429(
    make_facade: Callable[..., Facade],
) -> None:
    facade = make_facade(RATE_LIMIT_TURNS_PER_MINUTE="2")
    sdk = client(facade)
    for question in ("one", "two"):
        sdk.messages.create(model="default", max_tokens=10, messages=[ask(question)])
    with pytest.raises(anthropic.RateLimitError) as refused:
        sdk.messages.create(model="default", max_tokens=10, messages=[ask("three")])
    assert refused.value.body["error"]["type"] == "rate_limit_error"  # type: ignore[index]
    assert int(refused.value.response.headers["Retry-After"]) >= 1
    assert sdk.messages.count_tokens(model="default", messages=[ask("four")]).input_tokens > 0
    assert len(facade.llm.completions) == 2  # the refused turn never reached the model
