"""Run-time switches in Chromium: Model settings shows each task role with whether its feature
is on, and an administrator turns one on there (the next chat follows, no restart); the
Preferences tab says why USER.md stays empty when profile extraction is off."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.web.conftest import Browsing, Server, poll, running_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Titles by the first words and the profile not learned, as the environment's defaults."""
    with running_server(
        tmp_path_factory.mktemp("web-switches"),
        SESSION_TITLE_MODE="truncate",
        USER_PROFILE_ENABLED="true",
    ) as running:
        yield running


def open_settings(page: Page) -> Locator:
    page.get_by_role("button", name="Model settings").click()
    panel = page.get_by_role("dialog", name="Model settings")
    expect(panel.get_by_role("heading", name="Task model assignments")).to_be_visible()
    return panel


def switch(panel: Locator, role: str) -> Locator:
    return panel.locator(f'[data-switch="{role}"]')


def setting(account: dict[str, Any], name: str) -> dict[str, Any]:
    response = account["http"].get("/settings")
    assert response.status_code == 200, response.text
    return response.json()[name]


def test_model_settings_shows_a_role_whose_feature_is_off_and_an_admin_turns_it_on(
    web: Browsing, server: Server, shots: Path
) -> None:
    admin = server.user(admin=True)
    page = web.open(admin)
    panel = open_settings(page)
    titles = switch(panel, "session_title")
    expect(titles).to_have_attribute("data-on", "false")
    expect(titles).to_contain_text("Off: new chats are titled by their first words, not by a model")
    expect(switch(panel, "user_memory_extraction")).to_contain_text(
        "the user profile is not learned from chats"
    )
    expect(switch(panel, "agent_memory_curation")).to_have_attribute("data-on", "true")
    expect(switch(panel, "chat")).to_have_count(0)  # always used: nothing to switch
    titles.scroll_into_view_if_needed()
    page.screenshot(path=shots / "runtime-settings-role-off.png")

    titles.get_by_role("button", name="Turn on session_title").click()
    expect(titles).to_have_attribute("data-on", "true")
    expect(titles).to_contain_text("On")
    page.screenshot(path=shots / "runtime-settings-role-on.png")
    assert setting(admin, "session_title_mode") == {
        "value": "llm",
        "source": "admin",
        "environment": "truncate",
    }

    # The next chat follows, without a restart: the model titles it, not its first words.
    made = admin["http"].post("/sessions/turns", json={"content": "Plan a trip"})
    assert made.status_code == 201, made.text
    path = f"/sessions/{made.json()['session_id']}"
    named = poll(
        lambda: (item := admin["http"].get(path).json())["title_pending"] is False and item,
        "the model's title",
    )
    assert named["title"] != "Plan a trip"

    # A reload still shows it on: the server keeps it, not the page.
    page.reload()
    panel = open_settings(page)
    expect(switch(panel, "session_title")).to_have_attribute("data-on", "true")
    admin["http"].patch("/settings", json={"session_title_mode": None})  # back as it was


def test_preferences_say_profile_extraction_is_off_and_an_admin_turns_it_on_there(
    web: Browsing, server: Server, shots: Path
) -> None:
    user = server.user()
    page = web.open(user)
    page.get_by_role("button", name="Agent memory").click()
    panel = page.get_by_role("dialog", name="Agent memory")
    note = panel.get_by_role("note")
    expect(note).to_contain_text("Profile extraction is off")
    expect(note).to_contain_text("Ask your administrator to turn it on.")
    expect(note.get_by_role("button")).to_have_count(0)
    page.screenshot(path=shots / "runtime-settings-preferences-user.png")

    admin = server.user(admin=True)
    page = web.open(admin)
    page.get_by_role("button", name="Agent memory").click()
    panel = page.get_by_role("dialog", name="Agent memory")
    note = panel.get_by_role("note")
    note.get_by_role("button", name="Turn profile extraction on").click()
    expect(panel.get_by_role("note")).to_have_count(0)
    poll(lambda: setting(admin, "user_memory_extraction")["value"] is True, "extraction on")
    admin["http"].patch("/settings", json={"user_memory_extraction": None})
