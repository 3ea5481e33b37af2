"""GET and PATCH /api/v1/settings: an administrator changes the behaviour switches while the
deployment runs (the environment gives the defaults), and the next request follows them,
in this app and in another one on the same database and Redis; identity edits apply to the
next prompt without a restart."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from shared.core.job_names import EXTRACT_MEMORY
from tests.api.conftest import API, Chat, RecordingJobs
from tests.conftest import Account, create_account
from tests.fake_llm import text

URL = f"{API}/settings"
ENVIRONMENT_DEFAULTS = {
    "session_title_mode": None,
    "user_profile_enabled": True,
    "user_memory_extraction": False,
    "user_memory_extraction_every_n_turns": 4,
    "agent_memory_enabled": True,
}


def admin_of(chat: Chat) -> Account:
    return create_account(chat.rt, "boss", admin=True)


def read(chat: Chat, who: Account) -> dict[str, Any]:
    response = chat.client.get(URL, headers=who.headers)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def patch(chat: Chat, who: Account, **body: Any) -> Any:
    return chat.client.patch(URL, json=body, headers=who.headers)


def new_session_pending(chat: Chat) -> bool:
    """Whether a new session's first message leaves it waiting for a model-made title
    (session_title_mode llm; the title job is recorded, never run)."""
    if not isinstance(chat.rt.jobs, RecordingJobs):
        chat.rt.jobs = RecordingJobs()
    made = chat.client.post(
        f"{API}/sessions/turns", json={"content": "Plan a trip"}, headers=chat.user.headers
    )
    assert made.status_code == 201, made.get_json()
    session_id = made.get_json()["session_id"]
    got = chat.client.get(f"{API}/sessions/{session_id}", headers=chat.user.headers)
    return got.get_json()["title_pending"]


def test_each_switch_shows_its_value_and_the_environment_as_its_source(
    make_chat: Callable[..., Chat],
) -> None:
    chat = make_chat(SESSION_TITLE_MODE="sequential", USER_MEMORY_EXTRACTION_EVERY_N_TURNS="6")
    shown = read(chat, admin_of(chat))
    expected = ENVIRONMENT_DEFAULTS | {
        "session_title_mode": "sequential",
        "user_memory_extraction_every_n_turns": 6,
    }
    assert shown == {
        name: {"value": value, "source": "environment", "environment": value}
        for name, value in expected.items()
    }


def test_an_admin_sets_switches_and_null_puts_one_back_to_the_environment(chat: Chat) -> None:
    admin = admin_of(chat)
    assert new_session_pending(chat) is False  # titles by the first words, from the environment

    changed = patch(chat, admin, session_title_mode="llm", user_memory_extraction=True)
    assert changed.status_code == 200, changed.get_json()
    body = changed.get_json()
    assert body["session_title_mode"] == {"value": "llm", "source": "admin", "environment": None}
    assert body["user_memory_extraction"] == {
        "value": True,
        "source": "admin",
        "environment": False,
    }
    assert body["agent_memory_enabled"]["source"] == "environment"
    assert read(chat, admin) == body
    assert new_session_pending(chat) is True  # the next session waits for a model's title

    reset = patch(chat, admin, session_title_mode=None).get_json()
    assert reset["session_title_mode"] == {
        "value": None,
        "source": "environment",
        "environment": None,
    }
    assert reset["user_memory_extraction"]["source"] == "admin"  # untouched
    assert new_session_pending(chat) is False


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"session_title_mode": "fancy"}, "session_title_mode", "one of truncate, llm"),
        (
            {"user_memory_extraction_every_n_turns": 0},
            "user_memory_extraction_every_n_turns",
            "from 1",
        ),
        (
            {"user_memory_extraction_every_n_turns": "4"},
            "user_memory_extraction_every_n_turns",
            "integer",
        ),
        ({"user_profile_enabled": "yes"}, "user_profile_enabled", "boolean"),
        ({"agent_memory_enabled": 1}, "agent_memory_enabled", "boolean"),
        ({"fetch_image_urls": True}, "fetch_image_urls", "unknown field"),
    ],
)
def test_an_invalid_value_is_422_naming_the_field_and_changes_nothing(
    chat: Chat, body: dict[str, Any], field: str, message: str
) -> None:
    admin = admin_of(chat)
    before = read(chat, admin)
    refused = chat.client.patch(
        URL, json={"agent_memory_enabled": False, **body}, headers=admin.headers
    )
    assert refused.status_code == 422
    said = refused.get_json()["error"]["message"]
    assert f"{field}: " in said
    assert message in said
    assert read(chat, admin) == before


def test_users_read_the_switches_and_only_admins_change_them(chat: Chat) -> None:
    shown = read(chat, chat.user)
    assert shown["user_memory_extraction"]["value"] is False
    refused = patch(chat, chat.user, user_memory_extraction=True)
    assert refused.status_code == 403
    assert read(chat, chat.user) == shown
    assert chat.client.get(URL).status_code == 401


def test_switching_the_user_profile_off_takes_its_tool_and_prompt_part_away_at_once(
    chat: Chat,
) -> None:
    admin = admin_of(chat)
    chat.client.put(
        f"{API}/memory/user",
        json={"content": "- prefers metric units\n"},
        headers=chat.user.headers,
    )

    def offered_and_prompt() -> tuple[list[str], str]:
        session_id = chat.new_session()
        chat.llm.clear()
        chat.llm.script(text("Noted."))
        assert chat.turn(session_id, content="How far is it?").status_code == 200
        request = chat.llm.requests[0]
        tools = [t["function"]["name"] for t in request.body.get("tools", [])]
        return tools, request.messages[0]["content"]

    tools, prompt = offered_and_prompt()
    assert "memory" in tools
    assert "prefers metric units" in prompt

    assert patch(chat, admin, user_profile_enabled=False).status_code == 200
    tools, prompt = offered_and_prompt()
    assert "memory" not in tools
    assert "manage_memory" in tools
    assert "prefers metric units" not in prompt


def test_memory_extraction_switched_on_sends_the_job_after_the_next_turn(
    make_chat: Callable[..., Chat],
) -> None:
    chat = make_chat()
    jobs = RecordingJobs()
    chat.rt.jobs = jobs
    admin = admin_of(chat)
    session_id = chat.new_session()
    chat.llm.script(text("Hello."), text("Hi again."))
    assert chat.turn(session_id, content="Hello").status_code == 200
    assert jobs.of(EXTRACT_MEMORY) == []  # off in the environment

    changed = patch(
        chat, admin, user_memory_extraction=True, user_memory_extraction_every_n_turns=2
    )
    assert changed.status_code == 200
    assert chat.turn(session_id, content="Hello again").status_code == 200
    assert jobs.of(EXTRACT_MEMORY) == [(chat.user.user_id, session_id, 2)]


def test_a_change_reaches_another_app_on_the_same_database_and_redis(
    make_chat: Callable[..., Chat], tmp_path: Path
) -> None:
    first = make_chat()
    # The second app: another process's view of the same deployment (its own runtime and
    # caches; the same database, Redis and data directory).
    second = make_chat(DATA_DIR=str(tmp_path / "data0"))
    admin = admin_of(first)
    assert new_session_pending(second) is False  # read, and kept, by the second app
    assert second.rt.live_settings.listener.wait_live(5)  # it hears changes: keeps for 30 s

    assert patch(first, admin, session_title_mode="llm").status_code == 200
    deadline = time.monotonic() + 5
    while not new_session_pending(second):  # heard over Redis within moments
        assert time.monotonic() < deadline, "the second app never saw the change"
        time.sleep(0.05)


def test_an_identity_edit_applies_to_the_next_new_chat_without_a_restart(chat: Chat) -> None:
    admin = admin_of(chat)
    before = chat.client.get(f"{API}/memory/identity", headers=admin.headers).get_json()
    session_id = chat.new_session()
    chat.llm.script(text("Hello."))
    chat.turn(session_id, content="Hi")
    assert chat.llm.requests[0].messages[0]["content"].startswith(before["content"].strip()[:40])

    edited = chat.client.put(
        f"{API}/memory/identity",
        json={"content": "You are Quill, a terse assistant for the ops team."},
        headers=admin.headers,
    )
    assert edited.status_code == 200
    chat.llm.clear()
    chat.llm.script(text("Hello."))
    assert chat.turn(chat.new_session(), content="Hi").status_code == 200
    prompt = chat.llm.requests[0].messages[0]["content"]
    assert prompt.startswith("You are Quill, a terse assistant for the ops team.")
