"""Model tokens in the account panel, in Chromium (issue 38, item 4): a user sees their month
and budget (and that it is used up); an administrator sees every user's tokens and budget
in a table, for the month they choose; a plain user sees no such table."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.fake_llm import text
from tests.web.conftest import Browsing, Server, poll
from tests.web.test_account_web import open_account


def _total(server_user: dict) -> int:
    return server_user["http"].get("/me/usage").json()["tokens"]["total_tokens"]


def _open_tokens(page: Page):  # type: ignore[no-untyped-def]
    return open_account(page).get_by_role("region", name="Model tokens")


def test_users_see_their_tokens_and_admins_everyones(
    web: Browsing, server: Server, shots: Path
) -> None:
    user = server.user()
    admin = server.user(admin=True)
    marker = "tokens-web-1"
    server.model.answers[marker] = text(
        "Counted.", usage={"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    )
    server.model.titles[marker] = text(
        "Counted title", usage={"prompt_tokens": 30, "completion_tokens": 3, "total_tokens": 33}
    )
    http = user["http"]
    session = http.post("/sessions", json={}).json()["id"]
    assert http.post(f"/sessions/{session}/turns", json={"content": marker}).status_code == 200
    poll(lambda: _total(user) == 153, "the turn and its title job counted")
    me = http.get("/users/me").json()
    root = server.users["root"]["http"]
    assert root.patch(f"/users/{me['id']}", json={"monthly_token_budget": 1000}).status_code == 200
    month = datetime.now(UTC).strftime("%Y-%m")

    page = web.open(user)
    mine = _open_tokens(page)
    expect(mine).to_contain_text(f"153 tokens used in {month} of 1,000 (15 %)")
    expect(mine.get_by_role("meter")).to_have_attribute("value", "153")
    expect(mine.get_by_role("alert")).to_have_count(0)
    expect(page.get_by_role("heading", name="Token usage")).to_have_count(0)  # not an admin
    page.screenshot(path=shots / "account-tokens.png")

    page = web.open(admin)
    panel = open_account(page)
    expect(panel.get_by_role("region", name="Model tokens")).to_contain_text(
        f"0 tokens used in {month}, no budget"
    )
    table = panel.get_by_role("table", name=f"Token usage in {month}")
    row = table.locator(f'tr[data-user="{user["username"]}"]')
    # what each stores now, beside the month's tokens: the user's session file, of the
    # deployment's default quota (5 GiB)
    stored = {entry["username"]: entry["storage"] for entry in root.get("/usage/users").json()}
    assert stored[user["username"]]["used_bytes"] > 0
    used = stored[user["username"]]["used_bytes"]
    stored_text = f"{used} bytes of 5.0 GiB" if used < 1024 else f"{used / 1024:.1f} KiB of 5.0 GiB"
    expect(row.locator("td")).to_have_text(["2", "130", "23", "153", "1,000", "847", stored_text])
    expect(table.locator(f'tr[data-user="{admin["username"]}"] td')).to_have_text(
        ["0", "0", "0", "0", "none", "—", "0 bytes of 5.0 GiB"]
    )
    row.scroll_into_view_if_needed()
    page.screenshot(path=shots / "account-token-usage-admin.png", full_page=True)
    panel.get_by_label("Month").fill("2001-02")
    table = panel.get_by_role("table", name="Token usage in 2001-02")
    expect(table.locator(f'tr[data-user="{user["username"]}"] td').nth(3)).to_have_text("0")

    assert root.patch(f"/users/{me['id']}", json={"monthly_token_budget": 100}).status_code == 200
    page = web.open(user)
    mine = _open_tokens(page)
    expect(mine.get_by_role("alert")).to_contain_text("Your token budget for this month is used up")
    page.screenshot(path=shots / "account-tokens-used-up.png")
    refused = http.post(f"/sessions/{session}/turns", json={"content": "more"})
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "budget_exceeded"
