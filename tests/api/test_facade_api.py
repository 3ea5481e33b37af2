"""The OpenAI-compatible facade, driven by the official `openai` package against the app
served on loopback (the model is tests/fake_llm.py, which echoes the last user message)."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest

from shared.llm import models
from tests.api.conftest import SESSION, Facade
from tests.conftest import create_account
from tests.fake_llm import error, text


def user(content: str) -> dict[str, str]:
    return {"role": "user", "content": content}


def assistant(content: str) -> dict[str, str]:
    return {"role": "assistant", "content": content}


def test_a_plain_completion_makes_an_api_session(facade: Facade) -> None:
    answer, session_id = facade.create([user("Hello, Eonyx")])
    assert answer == "Hello, Eonyx"
    [session] = facade.sessions()
    assert session["id"] == session_id
    assert session["source"] == "api"
    assert facade.transcript(session_id) == [("user", "Hello, Eonyx"), ("assistant", answer)]


def test_a_streamed_completion_comes_in_chunks(facade: Facade) -> None:
    facade.llm.script(text("Streaming works in small pieces."))
    with facade.client().chat.completions.with_streaming_response.create(
        model="default", messages=[user("Stream, please")], stream=True
    ) as response:
        session_id = response.headers[SESSION]
        chunks = list(response.parse())
    pieces = [c.choices[0].delta.content for c in chunks if c.choices[0].delta.content]
    assert len(pieces) > 1
    assert "".join(pieces) == "Streaming works in small pieces."
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert {c.object for c in chunks} == {"chat.completion.chunk"}
    assert facade.transcript(session_id)[-1] == ("assistant", "Streaming works in small pieces.")


def test_a_stream_ends_with_done(facade: Facade) -> None:
    response = httpx.post(
        facade.url + "/v1/chat/completions",
        headers=facade.user.headers,
        json={"model": "default", "messages": [user("hi")], "stream": True},
    )
    assert response.headers["content-type"].startswith("text/event-stream")
    events = [line for line in response.text.splitlines() if line.startswith("data: ")]
    assert events[-1] == "data: [DONE]"


def test_the_header_continues_a_session(facade: Facade) -> None:
    _, session_id = facade.create([user("My name is Ada.")])
    client = facade.client()
    raw = client.chat.completions.with_raw_response.create(
        model="default",
        messages=[user("What is my name?")],
        extra_headers={SESSION: session_id},
    )
    assert raw.headers[SESSION] == session_id
    sent = [m["content"] for m in facade.llm.completions[-1].messages if m["role"] == "user"]
    assert sent == ["My name is Ada.", "What is my name?"]
    assert len(facade.transcript(session_id)) == 4
    assert len(facade.sessions()) == 1


def test_a_resent_history_continues_its_session(facade: Facade) -> None:
    first, session_id = facade.create([user("My name is Ada.")])
    history = [user("My name is Ada."), assistant(first), user("What is my name?")]
    second, again = facade.create(history)
    assert again == session_id
    # streamed this time: the binding is kept after a streamed turn too
    history += [assistant(second), user("And my surname?")]
    with facade.client().chat.completions.with_streaming_response.create(
        model="default", messages=history, stream=True
    ) as response:
        assert response.headers[SESSION] == session_id
        third = "".join(c.choices[0].delta.content or "" for c in response.parse())
    _, still = facade.create([*history, assistant(third), user("Thanks.")])
    assert still == session_id
    # each turn once: the resent history is not appended again
    assert [role for role, _ in facade.transcript(session_id)] == ["user", "assistant"] * 4
    # the same opening in a new conversation is a new session
    _, other = facade.create([user("My name is Ada.")])
    assert other != session_id
    assert len(facade.sessions()) == 2


def test_model_names_an_offering(facade: Facade) -> None:
    with facade.rt.db.session() as db:
        models.add_offering(db, id="small", base_url=facade.llm.base_url, model="small-model")
    answer, _ = facade.create([user("hi")], model="small")
    assert answer == "hi"
    assert facade.llm.completions[-1].body["model"] == "small-model"
    listed = [m.id for m in facade.client().models.list()]
    assert listed == ["default", "small"]


def _error_of(exc: openai.APIStatusError) -> dict[str, Any]:
    body = exc.response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"message", "type", "param", "code"}
    return body["error"]


def test_errors_come_in_openai_shape(facade: Facade) -> None:
    client = facade.client()
    with pytest.raises(openai.AuthenticationError) as bad_key:
        facade.client(api_key="eyx_wrong").chat.completions.create(
            model="default", messages=[user("hi")]
        )
    assert _error_of(bad_key.value)["code"] == "invalid_token"
    with pytest.raises(openai.NotFoundError) as no_model:
        client.chat.completions.create(model="gpt-imaginary", messages=[user("hi")])
    assert _error_of(no_model.value)["code"] == "model_not_found"
    with pytest.raises(openai.BadRequestError) as not_user:
        client.chat.completions.create(model="default", messages=[assistant("I spoke last")])
    assert "last message must be the user's" in _error_of(not_user.value)["message"]
    with pytest.raises(openai.BadRequestError) as no_messages:
        client.chat.completions.create(model="default", messages=[])
    assert "messages must not be empty" in _error_of(no_messages.value)["message"]
    schema = httpx.post(
        facade.url + "/v1/chat/completions", headers=facade.user.headers, json={"model": "x"}
    )
    assert schema.status_code == 400
    assert schema.json()["error"]["message"] == "messages: missing data for required field"
    assert schema.json()["error"]["param"] == "messages"
    assert facade.sessions() == []  # nothing was made by a refused request
    _, session_id = facade.create([user("hi")])
    with pytest.raises(openai.NotFoundError) as no_model_here:
        client.chat.completions.create(
            model="gpt-imaginary", messages=[user("again")], extra_headers={SESSION: session_id}
        )
    assert _error_of(no_model_here.value)["code"] == "model_not_found"
    assert len(facade.transcript(session_id)) == 2  # nothing written to the session


def test_another_users_session_is_not_found(facade: Facade) -> None:
    _, session_id = facade.create([user("mine")])
    other = create_account(facade.rt, "someone", api=True)
    with pytest.raises(openai.NotFoundError) as exc:
        facade.client(api_key=other.token).chat.completions.create(
            model="default", messages=[user("yours?")], extra_headers={SESSION: session_id}
        )
    assert _error_of(exc.value)["type"] == "not_found_error"


def test_a_model_failure_is_an_openai_error(facade: Facade) -> None:
    facade.llm.script(error(500, "the model fell over at 10.0.3.7"))
    with pytest.raises(openai.APIStatusError) as exc:
        facade.client().chat.completions.create(
            model="default", messages=[user("hi")], extra_headers={"X-Request-Id": "req-1"}
        )
    assert exc.value.status_code == 502
    found = _error_of(exc.value)
    assert found["type"] == "server_error"
    assert found["code"] == "llm_unavailable"
    # not an admin: the kind of failure and the request id, never the provider's own words
    assert found["message"] == (
        "model offering 'default' is unavailable (HTTP 500); an administrator finds the "
        "details in the log (request id req-1)"
    )
