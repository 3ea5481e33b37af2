"""The Responses API of the facade (`POST /v1/responses`, `GET /v1/responses/<id>`), driven by
the `openai` package against the app on loopback; the model is tests/fake_llm.py."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from tests.api.conftest import SESSION, Facade
from tests.api.test_facade_proxy_api import WEATHER as CHAT_WEATHER
from tests.conftest import create_account
from tests.fake_llm import text, tool_call, tool_calls

WEATHER = {"type": "function", **CHAT_WEATHER["function"]}  # the Responses API's flat form


def test_a_response_and_its_continuation_share_a_session(facade: Facade) -> None:
    client = facade.client()
    usage = {"prompt_tokens": 9, "completion_tokens": 5, "total_tokens": 14}
    facade.llm.script(text("Nice to meet you, Ada.", usage=usage))
    raw = client.responses.with_raw_response.create(
        model="default", input="My name is Ada.", instructions="Be brief."
    )
    first, session_id = raw.parse(), raw.headers[SESSION]
    assert first.output_text == "Nice to meet you, Ada."
    assert first.status == "completed"
    assert first.usage is not None
    assert (first.usage.input_tokens, first.usage.output_tokens) == (9, 5)
    assert facade.llm.completions[-1].messages[0]["content"].endswith("Be brief.")

    raw = client.responses.with_raw_response.create(
        model="default", input="What is my name?", previous_response_id=first.id
    )
    assert raw.headers[SESSION] == session_id
    sent = [m["content"] for m in facade.llm.completions[-1].messages[1:]]
    assert sent == ["My name is Ada.", "Nice to meet you, Ada.", "What is my name?"]
    again = client.responses.retrieve(first.id)
    assert again.output_text == first.output_text
    assert len(facade.sessions()) == 1


def test_a_resent_input_list_continues_its_session_too(facade: Facade) -> None:
    client = facade.client()
    first = client.responses.create(model="default", input="Remember: blue.")
    items: list[Any] = [
        {"role": "user", "content": "Remember: blue."},
        *[item.model_dump(exclude_none=True) for item in first.output],
        {"role": "user", "content": [{"type": "input_text", "text": "Which colour?"}]},
    ]
    client.responses.create(model="default", input=items)
    [row] = facade.sessions()
    assert [role for role, _ in facade.transcript(row["id"])] == ["user", "assistant"] * 2


def test_a_streamed_response_sends_the_responses_events(facade: Facade) -> None:
    facade.llm.script(text("Streaming in pieces."))
    with facade.client().responses.stream(model="default", input="Stream it") as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds.count("response.output_text.delta") > 1
    assert kinds[-1] == "response.completed"
    assert final.output_text == "Streaming in pieces."
    assert final.usage is not None
    assert final.usage.total_tokens > 0
    assert facade.client().responses.retrieve(final.id).output_text == "Streaming in pieces."


@pytest.mark.parametrize("stream", [False, True])
def test_a_function_tool_round_trip(facade: Facade, stream: bool) -> None:
    client = facade.client()
    facade.llm.script(tool_calls(tool_call("get_weather", {"city": "Lima"}, id="call_l1")))
    if stream:
        with client.responses.stream(
            model="default", input="Weather in Lima?", tools=[WEATHER]
        ) as events:
            first = events.get_final_response()
    else:
        first = client.responses.create(model="default", input="Weather in Lima?", tools=[WEATHER])
    [call] = [item for item in first.output if item.type == "function_call"]
    assert (call.call_id, call.name, json.loads(call.arguments)) == (
        "call_l1",
        "get_weather",
        {"city": "Lima"},
    )
    facade.llm.script(text("Lima is cloudy."))
    second = client.responses.create(
        model="default",
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": "call_l1", "output": "cloudy"}],
        tools=[WEATHER],
    )
    assert second.output_text == "Lima is cloudy."
    assert facade.llm.completions[-1].messages[-1] == {
        "role": "tool",
        "tool_call_id": "call_l1",
        "content": "cloudy",
    }
    assert len(facade.sessions()) == 1


def test_an_unstored_response_is_not_kept(facade: Facade) -> None:
    client = facade.client()
    response = client.responses.create(model="default", input="Just this once.", store=False)
    assert response.output_text == "Just this once."
    assert len(facade.sessions()) == 1  # store: false keeps the session (issue 41)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(response.id)
    with pytest.raises(openai.NotFoundError) as unknown:
        client.responses.create(model="default", input="hi", previous_response_id=response.id)
    assert unknown.value.response.json()["error"]["param"] == "previous_response_id"


def test_another_users_response_is_not_found(facade: Facade) -> None:
    response = facade.client().responses.create(model="default", input="mine")
    other = create_account(facade.rt, "someone", api=True)
    with pytest.raises(openai.NotFoundError):
        facade.client(api_key=other.token).responses.retrieve(response.id)


def test_an_input_with_nothing_to_answer_is_refused(facade: Facade) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        facade.client().responses.create(
            model="default",
            input=[{"type": "frobnicate_call", "id": "x"}],  # type: ignore[list-item]
        )
    assert refused.value.response.json()["error"]["param"] == "input"
    assert facade.sessions() == []


def test_a_json_schema_format_reaches_the_model(facade: Facade) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    facade.llm.script(text('{"n": 3}'))
    response = facade.client().responses.create(
        model="default",
        input="Count",
        text={"format": {"type": "json_schema", "name": "count", "schema": schema}},
    )
    assert json.loads(response.output_text) == {"n": 3}
    assert facade.llm.completions[-1].body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "count", "schema": schema},
    }
