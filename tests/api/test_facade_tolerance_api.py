"""What the facade accepts without honouring (issue 41): a request as Codex CLI 0.171 sends
it is answered, what was set aside is named in `X-Eonyx-Ignored`, a namespace's tools reach
the model flattened and their calls come back with the namespace, hosted tools never reach
the model, and `store: false` keeps the session (only the response is not kept)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest

from tests.api.conftest import SESSION, Facade
from tests.fake_llm import text, tool_call, tool_calls

IGNORED = "x-eonyx-ignored"
MEMORY_READ = {
    "type": "function",
    "name": "memory_read",
    "description": "Read a memory entry",
    "parameters": {"type": "object", "properties": {"key": {"type": "string"}}},
}


def codex_body(**changes: Any) -> dict[str, Any]:
    """A request shaped as Codex CLI 0.171 sends it (custom provider, Responses wire)."""
    return {
        "model": "default",
        "instructions": "You are Codex.",
        "input": [{"type": "message", "role": "user", "content": "What do you remember?"}],
        "tools": [
            {"type": "namespace", "name": "mcp__eonyx", "tools": [MEMORY_READ]},
            {"type": "web_search"},
        ],
        "tool_choice": "auto",
        "parallel_tool_calls": False,
        "reasoning": {"summary": "auto"},
        "store": False,
        "stream": False,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "0199aaaa-codex-session",
        "client_metadata": {"originator": "codex_exec"},
        **changes,
    }


def post(facade: Facade, body: dict[str, Any]) -> httpx.Response:
    headers = {"Authorization": f"Bearer {facade.user.token}"}
    return httpx.post(facade.url + "/v1/responses", json=body, headers=headers, timeout=30)


def events_of(response: httpx.Response) -> list[dict[str, Any]]:
    lines = response.text.splitlines()
    return [json.loads(line[6:]) for line in lines if line.startswith("data: {")]


@pytest.mark.parametrize("stream", [False, True])
def test_a_codex_request_is_answered_and_what_was_ignored_is_named(
    facade: Facade, stream: bool
) -> None:
    facade.llm.script(text("Nothing yet."))
    answered = post(facade, codex_body(stream=stream))
    assert answered.status_code == 200, answered.text
    ignored = answered.headers[IGNORED].split(",")
    expected = ["include", "prompt_cache_key", "client_metadata", "reasoning.summary"]
    assert set(ignored) == {*expected, "tools[web_search]"}
    if stream:
        assert events_of(answered)[-1]["type"] == "response.completed"
    else:
        assert answered.json()["output"][0]["content"][0]["text"] == "Nothing yet."
    sent = facade.llm.completions[-1].body
    names = [tool["function"]["name"] for tool in sent["tools"]]
    assert "mcp__eonyx__memory_read" in names  # next to Eonyx's own tools
    assert "memory_read" not in names
    assert "web_search" not in json.dumps(sent)


@pytest.mark.parametrize("stream", [False, True])
def test_a_namespaced_call_comes_back_with_its_namespace(facade: Facade, stream: bool) -> None:
    call = tool_call("mcp__eonyx__memory_read", {"key": "colour"}, id="call_m1")
    facade.llm.script(tool_calls(call))
    answered = post(facade, codex_body(stream=stream))
    assert answered.status_code == 200, answered.text
    final = events_of(answered)[-1]["response"] if stream else answered.json()
    [item] = [o for o in final["output"] if o["type"] == "function_call"]
    assert (item["namespace"], item["name"], item["call_id"]) == (
        "mcp__eonyx",
        "memory_read",
        "call_m1",
    )
    facade.llm.script(text("Your colour is blue."))
    result = {"type": "function_call_output", "call_id": "call_m1", "output": "blue"}
    given = {k: item[k] for k in ("type", "call_id", "name", "namespace", "arguments")}
    items = [*codex_body()["input"], given, result]
    again = post(facade, codex_body(input=items))
    assert again.status_code == 200, again.text
    assert again.headers[SESSION] == answered.headers[SESSION]
    calls = facade.llm.completions[-1].messages[-2]["tool_calls"]
    assert calls[0]["function"]["name"] == "mcp__eonyx__memory_read"


def test_store_false_keeps_a_listed_session_but_not_the_response(facade: Facade) -> None:
    client = facade.client()
    raw = client.responses.with_raw_response.create(
        model="default", input="Remember me.", store=False
    )
    response, session_id = raw.parse(), raw.headers[SESSION]
    assert [row["id"] for row in facade.sessions()] == [session_id]
    assert not facade.rt.store.load(facade.user.user_id, session_id)[0].temporary
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(response.id)


def test_a_temporary_session_is_asked_for_by_header(facade: Facade) -> None:
    client = facade.client()
    client.responses.create(
        model="default",
        input="Just this once.",
        store=False,
        extra_headers={"X-Eonyx-Temporary": "true"},
    )
    assert facade.sessions() == []


def test_unknown_chat_fields_are_ignored_by_name(facade: Facade) -> None:
    raw = facade.client().chat.completions.with_raw_response.create(
        model="default",
        messages=[{"role": "user", "content": "hi"}],
        tools=[{"type": "web_search"}],  # type: ignore[list-item]
        extra_body={"frobnicate": 1, "prompt_cache_key": "k"},
    )
    assert raw.parse().choices[0].message.content == "hi"
    assert raw.headers[IGNORED] == "frobnicate,prompt_cache_key,tools[web_search]"
    assert "web_search" not in json.dumps(facade.llm.completions[-1].body)


def test_what_changes_the_answer_is_still_refused(facade: Facade) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        facade.client().chat.completions.create(
            model="default", messages=[{"role": "user", "content": "hi"}], n=2
        )
    error = refused.value.response.json()["error"]
    assert (error["param"], error["type"]) == ("n", "invalid_request_error")
    assert facade.llm.completions == []


@pytest.mark.parametrize(
    "choice",
    [
        {"type": "function", "name": "memory_read", "namespace": "mcp__eonyx"},
        {"type": "function", "name": "memory_read"},  # its own name, in one namespace only
    ],
)
def test_a_tool_choice_may_name_a_namespaced_function(
    facade: Facade, choice: dict[str, Any]
) -> None:
    answered = post(facade, codex_body(tool_choice=choice))
    assert answered.status_code == 200, answered.text
    sent = facade.llm.completions[-1].body
    assert sent["tool_choice"]["function"]["name"] == "mcp__eonyx__memory_read"
    [item] = [o for o in answered.json()["output"] if o["type"] == "function_call"]
    assert (item["namespace"], item["name"]) == ("mcp__eonyx", "memory_read")


def test_a_tool_choice_naming_no_tool_is_still_refused(facade: Facade) -> None:
    choice = {"type": "function", "name": "memory_read", "namespace": "mcp__other"}
    refused = post(facade, codex_body(tool_choice=choice))
    assert refused.status_code == 400
    assert refused.json()["error"]["param"] == "tool_choice"
    assert facade.llm.completions == []


def test_input_items_of_unknown_types_are_passed_over_by_name(facade: Facade) -> None:
    items = [
        {"type": "compaction", "encrypted_content": "gAAAA-opaque"},
        *codex_body()["input"],
        {"type": "item_reference", "id": "msg_0123"},
    ]
    facade.llm.script(text("Still here."))
    answered = post(facade, codex_body(input=items))
    assert answered.status_code == 200, answered.text
    ignored = answered.headers[IGNORED].split(",")
    assert {"input[compaction]", "input[item_reference]"} <= set(ignored)
    assert answered.json()["output"][0]["content"][0]["text"] == "Still here."
    messages = facade.llm.completions[-1].messages
    assert messages[-1] == {"role": "user", "content": "What do you remember?"}
    assert "opaque" not in json.dumps(messages)
