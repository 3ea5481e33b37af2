"""Budgets per person (issue 38): the rate limits count per user over all of their keys and
sign-ins, every view that can call a model spends a turn, and a user holds a bounded number
of API keys. The probe's sequences, against the app; the model is tests/fake_llm.py."""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from flask import Flask
from openai import RateLimitError
from sqlalchemy import func, select

from api.ratelimit import TURN_MARK
from shared.accounts import people
from shared.db.orm import ApiToken
from tests.api.conftest import API, Chat, Facade
from tests.conftest import Account, create_account

MESSAGES: Any = [{"role": "user", "content": "Hi"}]


def _new_key(chat: Chat, who: Account, name: str = "script") -> Any:
    return chat.client.post(f"{API}/tokens", json={"name": name}, headers=who.headers)


def test_responses_after_chat_completions_is_refused_once_the_turns_are_spent(
    make_facade: Callable[..., Facade],
) -> None:
    """The probe: chat completions got 200, 200, 200, 429 at 3 turns a minute, and then
    `POST /v1/responses` on the same key got 200 five times. Each is a model call."""
    facade = make_facade(RATE_LIMIT_TURNS_PER_MINUTE="3")
    client = facade.client()
    for _ in range(3):
        client.chat.completions.create(model="default", messages=MESSAGES)
    with pytest.raises(RateLimitError):
        client.chat.completions.create(model="default", messages=MESSAGES)
    with pytest.raises(RateLimitError) as refused:
        client.responses.create(model="default", input="Hi")
    assert refused.value.status_code == 429
    assert int(refused.value.response.headers["Retry-After"]) >= 1
    assert "your account" in refused.value.message
    asked = len(facade.llm.completions)
    assert asked == 3  # the refused calls never reached the model

    # Responses spend the budget themselves, and a second key of the same user shares it;
    # another user is not touched.
    other = create_account(facade.rt, "second", api=True)
    with facade.rt.db.session() as db:
        who = people.Principal(other.user_id, other.username, False, "web", "")
        _, second_key = people.create_api_key(db, who, "laptop")
    first, second = facade.client(other.token), facade.client(second_key)
    first.responses.create(model="default", input="one")
    second.responses.create(model="default", input="two")
    first.chat.completions.create(model="default", messages=MESSAGES)
    with pytest.raises(RateLimitError):
        second.responses.create(model="default", input="four")
    with pytest.raises(RateLimitError):
        first.chat.completions.create(model="default", messages=MESSAGES)
    assert len(facade.llm.completions) == asked + 3


def test_a_users_keys_and_sign_ins_share_one_request_budget(make_chat: Callable[..., Chat]) -> None:
    """The probe: key 1 got 429 after its budget, and a freshly minted key then made 20 of
    20 more. Now every token of a user spends the same budget; another user, and requests
    without a valid token (counted per address), have their own."""
    chat = make_chat(RATE_LIMIT_REQUESTS_PER_MINUTE="5")
    me = chat.user
    made = _new_key(chat, me)  # 1
    assert made.status_code == 201
    fresh = Account(me.user_id, me.username, made.get_json()["token"])
    listed = [chat.client.get(f"{API}/sessions", headers=who.headers) for who in (me, me, fresh)]
    assert [r.status_code for r in listed] == [200, 200, 200]  # 2, 3, 4
    signed_in = chat.client.post(
        f"{API}/auth/login", json={"username": me.username, "password": "correct horse"}
    )  # a sign-in is a request without a token: the address's budget, not the user's
    assert signed_in.status_code == 200
    login = Account(me.user_id, me.username, signed_in.get_json()["token"])
    assert chat.client.get(f"{API}/sessions", headers=login.headers).status_code == 200  # 5
    for who in (fresh, me, login):
        refused = chat.client.get(f"{API}/sessions", headers=who.headers)
        assert refused.status_code == 429
        error = refused.get_json()["error"]
        assert error["code"] == "rate_limited"
        assert "your account" in error["message"]
        assert 1 <= int(refused.headers["Retry-After"]) <= 60
    # minting yet another key does not help: it is refused for the same budget
    assert _new_key(chat, me).status_code == 429

    other = create_account(chat.rt, "other")
    assert chat.client.get(f"{API}/sessions", headers=other.headers).status_code == 200
    # requests without a valid token from the same address count for the address alone
    assert chat.client.get(f"{API}/auth/session").status_code != 429
    # and another address's anonymous requests are not the first one's
    elsewhere = {"REMOTE_ADDR": "192.0.2.7"}
    anonymous = [
        chat.client.get(f"{API}/sessions", environ_base=elsewhere).status_code for _ in range(6)
    ]
    assert anonymous == [401] * 5 + [429]
    assert chat.client.get(f"{API}/sessions").status_code == 401  # 127.0.0.1: its own budget


def test_a_users_turns_are_counted_across_keys_on_every_turn_route(
    make_facade: Callable[..., Facade],
) -> None:
    facade = make_facade(RATE_LIMIT_TURNS_PER_MINUTE="2")
    me = facade.user
    api = httpx.Client(base_url=facade.url + API, headers=me.headers)
    session_id = api.post("/sessions", json={}).json()["id"]
    assert api.post(f"/sessions/{session_id}/turns", json={"content": "1"}).status_code == 200
    made = api.post("/tokens", json={"name": "laptop"})
    assert made.status_code == 201
    laptop = facade.client(made.json()["token"])
    laptop.responses.create(model="default", input="2")
    with pytest.raises(RateLimitError):
        laptop.chat.completions.create(model="default", messages=MESSAGES)
    retried = api.post(f"/sessions/{session_id}/turns", json={"retry": True})
    assert retried.status_code == 429
    assert retried.json()["error"]["code"] == "rate_limited"
    assert len(facade.llm.completions) == 2
    api.close()


def test_a_user_holds_at_most_api_keys_per_user_keys(make_chat: Callable[..., Chat]) -> None:
    """The probe minted 200 keys in a row. The default cap is 50 live API keys; a login
    token or a sign-in is not a key, a revoked key no longer counts."""
    chat = make_chat()
    assert chat.rt.settings.api_keys_per_user == 50
    me = chat.user  # signed in with a login token, which is not a key
    made = [_new_key(chat, me, f"key {n}") for n in range(50)]
    assert {r.status_code for r in made} == {201}
    refused = _new_key(chat, me, "one too many")
    assert refused.status_code == 409
    error = refused.get_json()["error"]
    assert error["code"] == "too_many_api_keys"
    assert "revoke" in error["message"]
    assert "/api/v1/tokens" in error["message"]
    # scoped keys are keys too
    scoped = chat.client.post(
        f"{API}/tokens", json={"name": "reader", "scopes": ["memory:read"]}, headers=me.headers
    )
    assert scoped.status_code == 409
    # signing in again still works: sign-ins are not keys
    again = chat.client.post(
        f"{API}/auth/login", json={"username": me.username, "password": "correct horse"}
    )
    assert again.status_code == 200
    # revoking one makes room for one
    gone = made[0].get_json()["id"]
    assert chat.client.delete(f"{API}/tokens/{gone}", headers=me.headers).status_code == 204
    assert _new_key(chat, me, "in its place").status_code == 201
    assert _new_key(chat, me, "and another").status_code == 409
    # another user has their own count
    other = create_account(chat.rt, "other")
    assert _new_key(chat, other).status_code == 201


def test_the_cap_follows_the_setting(make_chat: Callable[..., Chat]) -> None:
    chat = make_chat(API_KEYS_PER_USER="2")
    assert [_new_key(chat, chat.user).status_code for _ in range(3)] == [201, 201, 409]


def test_a_login_deletes_the_users_ended_tokens(make_chat: Callable[..., Chat]) -> None:
    """Each login makes a token (LOGIN_TOKEN_TTL_HOURS, 30 days): the expired and revoked
    ones no longer pile up as rows; the live ones, another user's included, stay."""
    chat = make_chat()
    me, other = chat.user, create_account(chat.rt, "other")
    with chat.rt.db.session() as db:
        made = [people.login(db, me.username, "correct horse", timedelta(hours=1)) for _ in "abc"]
        made.append(people.login(db, other.username, "correct horse", timedelta(hours=1)))
        for row, _ in made:  # all four expired since
            row.expires_at = datetime.now(UTC) - timedelta(seconds=1)
    revoked = _new_key(chat, me).get_json()["id"]
    assert chat.client.delete(f"{API}/tokens/{revoked}", headers=me.headers).status_code == 204
    kept = _new_key(chat, me).get_json()["id"]

    def rows(user_id: str) -> int:
        with chat.rt.db.session() as db:
            query = select(func.count()).select_from(ApiToken).where(ApiToken.user_id == user_id)
            return int(db.scalar(query) or 0)

    assert (rows(me.user_id), rows(other.user_id)) == (6, 2)
    login = {"username": me.username, "password": "correct horse"}
    assert chat.client.post(f"{API}/auth/login", json=login).status_code == 200
    assert (rows(me.user_id), rows(other.user_id)) == (3, 2)  # the first login, the key, this
    listed = chat.client.get(f"{API}/tokens", headers=me.headers).get_json()
    assert kept in {t["id"] for t in listed}
    assert chat.client.get(f"{API}/sessions", headers=me.headers).status_code == 200


# --- every view that can call a model declares itself a turn ------------------------------

OURS = ("api", "shared")
# Views the walk below finds a path to the model from, which never take it: GET .../context
# measures the context with `summarize=False` (shared.chat.context.describe_context).
NEVER_CALL_A_MODEL = {("turns.Context", "GET")}


def _ours(thing: Any) -> bool:
    module = getattr(thing, "__module__", None) or getattr(thing, "__name__", "")
    return str(module).split(".")[0] in OURS


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def _calls_the_model_client(code: types.CodeType) -> bool:
    """Code that calls `<runtime>.llm.complete(...)` or `.llm.stream(...)`: the model client
    (shared.llm.client), which every model call goes through."""
    return any(
        "llm" in c.co_names and {"complete", "stream"} & set(c.co_names) for c in _codes(code)
    )


def _path_to_the_model(function: Any, seen: set[Any]) -> list[str] | None:
    """A chain of our functions from `function` to one that calls the model client, found
    from the names their code uses (functions, our modules' functions of those names, our
    classes' methods): it overshoots, never misses a direct call through our code."""
    function = inspect.unwrap(function)
    if not isinstance(function, types.FunctionType) or function in seen or not _ours(function):
        return None
    seen.add(function)
    here = f"{function.__module__}.{function.__qualname__}"
    if _calls_the_model_client(function.__code__):
        return [here]
    names = {name for code in _codes(function.__code__) for name in code.co_names}
    for name in names:
        found = function.__globals__.get(name)
        if isinstance(found, types.ModuleType) and _ours(found):
            nexts = [getattr(found, n, None) for n in names]
        elif isinstance(found, type) and _ours(found):
            nexts = list(vars(found).values())
        else:
            nexts = [found]
        for following in nexts:
            path = _path_to_the_model(following, seen)
            if path:
                return [here, *path]
    return None


def _views(app: Flask) -> Iterator[tuple[str, str, Any]]:
    for rule in app.url_map.iter_rules():
        view = app.view_functions[rule.endpoint]
        view_class = getattr(view, "view_class", None)
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            handler = getattr(view_class, method.lower(), None) if view_class else view
            if handler is not None:
                yield rule.endpoint, method, handler


def test_every_view_that_can_call_a_model_counts_as_a_turn(app: Flask) -> None:
    reaching = {}
    for endpoint, method, handler in _views(app):
        path = _path_to_the_model(handler, set())
        if path:
            reaching[endpoint, method] = (handler, path)
    # the walk finds the known ones (it would find nothing if it were broken)
    known = {
        ("turns.Turns", "POST"),
        ("openai.ChatCompletions", "POST"),
        ("openai.Responses", "POST"),
    }
    assert known <= set(reaching)
    undeclared = [
        f"{method} {endpoint}: {' -> '.join(path)}"
        for (endpoint, method), (handler, path) in sorted(reaching.items())
        if not getattr(handler, TURN_MARK, False) and (endpoint, method) not in NEVER_CALL_A_MODEL
    ]
    assert not undeclared, "views that can call a model without @counts_as_turn:\n" + "\n".join(
        undeclared
    )
    # an exception that no longer applies goes (a view that is a turn is not one)
    assert set(reaching) >= NEVER_CALL_A_MODEL
    assert not any(getattr(reaching[v][0], TURN_MARK, False) for v in NEVER_CALL_A_MODEL)
