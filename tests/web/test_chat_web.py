"""The chat in the browser: sign-in, a streamed and rendered answer, titles that resolve
(pushed, failed, stopped, polled without the socket), retry, images, likes, and model or
user text that cannot run script."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect

from tests.fake_llm import error, text
from tests.web.conftest import Browsing, Server, poll

# A 2x2 red PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGP8z8DAwMDAxMDAwMDAAAANHQEDasKb6QAAAABJRU5ErkJggg=="
)


def send(page: Page, message: str) -> None:
    page.get_by_label("Message").fill(message)
    page.get_by_role("button", name="Send").click()


def row(page: Page, title: str | re.Pattern[str]) -> Any:
    return page.locator(".chat-list .row").filter(has=page.locator(".title-text", has_text=title))


def test_a_wrong_password_says_so_and_the_right_one_signs_in_and_out(
    web: Browsing, user: dict[str, Any], shots: Path
) -> None:
    page = web.context().new_page()
    page.goto("/")
    page.get_by_label("Username").fill(user["username"])
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_have_text("Wrong username or password.")
    page.screenshot(path=shots / "signin-wrong-password.png")

    page.get_by_label("Password").fill(user["password"])
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator(".sidebar-footer .who")).to_have_text(user["username"])
    page.reload()  # the cookie keeps the session
    expect(page.locator(".sidebar-footer .who")).to_have_text(user["username"])

    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    page.reload()
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()


def test_an_answer_streams_in_and_renders_as_highlighted_markdown(
    web: Browsing, server: Server, user: dict[str, Any], shots: Path
) -> None:
    answer = "Here is **bold** text and code:\n\n```python\ndef greet():\n    return 'hi'\n```\n"
    server.model.answers["stream-marker"] = text(answer, chunk_size=3, chunk_delay=0.05)
    page = web.open(user)
    send(page, "stream-marker: show me some code")
    streaming = page.locator(".message.streaming")
    expect(streaming).to_be_visible()  # tokens on screen before the answer is whole
    expect(page.get_by_role("button", name="Stop")).to_be_visible()
    final = page.locator(".message.from-assistant").last
    expect(final.locator("strong")).to_have_text("bold")
    expect(final.locator("pre code.hljs .hljs-keyword").first).to_have_text("def")
    expect(streaming).to_have_count(0)
    expect(page.get_by_role("button", name="Send")).to_be_visible()
    expect(page.locator(".gauge")).to_have_text(re.compile(r"^\{ctx \d+%\}$"))
    page.screenshot(path=shots / "chat.png")
    assert page.errors == []  # type: ignore[attr-defined]


def test_the_new_chat_is_listed_at_once_with_a_spinner_then_its_title_is_pushed(
    web: Browsing, server: Server, user: dict[str, Any]
) -> None:
    server.model.answers["paris-marker"] = text("Start with the Luxembourg garden.", chunk_delay=0.2)
    server.model.titles["paris-marker"] = text("Paris with kids", delay=1.0)
    page = web.open(user)
    expect(page.locator(".chat-list .row")).to_have_count(0)
    send(page, "paris-marker: plan a week in Paris")
    first = page.locator(".chat-list .row").first
    expect(first).to_have_class(re.compile(r"\bpending\b"))
    expect(first.get_by_role("status", name="Generating the title")).to_be_visible()
    expect(first.locator(".title-text")).to_have_text("Paris with kids", timeout=20_000)
    expect(first).not_to_have_class(re.compile(r"\bpending\b"))
    expect(page.locator(".chat-title")).to_have_text("Paris with kids")


def test_a_failing_title_model_ends_the_spinner_with_the_simple_title(
    web: Browsing, server: Server, user: dict[str, Any]
) -> None:
    server.model.titles["broken-title"] = error(500, "the title model is down")
    page = web.open(user)
    send(page, "broken-title: what is a monad")
    first = page.locator(".chat-list .row").first
    expect(first.locator(".title-text")).to_have_text("broken-title: what is a monad", timeout=20_000)
    expect(first).not_to_have_class(re.compile(r"\bpending\b"))


def test_without_the_socket_the_list_is_polled_until_the_title_comes(
    web: Browsing, server: Server, user: dict[str, Any]
) -> None:
    server.model.titles["polled-marker"] = text("Polled title", delay=0.5)
    context = web.context()
    attempts: list[str] = []

    def refuse(ws: Any) -> None:
        attempts.append(ws.url)
        ws.close()

    context.route_web_socket(re.compile(r"/api/v1/events"), refuse)
    page = web.open(user, context)
    send(page, "polled-marker: hello")
    first = page.locator(".chat-list .row").first
    expect(first.locator(".title-text")).to_have_text("Polled title", timeout=20_000)
    expect(first).not_to_have_class(re.compile(r"\bpending\b"))
    assert attempts, "the page never tried the events socket"


def test_a_stopped_first_answer_ends_the_spinner_and_can_be_retried(
    web: Browsing, server: Server, user: dict[str, Any]
) -> None:
    server.model.answers["stop-marker"] = text("word " * 400, chunk_size=5, chunk_delay=0.05)
    page = web.open(user)
    send(page, "stop-marker: talk for a long time")
    expect(page.locator(".message.streaming .markdown")).to_contain_text("word")
    page.get_by_role("button", name="Stop").click()
    expect(page.get_by_text("Stopped.")).to_be_visible()
    first = page.locator(".chat-list .row").first
    expect(first).not_to_have_class(re.compile(r"\bpending\b"), timeout=20_000)
    expect(first.locator(".title-text")).to_have_text("stop-marker: talk for a long time")


def test_a_failed_answer_shows_the_servers_reason_and_retry_answers(
    web: Browsing, server: Server, user: dict[str, Any]
) -> None:
    server.model.answers["retry-marker"] = error(500, "the model fell over")
    page = web.open(user)
    send(page, "retry-marker: answer me")
    failure = page.locator(".turn-error")
    expect(failure).to_contain_text("The answer failed")
    expect(failure).to_contain_text(re.compile(r"500|fell over|model", re.I))
    first = page.locator(".chat-list .row").first
    expect(first).not_to_have_class(re.compile(r"\bpending\b"), timeout=20_000)

    server.model.answers["retry-marker"] = text("Second time lucky.")
    failure.get_by_role("button", name="Retry").click()
    expect(page.locator(".message.from-assistant").last).to_have_text("Second time lucky.")
    expect(page.locator(".turn-error")).to_have_count(0)
    expect(page.locator(".message.from-user")).to_have_count(1)


def test_an_image_attached_by_the_picker_is_sent_and_shown_inline(
    web: Browsing, user: dict[str, Any], tmp_path: Path
) -> None:
    picture = tmp_path / "red.png"
    picture.write_bytes(PNG)
    page = web.open(user)
    page.get_by_label("Images to attach").set_input_files(str(picture))
    expect(page.get_by_alt_text("To send: red.png")).to_be_visible()
    send(page, "What color is this?")
    shown = page.locator(".message.from-user .images img").first
    expect(shown).to_have_attribute("src", re.compile(r"^/api/v1/sessions/.+/images/"))
    poll(lambda: shown.evaluate("img => img.complete && img.naturalWidth === 2"), "the image to load")
    page.reload()
    reloaded = page.locator(".message.from-user .images img").first
    poll(lambda: reloaded.evaluate("img => img.complete && img.naturalWidth === 2"), "the image after reload")


def test_a_like_shows_its_status_and_is_still_there_after_a_reload(
    web: Browsing, user: dict[str, Any]
) -> None:
    page = web.open(user)
    send(page, "Remember that I deploy with Ansible.")
    answer = page.locator(".message.from-assistant").last
    expect(answer).to_have_text("Remember that I deploy with Ansible.")
    answer.get_by_role("button", name="Remember this turn").click()
    expect(answer.get_by_role("button", name="Remember this turn")).to_have_attribute("aria-pressed", "true")
    expect(answer.locator(".like-status")).to_have_text(re.compile(r"^(saving…|saved|failed)"))
    expect(answer.locator(".like-status")).to_have_text(re.compile(r"^(saved|failed)"), timeout=20_000)
    status = answer.locator(".like-status").inner_text()

    page.reload()
    again = page.locator(".message.from-assistant").last
    expect(again.get_by_role("button", name="Remember this turn")).to_have_attribute("aria-pressed", "true")
    expect(again.locator(".like-status")).to_have_text(status)
    user_message = page.locator(".message.from-user").last
    expect(user_message.get_by_role("button", name="Remember this turn")).to_have_attribute("aria-pressed", "true")


def test_html_and_javascript_links_in_messages_are_inert(web: Browsing, user: dict[str, Any]) -> None:
    page = web.open(user)
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    send(page, "<img src=x onerror=alert(1)> and [click me](javascript:alert(2))")
    answer = page.locator(".message.from-assistant").last
    expect(answer.get_by_text("click me")).to_be_visible()
    link = answer.get_by_text("click me")
    href = link.get_attribute("href")
    assert href is None or not href.lower().startswith("javascript"), href
    for image in answer.locator("img").all():
        assert image.get_attribute("onerror") is None
    link.click()
    user_text = page.locator(".message.from-user .user-text").last
    expect(user_text).to_have_text("<img src=x onerror=alert(1)> and [click me](javascript:alert(2))")
    assert page.evaluate("document.querySelectorAll('[onerror]').length") == 0
    assert dialogs == []
