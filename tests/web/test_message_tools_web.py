"""The controls under a message and in the chat's header (issue 42): Copy (the Markdown
source; a code block's own copy), Regenerate, Edit and resend, no star in a temporary chat,
a fork marked in the sidebar, the header menu (Rename, Archive, Move to folder, Share,
Export as Markdown) and the API docs link. Each control is found by its accessible name."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect

from tests.fake_llm import error, text
from tests.web.conftest import Browsing, Server, poll
from tests.web.test_chat_web import PNG, send

ANSWER = "Use **pathlib**:\n\n```python\nfrom pathlib import Path\nPath('a').read_text()\n```"
CLIPBOARD = ["clipboard-read", "clipboard-write"]


def clipboard(page: Page) -> str:
    return str(page.evaluate("navigator.clipboard.readText()"))


def answers(page: Page) -> Any:
    return page.locator(".message.from-assistant")


def questions(page: Page) -> Any:
    return page.locator(".message.from-user")


def session_id(page: Page) -> str:
    poll(lambda: re.search(r"/c/([\w-]+)$", page.url), "the chat's own URL")
    return page.url.rsplit("/", 1)[1]


def header_menu(page: Page, item: str) -> None:
    page.get_by_role("button", name="Chat actions").click()
    page.get_by_role("menuitem", name=re.compile(f"^{re.escape(item)}( ›)?$")).click()


def test_copy_puts_the_markdown_source_on_the_clipboard_and_a_code_block_its_code(
    web: Browsing, server: Server, user: dict[str, Any], shots: Path
) -> None:
    server.model.answers["copy-marker"] = text(ANSWER)
    page = web.open(user, web.context(permissions=CLIPBOARD))
    send(page, "copy-marker: how do I read a file")
    answer = answers(page).last
    expect(answer.locator("strong")).to_have_text("pathlib")

    answer.get_by_role("button", name="Copy", exact=True).click()
    poll(lambda: clipboard(page) == ANSWER, "the answer's Markdown on the clipboard")
    answer.hover()
    page.screenshot(path=shots / "message-controls.png")

    answer.get_by_role("button", name="Copy code").click()
    poll(
        lambda: clipboard(page) == "from pathlib import Path\nPath('a').read_text()\n",
        "the code block's code on the clipboard",
    )
    expect(answer.get_by_role("button", name="Copy code")).to_have_text("Copied")
    # A user message is edited, not copied.
    expect(questions(page).last.get_by_role("button", name="Edit")).to_be_visible()


def test_regenerate_streams_a_new_answer_in_place_of_the_last(
    web: Browsing, server: Server, user: dict[str, Any]
) -> None:
    server.model.answers["regen-marker"] = [
        text("The first answer."),
        text("A better answer.", chunk_size=2, chunk_delay=0.05),
    ]
    page = web.open(user)
    send(page, "hello there")
    expect(answers(page).last).to_have_text("hello there")
    send(page, "regen-marker: say something")
    expect(answers(page).last).to_have_text("The first answer.")
    # Only the last answer offers Regenerate.
    expect(page.get_by_role("button", name="Regenerate")).to_have_count(1)

    answers(page).last.get_by_role("button", name="Regenerate").click()
    expect(page.locator(".message.streaming")).to_be_visible()
    expect(answers(page).last).to_have_text("A better answer.")
    expect(page.get_by_text("The first answer.")).to_have_count(0)
    expect(answers(page)).to_have_count(2)
    expect(questions(page)).to_have_count(2)

    page.reload()  # the server lists the current branch
    expect(answers(page).last).to_have_text("A better answer.")
    expect(answers(page)).to_have_count(2)
    expect(page.get_by_text("The first answer.")).to_have_count(0)


def test_a_regenerated_answers_star_does_not_stay_on_its_turn(
    web: Browsing, user: dict[str, Any]
) -> None:
    page = web.open(user)
    send(page, "Remember that I deploy with Ansible.")
    answer = answers(page).last
    expect(answer).to_have_text("Remember that I deploy with Ansible.")
    answer.get_by_role("button", name="Remember this turn").click()
    question = questions(page).last
    star = question.get_by_role("button", name="Remember this turn")
    expect(star).to_have_attribute("aria-pressed", "true")

    answer.get_by_role("button", name="Regenerate").click()
    expect(page.locator(".message.streaming")).to_have_count(0)
    expect(answers(page)).to_have_count(1)
    expect(star).to_have_attribute("aria-pressed", "false")
    expect(answers(page).last.get_by_role("button", name="Remember this turn")).to_have_attribute(
        "aria-pressed", "false"
    )
    page.reload()
    expect(questions(page).last.get_by_role("button", name="Remember this turn")).to_have_attribute(
        "aria-pressed", "false"
    )


def test_a_regenerate_the_model_fails_says_why_and_retry_answers(
    web: Browsing, server: Server, user: dict[str, Any], shots: Path
) -> None:
    server.model.answers["regen-fail-marker"] = [
        text("The answer to keep trying."),
        error(500, "the model fell over"),
    ]
    page = web.open(user)
    send(page, "regen-fail-marker: answer me")
    expect(answers(page).last).to_have_text("The answer to keep trying.")
    answers(page).last.get_by_role("button", name="Regenerate").click()
    failure = page.locator(".turn-error")
    expect(failure).to_contain_text("The answer failed")
    page.screenshot(path=shots / "regenerate-failed.png")

    server.model.answers["regen-fail-marker"] = text("Answered after all.")
    failure.get_by_role("button", name="Retry").click()
    expect(answers(page).last).to_have_text("Answered after all.")
    expect(answers(page)).to_have_count(1)
    expect(page.locator(".turn-error")).to_have_count(0)


def test_edit_replaces_the_message_and_everything_after_it(
    web: Browsing, user: dict[str, Any], shots: Path
) -> None:
    page = web.open(user)
    send(page, "the first question")
    expect(answers(page).last).to_have_text("the first question")
    send(page, "the second question")
    expect(answers(page).last).to_have_text("the second question")

    first = questions(page).first
    first.get_by_role("button", name="Edit").click()
    first.get_by_role("button", name="Cancel").click()  # nothing changes
    expect(questions(page)).to_have_count(2)

    first.get_by_role("button", name="Edit").click()
    box = first.get_by_label("Edit your message")
    expect(box).to_have_value("the first question")
    box.fill("the question, asked better")
    page.screenshot(path=shots / "message-edit.png")
    first.get_by_role("button", name="Save and send").click()

    expect(questions(page)).to_have_count(1)
    expect(questions(page)).to_have_text("the question, asked better")
    expect(answers(page)).to_have_count(1)
    expect(answers(page)).to_have_text("the question, asked better")

    page.reload()
    expect(questions(page)).to_have_text(["the question, asked better"])
    expect(answers(page)).to_have_text(["the question, asked better"])


def test_an_edited_message_keeps_its_image(
    web: Browsing, user: dict[str, Any], tmp_path: Path, shots: Path
) -> None:
    picture = tmp_path / "red.png"
    picture.write_bytes(PNG)
    page = web.open(user)
    page.get_by_label("Images to attach").set_input_files(str(picture))
    send(page, "What is this?")
    expect(answers(page).last).to_have_text("What is this?")
    question = questions(page).first
    saved = re.compile(r"^/api/v1/sessions/.+/images/")
    expect(question.locator(".images img")).to_have_attribute("src", saved)
    source = question.locator(".images img").get_attribute("src")

    question.get_by_role("button", name="Edit").click()
    question.get_by_label("Edit your message").fill("What colour is this?")
    question.get_by_role("button", name="Save and send").click()

    expect(answers(page)).to_have_text(["What colour is this?"])
    expect(questions(page)).to_have_text(["What colour is this?"])
    expect(questions(page).locator(".images img")).to_have_attribute("src", source or "")
    page.reload()
    expect(questions(page).locator(".images img")).to_have_attribute("src", source or "")
    expect(answers(page)).to_have_text(["What colour is this?"])
    page.screenshot(path=shots / "message-edit-image.png")


def test_a_temporary_chat_offers_no_star(web: Browsing, user: dict[str, Any]) -> None:
    page = web.open(user)
    page.get_by_role("button", name="Temporary chat").click()
    send(page, "Just between us")
    answer = answers(page).last
    expect(answer).to_have_text("Just between us")
    expect(answer.get_by_role("button", name="Copy", exact=True)).to_be_visible()
    expect(page.get_by_role("button", name="Remember this turn")).to_have_count(0)


def test_the_header_menu_renames_forks_archives_and_moves_and_a_fork_is_marked(
    web: Browsing, user: dict[str, Any], shots: Path
) -> None:
    user["http"].post("/folders", json={"name": "Travel", "color": "blue"}).raise_for_status()
    page = web.open(user)
    send(page, "plan a trip to Porto")
    expect(answers(page).last).to_have_text("plan a trip to Porto")
    original = session_id(page)

    page.get_by_role("button", name="Chat actions").click()
    page.screenshot(path=shots / "chat-header-menu.png")
    page.get_by_role("menuitem", name="Rename").click()
    page.get_by_label("Chat title").fill("Porto weekend")
    page.get_by_label("Chat title").press("Enter")
    expect(page.locator(".chat-title")).to_have_text("Porto weekend")
    poll(
        lambda: user["http"].get(f"/sessions/{original}").json()["title"] == "Porto weekend",
        "the rename saved",
    )

    header_menu(page, "Fork")
    expect(page).not_to_have_url(re.compile(original))
    fork = page.locator(".chat-list .row").filter(has=page.locator(".fork-mark"))
    expect(fork).to_have_count(1)
    expect(fork.get_by_role("img", name="Forked from “Porto weekend”")).to_be_visible()
    expect(fork.locator(".row-origin")).to_have_text("Forked from “Porto weekend”")
    page.screenshot(path=shots / "sidebar-fork.png")

    page.locator(".chat-list .row").filter(has_not=page.locator(".fork-mark")).locator(
        ".row-link"
    ).click()
    expect(page).to_have_url(re.compile(original))
    header_menu(page, "Move to folder")
    page.get_by_role("menuitem", name="Travel").click()
    poll(
        lambda: user["http"].get(f"/sessions/{original}").json()["folder_id"] is not None,
        "the move saved",
    )
    header_menu(page, "Archive")
    expect(page.get_by_text("Chat archived.")).to_be_visible()
    assert user["http"].get(f"/sessions/{original}").json()["archived"] is True


def test_export_as_markdown_downloads_what_the_console_writes(
    web: Browsing, user: dict[str, Any], tmp_path: Path
) -> None:
    page = web.open(user)
    send(page, "export me as markdown")
    expect(answers(page).last).to_have_text("export me as markdown")
    chat = session_id(page)
    with page.expect_download() as download:
        header_menu(page, "Export (.md)")
    assert download.value.suggested_filename == f"eonyx-{chat}.md"
    saved = tmp_path / "export.md"
    download.value.save_as(saved)
    markdown = saved.read_text()  # the server's exporter, as the console's /export writes it
    assert markdown.startswith("# ")
    assert f"_Session {chat}, exported from Eonyx" in markdown
    assert re.search(r"^## You · .*\n\nexport me as markdown$", markdown, re.M)
    assert re.search(r"^## Assistant · ", markdown, re.M)


def test_share_shows_a_link_to_copy_and_revokes_it(
    web: Browsing, server: Server, user: dict[str, Any], shots: Path
) -> None:
    page = web.open(user, web.context(permissions=CLIPBOARD))
    send(page, "a chat for a teammate")
    expect(answers(page).last).to_have_text("a chat for a teammate")
    chat = session_id(page)

    header_menu(page, "Share")
    dialog = page.get_by_role("dialog", name=re.compile("Share"))
    link = dialog.get_by_label("Share link")
    expect(link).to_have_value(re.compile(r"/shared/\S+$"))
    url = link.input_value()
    dialog.get_by_role("button", name="Copy link").click()
    poll(lambda: clipboard(page) == url, "the link on the clipboard")
    page.screenshot(path=shots / "share-dialog.png")
    assert user["http"].get(f"/sessions/{chat}/share").status_code == 200

    dialog.get_by_role("button", name="Revoke link").click()
    expect(dialog.get_by_role("status")).to_have_text(re.compile("revoked"))
    assert user["http"].get(f"/sessions/{chat}/share").status_code == 404
    teammate = server.user()
    token = url.rsplit("/", 1)[1]
    assert teammate["http"].get(f"/shared/{token}").status_code == 404
    dialog.get_by_role("button", name="Done").click()
    expect(dialog).to_have_count(0)


def test_the_api_docs_are_linked(web: Browsing, user: dict[str, Any]) -> None:
    page = web.open(user)
    docs = page.get_by_role("link", name="API docs")
    expect(docs).to_have_attribute("href", "/api/v1/docs")
    assert page.request.get("/api/v1/docs").status == 200


def test_an_imported_chat_is_marked_in_the_sidebar(
    web: Browsing, user: dict[str, Any], shots: Path
) -> None:
    http = user["http"]
    made = http.post("/sessions", json={"title": "Lemon risotto"}).json()["id"]
    http.post(f"/sessions/{made}/turns", json={"content": "how long to stir"}).raise_for_status()
    bundle = http.get(f"/sessions/{made}/export", params={"format": "zip"}).content
    imported = http.post(
        "/sessions/import", content=bundle, headers={"Content-Type": "application/zip"}
    )
    assert imported.status_code == 201, imported.text
    page = web.open(user)
    rows = page.locator(".chat-list .row")
    expect(rows).to_have_count(2)
    mark = page.get_by_role("img", name="Imported from a bundle")
    expect(mark).to_have_count(1)
    row = rows.filter(has=mark)
    expect(row.locator(".title-text")).to_have_text("Lemon risotto")
    row.hover()
    expect(row.locator(".row-origin")).to_have_text("Imported from a bundle")
    page.screenshot(path=shots / "sidebar-import.png")


def test_a_forks_origin_line_fits_its_row_at_a_phones_width(
    web: Browsing, user: dict[str, Any], shots: Path
) -> None:
    http = user["http"]
    title = "Porto weekend: trains from Lisbon, hotels by the river and where to eat"
    made = http.post("/sessions", json={"title": title}).json()["id"]
    http.post(f"/sessions/{made}/turns", json={"content": "plan it"}).raise_for_status()
    http.post(f"/sessions/{made}/fork", json={}).raise_for_status()
    page = web.open(user)
    page.set_viewport_size({"width": 390, "height": 844})
    page.get_by_role("button", name="Show the chats").click()
    nav = page.get_by_role("navigation", name="Chats")
    poll(lambda: (nav.bounding_box() or {}).get("x") == 0, "the chats to slide in")
    fork = page.locator(".chat-list .row").filter(has=page.locator(".fork-mark"))
    fork.hover()
    line = fork.locator(".row-origin")
    expect(line).to_be_visible()
    expect(line).to_have_attribute("title", f"Forked from “{title}”")  # the whole line

    row, shown = fork.bounding_box(), line.bounding_box()
    assert row
    assert shown
    assert shown["width"] > row["width"] / 2  # a line of its own, not a sliver after the date
    assert row["x"] <= shown["x"]
    assert shown["x"] + shown["width"] <= row["x"] + row["width"]
    assert row["y"] <= shown["y"]
    assert shown["y"] + shown["height"] <= row["y"] + row["height"]
    # What does not fit ends in an ellipsis, not a letter cut in half.
    assert line.evaluate("e => getComputedStyle(e).textOverflow") == "ellipsis"
    assert line.evaluate("e => e.scrollWidth > e.clientWidth")
    page.screenshot(path=shots / "sidebar-fork-phone.png")
