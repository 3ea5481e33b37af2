"""SVG snapshots of `eonyx chat`: the main screen and the session manager, fed fixed data by
`StubAPI`, compared with the SVGs kept in tests/cli/snapshots/; and the main screen when the
server cannot be reached, the typed message back in the box.

After a deliberate change of the screens, write them again and look at them before
committing: `EONYX_UPDATE_SNAPSHOTS=1 pytest tests/cli/test_chat_snapshots.py` (this also
refreshes the README's screenshots, docs/eonyx-chat.svg and docs/eonyx-chat-offline.svg).
A failing comparison leaves the new picture beside the kept one as `<name>.actual.svg`.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest
from textual.pilot import Pilot

from cli.chat.app import ChatApp
from cli.chat.manager import SessionManager
from tests.cli.chat_stub import StubAPI

SNAPSHOTS = Path(__file__).parent / "snapshots"
README_SHOT = Path(__file__).parents[2] / "docs" / "eonyx-chat.svg"
OFFLINE_SHOT = README_SHOT.with_name("eonyx-chat-offline.svg")
UPDATE = os.environ.get("EONYX_UPDATE_SNAPSHOTS") == "1"
SIZE = (100, 34)
PROJECT = {
    "project_context": [
        {"path": "AGENTS.md", "content": "Stack: Go and PostgreSQL."},
        {"path": "services/billing/AGENTS.md", "content": "Amounts are integer cents."},
    ]
}


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> None:
    """Times are shown in local time: make it the same everywhere."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()


def check(name: str, svg: str, also: Path | None = None) -> None:
    kept = SNAPSHOTS / f"{name}.svg"
    actual = SNAPSHOTS / f"{name}.actual.svg"
    if UPDATE:
        SNAPSHOTS.mkdir(exist_ok=True)
        kept.write_text(svg)
        if also is not None:
            also.parent.mkdir(exist_ok=True)
            also.write_text(svg)
        return
    if kept.read_text() != svg:
        actual.write_text(svg)
        pytest.fail(f"the screen differs from {kept}; see {actual}")
    actual.unlink(missing_ok=True)


async def settle(app: ChatApp, pilot: Pilot[None]) -> None:
    await pilot.pause()
    while app.workers_in("open", "list") or any(
        isinstance(s, SessionManager) and s.workers_in("list") for s in app.screen_stack
    ):
        await pilot.pause(0.05)
    await pilot.pause(0.2)


def test_snapshots_of_the_main_screen_and_the_session_manager() -> None:
    async def play() -> None:
        app = ChatApp(
            StubAPI(),
            session_id="20260705T091500-1a2b3c4d",
            project=PROJECT,
            live_events=False,
        )
        async with app.run_test(size=SIZE) as pilot:
            app.query_one("#prompt").cursor_blink = False  # type: ignore[attr-defined]
            await settle(app, pilot)
            check("main_screen", app.export_screenshot(title="eonyx chat"), also=README_SHOT)
            await pilot.press("ctrl+s")
            await settle(app, pilot)
            assert isinstance(app.screen, SessionManager)
            check("session_manager", app.export_screenshot(title="eonyx chat: sessions"))
            await pilot.press("escape")
            await settle(app, pilot)
            app.query_one("#prompt").value = "Is the deploy done?"  # type: ignore[attr-defined]
            await pilot.press("enter")
            while app.workers_in("turn"):
                await pilot.pause(0.05)
            await settle(app, pilot)
            check("server_down", app.export_screenshot(title="eonyx chat"), also=OFFLINE_SHOT)

    asyncio.run(play())
