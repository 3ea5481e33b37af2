"""The facade's HTTP edges, as a browser and an OpenAI client meet them: CORS on `/v1` (and
none on `/api/v1`), every `/v1` error in OpenAI's full shape, and `GET /v1/models/{id}`.
The app is served on loopback and wired to the fake model (tests/fake_llm.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest

from shared.core import sse
from tests.api.conftest import SESSION, Facade
from tests.api.test_facade_api import user
from tests.fake_llm import text

PAGE = "https://app.example.com"


def preflight(facade: Facade, path: str, origin: str = PAGE, **headers: str) -> httpx.Response:
    return httpx.options(
        facade.url + path,
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type, x-stainless-os",
            **headers,
        },
    )


def cors_headers(response: httpx.Response) -> dict[str, str]:
    return {k.lower(): v for k, v in response.headers.items() if k.lower().startswith("access-")}


def error_of(response: httpx.Response) -> dict[str, Any]:
    """The error of a /v1 answer, checked to have OpenAI's full shape."""
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"message", "type", "param", "code"}, body
    assert body["error"]["message"]
    return body["error"]


# -- CORS ------------------------------------------------------------------------------------


def test_a_preflight_is_answered_without_a_key_and_spends_no_budget(
    make_facade: Callable[..., Facade],
) -> None:
    facade = make_facade(RATE_LIMIT_REQUESTS_PER_MINUTE="3")
    for _ in range(5):  # more preflights than the address may send requests
        answer = preflight(facade, "/v1/chat/completions")
        assert answer.status_code == 204
    headers = cors_headers(answer)
    assert headers["access-control-allow-origin"] == "*"
    assert "POST" in headers["access-control-allow-methods"].split(", ")
    allowed = {name.strip().lower() for name in headers["access-control-allow-headers"].split(",")}
    assert {"authorization", "content-type", "x-eonyx-session", "x-eonyx-temporary"} <= allowed
    assert "x-stainless-os" in allowed  # what the browser asked for (the openai package's)
    assert int(headers["access-control-max-age"]) >= 600
    assert "access-control-allow-credentials" not in headers

    models = preflight(facade, "/v1/models", **{"Access-Control-Request-Method": "GET"})
    assert models.status_code == 204
    assert "GET" in models.headers["access-control-allow-methods"]

    answer_, session_id = facade.create([user("after the preflights")])
    assert answer_ == "after the preflights"
    assert session_id


EXPOSED = f"{SESSION}, X-Eonyx-Ignored"


def test_answers_carry_the_origin_and_expose_the_session_header(facade: Facade) -> None:
    """A browser client reads the session and what was ignored (X-Eonyx-Ignored)."""
    browser = {**facade.user.headers, "Origin": PAGE}
    body = {"model": "default", "messages": [user("from a page")]}
    plain = httpx.post(facade.url + "/v1/chat/completions", headers=browser, json=body)
    assert plain.status_code == 200
    assert plain.headers["access-control-allow-origin"] == "*"
    assert plain.headers["access-control-expose-headers"] == EXPOSED
    assert plain.headers[SESSION]

    facade.llm.script(text("streamed to a page"))
    with httpx.stream(
        "POST",
        facade.url + "/v1/chat/completions",
        headers=browser,
        json={**body, "stream": True},
    ) as streamed:
        assert streamed.headers["access-control-allow-origin"] == "*"
        assert streamed.headers["access-control-expose-headers"] == EXPOSED
        events = list(sse.iter_events(streamed.iter_bytes()))
    assert events[-1].data == "[DONE]"

    refused = httpx.get(facade.url + "/v1/models", headers={"Origin": PAGE})
    assert refused.status_code == 401  # the page may read why
    assert refused.headers["access-control-allow-origin"] == "*"
    assert "access-control-allow-credentials" not in cors_headers(refused)


def test_listed_origins_are_echoed_and_others_get_no_cors(
    make_facade: Callable[..., Facade],
) -> None:
    facade = make_facade(FACADE_CORS_ORIGINS=f"{PAGE}, http://localhost:3000")
    allowed = preflight(facade, "/v1/chat/completions", origin="http://localhost:3000")
    assert allowed.status_code == 204
    assert allowed.headers["access-control-allow-origin"] == "http://localhost:3000"
    assert "Origin" in allowed.headers["vary"]
    models = httpx.get(facade.url + "/v1/models", headers={**facade.user.headers, "Origin": PAGE})
    assert models.headers["access-control-allow-origin"] == PAGE
    assert models.headers["access-control-expose-headers"] == EXPOSED
    assert "Origin" in models.headers["vary"]

    other = "https://evil.example.net"
    assert cors_headers(preflight(facade, "/v1/chat/completions", origin=other)) == {}
    answer = httpx.get(facade.url + "/v1/models", headers={**facade.user.headers, "Origin": other})
    assert answer.status_code == 200
    assert cors_headers(answer) == {}


def test_the_cookie_routes_under_api_v1_stay_same_origin(facade: Facade) -> None:
    answer = preflight(facade, "/api/v1/sessions")
    assert cors_headers(answer) == {}
    listed = httpx.get(
        facade.url + "/api/v1/sessions", headers={**facade.user.headers, "Origin": PAGE}
    )
    assert listed.status_code == 200
    assert cors_headers(listed) == {}


# -- errors ----------------------------------------------------------------------------------


def test_unknown_routes_and_wrong_methods_under_v1_are_openai_errors(facade: Facade) -> None:
    headers = facade.user.headers
    unknown = httpx.post(facade.url + "/v1/embeddings", headers=headers, json={})
    assert unknown.status_code == 404
    error = error_of(unknown)
    assert error["code"] == "unknown_url"
    assert "/v1/embeddings" in error["message"]
    with pytest.raises(openai.NotFoundError) as raised:
        facade.client().embeddings.create(model="default", input="hi")
    assert raised.value.code == "unknown_url"

    wrong = httpx.get(facade.url + "/v1/chat/completions", headers=headers)
    assert wrong.status_code == 405
    assert error_of(wrong)["code"] == "method_not_allowed"
    assert "POST" in wrong.headers["allow"]
    assert "use POST" in error_of(wrong)["message"]

    # /api/v1 keeps Eonyx's own shape
    eonyx = httpx.get(facade.url + "/api/v1/nothing-here", headers=headers)
    assert eonyx.status_code == 404
    assert set(eonyx.json()["error"]) <= {"code", "message", "details"}


def test_a_body_that_is_not_json_or_not_sent_as_json_is_a_clear_error(facade: Facade) -> None:
    url = facade.url + "/v1/chat/completions"
    json_type = {**facade.user.headers, "Content-Type": "application/json"}
    broken = httpx.post(url, headers=json_type, content=b'{"model": "default", "messages": [')
    assert broken.status_code == 400
    error = error_of(broken)
    assert error["code"] == "invalid_json"
    assert "not valid JSON" in error["message"]
    assert error["type"] == "invalid_request_error"

    as_text = {**facade.user.headers, "Content-Type": "text/plain"}
    body = b'{"model": "default", "messages": [{"role": "user", "content": "hi"}]}'
    text_body = httpx.post(url, headers=as_text, content=body)
    assert text_body.status_code == 415
    error = error_of(text_body)
    assert error["code"] == "unsupported_media_type"
    assert "application/json" in error["message"]
    empty = httpx.post(url, headers=json_type, content=b"")
    assert empty.status_code == 400
    assert "needs a JSON body" in error_of(empty)["message"]
    assert facade.sessions() == []


def test_schema_errors_name_the_parameter(facade: Facade) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        facade.client().chat.completions.create(model="default", messages="hi")  # type: ignore[arg-type]
    assert raised.value.code == "invalid_request"
    assert raised.value.param == "messages"
    assert "messages: not a valid list" in raised.value.message.lower()
    missing = httpx.post(
        facade.url + "/v1/chat/completions", headers=facade.user.headers, json={"model": "x"}
    )
    assert missing.status_code == 400
    assert error_of(missing)["param"] == "messages"


def test_a_model_is_retrieved_by_id(facade: Facade) -> None:
    client = facade.client()
    model = client.models.retrieve("default")
    assert (model.id, model.object, model.owned_by) == ("default", "model", "eonyx")
    assert isinstance(model.created, int)
    assert model.model_dump() == next(m for m in client.models.list()).model_dump()
    with pytest.raises(openai.NotFoundError) as raised:
        client.models.retrieve("gpt-imaginary")
    assert raised.value.code == "model_not_found"
    assert raised.value.param is None
    with pytest.raises(openai.AuthenticationError):
        facade.client(api_key="eyx_wrong").models.retrieve("default")


# -- input Python cannot hold ----------------------------------------------------------------

ENDPOINTS = ("/v1/chat/completions", "/v1/responses")
# Raw JSON text, so that escapes such as \ud800 reach the server as a client would send them.
REFUSED_BODIES: dict[str, tuple[str, str | None, str]] = {
    # name: (body with MESSAGES for the list of messages or input items, param, code)
    "model with a lone surrogate": ('{"model": "\\ud800x", MESSAGES}', "model", "invalid_request"),
    "model with NUL": ('{"model": "def\\u0000ault", MESSAGES}', "model", "invalid_request"),
    "content with a lone surrogate": (
        '{"model": "default", "KEY": [{"role": "user", "content": "half \\udc00"}]}',
        "KEY[0]",
        "invalid_text",
    ),
    "a 4301-digit integer": (
        '{"model": "default", "temperature": ' + "1" * 4301 + ", MESSAGES}",
        None,
        "invalid_json",
    ),
    "deep JSON": (
        '{"model": "default", MESSAGES, "x": ' + "[" * 5000 + "]" * 5000 + "}",
        None,
        "invalid_json",
    ),
}


@pytest.mark.parametrize("path", ENDPOINTS)
@pytest.mark.parametrize("case", list(REFUSED_BODIES), ids=list(REFUSED_BODIES))
def test_text_and_numbers_python_cannot_hold_are_400_in_openai_shape(
    facade: Facade, path: str, case: str
) -> None:
    key = "messages" if path.endswith("completions") else "input"
    template, param, code = REFUSED_BODIES[case]
    messages = f'"{key}": [{{"role": "user", "content": "hi"}}]'
    body = template.replace("MESSAGES", messages).replace("KEY", key)
    headers = {**facade.user.headers, "Content-Type": "application/json"}
    response = httpx.post(facade.url + path, headers=headers, content=body.encode())
    assert response.status_code == 400, response.text
    error = error_of(response)
    assert (error["code"], error["param"]) == (code, param and param.replace("KEY", key)), error
    assert error["type"] == "invalid_request_error"
    assert facade.sessions() == []
    assert facade.llm.completions == []


def test_deeply_nested_tool_arguments_in_a_history_are_text_not_a_500(facade: Facade) -> None:
    """A tool call's arguments are a string the model wrote: read as JSON to recognise a
    resent history, and compared as they are when they cannot be read (too deep here)."""
    deep = "[" * 5000 + "]" * 5000
    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": deep}}
    history = [
        user("Call f."),
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "done"},
    ]
    answer, session_id = facade.create(history)
    assert answer == "The tool said: done"  # what the fake model answers a tool result
    again, same = facade.create([*history, {"role": "assistant", "content": answer}, user("ok")])
    assert (again, same) == ("ok", session_id)
    [asked] = [m for m in facade.llm.completions[0].messages if m.get("tool_calls")]
    assert asked["tool_calls"][0]["function"]["arguments"] == deep
