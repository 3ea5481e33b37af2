"""The facade as a memory-augmenting proxy: what a client sends (instructions, parameters,
tools, images) reaches the model, what the model gives (tool calls, usage) reaches the
client, and every conversation keeps a session of its own. Driven by the `openai` package
against the app on loopback; the model is tests/fake_llm.py."""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import httpx
import openai
import pytest
from PIL import Image

from shared.integrations import api_head
from tests.api.conftest import SESSION, Facade
from tests.fake_llm import broken_stream, error, text, tool_call, tool_calls

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def user(content: Any) -> dict[str, Any]:
    return {"role": "user", "content": content}


def assistant(content: str | None, **extra: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": content, **extra}


def system_prompt(facade: Facade, request: int = -1) -> str:
    messages = facade.llm.completions[request].messages
    assert [m["role"] for m in messages].count("system") == 1
    return messages[0]["content"]


def sent_texts(facade: Facade, request: int = -1) -> list[str]:
    return [json.dumps(m) for m in facade.llm.completions[request].messages]


def test_client_instructions_reach_the_model_after_eonyx_memory(facade: Facade) -> None:
    facade.create(
        [
            {"role": "system", "content": "You are a pirate."},
            {"role": "developer", "content": [{"type": "text", "text": "Answer in one line."}]},
            user("Hello"),
        ]
    )
    prompt = system_prompt(facade)
    assert prompt.startswith(facade.rt.identity.strip()[:40])
    assert prompt.endswith(
        "# Instructions from the client\n\nYou are a pirate.\n\nAnswer in one line."
    )
    context = httpx.get(
        f"{facade.url}/api/v1/sessions/{facade.sessions()[0]['id']}/context",
        headers=facade.user.headers,
    ).json()
    assert "You are a pirate." in context["system_prompt"]  # the session shows it too


def test_model_parameters_are_forwarded(facade: Facade) -> None:
    facade.create(
        [user("Hi")],
        temperature=0.3,
        top_p=0.9,
        max_completion_tokens=50,
        stop=["END"],
        seed=7,
        presence_penalty=0.5,
        frequency_penalty=-0.5,
        response_format={"type": "json_object"},
        user="ada@example.org",
    )
    body = facade.llm.completions[-1].body
    assert {k: body[k] for k in ("temperature", "top_p", "max_completion_tokens", "stop")} == {
        "temperature": 0.3,
        "top_p": 0.9,
        "max_completion_tokens": 50,
        "stop": ["END"],
    }
    assert (body["seed"], body["presence_penalty"], body["frequency_penalty"]) == (7, 0.5, -0.5)
    assert body["response_format"] == {"type": "json_object"}
    assert body["user"] == "ada@example.org"
    assert "max_tokens" not in body  # the client's limit, not the offering's as well


@pytest.mark.parametrize(
    ("options", "param"),
    [
        ({"n": 2}, "n"),
        ({"logprobs": True}, "logprobs"),
        ({"extra_body": {"functions": [{"name": "f"}]}}, "functions"),
        ({"tools": [{"type": "function", "function": {"name": "memory"}}]}, "tools"),
        ({"tool_choice": {"type": "function", "function": {"name": "nope"}}}, "tool_choice"),
    ],
)
def test_what_cannot_be_honoured_is_refused_by_name(
    facade: Facade, options: dict[str, Any], param: str
) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        facade.client().chat.completions.create(model="default", messages=[user("hi")], **options)
    error = refused.value.response.json()["error"]
    assert error["param"] == param
    assert error["type"] == "invalid_request_error"
    assert facade.llm.completions == []
    assert facade.sessions() == []  # a refused request leaves no session behind


def test_usage_is_the_models_own_summed_over_the_turn(facade: Facade) -> None:
    facade.llm.script(
        tool_calls(
            tool_call("manage_memory", {"action": "add", "content": "Uses pnpm."}),
            usage={"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
        ),
        text("Noted.", usage={"prompt_tokens": 130, "completion_tokens": 3, "total_tokens": 133}),
    )
    completion = facade.client().chat.completions.create(
        model="default", messages=[user("This project uses pnpm.")]
    )
    assert completion.choices[0].message.content == "Noted."
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (230, 13)
    assert completion.usage.total_tokens == 243


def test_usage_is_estimated_when_the_model_gives_none(facade: Facade) -> None:
    facade.llm.script(text("Four score and seven years ago.", usage={}))
    completion = facade.client().chat.completions.create(
        model="default", messages=[user("Quote Lincoln.")]
    )
    assert completion.usage is not None
    assert completion.usage.completion_tokens == len("Four score and seven years ago.") // 4
    assert completion.usage.prompt_tokens > 0
    assert completion.usage.total_tokens == (
        completion.usage.prompt_tokens + completion.usage.completion_tokens
    )


def test_a_stream_that_asks_for_usage_ends_with_it(facade: Facade) -> None:
    facade.llm.script(
        text("Streamed.", usage={"prompt_tokens": 42, "completion_tokens": 2, "total_tokens": 44})
    )
    chunks = list(
        facade.client().chat.completions.create(
            model="default",
            messages=[user("Stream with usage")],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.total_tokens == 44
    assert facade.llm.completions[-1].body["stream_options"] == {"include_usage": True}
    assert all(c.usage is None for c in chunks[:-1])


def test_a_client_tool_round_trip_stays_in_one_session(facade: Facade) -> None:
    client = facade.client()
    facade.llm.script(tool_calls(tool_call("get_weather", {"city": "Paris"}, id="call_w1")))
    question = [user("What is the weather in Paris?")]
    raw = client.chat.completions.with_raw_response.create(
        model="default", messages=question, tools=[WEATHER], tool_choice="auto"
    )
    session_id, first = raw.headers[SESSION], raw.parse()
    assert first.choices[0].finish_reason == "tool_calls"
    [call] = first.choices[0].message.tool_calls or []
    assert (call.id, call.function.name) == ("call_w1", "get_weather")
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    offered = [t["function"]["name"] for t in facade.llm.completions[-1].body["tools"]]
    assert "get_weather" in offered
    assert "manage_memory" in offered
    assert facade.llm.completions[-1].body["tool_choice"] == "auto"

    facade.llm.script(text("It is sunny in Paris."))
    history = [
        *question,
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": "call_w1", "content": "sunny, 24 C"},
    ]
    raw = client.chat.completions.with_raw_response.create(
        model="default", messages=history, tools=[WEATHER]
    )
    assert raw.headers[SESSION] == session_id
    assert raw.parse().choices[0].message.content == "It is sunny in Paris."
    sent = facade.llm.completions[-1].messages
    assert sent[-1] == {"role": "tool", "tool_call_id": "call_w1", "content": "sunny, 24 C"}
    assert sent[-2]["tool_calls"][0]["id"] == "call_w1"
    assert [role for role, _ in facade.transcript(session_id)] == [
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert len(facade.sessions()) == 1


def test_a_streamed_client_tool_call_comes_as_deltas(facade: Facade) -> None:
    facade.llm.script(tool_calls(tool_call("get_weather", {"city": "Oslo"}, id="call_s1")))
    with facade.client().chat.completions.stream(
        model="default", messages=[user("Weather in Oslo?")], tools=[WEATHER]
    ) as stream:
        final = stream.get_final_completion()
    assert final.choices[0].finish_reason == "tool_calls"
    [call] = final.choices[0].message.tool_calls or []
    assert (call.id, call.function.name, call.function.arguments) == (
        "call_s1",
        "get_weather",
        '{"city": "Oslo"}',
    )


def test_a_missing_tool_result_is_refused(facade: Facade) -> None:
    facade.llm.script(tool_calls(tool_call("get_weather", {"city": "Rome"}, id="call_r1")))
    first = facade.client().chat.completions.create(
        model="default", messages=[user("Rome?")], tools=[WEATHER]
    )
    history = [user("Rome?"), first.choices[0].message.model_dump(exclude_none=True)]
    with pytest.raises(openai.BadRequestError) as refused:
        facade.client().chat.completions.create(
            model="default", messages=[*history, user("Never mind.")], tools=[WEATHER]
        )
    assert "'call_r1' have no result" in refused.value.response.json()["error"]["message"]


def test_two_conversations_with_the_same_greeting_stay_apart(facade: Facade) -> None:
    greeting = assistant("Hello! I am your assistant. How can I help?")
    _, first = facade.create([greeting, user("My secret project is Bluebird.")])
    _, second = facade.create([greeting, user("What is my secret project?")])
    assert first != second
    assert not any("Bluebird" in m for m in sent_texts(facade))
    _, third = facade.create([greeting, user("Tell me about Bluebird.")])
    assert third not in (first, second)
    assert not any("secret project" in m for m in sent_texts(facade))
    # each session holds its own opening, which the model was sent
    assert facade.transcript(second)[0] == ("assistant", greeting["content"])


def test_a_regenerate_supersedes_the_old_answer(facade: Facade) -> None:
    facade.llm.script("First answer.", "Second answer.", "Second answer, again.")
    _, session_id = facade.create([user("One")])
    history = [user("One"), assistant("First answer."), user("Two")]
    assert facade.create(history) == ("Second answer.", session_id)
    assert facade.create(history) == ("Second answer, again.", session_id)  # regenerate
    assert facade.transcript(session_id) == [
        ("user", "One"),
        ("assistant", "First answer."),
        ("user", "Two"),
        ("assistant", "Second answer, again."),
    ]
    sent = facade.llm.completions[-1].messages
    assert [m["content"] for m in sent[1:]] == ["One", "First answer.", "Two"]
    path = facade.rt.store.path(facade.user.user_id, session_id)
    assert "Second answer." in path.read_text()  # kept in the file
    [row] = facade.sessions()
    assert row["message_count"] == 4
    # the new answer is the head the conversation goes on from
    facade.llm.script("Three.")
    later = [*history, assistant("Second answer, again."), user("Three")]
    assert facade.create(later) == ("Three.", session_id)
    assert len(facade.sessions()) == 1


def test_a_trimmed_history_still_continues_its_session(facade: Facade) -> None:
    facade.llm.script("A.", "B.", "C.")
    _, session_id = facade.create([user("1")])
    facade.create([user("1"), assistant("A."), user("2")])
    # the client keeps only the last exchange and the new message
    assert facade.create([user("2"), assistant("B."), user("3")]) == ("C.", session_id)


def test_an_edited_past_starts_a_new_session(facade: Facade) -> None:
    facade.llm.script("A.", "B.", "B2.")
    _, session_id = facade.create([user("1")])
    facade.create([user("1"), assistant("A."), user("2")])
    _, other = facade.create([user("1"), assistant("A."), user("2, edited")])
    assert other != session_id
    assert [content for _, content in facade.transcript(other)] == [
        "1",
        "A.",
        "2, edited",
        "B2.",
    ]
    assert len(facade.transcript(session_id)) == 4  # the first is as it was


def test_a_temporary_request_is_not_listed(facade: Facade) -> None:
    options: dict[str, Any] = {"extra_headers": {"X-Eonyx-Temporary": "true"}}
    answer, session_id = facade.create([user("Write a title for this chat.")], **options)
    assert answer == "Write a title for this chat."
    assert facade.sessions() == []
    assert facade.rt.store.load(facade.user.user_id, session_id)[0].temporary


def _png() -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), "red").save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def test_an_image_part_goes_into_the_session_and_to_the_model(facade: Facade) -> None:
    parts = [
        {"type": "text", "text": "What colour is this?"},
        {"type": "image_url", "image_url": {"url": _png()}},
    ]
    _, session_id = facade.create([user(parts)])
    [row] = facade.sessions()
    assert row["image_count"] == 1
    content = facade.llm.completions[-1].messages[-1]["content"]
    assert [part["type"] for part in content] == ["text", "image_url"]
    with pytest.raises(openai.BadRequestError) as remote:
        facade.client().chat.completions.create(
            model="default",
            messages=[user([{"type": "image_url", "image_url": {"url": "https://x.test/a.png"}}])],
        )
    assert "FETCH_IMAGE_URLS" in remote.value.response.json()["error"]["message"]
    assert session_id


def test_the_user_field_is_kept_with_the_session(facade: Facade) -> None:
    _, session_id = facade.create([user("hi")], user="client-user-7")
    state, _ = facade.rt.store.load(facade.user.user_id, session_id)
    assert api_head.client_user(state) == "client-user-7"
    assert facade.llm.completions[-1].body["user"] == "client-user-7"


def test_a_request_sent_again_after_a_model_failure_is_answered_once(facade: Facade) -> None:
    facade.llm.script(error(500, "down"), "First.", error(503, "down again"), "Second.")
    with pytest.raises(openai.APIStatusError):
        facade.create([user("One")])
    assert facade.sessions() == []  # nothing of a failed first request is left behind
    _, session_id = facade.create([user("One")])
    history = [user("One"), assistant("First."), user("Two")]
    with pytest.raises(openai.APIStatusError):
        facade.create(history)
    assert facade.create(history) == ("Second.", session_id)
    assert facade.transcript(session_id) == [
        ("user", "One"),
        ("assistant", "First."),
        ("user", "Two"),
        ("assistant", "Second."),
    ]


def test_a_first_stream_that_breaks_leaves_no_session(facade: Facade) -> None:
    facade.llm.script(broken_stream("Hello there, this breaks", after=3))
    response = httpx.post(
        facade.url + "/v1/chat/completions",
        headers=facade.user.headers,
        json={"model": "default", "messages": [user("hi")], "stream": True},
    )
    assert response.status_code == 200
    last = [line for line in response.text.splitlines() if line.startswith("data: ")][-1]
    assert json.loads(last.removeprefix("data: "))["error"]["code"] == "llm_unavailable"
    assert facade.sessions() == []  # the client sends it again: no unanswered duplicate
    facade.llm.script("Hello.")
    assert facade.create([user("hi")])[0] == "Hello."
    assert len(facade.sessions()) == 1
