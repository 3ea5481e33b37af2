"""Bringing people in from the browser: an administrator makes an invite link in the Users
panel and copies it; the person opens it, chooses a username and password and lands in the
chat; a used link says so. The administrator also creates a user, promotes them, and resets
a password, which the user must change at their next sign-in before anything else."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import Locator, Page, expect

from tests.web.conftest import PASSWORD, Browsing, Server

CHOSEN = "my own long password"


def open_users(page: Page) -> Locator:
    page.get_by_role("button", name="Account").click()
    panel = page.get_by_role("dialog", name="Account")
    expect(panel.get_by_role("heading", name="Users")).to_be_visible()
    return panel


def test_an_admin_makes_an_invite_link_and_the_person_joins_with_it(
    web: Browsing, server: Server, shots: Path
) -> None:
    admin = server.user(admin=True)
    context = web.context(permissions=["clipboard-read", "clipboard-write"])
    page = web.open(admin, context)
    panel = open_users(page)
    invites = panel.get_by_role("form", name="Invite someone")
    invites.get_by_role("button", name="Make invite link").click()
    link = invites.get_by_label("Invite link", exact=False)
    expect(link).to_have_value(re.compile(rf"^{re.escape(server.url)}/invite/[A-Za-z0-9_-]+$"))
    url = link.input_value()
    assert url.startswith(f"{server.url}/invite/")
    invites.get_by_role("button", name="Copy").click()
    expect(invites.locator(".invite-status")).to_have_text("Link copied.")
    assert page.evaluate("navigator.clipboard.readText()") == url
    expect(
        invites.get_by_role("list", name="Invites not used yet").get_by_role("listitem")
    ).to_have_count(1)
    link.scroll_into_view_if_needed()
    page.screenshot(path=shots / "users-invite-link.png")

    joining = web.context().new_page()
    joining.goto(url)
    form = joining.get_by_role("form", name="Join Eonyx")
    form.get_by_label("Username").fill("newcomer")
    form.get_by_label("Password", exact=True).fill(CHOSEN)
    form.get_by_label("Repeat the password").fill(CHOSEN)
    joining.screenshot(path=shots / "invite-accept-page.png")
    form.get_by_label("Repeat the password").fill(CHOSEN + "x")
    form.get_by_role("button", name="Create account and sign in").click()
    expect(form.get_by_role("alert")).to_have_text("The password and its repetition differ.")
    form.get_by_label("Repeat the password").fill(CHOSEN)
    form.get_by_role("button", name="Create account and sign in").click()
    expect(joining.get_by_role("button", name="New chat")).to_be_visible()
    assert joining.url == f"{server.url}/"
    joining.reload()  # the session cookie holds
    expect(joining.get_by_role("button", name="New chat")).to_be_visible()

    late = web.context().new_page()
    late.goto(url)
    late_form = late.get_by_role("form", name="Join Eonyx")
    late_form.get_by_label("Username").fill("latecomer")
    late_form.get_by_label("Password", exact=True).fill(CHOSEN)
    late_form.get_by_label("Repeat the password").fill(CHOSEN)
    late_form.get_by_role("button", name="Create account and sign in").click()
    expect(late_form.get_by_role("alert")).to_have_text(
        "This invite was already used. Ask an administrator for a new link."
    )
    late.screenshot(path=shots / "invite-used.png")

    page.reload()
    panel = open_users(page)
    row = panel.get_by_role("table", name="Users").locator('tr[data-user="newcomer"]')
    expect(row).to_contain_text("user")
    expect(row.locator(".user-last-active")).not_to_have_text("never")


def test_an_admin_creates_promotes_and_resets_a_user(
    web: Browsing, server: Server, shots: Path
) -> None:
    admin = server.user(admin=True)
    page = web.open(admin)
    panel = open_users(page)
    create = panel.get_by_role("form", name="Create a user")
    create.get_by_label("Username").fill("made-here")
    create.get_by_label("Password").fill(PASSWORD)
    create.get_by_role("button", name="Create user").click()
    users = panel.get_by_role("table", name="Users")
    row = users.locator('tr[data-user="made-here"]')
    expect(row).to_contain_text("never")

    panel.get_by_role("button", name="Promote made-here").click()
    expect(row.locator(".pn-badge")).to_have_text("admin")
    panel.get_by_role("button", name="Demote made-here").click()
    expect(row.locator(".pn-badge")).to_have_count(0)

    panel.get_by_role("button", name="Reset password of made-here").click()
    dialog = page.get_by_role("dialog", name="Reset the password of made-here")
    dialog.get_by_label("Temporary password").fill("temporary horse")
    dialog.get_by_role("button", name="Reset password").click()
    expect(row).to_contain_text("must change password")
    page.screenshot(path=shots / "users-reset-password.png")

    theirs = web.context().new_page()
    theirs.goto("/")
    theirs.get_by_label("Username").fill("made-here")
    theirs.get_by_label("Password").fill("temporary horse")
    theirs.get_by_role("button", name="Sign in").click()
    expect(theirs.get_by_role("heading", name="Choose a new password")).to_be_visible()
    expect(theirs.get_by_role("button", name="New chat")).to_have_count(0)
    theirs.get_by_label("Current password").fill("temporary horse")
    theirs.get_by_label("New password", exact=True).fill(CHOSEN)
    theirs.get_by_label("Repeat new password").fill(CHOSEN)
    theirs.screenshot(path=shots / "must-change-password.png")
    theirs.get_by_role("button", name="Change password").click()
    expect(theirs.get_by_role("button", name="New chat")).to_be_visible()
    page.reload()
    panel = open_users(page)
    expect(
        panel.get_by_role("table", name="Users").locator('tr[data-user="made-here"]')
    ).not_to_contain_text("must change password")
