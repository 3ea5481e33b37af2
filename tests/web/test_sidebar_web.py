"""The sidebar in the browser: folders (create, drag into a new order, reload), collapse state
per device, 300 chats loaded as they scroll in with skeleton rows, pinned first, search with
snippets, the chat menu (move, export, delete with undo, the trash), import, CSRF."""

from __future__ import annotations

import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.web.conftest import Browsing, Server, poll, running_server

SPINNER_WATCH = """() => {
  window.sawSpinner = false;
  new MutationObserver(() => {
    if (document.querySelector('[aria-label="Importing"]')) window.sawSpinner = true;
  }).observe(document.body, {subtree: true, childList: true});
}"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Sidebars of hundreds of chats are made through the API, without a message each: no
    cap on empty sessions here (tests/api/test_empty_sessions_cap.py tests the cap)."""
    with running_server(
        tmp_path_factory.mktemp("web-serve"), EMPTY_SESSIONS_PER_USER="0"
    ) as running:
        yield running


def api(account: dict[str, Any], method: str, path: str, **kwargs: Any) -> Any:
    response = account["http"].request(method, path, **kwargs)
    assert response.status_code < 400, response.text
    return response.json() if response.content else None


def chat_with(account: dict[str, Any], message: str) -> str:
    session = api(account, "POST", "/sessions", json={"title": message[:40]})
    api(account, "POST", f"/sessions/{session['id']}/turns", json={"content": message})
    return session["id"]


def chat_rows(page: Page) -> Any:
    return page.get_by_role("list", name="Chats", exact=True).locator(".row:not(.skeleton)")


def open_menu(page: Page, title: str) -> None:
    row = chat_rows(page).filter(has_text=title).first
    row.hover()
    row.get_by_role("button", name=f"Actions for {title}").click()


def create_folder(page: Page, name: str, color: str) -> None:
    page.get_by_role("button", name="New folder").click()
    page.get_by_label("Folder name").fill(name)
    page.get_by_role("radio", name=color).click()
    page.get_by_role("button", name="Create").click()
    expect(page.locator(".folder .title-text", has_text=name)).to_be_visible()


def folder_names(page: Page) -> list[str]:
    return page.locator(".folder > .folder-head .title-text").all_inner_texts()


def test_folders_are_created_with_colors_dragged_into_a_new_order_and_kept(
    web: Browsing, user: dict[str, Any], shots: Path
) -> None:
    page = web.open(user)
    palette = [c["name"] for c in api(user, "GET", "/folders")["palette"]]
    for name, color in zip(("Work", "Home", "Travel"), palette, strict=False):
        create_folder(page, name, color)
    assert folder_names(page) == ["Work", "Home", "Travel"]
    dot = page.locator(".folder", has_text="Home").locator(".folder-dot")
    expect(dot).to_have_attribute("style", re.compile("background"))

    travel = page.locator(".folder > .folder-head", has_text="Travel")
    travel.drag_to(page.locator(".folder > .folder-head", has_text="Work"))
    poll(lambda: folder_names(page) == ["Travel", "Work", "Home"], "the dragged order")
    poll(
        lambda: (
            [f["name"] for f in api(user, "GET", "/folders")["items"]] == ["Travel", "Work", "Home"]
        ),
        "the order saved by PUT /folders/order",
    )
    chat_with(user, "A chat to file by dragging")
    page.reload()
    row = chat_rows(page).filter(has_text="A chat to file by dragging")
    row.locator(".row-link").drag_to(page.locator(".folder > .folder-head", has_text="Home"))
    expect(chat_rows(page)).to_have_count(0)
    home = page.locator(".folder", has_text="Home")
    home.locator(".folder-toggle").click()
    expect(home.locator(".row .title-text")).to_have_text("A chat to file by dragging")
    page.screenshot(path=shots / "sidebar-folders.png")
    page.reload()
    page.get_by_role("button", name="New chat").wait_for()
    assert folder_names(page) == ["Travel", "Work", "Home"]


def test_the_folder_menu_renames_recolors_and_deletes_keeping_the_chats(
    web: Browsing, user: dict[str, Any]
) -> None:
    folder = api(user, "POST", "/folders", json={"name": "Work", "color": "red"})
    chat = chat_with(user, "Filed chat")
    api(user, "PATCH", f"/sessions/{chat}", json={"folder_id": folder["id"]})
    page = web.open(user)
    expect(chat_rows(page)).to_have_count(0)

    def menu(name: str) -> None:
        head = page.locator(".folder > .folder-head", has_text=name)
        head.hover()
        head.get_by_role("button", name=f"Actions for folder {name}").click()

    menu("Work")
    page.get_by_role("menuitem", name="Rename").click()
    page.get_by_label("Folder name").fill("Job")
    page.get_by_label("Folder name").press("Enter")
    expect(page.locator(".folder .title-text").first).to_have_text("Job")
    menu("Job")
    page.get_by_role("menuitem", name="Color").click()
    page.get_by_role("menuitem", name="green").click()
    poll(lambda: api(user, "GET", "/folders")["items"][0]["color"] == "green", "the new color")
    assert api(user, "GET", "/folders")["items"][0]["name"] == "Job"

    page.once("dialog", lambda dialog: dialog.accept())
    menu("Job")
    page.get_by_role("menuitem", name="Delete").click()
    expect(page.locator(".folder")).to_have_count(0)
    expect(chat_rows(page).locator(".title-text")).to_have_text(["Filed chat"])


def test_collapse_state_is_kept_per_device(web: Browsing, user: dict[str, Any]) -> None:
    api(user, "POST", "/folders", json={"name": "Projects"})
    chat_with(user, "kept for the collapse test")
    laptop = web.open(user)
    folder = laptop.locator(".folder", has_text="Projects")
    toggle = folder.locator(".folder-toggle")
    expect(toggle).to_have_attribute("aria-expanded", "false")  # folders start collapsed
    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    chats = laptop.get_by_role("button", name="Chats", exact=True)
    expect(chats).to_have_attribute("aria-expanded", "true")  # sections start expanded
    chats.click()
    expect(chats).to_have_attribute("aria-expanded", "false")
    expect(laptop.get_by_role("list", name="Chats", exact=True)).to_have_count(0)

    phone = web.open(user)  # another context: another localStorage, another device id
    assert phone.evaluate("localStorage.getItem('eonyx.device')") != laptop.evaluate(
        "localStorage.getItem('eonyx.device')"
    )
    expect(phone.get_by_role("button", name="Chats", exact=True)).to_have_attribute(
        "aria-expanded", "true"
    )
    expect(
        phone.locator(".folder", has_text="Projects").locator(".folder-toggle")
    ).to_have_attribute("aria-expanded", "false")

    laptop.reload()
    expect(laptop.get_by_role("button", name="Chats", exact=True)).to_have_attribute(
        "aria-expanded", "false"
    )
    expect(
        laptop.locator(".folder", has_text="Projects").locator(".folder-toggle")
    ).to_have_attribute("aria-expanded", "true")


def test_300_chats_load_as_the_list_scrolls_with_skeleton_rows_and_pinned_first(
    web: Browsing, user: dict[str, Any]
) -> None:
    def create(n: int) -> str:
        return api(user, "POST", "/sessions", json={"title": f"Chat {n:03d}"})["id"]

    with ThreadPoolExecutor(4) as pool:
        ids = list(pool.map(create, range(300)))
    api(user, "PATCH", f"/sessions/{ids[5]}", json={"pinned": True})
    expected: list[str] = []
    cursor = None
    while True:
        query = {"folder_id": "none", "limit": 200} | ({"cursor": cursor} if cursor else {})
        page_ = api(user, "GET", "/sessions", params=query)
        expected += [item["title"] for item in page_["items"]]
        cursor = page_["next_cursor"]
        if not cursor:
            break
    assert expected[0] == "Chat 005"

    page = web.open(user)
    rows = chat_rows(page)
    skeletons = page.locator(".chat-list .row.skeleton")
    expect(rows).to_have_count(50)  # the first page only
    expect(skeletons.first).to_be_attached()  # where the next page will land
    expect(rows.first.locator(".title-text")).to_have_text("Chat 005")
    expect(rows.first.locator(".pin")).to_be_visible()
    height = rows.nth(1).bounding_box()["height"]
    rows.nth(1).hover()
    expect(rows.nth(1).locator(".row-meta time")).to_have_text(
        re.compile(r"^\d{4}/\d{2}/\d{2} \d{2}:\d{2}$")
    )
    assert rows.nth(1).bounding_box()["height"] == height  # hover shows the line, same height

    for _ in range(40):
        if rows.count() >= 300:
            break
        shown = rows.count()  # before the scroll: the page it asks for may land at once
        skeletons.first.scroll_into_view_if_needed()
        page.wait_for_function(
            "n => document.querySelectorAll('.chat-list .row:not(.skeleton)').length > n",
            arg=shown,
        )
    expect(rows).to_have_count(300)
    expect(skeletons).to_have_count(0)
    assert page.locator(".chat-list .row .title-text").all_inner_texts() == expected


def test_search_finds_titles_and_text_with_snippets(web: Browsing, user: dict[str, Any]) -> None:
    chat_with(user, "Please explain the heliotrope pigment in old paintings")
    chat_with(user, "Something else entirely")
    page = web.open(user)
    page.get_by_label("Search chats").fill("heliotrope")
    results = page.get_by_role("list", name="Search results").locator(".row")
    expect(results).to_have_count(1)
    expect(results.locator("mark").first).to_have_text(re.compile("heliotrope", re.I))
    page.get_by_label("Search chats").fill("")
    expect(chat_rows(page)).to_have_count(2)


def test_the_search_box_says_its_syntax_at_a_phones_width(
    web: Browsing, user: dict[str, Any], shots: Path
) -> None:
    chat_with(user, "We made sandwiches for the picnic")
    page = web.open(user)
    page.set_viewport_size({"width": 390, "height": 844})
    page.get_by_role("button", name="Show the chats").click()
    nav = page.get_by_role("navigation", name="Chats")
    poll(lambda: (nav.bounding_box() or {}).get("x") == 0, "the chats to slide in")
    box = page.get_by_role("searchbox", name="Search chats")
    expect(box).to_have_accessible_description(
        re.compile(r'word forms: sandwich finds sandwiches.*word\*.*"word" that word only')
    )
    page.get_by_role("button", name="Temporary chat").focus()
    page.keyboard.press("Tab")  # the keyboard reaches the box, and the box says its syntax
    expect(box).to_be_focused()
    hint = page.get_by_text("Finds word forms")
    expect(hint).to_be_visible()
    sidebar, shown = nav.bounding_box(), hint.bounding_box()
    assert sidebar
    assert shown
    assert sidebar["x"] <= shown["x"]
    assert shown["x"] + shown["width"] <= sidebar["x"] + sidebar["width"]
    assert shown["x"] + shown["width"] <= 390

    page.keyboard.type("sandwich")
    results = page.get_by_role("list", name="Search results").locator(".row")
    expect(results).to_have_count(1)
    expect(hint).to_be_visible()  # still there while the results are read
    page.screenshot(path=shots / "search-hint-phone.png")


def test_the_chat_menu_moves_exports_deletes_with_undo_and_the_trash_restores(
    web: Browsing, user: dict[str, Any], tmp_path: Path
) -> None:
    api(user, "POST", "/folders", json={"name": "Archive box"})
    chat_with(user, "A chat to move around")
    page = web.open(user)
    expect(chat_rows(page)).to_have_count(1)

    open_menu(page, "A chat to move around")
    page.get_by_role("menuitem", name="Move to folder").click()
    page.get_by_role("menuitem", name="Archive box").click()
    expect(chat_rows(page)).to_have_count(0)
    folder = page.locator(".folder", has_text="Archive box")
    folder.locator(".folder-toggle").click()  # its chats load when it opens
    expect(folder.locator(".row .title-text")).to_have_text("A chat to move around")
    folder.locator(".row").hover()
    folder.get_by_role("button", name="Actions for A chat to move around").click()
    page.get_by_role("menuitem", name="Move to folder").click()
    page.get_by_role("menuitem", name="No folder").click()
    expect(chat_rows(page)).to_have_count(1)

    open_menu(page, "A chat to move around")
    with page.expect_download() as download:
        page.get_by_role("menuitem", name="Export (.zip)").click()
    bundle = tmp_path / "export.zip"
    download.value.save_as(bundle)
    assert bundle.read_bytes()[:2] == b"PK"

    open_menu(page, "A chat to move around")
    page.get_by_role("menuitem", name="Delete").click()
    expect(chat_rows(page)).to_have_count(0)
    toast = page.locator(".toast").first.bounding_box()
    composer = page.locator("form.composer").bounding_box()
    assert toast
    assert composer
    assert toast["y"] + toast["height"] < composer["y"]  # seen before: it covered the box
    page.get_by_role("button", name="Undo").click()
    expect(chat_rows(page)).to_have_count(1)

    open_menu(page, "A chat to move around")
    page.get_by_role("menuitem", name="Delete").click()
    expect(chat_rows(page)).to_have_count(0)
    page.get_by_role("link", name="Trash").click()
    trash = page.get_by_role("list", name="Deleted chats")
    expect(trash.locator("li")).to_have_count(1)
    trash.get_by_role("button", name="Restore").click()
    expect(trash.locator("li")).to_have_count(0)
    expect(chat_rows(page)).to_have_count(1)

    # The exported bundle imports as a new chat, selected, with the spinner while it uploads.
    page.evaluate(SPINNER_WATCH)
    page.get_by_label("Chat bundle to import").set_input_files(str(bundle))
    expect(chat_rows(page)).to_have_count(2)
    expect(page).to_have_url(re.compile(r"/c/\d{8}T\d{6}-[0-9a-f]{8}$"))
    active = page.locator(".chat-list .row.active")
    expect(active.locator(".title-text")).to_have_text("A chat to move around")
    page.mouse.move(900, 400)  # away from the list: the open chat keeps its line
    expect(active.locator(".row-meta")).to_be_visible()
    assert page.evaluate("window.sawSpinner") is True
    expect(page.locator(".message.from-user")).to_have_text("A chat to move around")

    broken = tmp_path / "broken.zip"
    broken.write_bytes(b"this is not a zip file")
    page.get_by_label("Chat bundle to import").set_input_files(str(broken))
    expect(page.get_by_role("alert")).to_contain_text("Import refused:")
    expect(chat_rows(page)).to_have_count(2)


def test_a_cookie_request_without_the_csrf_header_is_refused(
    web: Browsing, user: dict[str, Any]
) -> None:
    page = web.open(user)
    status = page.evaluate(
        """() => fetch('/api/v1/folders', {method: 'POST', credentials: 'same-origin',
        headers: {'Content-Type': 'application/json'}, body: JSON.stringify({name: 'Sneaky'})})
        .then(r => r.status)"""
    )
    assert status == 403
    assert api(user, "GET", "/folders")["items"] == []


def test_the_settings_icon_is_for_administrators_only(
    web: Browsing, server: Any, user: dict[str, Any]
) -> None:
    page = web.open(user)
    expect(page.get_by_role("button", name="Agent memory")).to_be_visible()
    expect(page.get_by_role("button", name="Model settings")).to_have_count(0)
    admin = web.open(server.user(admin=True))
    expect(admin.get_by_role("button", name="Model settings")).to_be_visible()


def test_api_chats_carry_their_badge_and_archived_chats_come_back_from_the_archive(
    web: Browsing, user: dict[str, Any], shots: Path
) -> None:
    key = api(user, "POST", "/tokens", json={"name": "script"})["token"]
    scripted = {"http": user["http"]}
    user["http"].headers["Authorization"], saved = (
        f"Bearer {key}",
        user["http"].headers["Authorization"],
    )
    try:
        chat_with(scripted, "Nightly report from the cron job")
    finally:
        user["http"].headers["Authorization"] = saved
    chat_with(user, "A chat typed in the browser")
    chat_with(user, "Old chat to archive")
    page = web.open(user)
    api_row = chat_rows(page).filter(has_text="Nightly report")
    expect(api_row.locator(".badge")).to_have_text("API")  # at rest, no hover
    expect(chat_rows(page).filter(has_text="typed in the browser").locator(".badge")).to_have_count(
        0
    )
    page.screenshot(path=shots / "sidebar.png")

    open_menu(page, "Old chat to archive")
    page.get_by_role("menuitem", name="Archive").click()
    expect(chat_rows(page)).to_have_count(2)
    page.get_by_role("link", name="Archived chats").click()
    archived = page.get_by_role("list", name="Archived chats")
    expect(archived.locator("li")).to_have_count(1)
    archived.get_by_role("button", name="Unarchive").click()
    expect(archived.locator("li")).to_have_count(0)
    expect(chat_rows(page)).to_have_count(3)


def test_a_coding_agents_notes_carry_the_mcp_badge(
    web: Browsing, user: dict[str, Any], shots: Path
) -> None:
    """What `eonyx mcp`'s session_note writes: a session of source `mcp` per directory."""
    api(user, "POST", "/notes", json={"note": "Bumped the API to v3", "workdir": "/src/shop"})
    chat_with(user, "A chat typed in the browser")
    page = web.open(user)
    notes = chat_rows(page).filter(has_text="Notes: shop")
    expect(notes.locator(".badge")).to_have_text("MCP")
    expect(notes.locator(".badge")).to_have_attribute("title", "Notes from a coding agent (MCP)")
    page.screenshot(path=shots / "sidebar-mcp.png")
    notes.click()
    expect(page.get_by_text("Note from a coding agent: Bumped the API to v3")).to_be_visible()
    expect(page.get_by_text("This message has no answer yet.")).to_have_count(0)  # a note
    page.screenshot(path=shots / "notes-mcp.png")
