"""The account panel in Chromium: a user changes their password (a wrong current one is
refused and said so; the browser stays signed in, other tokens end); an administrator lists
users, disables one (whose open page is signed out), enables them and deletes them after a
confirmation; a plain user sees no user list."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Locator, Page, expect

from tests.web.conftest import PASSWORD, Browsing, Server

NEW_PASSWORD = "an even longer battery"


def open_account(page: Page) -> Locator:
    page.get_by_role("button", name="Account").click()
    panel = page.get_by_role("dialog", name="Account")
    expect(panel.get_by_role("heading", name="Change your password")).to_be_visible()
    return panel


def login_status(server: Server, username: str, password: str) -> int:
    with httpx.Client(base_url=server.url + "/api/v1", timeout=30) as http:
        answer = http.post("/auth/login", json={"username": username, "password": password})
        return answer.status_code


def test_a_user_changes_their_password_and_stays_signed_in(
    web: Browsing, server: Server, user: dict[str, Any], shots: Path
) -> None:
    page = web.open(user)
    panel = open_account(page)
    form = panel.get_by_role("form", name="Change your password")
    expect(panel.get_by_role("heading", name="Users")).to_have_count(0)  # not an admin

    form.get_by_label("Current password").fill("not my password")
    form.get_by_label("New password", exact=True).fill(NEW_PASSWORD)
    form.get_by_label("Repeat new password").fill(NEW_PASSWORD)
    form.get_by_role("button", name="Change password").click()
    expect(form.get_by_role("alert")).to_have_text(
        "The current password is wrong; nothing changed."
    )
    page.screenshot(path=shots / "account-wrong-password.png")
    assert user["http"].get("/sessions").status_code == 200  # nothing ended

    form.get_by_label("Repeat new password").fill(NEW_PASSWORD + "x")
    form.get_by_label("Current password").fill(PASSWORD)
    form.get_by_role("button", name="Change password").click()
    expect(form.get_by_role("alert")).to_have_text("The new password and its repetition differ.")

    form.get_by_label("Repeat new password").fill(NEW_PASSWORD)
    form.get_by_role("button", name="Change password").click()
    expect(form.get_by_role("status")).to_contain_text("Password changed. 1 other sign-in")
    expect(form.get_by_role("alert")).to_have_count(0)
    expect(form.get_by_label("Current password")).to_have_value("")
    page.screenshot(path=shots / "account-password-changed.png")

    assert user["http"].get("/sessions").status_code == 401  # the test's own token ended
    assert login_status(server, user["username"], PASSWORD) == 401
    assert login_status(server, user["username"], NEW_PASSWORD) == 200
    page.reload()  # this browser's sign-in stays
    expect(page.get_by_role("button", name="New chat")).to_be_visible()
    expect(page.get_by_label("Username")).to_have_count(0)


def test_an_admin_disables_enables_and_deletes_a_user(
    web: Browsing, server: Server, shots: Path
) -> None:
    admin = server.user(admin=True)
    target = server.user()
    theirs = web.open(target)
    page = web.open(admin)
    panel = open_account(page)
    users = panel.get_by_role("table", name="Users")
    row = users.locator(f'tr[data-user="{target["username"]}"]')
    expect(row).to_contain_text("active")
    expect(users.locator(f'tr[data-user="{admin["username"]}"]')).to_contain_text("(you)")
    expect(
        users.locator(f'tr[data-user="{admin["username"]}"]').get_by_role("button")
    ).to_have_count(0)

    panel.get_by_role("button", name=f"Disable {target['username']}").click()
    expect(row).to_contain_text("disabled")
    expect(panel.get_by_role("status").last).to_contain_text(f"Disabled {target['username']}")
    page.screenshot(path=shots / "account-users-disabled.png")
    assert target["http"].get("/sessions").status_code == 401
    # Their open page finds its sign-in ended (its events socket is closed at once, and
    # the next request is refused) and shows the sign-in form.
    expect(theirs.get_by_label("Username")).to_be_visible()
    theirs.get_by_label("Username").fill(target["username"])
    theirs.get_by_label("Password").fill(PASSWORD)
    theirs.get_by_role("button", name="Sign in").click()
    expect(theirs.get_by_role("alert")).to_have_text(
        "This account is disabled. Ask an administrator to enable it."
    )
    theirs.screenshot(path=shots / "account-disabled-sign-in.png")

    panel.get_by_role("button", name=f"Enable {target['username']}").click()
    expect(row).to_contain_text("active")
    assert login_status(server, target["username"], PASSWORD) == 200

    panel.get_by_role("button", name=f"Delete {target['username']}").click()
    confirm = page.get_by_role("alertdialog", name=f"Delete {target['username']}?")
    expect(confirm).to_contain_text("cannot be undone")
    page.screenshot(path=shots / "account-delete-confirm.png")
    confirm.get_by_role("button", name="Cancel").click()
    expect(row).to_have_count(1)
    panel.get_by_role("button", name=f"Delete {target['username']}").click()
    page.get_by_role("alertdialog").get_by_role("button", name="Delete user").click()
    expect(row).to_have_count(0)
    expect(panel.get_by_role("status").last).to_contain_text(f"Deleted {target['username']}")
    page.screenshot(path=shots / "account-users-deleted.png")
    assert login_status(server, target["username"], PASSWORD) == 401
    listed = admin["http"].get("/users").json()
    assert target["username"] not in {u["username"] for u in listed}


def test_the_account_panel_shows_storage_used_and_the_quota(
    web: Browsing, server: Server, shots: Path
) -> None:
    user = server.user()
    http = user["http"]
    session = http.post("/sessions", json={"title": "kept"}).json()["id"]
    me = http.get("/users/me").json()
    root = server.users["root"]["http"]
    assert root.patch(f"/users/{me['id']}", json={"storage_quota_bytes": 1024}).status_code == 200
    used = http.get("/me/usage").json()["storage"]["used_bytes"]
    assert 0 < used < 1024

    page = web.open(user)
    panel = open_account(page)
    storage = panel.get_by_role("region", name="Storage")
    expect(storage).to_contain_text(f"{used} bytes used of 1.0 KiB")
    expect(storage.get_by_role("meter")).to_have_attribute("value", str(used))
    expect(storage.get_by_role("alert")).to_have_count(0)
    page.screenshot(path=shots / "account-storage.png")

    # Full: the panel says what is refused and how to free space.
    assert root.patch(f"/users/{me['id']}", json={"storage_quota_bytes": used}).status_code == 200
    assert http.post(f"/sessions/{session}/turns", json={"content": "hi"}).status_code == 507
    page.get_by_role("button", name="Close the account panel").click()
    panel = open_account(page)
    storage = panel.get_by_role("region", name="Storage")
    expect(storage.get_by_role("alert")).to_contain_text("Your storage is full")
    page.screenshot(path=shots / "account-storage-full.png")
