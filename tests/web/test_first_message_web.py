"""A new chat in the browser is made by its first accepted message: one POST
/api/v1/sessions/turns whose first event names the session (the page then goes to it), never an
empty session made first and removed when the message is refused."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from playwright.sync_api import Request, expect

from tests.fake_llm import text
from tests.web.conftest import Browsing, Server


def test_a_first_message_makes_its_chat_in_one_request_named_by_the_first_event(
    web: Browsing, server: Server, user: dict[str, Any], shots: Path
) -> None:
    answer = text("Made and answered.", chunk_size=4, chunk_delay=0.05)
    server.model.answers["first-marker"] = answer
    page = web.open(user)
    posted: list[str] = []
    page.on("request", lambda r: posted.append(r.url) if _is_post(r) else None)
    page.get_by_label("Message").fill("first-marker: hello")
    page.get_by_role("button", name="Send").click()

    expect(page).to_have_url(re.compile(r"/c/[0-9]{8}T[0-9]{6}-[0-9a-f]{8}$"))
    expect(page.locator(".chat-list .row")).to_have_count(1)
    expect(page.locator(".message.from-assistant").last).to_have_text("Made and answered.")
    page.screenshot(path=shots / "first-message.png")
    session_id = page.url.rsplit("/", 1)[1]
    turns = [url for url in posted if "/api/v1/sessions" in url]
    assert [url.split("/api/v1")[1] for url in turns] == ["/sessions/turns"]

    page.reload()
    expect(page.locator(".message.from-user")).to_have_text("first-marker: hello")
    expect(page.locator(f'.chat-list .row[data-session="{session_id}"]')).to_have_count(1)


def test_a_refused_first_message_leaves_no_chat_even_after_a_reload(
    web: Browsing, user: dict[str, Any]
) -> None:
    page = web.open(user)
    page.get_by_label("Message").fill(("tea party " * 1500).strip())  # past the window
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".turn-error")).to_contain_text("Not sent:")
    expect(page).to_have_url(re.compile(r"/$"))
    expect(page.locator(".chat-list .row")).to_have_count(0)
    page.reload()
    page.get_by_label("Message").wait_for()
    expect(page.locator(".chat-list .row")).to_have_count(0)
    assert page.request.get("/api/v1/sessions?trash=true").json()["items"] == []
    assert page.request.get("/api/v1/sessions").json()["items"] == []


def test_a_temporary_first_message_makes_a_temporary_chat(
    web: Browsing, user: dict[str, Any]
) -> None:
    page = web.open(user)
    page.get_by_role("button", name="Temporary chat").click()
    page.get_by_label("Message").fill("a passing thought")
    page.get_by_role("button", name="Send").click()
    expect(page).to_have_url(re.compile(r"/c/"))
    expect(page.locator(".message.from-assistant")).to_have_count(1)
    session_id = page.url.rsplit("/", 1)[1]
    assert page.request.get(f"/api/v1/sessions/{session_id}").json()["temporary"] is True


def _is_post(request: Request) -> bool:
    return request.method == "POST"
