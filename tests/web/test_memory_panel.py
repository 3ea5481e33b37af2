"""The memory panel in Chromium: the live character count against the limit, saving (a
backup first) and restoring a backup, the question before unsaved edits are thrown away, a
file changed meanwhile never overwritten, and the identity read-only for a plain user."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.sync_api import Locator, Page, expect

from tests.web.conftest import Browsing, Server, poll


def open_memory(page: Page) -> Locator:
    page.get_by_role("button", name="Agent memory").click()
    panel = page.get_by_role("dialog", name="Agent memory")
    # The spec's tab names, in its order: the identity, then the user's two files.
    expect(panel.get_by_role("tab")).to_contain_text(["Identity", "Preferences", "Notes"])
    expect(panel.get_by_role("tab", name="Preferences")).to_have_attribute("aria-selected", "true")
    return panel


def editor(panel: Locator, kind: str) -> Locator:
    return panel.locator(f"#memory-panel-{kind} .cm-content")


def count(panel: Locator, kind: str) -> Locator:
    return panel.locator(f"#memory-panel-{kind} [data-testid=char-count]")


def memory(account: dict[str, Any], kind: str) -> dict[str, Any]:
    response = account["http"].get(f"/memory/{kind}")
    assert response.status_code == 200, response.text
    return response.json()


def write(account: dict[str, Any], kind: str, content: str) -> None:
    response = account["http"].put(f"/memory/{kind}", json={"content": content})
    assert response.status_code == 200, response.text


def type_at_end(page: Page, box: Locator, text: str) -> None:
    box.click()
    page.keyboard.press("Control+End")
    page.keyboard.insert_text(text)


def test_the_count_follows_typing_blocks_saving_past_the_limit_and_saves_with_a_backup(
    web: Browsing, user: dict[str, Any], shots: Path
) -> None:
    write(user, "user", "- Answer in English\n")
    limit = memory(user, "user")["limit"]
    page = web.open(user)
    panel = open_memory(page)
    expect(count(panel, "user")).to_have_text(f"20 / {limit:,} characters")
    save = panel.get_by_role("button", name="Save")
    expect(save).to_be_disabled()  # nothing to save yet

    type_at_end(page, editor(panel, "user"), "- Prefers tables\n")
    expect(count(panel, "user")).to_have_text(f"37 / {limit:,} characters")
    expect(save).to_be_enabled()

    page.keyboard.insert_text("x" * limit)
    expect(count(panel, "user")).to_contain_text(f"{37 + limit:,} / {limit:,} characters")
    expect(count(panel, "user")).to_contain_text("37 over the limit")
    expect(count(panel, "user")).to_have_class("memory-count over")
    expect(count(panel, "user")).to_have_css("color", page.evaluate(DANGER_COLOR))
    expect(save).to_be_disabled()
    expect(panel.get_by_role("alert")).to_contain_text("over its limit")
    page.screenshot(path=shots / "memory-over-limit.png")

    page.keyboard.press("Control+a")
    page.keyboard.insert_text("- Answer in English\n- Prefers tables\n")
    expect(count(panel, "user")).to_have_text(f"37 / {limit:,} characters")
    save.click()
    expect(panel.get_by_role("status")).to_contain_text("Saved USER.md")
    assert memory(user, "user")["content"] == "- Answer in English\n- Prefers tables\n"
    expect(save).to_be_disabled()
    type_at_end(page, editor(panel, "user"), "x" * limit)  # seen before: "Saved" stayed
    expect(panel.get_by_role("alert")).to_contain_text("over its limit")
    expect(panel.locator("#memory-panel-user .pn-status")).to_have_text("")
    page.keyboard.press("Control+a")
    page.keyboard.insert_text("- Answer in English\n- Prefers tables\n")
    expect(save).to_be_disabled()

    # The save backed the previous file up; restoring it puts it back (and is undoable too).
    backups = panel.locator("#memory-panel-user .memory-backup-list li")
    expect(backups).to_have_count(1)  # the file as it was before this save
    backups.first.get_by_role("button", name="Restore").click()
    expect(panel.get_by_role("status")).to_contain_text("Restored the backup of")
    assert memory(user, "user")["content"] == "- Answer in English\n"
    expect(editor(panel, "user")).to_have_text("- Answer in English")
    expect(count(panel, "user")).to_have_text(f"20 / {limit:,} characters")
    expect(backups).to_have_count(2)
    assert page.errors == []  # type: ignore[attr-defined]


# The colour the shell gives errors: the count past the limit uses it.
DANGER_COLOR = """() => {
  const probe = document.createElement("span");
  probe.style.color = "var(--danger)";
  document.body.append(probe);
  const color = getComputedStyle(probe).color;
  probe.remove();
  return color;
}"""


def test_closing_with_unsaved_edits_asks_first(web: Browsing, user: dict[str, Any]) -> None:
    write(user, "agent", "- Project uses pnpm\n")
    page = web.open(user)
    panel = open_memory(page)
    panel.get_by_role("tab", name="Notes").click()
    expect(editor(panel, "agent")).to_have_text("- Project uses pnpm")
    type_at_end(page, editor(panel, "agent"), "- Node 22\n")
    expect(panel.get_by_role("tab", name="Notes")).to_contain_text("(unsaved)")

    panel.get_by_role("button", name="Close the memory panel").click()
    question = page.get_by_role("alertdialog", name="Discard unsaved edits?")
    expect(question).to_contain_text("MEMORY.md")
    question.get_by_role("button", name="Keep editing").click()
    expect(question).to_be_hidden()
    expect(editor(panel, "agent")).to_contain_text("- Node 22")

    panel.get_by_role("tab", name="Notes").focus()
    page.keyboard.press("Escape")  # Escape asks too
    question.get_by_role("button", name="Discard and close").click()
    expect(panel).to_be_hidden()
    assert memory(user, "agent")["content"] == "- Project uses pnpm\n"

    # Without edits, closing does not ask; reopened, the file is as saved.
    panel = open_memory(page)
    panel.get_by_role("tab", name="Notes").click()
    expect(editor(panel, "agent")).to_have_text("- Project uses pnpm")
    panel.get_by_role("button", name="Close the memory panel").click()
    expect(panel).to_be_hidden()
    expect(question).to_have_count(0)


def test_a_file_changed_meanwhile_is_not_overwritten_and_can_be_reloaded(
    web: Browsing, user: dict[str, Any], shots: Path
) -> None:
    write(user, "user", "- Answer in English\n")
    page = web.open(user)
    panel = open_memory(page)
    expect(editor(panel, "user")).to_have_text("- Answer in English")
    type_at_end(page, editor(panel, "user"), "- Mine\n")

    write(user, "user", "- Answer in German\n")  # the assistant, or another window
    panel.get_by_role("button", name="Save").click()
    conflict = panel.get_by_role("alert").filter(has_text="changed meanwhile")
    expect(conflict).to_contain_text("USER.md changed meanwhile")
    assert memory(user, "user")["content"] == "- Answer in German\n"
    page.screenshot(path=shots / "memory-conflict.png")

    conflict.get_by_role("button", name="Reload USER.md").click()
    expect(editor(panel, "user")).to_have_text("- Answer in German")
    expect(conflict).to_be_hidden()
    expect(panel.get_by_role("button", name="Save")).to_be_disabled()
    panel.get_by_role("button", name="Close the memory panel").click()
    expect(panel).to_be_hidden()  # nothing unsaved after the reload


def test_only_administrators_edit_the_identity(
    web: Browsing, server: Server, user: dict[str, Any]
) -> None:
    page = web.open(user)
    panel = open_memory(page)
    panel.get_by_role("tab", name="Identity").click()
    identity = panel.locator("#memory-panel-identity")
    expect(identity).to_contain_text("Only administrators can edit the identity")
    expect(editor(panel, "identity")).to_contain_text("You are Eonyx")
    expect(editor(panel, "identity")).to_have_attribute("contenteditable", "false")
    expect(identity.get_by_role("button", name="Save")).to_have_count(0)
    expect(identity.get_by_role("heading", name="Backups of IDENTITY.md")).to_have_count(0)
    editor(panel, "identity").click()
    page.keyboard.insert_text("hacked ")
    expect(editor(panel, "identity")).not_to_contain_text("hacked")

    admin = server.user(admin=True)
    before = memory(admin, "identity")["content"]
    page = web.open(admin)
    panel = open_memory(page)
    panel.get_by_role("tab", name="Identity").click()
    identity = panel.locator("#memory-panel-identity")
    expect(identity).not_to_contain_text("Only administrators")
    type_at_end(page, editor(panel, "identity"), "\n- Sign every answer with a dash.\n")
    identity.get_by_role("button", name="Save").click()
    expect(identity.get_by_role("status")).to_contain_text("Saved IDENTITY.md")
    poll(lambda: memory(admin, "identity")["content"] != before, "the identity saved")
    assert memory(admin, "identity")["content"].endswith("- Sign every answer with a dash.\n")
