"""Groups and model access in Chromium (issue 39, item 3): an administrator makes a group in
Model settings, chooses its members and keeps an offering for it; the chat's model picker
offers a user only what they may use, and a turn is answered by the model picked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect

from tests.web.conftest import Browsing, Server, poll


def add_offering(server: Server, admin: dict[str, Any], offering_id: str) -> None:
    body = {"id": offering_id, "base_url": server.llm.base_url, "model": f"{offering_id}-model"}
    added = admin["http"].post("/models/offerings", json=body)
    assert added.status_code in (201, 409), added.text


def picker_options(page: Page) -> list[str]:
    picker = page.get_by_role("combobox", name="Model", exact=True)
    expect(picker).to_be_visible()
    return picker.locator("option").all_inner_texts()


def test_an_admin_makes_a_group_fills_it_and_keeps_an_offering_for_it(
    web: Browsing, server: Server, shots: Path
) -> None:
    admin = server.user(admin=True)
    member = server.user()
    add_offering(server, admin, "big")
    page = web.open(admin)
    page.get_by_role("button", name="Model settings").click()
    panel = page.get_by_role("dialog", name="Model settings")
    editor = panel.locator("section.groups-editor")
    expect(editor.get_by_role("heading", name="Groups and model access")).to_be_visible()

    editor.get_by_label("New group").fill("research")
    editor.get_by_role("button", name="Make group").click()
    expect(editor.get_by_role("status")).to_have_text("Made the group research.")
    group = editor.locator("li.group-item[data-group='research']")
    members = group.get_by_role("group", name="Members of research")
    members.get_by_label(member["username"], exact=True).check()
    group.get_by_role("button", name="Save members of research").click()
    expect(editor.get_by_role("status")).to_have_text("Saved the members of research.")

    access = editor.locator("li.access-item[data-offering-access='big']")
    expect(access).to_contain_text("everyone")
    allowed = access.get_by_role("group", name="Groups that may use big")
    allowed.get_by_label("research", exact=True).check()
    access.get_by_role("button", name="Save who may use big").click()
    expect(editor.get_by_role("status")).to_have_text("big is kept for its groups.")
    expect(access).to_contain_text("only these groups")
    editor.scroll_into_view_if_needed()
    page.screenshot(path=shots / "groups-editor.png")
    assert not page.errors  # type: ignore[attr-defined]

    groups = admin["http"].get("/groups").json()
    research = next(g for g in groups if g["name"] == "research")
    assert [m["username"] for m in research["members"]] == [member["username"]]
    offerings = {o["id"]: o for o in admin["http"].get("/models/offerings").json()}
    assert offerings["big"]["allowed_groups"] == [research["id"]]


def test_the_model_picker_offers_a_user_only_the_models_they_may_use(
    web: Browsing, server: Server, shots: Path
) -> None:
    admin = server.user(admin=True)
    member, outsider = server.user(), server.user()
    for offering_id in ("pro", "open"):
        add_offering(server, admin, offering_id)
    group = admin["http"].post("/groups", json={"name": "pros"}).json()
    users = {u["username"]: u["id"] for u in admin["http"].get("/users").json()}
    admin["http"].put(
        f"/groups/{group['id']}/members", json={"user_ids": [users[member["username"]]]}
    )
    kept = admin["http"].patch("/models/offerings/pro", json={"allowed_groups": [group["id"]]})
    assert kept.status_code == 200, kept.text

    page = web.open(outsider)
    options = picker_options(page)
    assert "pro" not in options
    assert "open" in options
    picker = page.get_by_role("combobox", name="Model", exact=True)
    picker.select_option("open")
    picker.evaluate("select => { select.size = select.options.length; }")  # the list, shown
    page.screenshot(path=shots / "model-picker-without-access.png")
    page.locator("select.model-picker").evaluate("select => { select.size = 0; }")
    page.get_by_label("Message").fill("which model answers?")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".message.from-assistant").last).to_be_visible()
    poll(
        lambda: any(
            r.body.get("model") == "open-model" and "which model answers?" in str(r.messages)
            for r in server.llm.completions
        ),
        "a turn answered by the offering picked",
    )
    assert not page.errors  # type: ignore[attr-defined]

    theirs = web.open(member)
    assert "pro" in picker_options(theirs)
