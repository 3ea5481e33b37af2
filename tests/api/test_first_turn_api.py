"""POST /api/v1/sessions/turns: a session made by its first accepted message.

Every check of the turn runs before the session exists, so a refused first message leaves
nothing behind (no session listed, none on disk); an accepted one makes the session and
names it in the answer (`session_id`, or a first `session` event when streamed)."""

from __future__ import annotations

import base64
import io
from collections.abc import Callable
from typing import Any

import pytest
from PIL import Image

from tests.api.conftest import API, Chat
from tests.api.test_turns_api import sse_events
from tests.fake_llm import error, text

FIRST = f"{API}/sessions/turns"


def listed(chat: Chat) -> list[dict[str, Any]]:
    response = chat.client.get(f"{API}/sessions", headers=chat.user.headers)
    assert response.status_code == 200
    return list(response.get_json()["items"])


def on_disk(chat: Chat) -> list[str]:
    folder = chat.rt.store.sessions_dir(chat.user.user_id)
    return sorted(path.name for path in folder.glob("*.jsonl")) if folder.is_dir() else []


def png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (4, 4), (200, 10, 10)).save(out, format="PNG")
    return out.getvalue()


def test_a_first_message_makes_its_session_and_the_answer_names_it(chat: Chat) -> None:
    chat.llm.script(text("Hello, Ada."))
    response = chat.client.post(FIRST, json={"content": "Hi, I am Ada"}, headers=chat.user.headers)
    assert response.status_code == 201, response.get_json()
    body = response.get_json()
    session_id = body["session_id"]
    assert response.headers["Location"] == f"{API}/sessions/{session_id}"
    assert body["assistant_message"]["content"] == "Hello, Ada."
    assert chat.transcript(session_id) == [("user", "Hi, I am Ada"), ("assistant", "Hello, Ada.")]
    assert [(s["id"], s["title"], s["message_count"]) for s in listed(chat)] == [
        (session_id, "Hi, I am Ada", 2)
    ]
    # The model saw a new session: the system prompt and the one message.
    assert chat.llm.requests[-1].messages[1:] == [{"role": "user", "content": "Hi, I am Ada"}]


def test_a_streamed_first_message_names_its_session_in_the_first_event(chat: Chat) -> None:
    chat.llm.script(text("Streaming works fine."))
    response = chat.client.post(
        FIRST, json={"content": "stream please", "stream": True}, headers=chat.user.headers
    )
    assert response.status_code == 200
    assert response.mimetype == "text/event-stream"
    events = sse_events(response)
    name, made = events[0]
    assert name == "session"
    session_id = made["session_id"]
    assert response.headers["Location"] == f"{API}/sessions/{session_id}"
    assert "".join(d["text"] for n, d in events if n == "token") == "Streaming works fine."
    assert events[-1][0] == "done"
    assert events[-1][1]["session_id"] == session_id
    assert chat.transcript(session_id) == [
        ("user", "stream please"),
        ("assistant", "Streaming works fine."),
    ]


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"content": "   "}, 422, "invalid_request"),
        ({"content": "word " * 2_000}, 413, "message_too_long"),
        ({"content": "hi", "offering": "no-such-model"}, 404, "model_not_found"),
        ({"content": "hi", "folder_id": "nope"}, 404, "folder_not_found"),
        ({"content": "hi", "retry": True}, 422, "invalid_request"),
        ({"content": "hi", "stream": True, "cwd": "/etc", "project_context": []}, 400, None),
    ],
    ids=["empty", "too-long", "unknown-offering", "unknown-folder", "retry", "cwd-and-context"],
)
def test_a_refused_first_message_leaves_no_session(
    make_chat: Callable[..., Chat], body: dict[str, Any], status: int, code: str | None
) -> None:
    chat = make_chat(EONYX_LLM_CONTEXT_WINDOW="2000")
    chat.llm.script(text("never asked"))
    response = chat.client.post(FIRST, json=body, headers=chat.user.headers)
    assert response.status_code == status, response.get_json()
    assert response.mimetype == "application/json"  # a plain error, even when streamed
    if code:
        assert response.get_json()["error"]["code"] == code
    assert listed(chat) == []
    assert on_disk(chat) == []
    assert chat.llm.requests == []


def test_a_first_message_over_the_budget_leaves_no_session(make_chat: Callable[..., Chat]) -> None:
    chat = make_chat(MONTHLY_TOKEN_BUDGET="1")
    chat.llm.script(text("This answer spends the budget."))
    assert (
        chat.client.post(FIRST, json={"content": "hi"}, headers=chat.user.headers).status_code
        == 201
    )
    response = chat.client.post(FIRST, json={"content": "again"}, headers=chat.user.headers)
    assert (response.status_code, response.get_json()["error"]["code"]) == (429, "budget_exceeded")
    assert len(listed(chat)) == 1


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_a_model_failure_keeps_the_new_session_and_names_it_for_a_retry(
    chat: Chat, stream: bool
) -> None:
    chat.llm.script(error(500, "down"), error(500, "still down"))
    response = chat.client.post(
        FIRST, json={"content": "Are you there?", "stream": stream}, headers=chat.user.headers
    )
    assert response.status_code == 502
    session_id = response.get_json()["error"]["details"]["session_id"]
    assert chat.transcript(session_id) == [("user", "Are you there?")]

    chat.llm.script(text("Here now."))
    retried = chat.turn(session_id, retry=True)
    assert retried.status_code == 200, retried.get_json()
    assert chat.transcript(session_id) == [("user", "Are you there?"), ("assistant", "Here now.")]
    assert [s["id"] for s in listed(chat)] == [session_id]


def test_the_new_session_takes_its_fields_and_an_image_as_a_form(chat: Chat) -> None:
    folder = chat.client.post(f"{API}/folders", json={"name": "Trips"}, headers=chat.user.headers)
    folder_id = folder.get_json()["id"]
    chat.llm.script(text("A red square."))
    response = chat.client.post(
        FIRST,
        data={
            "content": "What is this?",
            "title": "Colours",
            "folder_id": folder_id,
            "images": (io.BytesIO(png()), "square.png"),
        },
        headers=chat.user.headers,
        content_type="multipart/form-data",
    )
    assert response.status_code == 201, response.get_json()
    session_id = response.get_json()["session_id"]
    item = chat.client.get(f"{API}/sessions/{session_id}", headers=chat.user.headers).get_json()
    assert (item["title"], item["folder_id"], item["title_pending"]) == (
        "Colours",
        folder_id,
        False,
    )
    sent = chat.llm.requests[-1].messages[-1]["content"]
    assert [part["type"] for part in sent] == ["text", "image_url"]
    assert sent[1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert base64.b64decode(sent[1]["image_url"]["url"].split(",", 1)[1]) == png()


def test_a_temporary_first_message_makes_a_temporary_session(chat: Chat) -> None:
    chat.llm.script(text("Noted, off the record."))
    response = chat.client.post(
        FIRST, json={"content": "Just between us", "temporary": True}, headers=chat.user.headers
    )
    assert response.status_code == 201, response.get_json()
    session_id = response.get_json()["session_id"]
    item = chat.client.get(f"{API}/sessions/{session_id}", headers=chat.user.headers).get_json()
    assert item["temporary"] is True
