"""Accessibility of the main screens, checked by axe-core inside the page (the copy
api/web/vendor.sh takes from npm, tests/web/axe.min.js, never served in production: the
browser fetches it from the page's origin, so the CSP allows it, and the test answers that
request itself): sign-in, the sidebar with a chat, the memory panel, the model settings and
the account panel, in the light and the dark scheme. No serious or critical violation is
allowed.

The light run also takes the README's screenshots (`readme-*.png`); run with
EONYX_WEB_SHOTS=docs/screenshots to refresh the committed ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.fake_llm import text
from tests.web.conftest import Browsing, Server

AXE = Path(__file__).parent / "axe.min.js"
AXE_URL = "/__tests__/axe.min.js"  # answered by the test (page.route), not the server
SERIOUS = """async () => {
  const result = await axe.run(document, { resultTypes: ["violations"] });
  return result.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.impact} ${v.id} (${v.help}): ` +
      v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", "));
}"""

ANSWER = """Three options for a calm weekend in Lisbon:

1. **Belém** in the morning, before the crowds: the tower, then *pastéis* at the old bakery.
2. A tram 28 ride, off at Graça for the view.
3. An evening walk along the river to Cais do Sodré.

To check the tram times from a script:

```python
import httpx

def next_trams(stop: str) -> list[str]:
    return httpx.get(f"https://example.org/trams/{stop}").json()["times"]
```
"""
CHATS = [
    ("Quarterly report outline", True),
    ("Fix the flaky upload test", False),
    ("Recipe: lemon risotto", False),
    ("Compare Postgres and SQLite for the index", False),
    ("Birthday gift ideas", False),
    ("Rust lifetimes, explained", False),
    ("Draft: team offsite agenda", False),
    ("Kubernetes probes: liveness vs readiness", False),
]


def with_axe(page: Page) -> Page:
    """The page, its requests for AXE_URL answered with the tests' copy of axe-core."""
    page.route(
        f"**{AXE_URL}", lambda route: route.fulfill(path=AXE, content_type="text/javascript")
    )
    return page


def serious_violations(page: Page) -> list[str]:
    page.add_script_tag(url=AXE_URL)
    return page.evaluate(SERIOUS)


def furnish(account: dict[str, Any]) -> None:
    """A sidebar that looks lived in: a folder, a pinned chat, a few others."""
    http = account["http"]
    folder = http.post("/folders", json={"name": "Work", "color": "blue"})
    assert folder.status_code == 201, folder.text
    for title, pinned in CHATS:
        created = http.post("/sessions", json={"title": title})
        assert created.status_code == 201, created.text
        if pinned:
            http.patch(f"/sessions/{created.json()['id']}", json={"pinned": True})
    memory = "- Prefers **concise** answers, code first\n- Works in Python and `TypeScript`\n"
    assert http.put("/memory/user", json={"content": memory}).status_code == 200


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_main_screens_have_no_serious_violations(
    web: Browsing, server: Server, scheme: str, shots: Path
) -> None:
    keep = scheme == "light"
    context = web.context(color_scheme=scheme)
    page = with_axe(context.new_page())
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto("/")
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    assert serious_violations(page) == [], "sign-in"

    admin = server.user(admin=True)
    furnish(admin)
    marker = f"lisbon-{scheme}"
    server.model.answers[marker] = text(ANSWER)
    server.model.titles[marker] = text("A calm weekend in Lisbon")
    web.sign_in(page, admin)
    page.get_by_label("Message").fill(f"Plan a calm weekend in Lisbon for me ({marker})")
    page.get_by_role("button", name="Send").click()
    answer = page.locator(".message.from-assistant").last
    expect(answer.locator("pre code.hljs")).to_be_visible()
    expect(page.locator(".chat-list")).to_contain_text("A calm weekend in Lisbon")
    expect(page.get_by_role("button", name="Send")).to_be_visible()
    assert serious_violations(page) == [], "sidebar and chat"
    if keep:
        page.screenshot(path=shots / "readme-chat.png")
        row = page.locator(".chat-list .row").filter(has_text="Fix the flaky upload test")
        row.hover()
        page.locator("nav.sidebar").screenshot(path=shots / "readme-sidebar.png")

    page.get_by_role("button", name="Agent memory").click()
    panel = page.get_by_role("dialog", name="Agent memory")
    expect(panel.locator("#memory-panel-user .cm-content")).to_contain_text("answers, code first")
    assert serious_violations(page) == [], "memory panel"
    if keep:
        page.screenshot(path=shots / "readme-memory.png")
    panel.get_by_role("tab", name="Identity").click()
    expect(panel.locator("#memory-panel-identity .cm-content")).to_contain_text("You are Eonyx")
    assert serious_violations(page) == [], "memory panel, identity"
    panel.get_by_role("button", name="Close the memory panel").click()
    expect(panel).to_be_hidden()

    page.get_by_role("button", name="Model settings").click()
    settings = page.get_by_role("dialog", name="Model settings")
    expect(settings.get_by_role("heading", name="Task model assignments")).to_be_visible()
    assert serious_violations(page) == [], "model settings"
    if keep:
        page.screenshot(path=shots / "readme-models.png")
    settings.get_by_role("button", name="Close model settings").click()
    expect(settings).to_be_hidden()

    page.get_by_role("button", name="Account").click()
    account = page.get_by_role("dialog", name="Account")
    expect(account.get_by_role("table", name="Users")).to_contain_text(admin["username"])
    assert serious_violations(page) == [], "account panel"
    assert errors == []
