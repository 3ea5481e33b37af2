"""The fake model's default answer behaves as a real model would, seen through the `openai`
package: it calls the tool it is told to, answers in the schema it is given, and echoes
otherwise."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

import openai
import pytest
from pydantic import BaseModel

from tests.fake_llm import FAKE_MODEL, FakeLLM, text
from tests.fake_schema import hints_in, instance


def weather_tool(name: str = "get_weather") -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": "The weather in a city",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer", "minimum": 1},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city"],
            },
        },
    }


TIME_TOOL = {
    "type": "function",
    "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}},
}
MEMORY_TOOL = {
    "type": "function",
    "function": {"name": "manage_memory", "parameters": {"type": "object", "properties": {}}},
}


@pytest.fixture
def client(fake_llm: FakeLLM) -> openai.OpenAI:
    return openai.OpenAI(base_url=fake_llm.base_url, api_key="x", max_retries=0)


def ask(client: openai.OpenAI, said: str, **options: Any) -> Any:
    messages = [{"role": "user", "content": said}]
    return client.chat.completions.create(model=FAKE_MODEL, messages=messages, **options)


def only_call(completion: Any) -> tuple[str, dict[str, Any]]:
    assert completion.choices[0].finish_reason == "tool_calls"
    [call] = completion.choices[0].message.tool_calls
    return call.function.name, json.loads(call.function.arguments)


def test_a_named_tool_choice_calls_that_tool_with_the_hinted_arguments(client):
    completion = ask(
        client,
        "weather please, city=Paris days: 3 unit=fahrenheit",
        tools=[TIME_TOOL, weather_tool()],
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
    )
    assert only_call(completion) == (
        "get_weather",
        {"city": "Paris", "days": 3, "unit": "fahrenheit"},
    )


def test_a_named_tool_that_is_not_offered_is_refused(client):
    with pytest.raises(openai.BadRequestError, match="nope"):
        ask(
            client,
            "hi",
            tools=[TIME_TOOL],
            tool_choice={"type": "function", "function": {"name": "nope"}},
        )


def test_required_calls_the_tool_the_message_names_else_a_clients_first(client):
    tools = [MEMORY_TOOL, TIME_TOOL, weather_tool()]
    named = ask(client, "use get_weather city=Oslo", tools=tools, tool_choice="required")
    assert only_call(named) == ("get_weather", {"city": "Oslo", "days": 1, "unit": "celsius"})
    unnamed = ask(client, "anything", tools=tools, tool_choice="required")
    assert only_call(unnamed)[0] == "get_time"


def test_auto_calls_a_tool_only_when_the_message_names_it(client):
    tools = [MEMORY_TOOL, weather_tool()]
    called = ask(client, "please use get_weather with city=Rome", tools=tools)
    assert only_call(called) == ("get_weather", {"city": "Rome", "days": 1, "unit": "celsius"})
    for said in ("what is the weather in Rome?", "save this with manage_memory", "get_weathers"):
        answer = ask(client, said, tools=tools, tool_choice="auto")
        assert answer.choices[0].finish_reason == "stop"
        assert answer.choices[0].message.content == said
        assert not answer.choices[0].message.tool_calls


def test_none_never_calls_a_tool(client):
    answer = ask(client, "use get_weather city=Rome", tools=[weather_tool()], tool_choice="none")
    assert answer.choices[0].message.content == "use get_weather city=Rome"
    assert not answer.choices[0].message.tool_calls


def test_after_a_tool_result_it_answers_with_the_result(client):
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    messages = [
        {"role": "user", "content": "use get_weather city=Paris"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21C"},
    ]
    answer = client.chat.completions.create(
        model=FAKE_MODEL, messages=messages, tools=[weather_tool()]
    )
    assert answer.choices[0].finish_reason == "stop"
    assert answer.choices[0].message.content == "The tool said: sunny, 21C"


class Address(BaseModel):
    street: str
    city: str


class Person(BaseModel):
    name: str
    age: int
    kind: Literal["friend", "colleague"]
    home: Address
    past: list[Address]
    born: datetime
    nickname: str | None = None


def test_parse_with_a_pydantic_model_answers_in_its_schema(client):
    completion = client.chat.completions.parse(
        model=FAKE_MODEL,
        messages=[{"role": "user", "content": "name=Ada age=36 kind=colleague city: London"}],
        response_format=Person,
    )
    person = completion.choices[0].message.parsed
    assert isinstance(person, Person)
    assert (person.name, person.age, person.kind) == ("Ada", 36, "colleague")
    assert person.home.city == "London"
    assert person.past[0].city == "London"
    assert "$defs" in Person.model_json_schema()  # the nested model came by reference


def test_json_object_answers_a_json_object(client):
    answer = ask(client, "hello there", response_format={"type": "json_object"})
    assert json.loads(answer.choices[0].message.content) == {"answer": "hello there"}


def test_a_streamed_tool_call_comes_as_deltas(client):
    stream = ask(
        client,
        "use get_weather city=Lima",
        tools=[weather_tool()],
        stream=True,
        stream_options={"include_usage": True},
    )
    name, arguments, finish, usage = "", "", None, None
    for chunk in stream:
        usage = chunk.usage or usage
        for choice in chunk.choices:
            finish = choice.finish_reason or finish
            for delta in choice.delta.tool_calls or []:
                name += delta.function.name or ""
                arguments += delta.function.arguments or ""
    assert (name, json.loads(arguments)["city"], finish) == ("get_weather", "Lima", "tool_calls")
    assert usage is not None
    assert usage.total_tokens > 0


def test_a_script_still_wins_over_the_default(client, fake_llm):
    fake_llm.script(text("scripted"))
    answer = ask(client, "use get_weather", tools=[weather_tool()], tool_choice="required")
    assert answer.choices[0].message.content == "scripted"


def test_instances_follow_refs_unions_tuples_and_bounds():
    schema = {
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"child": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}},
            }
        },
        "type": "object",
        "properties": {
            "tree": {"$ref": "#/$defs/Node"},
            "pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]},
            "ratio": {"type": "number", "exclusiveMaximum": 1},
            "code": {"type": "string", "minLength": 8, "maxLength": 8},
            "flag": {"type": ["boolean", "null"]},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
            "fixed": {"const": "v1"},
            "legacy": {"allOf": [{"$ref": "#/definitions/Old"}]},
        },
        "definitions": {
            "Old": {"type": "object", "properties": {"n": {"type": "integer", "default": 7}}}
        },
    }
    made = instance(schema, {"flag": "no"})
    assert made["pair"] == [1, "pair"]
    assert made["ratio"] == 0.5
    assert made["fixed"] == "v1"
    assert len(made["code"]) == 8
    assert made["tags"] == ["tags", "tags"]
    assert made["flag"] is False
    assert made["legacy"] == {"n": 7}
    depth, node = 0, made["tree"]
    while node:
        depth, node = depth + 1, node.get("child")
    assert 1 < depth < 10  # the recursion ended


def test_hints_read_equals_colons_and_quotes():
    assert hints_in('city=Paris, days: 3. note="two words" x=1') == {
        "city": "Paris",
        "days": "3",
        "note": "two words",
        "x": "1",
    }
