"""A chat shared with a teammate, in the browser (issue 42, item 5): the teammate opens the
link and reads the transcript without a composer, forks it into their own chats and lands in
their copy; someone not signed in is asked to sign in first and then sees the chat."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from tests.fake_llm import text
from tests.web.conftest import PASSWORD, Browsing, Server
from tests.web.test_accessibility import serious_violations, with_axe

ANSWER = "Take the **night train** and book a couchette:\n\n```bash\nbook --train NJ 40424\n```\n"


def _shared_link(server: Server, owner: dict[str, Any]) -> tuple[str, str]:
    """The owner's chat of one turn, titled, and the path of its new link."""
    server.model.answers["share-marker"] = text(ANSWER)
    http = owner["http"]
    session_id = http.post("/sessions", json={}).json()["id"]
    turn = http.post(f"/sessions/{session_id}/turns", json={"content": "share-marker: Vienna?"})
    assert turn.status_code == 200, turn.text
    assert http.patch(f"/sessions/{session_id}", json={"title": "Vienna by train"}).is_success
    made = http.post(f"/sessions/{session_id}/share")
    assert made.status_code == 201, made.text
    url = made.json()["url"]
    assert url.startswith(server.url)
    return session_id, url.removeprefix(server.url)


def test_the_teammate_reads_the_shared_chat_and_forks_it_into_their_own(
    web: Browsing, server: Server, shots: Path
) -> None:
    owner, teammate = server.user(), server.user()
    _, path = _shared_link(server, owner)

    page = with_axe(web.open(teammate, path=path))
    expect(page.get_by_role("heading", name="Vienna by train")).to_be_visible()
    shared = page.get_by_role("region", name="Shared chat")
    expect(shared.get_by_role("article", name=owner["username"])).to_have_text(
        "share-marker: Vienna?"
    )
    answer = shared.get_by_role("article", name="Assistant")
    expect(answer.locator("strong")).to_have_text("night train")
    expect(answer.locator("pre code")).to_contain_text("book --train NJ 40424")
    expect(page.get_by_text(f"Shared by {owner['username']}")).to_be_visible()
    expect(page.get_by_text("Read-only", exact=True)).to_be_visible()
    expect(page.get_by_label("Message")).to_have_count(0)  # no composer
    expect(page.get_by_role("button", name="Send")).to_have_count(0)
    assert serious_violations(page) == []
    page.screenshot(path=shots / "share-teammate.png")

    page.get_by_role("button", name="Fork to my chats").click()
    expect(page).to_have_url(re.compile(r"/c/[0-9]{8}T[0-9]{6}-[0-9a-f]{8}$"))
    forked_id = page.url.rsplit("/", 1)[1]
    expect(page.get_by_role("heading", name="Vienna by train")).to_be_visible()
    expect(page.locator(".message.from-assistant strong")).to_have_text("night train")
    expect(page.get_by_label("Message")).to_be_visible()  # their own chat: they go on here
    mine = teammate["http"].get("/sessions").json()["items"]
    assert [s["id"] for s in mine] == [forked_id]
    assert owner["http"].get(f"/sessions/{forked_id}").status_code == 404  # not the owner's
    page.screenshot(path=shots / "share-forked.png")


def test_a_reader_not_signed_in_signs_in_first_and_a_revoked_link_says_so(
    web: Browsing, server: Server, shots: Path
) -> None:
    owner, teammate = server.user(), server.user()
    session_id, path = _shared_link(server, owner)

    page = web.context().new_page()
    page.goto(path)
    page.get_by_label("Username").fill(teammate["username"])
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(re.compile(re.escape(path) + "$"))
    expect(page.get_by_role("heading", name="Vienna by train")).to_be_visible()

    assert owner["http"].delete(f"/sessions/{session_id}/share").status_code == 204
    page.reload()
    expect(page.get_by_role("alert")).to_contain_text("This link was revoked")
    expect(page.get_by_role("button", name="Fork to my chats")).to_have_count(0)
    page.screenshot(path=shots / "share-revoked.png")
