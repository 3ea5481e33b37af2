"""Chat turns against a fake OpenAI-compatible server on loopback, through the real client."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from shared.core import logs, sse
from shared.llm.tools import Tool
from shared.runtime import Runtime
from tests.api.conftest import API, Chat
from tests.conftest import Account, Backend, create_account
from tests.fake_llm import broken_stream, error, text, tool_call, tool_calls


def test_a_turn_saves_both_messages_and_reports_the_context(chat: Chat) -> None:
    session_id = chat.new_session()
    chat.llm.script(text("Hello, Ada."))
    response = chat.turn(session_id, content="Hi, I am Ada")
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert body["user_message"]["content"] == "Hi, I am Ada"
    assert body["assistant_message"]["content"] == "Hello, Ada."
    assert body["context"]["tokens"] > 0
    assert body["context"]["window"] is None
    assert chat.transcript(session_id) == [("user", "Hi, I am Ada"), ("assistant", "Hello, Ada.")]

    sent = chat.llm.requests[-1].messages
    assert sent[0]["role"] == "system"
    assert "Eonyx" in sent[0]["content"]
    assert sent[1:] == [{"role": "user", "content": "Hi, I am Ada"}]
    item = chat.client.get(f"{API}/sessions/{session_id}", headers=chat.user.headers).get_json()
    assert item["message_count"] == 2
    assert item["title"] == "Hi, I am Ada"


def test_tool_calls_loop_until_a_final_answer_and_every_step_is_saved(chat: Chat) -> None:
    calls = []

    def clock(context, args):  # type: ignore[no-untyped-def]
        calls.append(args)
        return f"it is 12:00 in {args['city']}"

    chat.rt.tools.register(Tool("clock", "Tell the time", {"type": "object"}, clock))
    session_id = chat.new_session()
    chat.llm.script(
        tool_calls(tool_call("clock", {"city": "Oslo"}, id="call_1")), text("It is noon in Oslo.")
    )
    body = chat.turn(session_id, content="What time is it in Oslo?").get_json()

    assert calls == [{"city": "Oslo"}]
    assert body["assistant_message"]["content"] == "It is noon in Oslo."
    assert [s["role"] for s in body["steps"]] == ["assistant", "tool"]
    assert chat.transcript(session_id) == [
        ("user", "What time is it in Oslo?"),
        ("assistant", None),
        ("tool", "it is 12:00 in Oslo"),
        ("assistant", "It is noon in Oslo."),
    ]
    second = chat.llm.requests[-1].messages
    assert second[-1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "it is 12:00 in Oslo",
    }
    assert second[-2]["tool_calls"][0]["function"]["name"] == "clock"
    offered = [t["function"]["name"] for t in chat.llm.requests[0].body["tools"]]
    assert "clock" in offered


def test_each_turn_sends_the_whole_history_exactly_from_the_cache_and_from_the_file(
    chat: Chat,
) -> None:
    """The history goes to the model as it was first encoded (from the session cache); after
    a cold read of the file the request is the same, down to an answer's lone surrogate,
    which UTF-8 cannot hold and is sent as JSON's escape."""
    chat.rt.tools.register(Tool("clock", "Tell the time", {"type": "object"}, lambda c, a: "noon"))
    session_id = chat.new_session()
    chat.llm.script(
        tool_calls(tool_call("clock", {"city": "Oslo"}, id="call_1")),
        text("half an emoji: \ud83d"),
        "second answer",
        "third answer",
    )
    assert chat.turn(session_id, content="What time is it?").status_code == 200
    assert chat.turn(session_id, content="and now?").status_code == 200
    chat.rt.store.cache.forget((chat.user.user_id, session_id))  # as after a restart
    assert chat.turn(session_id, content="once more").status_code == 200

    history = [
        {"role": "user", "content": "What time is it?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "clock", "arguments": '{"city": "Oslo"}'},
                }
            ],
        },
        {"role": "tool", "content": "noon", "tool_call_id": "call_1"},
        {"role": "assistant", "content": "half an emoji: \ud83d"},
        {"role": "user", "content": "and now?"},
        {"role": "assistant", "content": "second answer"},
        {"role": "user", "content": "once more"},
    ]
    warm, cold = (request.messages[1:] for request in chat.llm.completions[-2:])
    assert warm == history[:5]
    assert cold == history


def test_tool_rounds_are_bounded(make_chat: Callable[..., Chat]) -> None:
    chat = make_chat(MAX_TOOL_ROUNDS="2")
    chat.rt.tools.register(Tool("again", "Loop", {"type": "object"}, lambda c, a: "more"))
    session_id = chat.new_session()
    chat.llm.script(
        tool_calls(tool_call("again", {})), tool_calls(tool_call("again", {})), text("I give up.")
    )
    body = chat.turn(session_id, content="loop").get_json()
    assert body["assistant_message"]["content"] == "I give up."
    assert len(chat.llm.requests) == 3
    assert "tools" not in chat.llm.requests[-1].body  # the last round may only answer


def test_a_model_error_is_502_the_user_message_stays_and_a_retry_answers(chat: Chat) -> None:
    session_id = chat.new_session()
    chat.llm.script(error(400, "This model's maximum context length is 8192 tokens"))
    response = chat.turn(session_id, content="a question")
    assert response.status_code == 502
    error_body = response.get_json()["error"]
    assert error_body["code"] == "llm_rejected"
    assert "'default' refused the request (HTTP 400)" in error_body["message"]
    assert len(chat.llm.requests) == 1  # a 400 is not retried
    assert chat.transcript(session_id) == [("user", "a question")]

    chat.llm.script(text("an answer"))
    retried = chat.turn(session_id, retry=True)
    assert retried.status_code == 200
    assert chat.transcript(session_id) == [("user", "a question"), ("assistant", "an answer")]
    assert chat.turn(session_id, retry=True).status_code == 409


# What a provider may put in an error body: part of a key, an internal address.
PROVIDER_TEXT = "Incorrect API key provided: sk-live-****7f3a (gateway 10.0.3.7:8443)"


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_a_model_error_body_is_shown_to_admins_only(
    make_chat: Callable[..., Chat], caplog: pytest.LogCaptureFixture, stream: bool
) -> None:
    """A user gets the kind of failure and the request id to quote; an admin gets the
    provider's own words; the log has them at warning level under that request id."""
    chat = make_chat(LLM_MAX_RETRIES="0")
    admin = create_account(chat.rt, "root", admin=True)
    caplog.handler.addFilter(logs.ContextFilter())  # the request id, as every log handler has
    shown = {}
    for who in (chat.user, admin):
        session_id = chat.client.post(f"{API}/sessions", json={}, headers=who.headers).get_json()
        chat.llm.script(error(401, PROVIDER_TEXT))
        with caplog.at_level(logging.WARNING):
            response = chat.client.post(
                f"{API}/sessions/{session_id['id']}/turns",
                json={"content": "hello", "stream": stream},
                headers={**who.headers, "X-Request-Id": f"req-{who.username}"},
            )
        assert response.status_code == 502
        assert response.mimetype == "application/json"
        assert response.headers["X-Request-Id"] == f"req-{who.username}"
        assert response.get_json()["error"]["code"] == "llm_rejected"
        shown[who.username] = response.get_json()["error"]["message"]
    user_sees = shown[chat.user.username]
    assert PROVIDER_TEXT not in user_sees
    assert "10.0.3.7" not in user_sees
    assert user_sees == (
        "model offering 'default' refused the request (HTTP 401); an administrator finds the "
        f"details in the log (request id req-{chat.user.username})"
    )
    assert PROVIDER_TEXT in shown["root"]
    failed = [r for r in caplog.records if "request failed" in r.getMessage()]
    logged = {getattr(r, "request_id", None): r for r in failed}
    user_line = logged[f"req-{chat.user.username}"]
    assert user_line.levelno == logging.WARNING
    assert PROVIDER_TEXT in user_line.getMessage()


def test_a_500_then_success_is_retried(chat: Chat) -> None:
    session_id = chat.new_session()
    chat.llm.script(error(500, "overloaded"), text("fine now"))
    response = chat.turn(session_id, content="hello")
    assert response.get_json()["assistant_message"]["content"] == "fine now"
    assert len(chat.llm.requests) == 2


def test_a_429_with_retry_after_is_honoured(chat: Chat) -> None:
    session_id = chat.new_session()
    chat.llm.script(error(429, "slow down", headers={"Retry-After": "1"}), text("ok"))
    assert chat.turn(session_id, content="hello").status_code == 200
    first, second = chat.llm.requests
    assert second.at - first.at >= 1.0


def test_a_timeout_is_502_naming_the_offering(make_chat: Callable[..., Chat]) -> None:
    chat = make_chat(LLM_READ_TIMEOUT_SECONDS="0.3", LLM_MAX_RETRIES="0")
    session_id = chat.new_session()
    chat.llm.script(text("too late", delay=2))
    response = chat.turn(session_id, content="hello")
    assert response.status_code == 502
    message = response.get_json()["error"]["message"]
    assert "'default' did not answer in time" in message
    assert chat.transcript(session_id) == [("user", "hello")]


def sse_events(response) -> list[tuple[str, dict]]:  # type: ignore[no-untyped-def]
    return [(event.name, event.json()) for event in sse.iter_events([response.get_data()])]


def test_streaming_sends_tokens_then_the_turn_and_saves_the_same(chat: Chat) -> None:
    session_id = chat.new_session()
    chat.llm.script(text("Streaming works fine."))
    response = chat.turn(session_id, content="stream please", stream=True)
    assert response.mimetype == "text/event-stream"
    events = sse_events(response)
    tokens = [data["text"] for name, data in events if name == "token"]
    assert len(tokens) > 1
    assert "".join(tokens) == "Streaming works fine."
    name, done = events[-1]
    assert name == "done"
    assert done["assistant_message"]["content"] == "Streaming works fine."
    assert chat.transcript(session_id) == [
        ("user", "stream please"),
        ("assistant", "Streaming works fine."),
    ]


def test_the_stream_carries_tool_steps_and_memory_writes_as_they_happen(chat: Chat) -> None:
    chat.rt.tools.register(Tool("clock", "Tell the time", {"type": "object"}, lambda c, a: "12:00"))
    session_id = chat.new_session()
    chat.llm.script(
        tool_calls(
            tool_call("clock", {"city": "Oslo"}, id="call_1"),
            tool_call("manage_memory", {"action": "add", "content": "Lives in Oslo"}, id="m_1"),
        ),
        text("It is noon in Oslo."),
    )
    events = sse_events(chat.turn(session_id, content="Time in Oslo?", stream=True))
    names = [name for name, _ in events]
    assert names[:5] == ["tool_call", "tool_result", "tool_call", "tool_result", "memory_write"]
    assert set(names[5:-1]) == {"token"}
    assert names[-1] == "done"
    call, result, _, _, write = (data for _, data in events[:5])
    done = events[-1][1]
    assert call["id"] == "call_1"
    assert call["function"] == {
        "name": "clock",
        "arguments": '{"city": "Oslo"}',
    }
    assert call["message_id"] == done["steps"][0]["id"]  # the assistant message with the call
    assert result == done["steps"][1]
    assert result["content"] == "12:00"
    assert result["tool_call_id"] == "call_1"
    assert result["name"] == "clock"
    assert write == done["memory_writes"][0]
    assert write["file"] == "MEMORY.md"
    assert write["entry"] == "Lives in Oslo"


def test_the_openapi_description_names_the_stream_events(chat: Chat) -> None:
    spec = chat.client.get(f"{API}/openapi.json").get_json()
    described = json.dumps(spec["paths"]["/api/v1/sessions/{session_id}/turns"]["post"])
    for name in ("token", "tool_call", "tool_result", "memory_write", "done", "error"):
        assert f"`{name}`" in described


def test_a_model_dying_mid_stream_leaves_a_consistent_session(chat: Chat) -> None:
    session_id = chat.new_session()
    chat.llm.script(broken_stream("This answer will never finish", after=2))
    events = sse_events(chat.turn(session_id, content="go", stream=True))
    name, data = events[-1]
    assert name == "error"
    assert data["status"] == 502
    assert data["error"]["code"] == "llm_unavailable"  # the detail (ended early) is in the log
    assert "'default' is unavailable" in data["error"]["message"]
    assert "request id" in data["error"]["message"]
    assert chat.transcript(session_id) == [("user", "go")]

    chat.llm.script(text("Complete answer."))
    assert chat.turn(session_id, retry=True).status_code == 200
    assert chat.transcript(session_id) == [("user", "go"), ("assistant", "Complete answer.")]


def test_two_concurrent_turns_on_one_session_are_serialised(chat: Chat) -> None:
    session_id = chat.new_session()
    chat.llm.script(text("first answer", delay=0.5), text("second answer", delay=0.5))
    results: dict[str, int] = {}

    def send(word: str) -> None:
        client = chat.app.test_client()
        response = client.post(
            f"{API}/sessions/{session_id}/turns", json={"content": word}, headers=chat.user.headers
        )
        results[word] = response.status_code

    threads = [threading.Thread(target=send, args=(w,)) for w in ("one", "two")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert results == {"one": 200, "two": 200}
    roles = [role for role, _ in chat.transcript(session_id)]
    assert roles == ["user", "assistant", "user", "assistant"]  # never user, user, ...
    second_request = chat.llm.requests[1].messages
    assert second_request[-2]["content"] in {"first answer", "second answer"}


def test_turns_on_different_sessions_run_in_parallel(chat: Chat) -> None:
    a, b = chat.new_session(), chat.new_session()
    chat.llm.script(text("a", delay=0.5), text("b", delay=0.5))
    threads = [
        threading.Thread(
            target=chat.app.test_client().post,
            args=(f"{API}/sessions/{s}/turns",),
            kwargs={"json": {"content": "x"}, "headers": chat.user.headers},
        )
        for s in (a, b)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    first, second = chat.llm.requests
    assert second.at - first.at < 0.4  # the second did not wait for the first answer


def test_no_model_configured_is_503_and_nothing_is_saved(
    tmp_path: Path, backend: Backend, rt: Runtime, client: FlaskClient, alice: Account
) -> None:
    session_id = client.post(f"{API}/sessions", json={}, headers=alice.headers).get_json()["id"]
    response = client.post(
        f"{API}/sessions/{session_id}/turns", json={"content": "hi"}, headers=alice.headers
    )
    assert response.status_code == 503
    assert response.get_json()["error"]["code"] == "no_model"
    assert (
        client.get(f"{API}/sessions/{session_id}/messages", headers=alice.headers).get_json()[
            "items"
        ]
        == []
    )


def test_bad_turns_are_4xx_and_save_nothing(chat: Chat) -> None:
    session_id = chat.new_session()
    assert chat.turn(session_id, content="   ").status_code == 422  # the schema says non-blank
    assert chat.turn(session_id, content="x", cwd="/etc").status_code == 400  # no PROJECTS_DIR
    bad_context = chat.turn(
        session_id, content="x", project_context=[{"path": "../AGENTS.md", "content": "x"}]
    )
    assert bad_context.status_code == 400
    assert chat.turn(session_id, content="x", temperature=2).status_code == 422
    assert chat.transcript(session_id) == []
    assert chat.llm.requests == []


def test_another_users_session_cannot_take_turns(chat: Chat) -> None:
    session_id = chat.new_session()
    stranger = create_account(chat.rt, "stranger")
    response = chat.client.post(
        f"{API}/sessions/{session_id}/turns", json={"content": "hi"}, headers=stranger.headers
    )
    assert response.status_code == 404
    assert chat.transcript(session_id) == []


def test_a_message_bigger_than_the_window_is_413_before_it_is_saved_or_sent(
    make_chat: Callable[..., Chat],
) -> None:
    chat = make_chat(EONYX_LLM_CONTEXT_WINDOW="2000")
    session_id = chat.new_session()
    response = chat.turn(session_id, content="word " * 2_000)  # about 2,500 tokens alone
    assert response.status_code == 413
    error_body = response.get_json()["error"]
    assert error_body["code"] == "message_too_long"
    message = error_body["message"]
    assert "the message is about 2,500 tokens" in message
    assert "more than the model's context window of 2,000 tokens" in message
    over = int(message.split(" tokens, ")[1].split(" more")[0].replace(",", ""))
    assert over > 500  # says by how much
    assert chat.transcript(session_id) == []
    assert chat.llm.requests == []
    streamed = chat.turn(session_id, content="word " * 2_000, stream=True)
    assert streamed.status_code == 413
    assert streamed.mimetype == "application/json"
    assert chat.turn(session_id, content="a short one").status_code == 200


def test_a_model_outage_is_one_log_line_with_the_reason(
    make_chat: Callable[..., Chat], caplog: pytest.LogCaptureFixture
) -> None:
    chat = make_chat(LLM_MAX_RETRIES="0")
    session_id = chat.new_session()
    chat.llm.script(error(503, "the model is down for maintenance"))
    with caplog.at_level(logging.INFO):
        response = chat.turn(session_id, content="hello?")
    assert response.status_code == 502
    lines = [r for r in caplog.records if r.name.startswith(("api", "shared", "flask"))]
    failed = [r for r in lines if "request failed" in r.getMessage()]
    assert len(failed) == 1, [r.getMessage() for r in lines]
    assert "the model is down for maintenance" in failed[0].getMessage()
    assert all(r.exc_info is None for r in lines)  # no traceback anywhere
