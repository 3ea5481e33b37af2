"""Model settings in Chromium: an administrator adds an offering, assigns it to a task and
removes it, and never sees a key (the page only names the variable that holds it, and masks
credentials in a URL); a plain user has no settings at all."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.web.conftest import Browsing, Server, running_server

SECRET = "sk-web-test-secret-0123456789"
URL_SECRET = "url-secret-9876"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The module's server, with a key in the variable an offering names."""
    with running_server(tmp_path_factory.mktemp("web-models"), EONYX_KEY_WEBTEST=SECRET) as running:
        yield running


def open_settings(page: Page) -> Locator:
    page.get_by_role("button", name="Model settings").click()
    panel = page.get_by_role("dialog", name="Model settings")
    expect(panel.get_by_role("heading", name="Task model assignments")).to_be_visible()
    return panel


def no_secret_in(page: Page) -> None:
    html = page.content()
    assert SECRET not in html
    assert URL_SECRET not in html
    for value in page.locator("input").evaluate_all("inputs => inputs.map(i => i.value)"):
        assert SECRET not in value


def role_of(account: dict[str, Any], role: str) -> dict[str, Any]:
    response = account["http"].get(f"/models/roles/{role}")
    assert response.status_code == 200, response.text
    return response.json()


def test_an_admin_adds_assigns_and_removes_an_offering_and_never_sees_a_key(
    web: Browsing, server: Server
) -> None:
    admin = server.user(admin=True)
    page = web.open(admin)
    panel = open_settings(page)
    rows = panel.locator("table.offering-table tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("default")
    expect(rows.first).to_contain_text("built-in")

    form = panel.get_by_role("form", name="Add an offering")
    form.get_by_label("Id").fill("small")
    # a query string would land before the path the client appends (/chat/completions)
    form.get_by_label("Base URL").fill(f"http://127.0.0.1:9/v1?key={URL_SECRET}")
    form.get_by_label("Model", exact=True).fill("small-model")
    form.get_by_label("Key variable").fill("EONYX_KEY_WEBTEST")
    form.get_by_label("Context window").fill("32000")
    form.get_by_role("button", name="Add offering").click()
    expect(form.get_by_role("alert")).to_contain_text("Not added: ")
    expect(form.get_by_role("alert")).to_contain_text("no query string")
    expect(rows).to_have_count(1)

    form.get_by_label("Base URL").fill(f"http://reader:{URL_SECRET}@127.0.0.1:9/v1")
    form.get_by_label("Key variable").fill("OPENAI_API_KEY")  # not a variable meant for keys
    form.get_by_role("button", name="Add offering").click()
    expect(form.get_by_role("alert")).to_contain_text("Not added: ")
    expect(form.get_by_role("alert")).to_contain_text("EONYX_KEY_")
    expect(rows).to_have_count(1)

    form.get_by_label("Key variable").fill("EONYX_KEY_WEBTEST")
    form.get_by_role("button", name="Add offering").click()
    small = rows.filter(has_text="small-model")
    expect(small).to_contain_text("EONYX_KEY_WEBTEST set")
    expect(small).to_contain_text("http://***@127.0.0.1:9/v1")
    expect(small).to_contain_text("32,000")
    expect(form.get_by_label("Id")).to_have_value("")  # the form is cleared for the next one
    no_secret_in(page)

    titles = panel.get_by_label("Chat titles")
    expect(titles).to_have_value("")  # "Same as chat"
    titles.select_option("small")
    expect(panel.get_by_role("status").filter(has_text="session_title")).to_contain_text("small")
    assert role_of(admin, "session_title") == {
        "role": "session_title",
        "offering_id": "small",
        "explicit": True,
    }

    page.reload()
    panel = open_settings(page)
    expect(panel.get_by_label("Chat titles")).to_have_value("small")
    expect(panel.get_by_label("Summarization")).to_have_value("")
    panel.get_by_label("Chat titles").select_option(label="Same as chat")
    expect(panel.get_by_role("status").filter(has_text="session_title")).to_contain_text(
        "same as chat"
    )
    assert role_of(admin, "session_title")["explicit"] is False

    panel.get_by_label("Summarization").select_option("small")
    expect(panel.get_by_role("status").filter(has_text="summarization")).to_contain_text("small")
    panel.get_by_role("button", name="Remove small").click()
    expect(panel.locator("table.offering-table tbody tr")).to_have_count(1)
    expect(panel.get_by_label("Summarization")).to_have_value("")  # its task falls back
    listed = admin["http"].get("/models/offerings").json()
    assert [o["id"] for o in listed] == ["default"]
    assert role_of(admin, "summarization")["explicit"] is False
    no_secret_in(page)
    assert page.errors == []  # type: ignore[attr-defined]


def test_a_plain_user_sees_no_admin_settings(web: Browsing, user: dict[str, Any]) -> None:
    page = web.open(user)
    footer = page.locator(".sidebar-footer")
    expect(footer.get_by_role("button", name="Agent memory")).to_be_visible()
    expect(page.get_by_role("button", name="Model settings")).to_have_count(0)
    expect(page.get_by_text("Task model assignments")).to_have_count(0)
    # The module itself, loaded by hand, shows nothing but that the settings are for admins.
    shown = page.evaluate(
        """async () => {
          const { html, render } = await import("/static/vendor/preact.js");
          const { default: Settings } = await import("/static/panels/models.js");
          const host = document.createElement("div");
          document.body.append(host);
          const api = { get: async () => { throw new Error("no request expected"); } };
          const user = { is_admin: false };
          render(html`<${Settings} api=${api} user=${user} onClose=${() => {}} />`, host);
          const text = host.textContent;
          render(null, host);
          host.remove();
          return text;
        }"""
    )
    assert "for administrators" in shown
    assert "Task model assignments" not in shown
