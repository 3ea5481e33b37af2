"""Regenerate and edit-and-resend (issue 42): the conversation follows the current branch,
the session file keeps every branch, and the model is sent the current branch only."""

from __future__ import annotations

import base64
import io
from collections.abc import Callable
from typing import Any

import pytest
from PIL import Image

from shared.core import sse
from shared.core.encoding import decode_json
from shared.llm.tools import Tool
from tests.api.conftest import API, Chat
from tests.conftest import create_account
from tests.fake_llm import tool_call, tool_calls


def turn(chat: Chat, session_id: str, stream: bool, **body: Any) -> dict[str, Any]:
    """A turn's result, JSON or streamed (the `done` event carries the same)."""
    response = chat.turn(session_id, stream=stream, **body)
    assert response.status_code == 200, response.get_data(as_text=True)
    if not stream:
        return response.get_json()
    assert response.mimetype == "text/event-stream"
    events = [(e.name, e.json()) for e in sse.iter_events([response.get_data()])]
    assert events[-1][0] == "done", events
    return events[-1][1]


def file_records(chat: Chat, session_id: str) -> list[dict[str, Any]]:
    lines = chat.rt.store.path(chat.user.user_id, session_id).read_bytes().splitlines()
    return [decode_json(line) for line in lines if line.strip()]


def file_messages(chat: Chat, session_id: str) -> list[tuple[str, Any]]:
    records = file_records(chat, session_id)
    return [(r["role"], r["content"]) for r in records if r.get("type") == "message"]


def sent(chat: Chat) -> list[tuple[str, Any]]:
    """What the model was sent in the last turn, without the system prompt."""
    return [(m["role"], m.get("content")) for m in chat.llm.completions[-1].messages[1:]]


def talk(chat: Chat, *exchanges: tuple[str, str]) -> str:
    session_id = chat.new_session()
    for question, answer in exchanges:
        chat.llm.script(answer)
        assert chat.turn(session_id, content=question).status_code == 200
    return session_id


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_regenerate_replaces_the_answer_and_the_file_keeps_both(chat: Chat, stream: bool) -> None:
    session_id = talk(chat, ("Name a colour", "Red."), ("Another one", "Green."))
    chat.llm.script("Blue.")

    body = turn(chat, session_id, stream, regenerate=True)

    assert body["assistant_message"]["content"] == "Blue."
    assert body["user_message"]["content"] == "Another one"
    assert chat.transcript(session_id) == [
        ("user", "Name a colour"),
        ("assistant", "Red."),
        ("user", "Another one"),
        ("assistant", "Blue."),
    ]
    assert sent(chat) == [
        ("user", "Name a colour"),
        ("assistant", "Red."),
        ("user", "Another one"),
    ]
    assert ("assistant", "Green.") in file_messages(chat, session_id)
    supersedes = [r for r in file_records(chat, session_id) if r["type"] == "supersede"]
    assert len(supersedes) == 1
    item = chat.client.get(f"{API}/sessions/{session_id}", headers=chat.user.headers)
    assert item.get_json()["message_count"] == 4


def test_regenerate_supersedes_the_old_answers_tool_steps(chat: Chat) -> None:
    tool = Tool("clock", "Tell the time", {"type": "object"}, lambda context, args: "12:00")
    chat.rt.tools.register(tool)
    session_id = chat.new_session()
    chat.llm.script(tool_calls(tool_call("clock", {})), "It is noon.")
    chat.turn(session_id, content="What time is it?")
    chat.llm.script("Noon, by the clock.")

    body = turn(chat, session_id, False, regenerate=True)

    assert body["assistant_message"]["content"] == "Noon, by the clock."
    assert chat.transcript(session_id) == [
        ("user", "What time is it?"),
        ("assistant", "Noon, by the clock."),
    ]
    assert sent(chat) == [("user", "What time is it?")]
    assert ("tool", "12:00") in file_messages(chat, session_id)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_edit_replaces_the_message_and_all_after_it(chat: Chat, stream: bool) -> None:
    session_id = talk(
        chat, ("I live in Oslo", "Nice city."), ("I like skiing", "Great."), ("And tea", "Good.")
    )
    edited = [m for m in _items(chat, session_id) if m["content"] == "I like skiing"][0]
    chat.llm.script("Hiking is fine too.")

    body = turn(chat, session_id, stream, content="I like hiking", edit=edited["id"])

    assert body["user_message"]["content"] == "I like hiking"
    assert body["assistant_message"]["content"] == "Hiking is fine too."
    current = [
        ("user", "I live in Oslo"),
        ("assistant", "Nice city."),
        ("user", "I like hiking"),
        ("assistant", "Hiking is fine too."),
    ]
    assert chat.transcript(session_id) == current
    assert sent(chat) == current[:3]
    kept = file_messages(chat, session_id)
    for earlier in [("user", "I like skiing"), ("assistant", "Great."), ("user", "And tea")]:
        assert earlier in kept
    supersedes = [r for r in file_records(chat, session_id) if r["type"] == "supersede"]
    assert len(supersedes) == 1
    assert supersedes[0]["ids"][0] == edited["id"]
    assert len(supersedes[0]["ids"]) == 4

    chat.llm.script("Noted.")
    chat.turn(session_id, content="Remember that")
    assert sent(chat) == [*current, ("user", "Remember that")]


def test_an_edited_message_keeps_its_images(chat: Chat) -> None:
    session_id = chat.new_session()
    png = io.BytesIO()
    Image.new("RGB", (20, 12), (10, 200, 30)).save(png, "PNG")
    url = "data:image/png;base64," + base64.b64encode(png.getvalue()).decode()
    question = [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": url}},
    ]
    chat.llm.script("A green square.")
    assert chat.turn(session_id, content=question).status_code == 200
    original = _items(chat, session_id)[0]
    assert len(original["images"]) == 1
    chat.llm.script("It is green.")

    body = turn(chat, session_id, False, content="What colour is this?", edit=original["id"])

    parts = chat.llm.completions[-1].messages[-1]["content"]
    assert [part["type"] for part in parts] == ["text", "image_url"]
    assert parts[0]["text"] == "What colour is this?"
    assert parts[1]["image_url"]["url"] == url
    assert body["user_message"]["images"] == original["images"]
    edited = _items(chat, session_id)[0]
    assert (edited["content"], edited["images"]) == ("What colour is this?", original["images"])
    image = chat.client.get(
        f"{API}/sessions/{session_id}/images/{edited['images'][0]}", headers=chat.user.headers
    )
    assert image.status_code == 200
    assert image.data == png.getvalue()
    item = chat.client.get(f"{API}/sessions/{session_id}", headers=chat.user.headers)
    assert item.get_json()["image_count"] == 1


def test_an_export_a_fork_and_the_search_follow_the_current_branch(chat: Chat) -> None:
    session_id = talk(chat, ("Tell me about zebras", "Striped."), ("And pandas", "Bamboo."))
    first = _items(chat, session_id)[0]
    chat.llm.script("Giraffes are tall.")
    turn(chat, session_id, False, content="Tell me about giraffes", edit=first["id"])
    headers = chat.user.headers

    markdown = chat.client.get(
        f"{API}/sessions/{session_id}/export?format=markdown", headers=headers
    ).get_data(as_text=True)
    conversation = markdown.split("\n", 1)[1]  # after the title (the first message's)
    assert "Tell me about giraffes" in conversation
    assert "Giraffes are tall." in conversation
    assert "zebras" not in conversation
    assert "pandas" not in conversation

    fork = chat.client.post(f"{API}/sessions/{session_id}/fork", json={}, headers=headers)
    assert fork.status_code == 201, fork.get_json()
    assert chat.transcript(fork.get_json()["id"]) == chat.transcript(session_id)

    def found(word: str) -> list[str]:
        page = chat.client.get(f"{API}/sessions?q={word}", headers=headers).get_json()
        return [item["id"] for item in page["items"]]

    assert session_id in found("giraffes")
    assert session_id not in found("pandas")


def test_another_users_session_answers_404(make_chat: Callable[..., Chat]) -> None:
    chat = make_chat()
    session_id = talk(chat, ("Secret plans", "Kept."))
    message_id = _items(chat, session_id)[0]["id"]
    stranger = create_account(chat.rt, "stranger")
    url = f"{API}/sessions/{session_id}/turns"
    for body in ({"regenerate": True}, {"content": "Mine now", "edit": message_id}):
        response = chat.client.post(url, json=body, headers=stranger.headers)
        assert response.status_code == 404, response.get_json()
    assert chat.transcript(session_id) == [("user", "Secret plans"), ("assistant", "Kept.")]


def test_bad_edits_and_regenerates_are_refused_and_change_nothing(chat: Chat) -> None:
    session_id = talk(chat, ("Hello", "Hi there."))
    answer = _items(chat, session_id)[1]
    before = file_records(chat, session_id)

    unknown = chat.turn(session_id, content="x", edit="0123456789abcdef")
    assert unknown.status_code == 404
    assert unknown.get_json()["error"]["code"] == "message_not_found"
    not_user = chat.turn(session_id, content="x", edit=answer["id"])
    assert not_user.status_code == 400
    assert "user message" in not_user.get_json()["error"]["message"]
    with_content = chat.turn(session_id, content="x", regenerate=True)
    assert with_content.status_code == 400
    assert "no content" in with_content.get_json()["error"]["message"]
    no_text = chat.turn(session_id, edit=_items(chat, session_id)[0]["id"])
    assert no_text.status_code == 400

    empty = chat.new_session()
    nothing = chat.turn(empty, regenerate=True)
    assert nothing.status_code == 400
    assert nothing.get_json()["error"]["code"] == "nothing_to_regenerate"
    assert file_records(chat, session_id) == before
    assert len(chat.llm.completions) == 1


def test_a_superseded_message_cannot_be_edited(chat: Chat) -> None:
    session_id = talk(chat, ("First", "One."))
    first = _items(chat, session_id)[0]
    chat.llm.script("Two.")
    turn(chat, session_id, False, content="First, again", edit=first["id"])

    again = chat.turn(session_id, content="Third try", edit=first["id"])

    assert again.status_code == 404


def _items(chat: Chat, session_id: str) -> list[dict[str, Any]]:
    response = chat.client.get(f"{API}/sessions/{session_id}/messages", headers=chat.user.headers)
    return response.get_json()["items"]


def test_the_api_docs_describe_regenerate_and_edit(chat: Chat) -> None:
    document = chat.client.get(f"{API}/openapi.json").get_json()
    fields = document["components"]["schemas"]["Turn"]["properties"]
    assert fields["regenerate"]["type"] == "boolean"
    assert "replaces the old one" in fields["regenerate"]["description"]
    assert fields["edit"]["type"] == "string"
    assert "everything after it" in fields["edit"]["description"]
    first = document["components"]["schemas"]["FirstTurn"]["properties"]
    assert "regenerate" not in first
    assert "edit" not in first
