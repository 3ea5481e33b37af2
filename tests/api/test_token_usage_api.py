"""Model tokens per user (issue 38, item 4): every model call made for a user is counted in
`token_usage` per month, offering and role, from the model's own `usage` (an estimate when it
gives none), shown in GET /me/usage and to administrators in GET /admin/usage; a monthly
budget answers 429 `budget_exceeded` until the first of next month, on every route that
calls a model, and background jobs of a user past it do without."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
import openai
import pytest

from shared.core import sse
from shared.core.job_names import SESSION_TITLE
from shared.memory.curation import curate_exchange
from shared.memory.extraction import extract_user_profile, extracted_turns
from shared.sessions import title_job
from tests.api.conftest import API, Chat, Facade, RecordingJobs
from tests.conftest import Account, create_account
from tests.fake_llm import text

USED = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}


def tokens(chat: Chat, user: Account | None = None) -> dict[str, Any]:
    response = chat.client.get(f"{API}/me/usage", headers=(user or chat.user).headers)
    assert response.status_code == 200, response.get_json()
    return response.get_json()["tokens"]


def lines(figures: dict[str, Any]) -> dict[tuple[str, str], tuple[int, int, int]]:
    return {
        (line["offering"], line["role"]): (
            line["calls"],
            line["prompt_tokens"],
            line["completion_tokens"],
        )
        for line in figures["by_offering"]
    }


def next_month_start() -> str:
    now = datetime.now(UTC)
    year, month = (now.year + 1, 1) if now.month == 12 else (now.year, now.month + 1)
    return f"{year:04d}-{month:02d}-01T00:00:00Z"


def test_turns_plain_and_streamed_count_the_models_figures_for_their_user(chat: Chat) -> None:
    session_id = chat.new_session()
    chat.llm.script(text("Fine.", usage=USED))
    assert chat.turn(session_id, content="How are you?").status_code == 200
    chat.llm.script(text("Streamed, and counted.", usage=USED))
    streamed = chat.turn(session_id, content="And streamed?", stream=True)
    assert [e.name for e in sse.iter_events([streamed.get_data()])][-1] == "done"
    # a stream asks the model for its figures, whatever its client asked
    assert chat.llm.requests[-1].body["stream_options"] == {"include_usage": True}

    mine = tokens(chat)
    assert mine["month"] == datetime.now(UTC).strftime("%Y-%m")
    assert lines(mine) == {("default", "chat"): (2, 200, 40)}
    assert (mine["calls"], mine["prompt_tokens"], mine["completion_tokens"]) == (2, 200, 40)
    assert mine["total_tokens"] == 240
    assert mine["budget"] == {
        "limit": None,
        "used": 240,
        "remaining": None,
        "resets_at": next_month_start(),
    }
    # another user used nothing
    other = create_account(chat.rt, "other")
    assert tokens(chat, other)["by_offering"] == []
    assert tokens(chat, other)["total_tokens"] == 0


def test_a_model_that_gives_no_figures_is_counted_with_the_estimate(chat: Chat) -> None:
    answer = "An answer of forty-four characters, exactly."
    chat.llm.script(text(answer, usage={}))
    assert chat.turn(chat.new_session(), content="Count me").status_code == 200
    [(calls, prompt, completion)] = lines(tokens(chat)).values()
    assert calls == 1
    assert completion == math.ceil(len(answer) / 4)
    assert prompt > len("Count me") // 4  # the system prompt and the message, ~4 chars a token


def test_a_title_job_is_charged_to_the_user_it_serves(make_chat: Callable[..., Chat]) -> None:
    chat = make_chat(SESSION_TITLE_MODE="llm")
    chat.rt.jobs = RecordingJobs()
    session_id = chat.new_session()
    chat.llm.script(text("Start with the Luxembourg gardens.", usage=USED))
    assert chat.turn(session_id, content="A week in Paris?").status_code == 200
    chat.llm.script(
        text("Paris week", usage={"prompt_tokens": 30, "completion_tokens": 3, "total_tokens": 33})
    )
    assert title_job.generate_title(chat.rt, chat.user.user_id, session_id)["written"] is True
    assert lines(tokens(chat)) == {
        ("default", "chat"): (1, 100, 20),
        ("default", "session_title"): (1, 30, 3),
    }


def test_the_facades_completions_and_responses_count_for_the_keys_user(facade: Facade) -> None:
    client = facade.client()
    facade.llm.script(text("One.", usage=USED))
    client.chat.completions.create(model="default", messages=[{"role": "user", "content": "1"}])
    facade.llm.script(text("Two.", usage=USED))
    list(
        client.chat.completions.create(
            model="default", messages=[{"role": "user", "content": "2"}], stream=True
        )
    )
    facade.llm.script(text("Three.", usage=USED))
    client.responses.create(model="default", input="3")
    facade.llm.script(text("Four.", usage=USED))
    list(client.responses.create(model="default", input="4", stream=True))
    mine = httpx.get(facade.url + f"{API}/me/usage", headers=facade.user.headers).json()
    assert lines(mine["tokens"]) == {("default", "chat"): (4, 400, 80)}


@pytest.fixture
def budgeted(make_chat: Callable[..., Chat]) -> Chat:
    chat = make_chat(MONTHLY_TOKEN_BUDGET="200")
    chat.rt.jobs = RecordingJobs()
    return chat


def test_a_user_at_their_budget_gets_429_until_next_month_and_others_go_on(
    budgeted: Chat,
) -> None:
    chat = budgeted
    session_id = chat.new_session()
    for _ in range(2):  # 120 tokens, then 240: the turn that passes the budget finishes
        chat.llm.script(text("Sure.", usage=USED))
        assert chat.turn(session_id, content="Go on").status_code == 200
    asked = len(chat.llm.requests)

    refused = chat.turn(session_id, content="And again")
    assert refused.status_code == 429
    error = refused.get_json()["error"]
    assert error["code"] == "budget_exceeded"
    assert error["details"] == {
        "limit": 200,
        "used": 240,
        "remaining": 0,
        "resets_at": next_month_start(),
    }
    assert "240 of 200" in error["message"]
    assert int(refused.headers["Retry-After"]) > 0
    streamed = chat.turn(session_id, content="Streamed?", stream=True)
    assert streamed.status_code == 429
    assert streamed.get_json()["error"]["code"] == "budget_exceeded"
    assert len(chat.llm.requests) == asked  # the model was not asked
    assert [m[1] for m in chat.transcript(session_id)].count("And again") == 0  # nor saved

    other = create_account(chat.rt, "other")
    started = chat.client.post(f"{API}/sessions", json={}, headers=other.headers).get_json()
    chat.llm.script(text("Hello, other.", usage=USED))
    answered = chat.client.post(
        f"{API}/sessions/{started['id']}/turns", json={"content": "Hi"}, headers=other.headers
    )
    assert answered.status_code == 200
    assert tokens(chat, other)["budget"]["remaining"] == 80


def test_an_admin_sets_a_users_own_budget(budgeted: Chat) -> None:
    chat = budgeted
    root = create_account(chat.rt, "root", admin=True)
    session_id = chat.new_session()
    chat.llm.script(text("Sure.", usage=USED))
    assert chat.turn(session_id, content="Go on").status_code == 200

    def set_budget(value: int | None) -> dict[str, Any]:
        response = chat.client.patch(
            f"{API}/users/{chat.user.user_id}",
            json={"monthly_token_budget": value},
            headers=root.headers,
        )
        assert response.status_code == 200, response.get_json()
        return response.get_json()

    assert set_budget(100)["monthly_token_budget"] == 100
    assert chat.turn(session_id, content="More").status_code == 429
    assert set_budget(0)["monthly_token_budget"] == 0  # no budget for this user
    chat.llm.script(text("Sure.", usage=USED))
    assert chat.turn(session_id, content="More").status_code == 200
    assert tokens(chat)["budget"]["limit"] is None
    assert set_budget(None)["monthly_token_budget"] is None  # the deployment's 200 again
    assert tokens(chat)["budget"]["limit"] == 200
    assert chat.turn(session_id, content="More").status_code == 429
    refused = chat.client.patch(
        f"{API}/users/{chat.user.user_id}",
        json={"monthly_token_budget": -1},
        headers=root.headers,
    )
    assert refused.status_code == 422


def test_the_facade_refuses_an_over_budget_user_in_openais_shape(
    make_facade: Callable[..., Facade],
) -> None:
    facade = make_facade(MONTHLY_TOKEN_BUDGET="100")
    client = facade.client()
    facade.llm.script(text("Spent.", usage=USED))
    client.chat.completions.create(model="default", messages=[{"role": "user", "content": "1"}])
    for call in (
        lambda: client.chat.completions.create(
            model="default", messages=[{"role": "user", "content": "2"}]
        ),
        lambda: client.chat.completions.create(
            model="default", messages=[{"role": "user", "content": "3"}], stream=True
        ),
        lambda: client.responses.create(model="default", input="4"),
    ):
        with pytest.raises(openai.RateLimitError) as refused:
            call()
        assert refused.value.code == "budget_exceeded"
        body = refused.value.body
        assert isinstance(body, dict)
        assert body["details"]["resets_at"] == next_month_start()
        assert body["details"]["used"] == 120
    assert len(facade.llm.requests) == 1


def test_background_jobs_of_a_user_past_their_budget_spend_nothing(
    make_chat: Callable[..., Chat],
) -> None:
    chat = make_chat(SESSION_TITLE_MODE="llm", MONTHLY_TOKEN_BUDGET="100")
    chat.rt.jobs = jobs = RecordingJobs()
    session_id = chat.new_session()
    chat.llm.script(text("Start with the Luxembourg gardens.", usage=USED))
    assert chat.turn(session_id, content="A week in Paris?").status_code == 200
    assert jobs.of(SESSION_TITLE) == [(chat.user.user_id, session_id)]
    asked = len(chat.llm.requests)

    outcome = title_job.generate_title(chat.rt, chat.user.user_id, session_id)
    assert outcome["written"] is True  # the truncated title is kept, pending ends
    assert "budget" in outcome["reason"]
    item = chat.client.get(f"{API}/sessions/{session_id}", headers=chat.user.headers).get_json()
    assert (item["title"], item["title_pending"]) == ("A week in Paris?", False)

    items = chat.client.get(
        f"{API}/sessions/{session_id}/messages", headers=chat.user.headers
    ).get_json()["items"]
    answer = items[-1]["id"]
    liked = chat.client.post(
        f"{API}/sessions/{session_id}/messages/{answer}/like", headers=chat.user.headers
    )
    assert liked.status_code == 202, liked.get_json()
    pair_id = liked.get_json()["pair_id"]
    outcome_of_like = curate_exchange(chat.rt, chat.user.user_id, session_id, pair_id)
    assert outcome_of_like.status == "failed"
    assert "budget" in outcome_of_like.detail
    assert len(chat.llm.requests) == asked  # nothing was asked of the model
    assert lines(tokens(chat)) == {("default", "chat"): (1, 100, 20)}


def test_admins_list_every_users_tokens_by_month(chat: Chat) -> None:
    root = create_account(chat.rt, "root", admin=True)
    chat.llm.script(text("Counted.", usage=USED))
    assert chat.turn(chat.new_session(), content="Hi").status_code == 200

    listed = chat.client.get(f"{API}/admin/usage", headers=root.headers)
    assert listed.status_code == 200, listed.get_json()
    body = listed.get_json()
    assert body["month"] == datetime.now(UTC).strftime("%Y-%m")
    by_name = {user["username"]: user for user in body["users"]}
    assert set(by_name) == {chat.user.username, "root"}
    mine = by_name[chat.user.username]
    assert (mine["user_id"], mine["total_tokens"], mine["calls"]) == (chat.user.user_id, 120, 1)
    assert mine["by_offering"] == [
        {
            "offering": "default",
            "role": "chat",
            "calls": 1,
            "prompt_tokens": 100,
            "completion_tokens": 20,
            "total_tokens": 120,
        }
    ]
    assert mine["budget"]["limit"] is None
    assert mine["monthly_token_budget"] is None
    assert by_name["root"]["total_tokens"] == 0

    past = chat.client.get(f"{API}/admin/usage?month=2001-02", headers=root.headers).get_json()
    assert past["month"] == "2001-02"
    assert {u["username"]: u["total_tokens"] for u in past["users"]} == {
        chat.user.username: 0,
        "root": 0,
    }
    assert past["users"][0]["budget"]["resets_at"] == "2001-03-01T00:00:00Z"
    for month in ("2001-13", "0000-01", "9999-12"):  # no such month; no month after it
        bad = chat.client.get(f"{API}/admin/usage?month={month}", headers=root.headers)
        assert bad.status_code == 422, month

    refused = chat.client.get(f"{API}/admin/usage", headers=chat.user.headers)
    assert refused.status_code == 403
    assert chat.client.get(f"{API}/admin/usage").status_code == 401


def test_memory_extraction_of_a_user_past_their_budget_waits(
    make_chat: Callable[..., Chat],
) -> None:
    chat = make_chat(MONTHLY_TOKEN_BUDGET="100", USER_MEMORY_EXTRACTION="true")
    chat.rt.jobs = RecordingJobs()
    session_id = chat.new_session()
    chat.llm.script(text("Noted.", usage=USED))
    assert chat.turn(session_id, content="I prefer short answers.").status_code == 200
    asked = len(chat.llm.requests)
    outcome = extract_user_profile(chat.rt, chat.user.user_id, session_id, 1)
    assert outcome.status == "failed"  # not done: the marker stays, and the sweep sends it again
    assert "budget" in outcome.detail
    assert outcome.marker == 0
    state, _ = chat.rt.store.load(chat.user.user_id, session_id)
    assert not extracted_turns(state)
    assert len(chat.llm.requests) == asked
