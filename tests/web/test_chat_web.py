"""The chat in the browser: sign-in, a streamed and rendered answer, titles that resolve
(pushed, failed, stopped, polled without the socket), retry, images, likes, and model or
user text that cannot run script."""

from __future__ import annotations

import base64
import re
import time
from pathlib import Path
from typing import Any

from playwright.sync_api import APIResponse, Page, Route, expect

from tests.fake_llm import error, text, tool_call, tool_calls
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
    server.model.answers["paris-marker"] = text(
        "Start with the Luxembourg garden.", chunk_delay=0.2
    )
    server.model.titles["paris-marker"] = text("Paris with kids", delay=1.0)
    page = web.open(user)
    expect(page.locator(".shell")).to_have_attribute("data-live", "open")  # pushed, not polled
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
    expect(first.locator(".title-text")).to_have_text(
        "broken-title: what is a monad", timeout=20_000
    )
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
    expect(page.locator(".shell")).to_have_attribute("data-live", "down")
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
    poll(
        lambda: shown.evaluate("img => img.complete && img.naturalWidth === 2"), "the image to load"
    )
    page.reload()
    reloaded = page.locator(".message.from-user .images img").first
    poll(
        lambda: reloaded.evaluate("img => img.complete && img.naturalWidth === 2"),
        "the image after reload",
    )


# Before the page's scripts: every blob: URL the page makes, and those not revoked yet.
COUNT_BLOB_URLS = """
(() => {
  const made = new Set();
  const live = new Set();
  const create = URL.createObjectURL;
  const revoke = URL.revokeObjectURL;
  URL.createObjectURL = (object) => {
    const url = create.call(URL, object);
    made.add(url);
    live.add(url);
    return url;
  };
  URL.revokeObjectURL = (url) => {
    live.delete(url);
    return revoke.call(URL, url);
  };
  window.blobUrls = () => ({ made: made.size, live: [...live] });
})();
"""


def test_an_attached_image_has_one_preview_url_revoked_when_it_goes(
    web: Browsing, user: dict[str, Any], tmp_path: Path, shots: Path
) -> None:
    """The composer makes one blob: URL per attached image, not one per render (typing with an
    image attached made one a keystroke, never revoked), and revokes it when the image is
    removed, sent, or the composer goes."""
    picture = tmp_path / "red.png"
    picture.write_bytes(PNG)
    context = web.context()
    context.add_init_script(COUNT_BLOB_URLS)
    page = web.open(user, context)
    preview = page.get_by_alt_text("To send: red.png")
    message = page.get_by_label("Message")

    def attach() -> None:
        page.get_by_label("Images to attach").set_input_files(str(picture))
        expect(preview).to_be_visible()

    def urls() -> dict[str, Any]:
        return page.evaluate("window.blobUrls()")

    attach()
    message.press_sequentially("What color is this picture?")
    expect(message).to_have_value("What color is this picture?")
    assert urls() == {"made": 1, "live": [preview.get_attribute("src")]}
    page.screenshot(path=shots / "composer-attachment.png")

    page.get_by_role("button", name="Remove red.png").click()
    expect(preview).to_have_count(0)
    assert urls() == {"made": 1, "live": []}

    attach()  # and the composer goes: the trash takes the chat's place
    page.get_by_role("link", name="Trash").click()
    expect(page.get_by_role("heading", name="Trash")).to_be_visible()
    assert urls() == {"made": 2, "live": []}

    page.get_by_role("button", name="New chat").click()
    attach()
    attached = preview.get_attribute("src")
    message.press_sequentially("Once more")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".message.from-user .images img")).to_have_attribute(
        "src", re.compile(r"^/api/v1/sessions/.+/images/")
    )
    expect(preview).to_have_count(0)
    live = urls()["live"]
    assert attached not in live, "the composer's URL outlived the message it was sent with"
    assert len(live) <= 1, live  # at most the sent message's own copy, revoked after its turn


def test_a_like_shows_its_status_and_is_still_there_after_a_reload(
    web: Browsing, user: dict[str, Any]
) -> None:
    page = web.open(user)
    send(page, "Remember that I deploy with Ansible.")
    answer = page.locator(".message.from-assistant").last
    expect(answer).to_have_text("Remember that I deploy with Ansible.")
    answer.get_by_role("button", name="Remember this turn").click()
    expect(answer.get_by_role("button", name="Remember this turn")).to_have_attribute(
        "aria-pressed", "true"
    )
    expect(answer.locator(".like-status")).to_have_text(re.compile(r"^(saving…|saved|failed)"))
    expect(answer.locator(".like-status")).to_have_text(
        re.compile(r"^(saved|failed)"), timeout=20_000
    )
    status = answer.locator(".like-status").inner_text()

    page.reload()
    again = page.locator(".message.from-assistant").last
    expect(again.get_by_role("button", name="Remember this turn")).to_have_attribute(
        "aria-pressed", "true"
    )
    expect(again.locator(".like-status")).to_have_text(status)
    user_message = page.locator(".message.from-user").last
    expect(user_message.get_by_role("button", name="Remember this turn")).to_have_attribute(
        "aria-pressed", "true"
    )


def test_a_like_settled_while_the_page_reads_the_likes_is_not_undone_by_that_read(
    web: Browsing, server: Server, user: dict[str, Any]
) -> None:
    """After a like is sent, the page reads the likes once more (its job may already be
    done). When the job's event comes while that read is on its way, the read's older answer
    ("saving") must not bring the spinner back: with the socket open, nothing would end it."""
    marker = "settled-like-marker"
    # The answer, then (the curation request quotes the exchange) notes five seconds late.
    server.model.answers[marker] = [text("Noted."), text('{"operations": []}', delay=5.0)]
    page = web.open(user)
    send(page, f"The staging host is the blue one ({marker}).")
    answer = page.locator(".message.from-assistant").last
    expect(answer).to_have_text("Noted.")
    held: list[tuple[Route, APIResponse]] = []

    def hold(route: Route) -> None:
        if route.request.method != "GET":
            route.continue_()
            return
        held.append((route, route.fetch()))  # what the server says now, while the job waits

    page.route(re.compile(r"/api/v1/sessions/[^/]+/messages$"), hold)
    answer.get_by_role("button", name="Remember this turn").click()
    deadline = time.monotonic() + 15
    while not held and time.monotonic() < deadline:
        page.wait_for_timeout(50)  # route handlers run while the page is waited on
    assert held, "the page did not read the likes after sending the like"
    route, stale = held[0]
    assert stale.json()["items"][-1]["like"]["status"] == "saving"

    status = answer.locator(".like-status")
    expect(status).to_have_text(re.compile(r"^(saved|failed)"), timeout=20_000)  # the event
    route.fulfill(response=stale)
    page.wait_for_timeout(300)  # the read's answer arrives and is applied
    expect(status).to_have_text(re.compile(r"^(saved|failed)"), timeout=1_000)


def test_html_and_javascript_links_in_messages_are_inert(
    web: Browsing, user: dict[str, Any]
) -> None:
    page = web.open(user)
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    send(page, "<img src=x onerror=alert(1)> and [click me](javascript:alert(2))")
    answer = page.locator(".message.from-assistant").last
    expect(answer.get_by_text("click me")).to_be_visible()
    link = answer.get_by_text("click me")
    href = link.get_attribute("href")
    assert href is None or not href.lower().startswith("javascript"), href
    expect(answer).to_contain_text("<img src=x onerror=alert(1)>")  # shown as text
    expect(answer.locator("img")).to_have_count(0)
    link.click()
    user_text = page.locator(".message.from-user .user-text").last
    expect(user_text).to_have_text(
        "<img src=x onerror=alert(1)> and [click me](javascript:alert(2))"
    )
    assert page.evaluate("document.querySelectorAll('[onerror]').length") == 0
    assert dialogs == []


def test_tool_steps_fold_away_and_a_memory_write_shows_a_notice(
    web: Browsing, server: Server, user: dict[str, Any]
) -> None:
    server.model.answers["tool-marker"] = [
        tool_calls(
            tool_call("manage_memory", {"action": "add", "content": "Deploys with Ansible"})
        ),
        text("Noted: you deploy with Ansible."),
    ]
    page = web.open(user)
    send(page, "tool-marker: remember how I deploy")
    answer = page.locator(".message.from-assistant .bubble").last
    expect(answer).to_have_text("Noted: you deploy with Ansible.")
    step = page.locator("details.tool-step")
    expect(step).to_have_count(1)
    expect(step.locator("summary")).to_contain_text("Used manage_memory")
    expect(step.get_by_text("Deploys with Ansible").first).to_be_hidden()  # folded until opened
    step.locator("summary").click()
    expect(step.get_by_text("Deploys with Ansible").first).to_be_visible()
    expect(page.get_by_role("note")).to_contain_text("Memory updated")
    page.reload()
    expect(page.locator("details.tool-step summary")).to_contain_text("Used manage_memory")


def test_a_temporary_chat_is_not_listed(web: Browsing, user: dict[str, Any]) -> None:
    page = web.open(user)
    toggle = page.get_by_role("button", name="Temporary chat")
    toggle.click()
    expect(toggle).to_have_attribute("aria-pressed", "true")
    send(page, "Just between us")
    expect(page.locator(".message.from-assistant").last).to_have_text("Just between us")
    expect(page.locator(".chat-head .badge")).to_have_text("Temporary")
    expect(page.locator(".chat-list .row:not(.skeleton)")).to_have_count(0)
    assert user["http"].get("/sessions").json()["items"] == []


def test_the_context_gauge_is_highlighted_from_80_percent(
    web: Browsing, user: dict[str, Any]
) -> None:
    page = web.open(user)
    send(page, "short")
    gauge = page.locator(".gauge")
    expect(gauge).to_have_text(re.compile(r"^\{ctx \d+%\}$"))
    expect(gauge).not_to_have_class(re.compile(r"\bhot\b"))
    send(page, "many words " * 300)  # echoed back: most of the 2000-token window
    expect(gauge).to_have_class(re.compile(r"\bhot\b"))
    percent = int(re.findall(r"\d+", gauge.inner_text())[0])
    assert percent >= 80


DROP_OR_PASTE = """([kind, bytes]) => {
  const file = new File([new Uint8Array(bytes)], `${kind}.png`, {type: "image/png"});
  const data = new DataTransfer();
  data.items.add(file);
  const how = {bubbles: true, cancelable: true};
  if (kind === "pasted") {
    const area = document.querySelector("textarea");
    area.dispatchEvent(new ClipboardEvent("paste", {clipboardData: data, ...how}));
  } else {
    const form = document.querySelector("form.composer");
    form.dispatchEvent(new DragEvent("dragover", {dataTransfer: data, ...how}));
    form.dispatchEvent(new DragEvent("drop", {dataTransfer: data, ...how}));
  }
}"""


def test_images_can_be_pasted_or_dropped_into_the_composer(
    web: Browsing, user: dict[str, Any]
) -> None:
    page = web.open(user)
    page.evaluate(DROP_OR_PASTE, ["pasted", list(PNG)])
    page.evaluate(DROP_OR_PASTE, ["dropped", list(PNG)])
    expect(page.get_by_alt_text("To send: pasted.png")).to_be_visible()
    expect(page.get_by_alt_text("To send: dropped.png")).to_be_visible()
    page.get_by_role("button", name="Remove dropped.png").click()
    expect(page.get_by_alt_text("To send: dropped.png")).to_have_count(0)
    send(page, "One picture")
    shown = page.locator(".message.from-user .images img")
    expect(shown).to_have_count(1)
    expect(shown).to_have_attribute("src", re.compile(r"^/api/v1/sessions/.+/images/"))


def test_an_empty_first_answer_ends_the_spinner_with_the_simple_title(
    web: Browsing, server: Server, user: dict[str, Any]
) -> None:
    server.model.answers["empty-marker"] = text("")
    page = web.open(user)
    send(page, "empty-marker: say nothing")
    first = page.locator(".chat-list .row").first
    expect(first.locator(".title-text")).to_have_text("empty-marker: say nothing")
    expect(first).not_to_have_class(re.compile(r"\bpending\b"))
    expect(page.get_by_role("button", name="Send")).to_be_visible()


def test_a_refused_message_goes_back_into_the_box_and_ends_the_spinner(
    web: Browsing, user: dict[str, Any], shots: Path
) -> None:
    """Seen before: a too-long first message emptied the box, offered a Retry that could not
    work, and left the title spinning in the list and the header, even after a reload. A
    refused first message makes no chat (POST /sessions/turns): none is listed, ever."""
    page = web.open(user)
    too_long = ("tea party " * 1500).strip()  # 15,000 characters: past a 2,000-token window
    send(page, too_long)
    refusal = page.locator(".turn-error")
    expect(refusal).to_contain_text("Not sent:")
    expect(refusal).to_contain_text("context window")
    expect(refusal).to_contain_text("Your message is back in the box.")
    expect(refusal.get_by_role("button", name="Retry")).to_have_count(0)
    expect(page.get_by_label("Message")).to_have_value(too_long)
    expect(page.locator(".message.from-user")).to_have_count(0)
    expect(page.get_by_label("Generating the title")).to_have_count(0)
    expect(page.locator(".chat-list .row")).to_have_count(0)
    page.screenshot(path=shots / "refused.png")
    page.reload()
    page.get_by_label("Message").wait_for()
    expect(page.locator(".chat-list .row")).to_have_count(0)
    expect(page.get_by_label("Generating the title")).to_have_count(0)

    # Leaving it: no session was made, on the page or the server.
    page.get_by_role("button", name="New chat", exact=True).click()
    expect(page.locator(".chat-list .row")).to_have_count(0)
    listed = page.request.get("/api/v1/sessions").json()["items"]
    assert listed == []

    page.get_by_label("Message").fill("tea party, in short")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".message.from-user")).to_have_text("tea party, in short")
    expect(page.locator(".chat-list .row")).to_have_count(1)


def test_an_unanswered_message_offers_an_answer_after_a_reload(
    web: Browsing, server: Server, user: dict[str, Any], shots: Path
) -> None:
    """Seen before: after a model outage, reopening the chat showed the message alone, with
    no Retry and no hint."""
    server.model.answers["outage-marker"] = error(500, "the model is down")
    page = web.open(user)
    send(page, "outage-marker: are you there?")
    expect(page.locator(".turn-error")).to_contain_text("The answer failed")
    page.reload()
    note = page.get_by_role("status").filter(has_text="This message has no answer yet.")
    expect(note).to_be_visible()
    page.screenshot(path=shots / "answer-now.png")
    server.model.answers["outage-marker"] = text("Back now.")
    note.get_by_role("button", name="Answer now").click()
    expect(page.locator(".message.from-assistant").last).to_have_text("Back now.")
    expect(note).to_have_count(0)
    expect(page.locator(".message.from-user")).to_have_count(1)


def test_the_message_count_follows_a_stopped_answer(
    web: Browsing, server: Server, user: dict[str, Any]
) -> None:
    """Seen before: after Stop the list kept the count from before the turn (the server
    indexes a stopped turn when it lets go of it, after the page had asked)."""
    server.model.answers["count-marker"] = text("word " * 400, chunk_size=5, chunk_delay=0.05)
    page = web.open(user)
    send(page, "a first question")
    expect(page.locator(".message.from-assistant")).to_have_count(1)
    row = page.locator(".chat-list .row").first
    expect(row).to_contain_text("2 messages")
    send(page, "count-marker: go on for a while")
    expect(page.locator(".message.streaming .markdown")).to_contain_text("word")
    page.get_by_role("button", name="Stop").click()
    expect(page.get_by_text("Stopped.")).to_be_visible()
    expect(row).to_contain_text("3 messages")  # the question of the stopped turn is saved
