"""`eonyx chat` driven by Textual's headless pilot against a live server and the fake model.

The app is an HTTP client, so these run on the embedded backend only; the API's own tests
cover both backends.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Markdown, OptionList, Static
from textual.widgets.data_table import RowKey

from cli.api_client import AsyncApiClient
from cli.chat.app import ChatApp
from cli.chat.manager import Confirm, Prompt, SessionManager
from cli.chat.widgets import AnswerEntry, Gauge, Notice, StepEntry, UserEntry
from cli.command import main
from cli.run import project_part
from shared.core.events import SessionTitle
from shared.core.messages import MAX_MESSAGE_CHARS
from shared.infra import event_bus
from shared.llm.tools import Tool
from shared.sessions import service as session_service
from tests.cli.conftest import Live
from tests.fake_llm import error, fake_llm, text, tool_call, tool_calls

__all__ = ["fake_llm"]
pytestmark = pytest.mark.parametrize("backend", ["embedded"], indirect=True)
SIZE = (100, 36)
WAIT = 15.0  # seconds a condition may take before the test fails (never a timing assertion)

Scenario = Callable[[ChatApp, Pilot[None]], Awaitable[None]]


def drive(live: Live, scenario: Scenario, workdir: Path | None = None, **options: Any) -> None:
    """Run the app against the live server and play `scenario` on it."""

    async def play() -> None:
        api = AsyncApiClient(live.url, live.user.token)
        options.setdefault("project", project_part(None))
        app = ChatApp(api, workdir=workdir, **options)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: not app.workers_in("open"))
            await scenario(app, pilot)

    asyncio.run(play())


async def until(pilot: Pilot[None], condition: Callable[[], Any], what: str = "") -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"waited {WAIT:.0f} s for {what or condition}")
        await pilot.pause(0.02)


def text_of(widget: Static) -> str:
    return str(widget.visual)


def header_title(app: ChatApp) -> str:
    return text_of(app.query_one("#title", Static))


def entries(app: ChatApp) -> list[tuple[str, str]]:
    """What the conversation shows: (kind, text) per entry, notices included."""
    shown: list[tuple[str, str]] = []
    for widget in app.query("#conversation > *"):
        if isinstance(widget, UserEntry):
            shown.append(("user", widget.text))
        elif isinstance(widget, AnswerEntry):
            shown.append(("answer", widget.query_one(Markdown).source))
        elif isinstance(widget, StepEntry):
            shown.append(("step", str(widget.title)))
        elif isinstance(widget, Notice):
            shown.append((widget.kind, widget.text))
    return shown


async def type_line(pilot: Pilot[None], line: str) -> None:
    prompt = pilot.app.query_one("#prompt", Input)
    prompt.focus()
    prompt.value = line
    await pilot.press("enter")


async def idle(app: ChatApp, pilot: Pilot[None]) -> None:
    """Until the turn, the commands and the loads in progress are done."""
    await pilot.pause()
    await until(pilot, lambda: not app.workers_in("turn", "command", "open"), "the app")


def seed(live: Live, *answers: str) -> str:
    """A session with one turn per answer, made through the API; its id."""
    session_id = live.api("POST", "/sessions", json={})["id"]
    for number, answer in enumerate(answers):
        live.llm.script(text(answer))
        live.api("POST", f"/sessions/{session_id}/turns", json={"content": f"q{number}"})
    return session_id


# -- start-up --------------------------------------------------------------------------------


def test_it_resumes_the_most_recently_updated_session(live: Live) -> None:
    older = seed(live, "old answer")
    live.api("PATCH", f"/sessions/{older}", json={"pinned": True})  # listed first, yet older
    recent = seed(live, "the **latest** answer")
    seed_title = live.api("GET", f"/sessions/{recent}")["title"]

    async def scenario(app: ChatApp, pilot: Pilot[None]) -> None:
        assert app.session is not None
        assert app.session["id"] == recent
        assert header_title(app) == seed_title
        assert entries(app) == [("user", "q0"), ("answer", "the **latest** answer")]
        assert not app.query_one(Gauge).display  # no context window: no gauge
        assert app.focused is app.query_one("#prompt")

    drive(live, scenario)


def test_a_given_session_or_a_new_one(live: Live) -> None:
    first = seed(live, "first")
    seed(live, "second")

    async def given(app: ChatApp, pilot: Pilot[None]) -> None:
        assert app.session is not None
        assert app.session["id"] == first

    drive(live, given, session_id=first)

    async def fresh(app: ChatApp, pilot: Pilot[None]) -> None:
        assert app.session is None
        assert header_title(app) == "new session"
        assert entries(app) == []
        live.llm.script(text("hello there"))
        await type_line(pilot, "hi")
        await idle(app, pilot)
        assert app.session is not None
        assert live.transcript(app.session["id"]) == [("user", "hi"), ("assistant", "hello there")]

    drive(live, fresh, new=True)
    assert len(live.session_ids()) == 3


def test_without_a_login_it_says_how_and_exits_1(live: Live) -> None:
    runner = CliRunner(env={"XDG_CONFIG_HOME": live.runner.env["XDG_CONFIG_HOME"]})
    result = runner.invoke(main, ["chat"], env={"EONYX_TOKEN": None})
    assert result.exit_code == 1
    assert "not logged in: run `eonyx login` first" in result.output
    assert "Traceback" not in result.output


def test_a_refused_token_or_an_unknown_session_ends_with_the_reason(live: Live) -> None:
    async def never(app: ChatApp, pilot: Pilot[None]) -> None:
        pytest.fail("the app should have exited")

    async def play(token: str, **options: Any) -> ChatApp:
        app = ChatApp(AsyncApiClient(live.url, token), **options)
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.return_code is not None, "the app to exit")
        return app

    refused = asyncio.run(play("not-a-token"))
    assert refused.return_code == 1
    unknown = asyncio.run(play(live.user.token, session_id="20990101T000000-deadbeef"))
    assert unknown.return_code == 1


# -- the gauge -------------------------------------------------------------------------------


def test_the_gauge_text_and_highlight_at_79_and_80_percent(make_live: Callable[..., Live]) -> None:
    live = make_live(EONYX_LLM_CONTEXT_WINDOW="1000")
    # window 1000 tokens at ~4 characters each: prompt + "hi" + "ok" of 3156 characters is
    # 790 tokens (79.0%), of 3196 characters 800 tokens (80.0%).
    calm, high = "x" * 3156, "x" * 3196

    async def scenario(app: ChatApp, pilot: Pilot[None]) -> None:
        gauge = app.query_one(Gauge)
        live.llm.script(text("ok"))
        app.project = {"system_prompt": calm}
        await type_line(pilot, "hi")
        await idle(app, pilot)
        assert gauge.display
        assert text_of(gauge) == "{ctx 79%}"
        assert not gauge.has_class("-high")
        assert not gauge.has_class("-alarm")

        await type_line(pilot, "/new")
        await idle(app, pilot)
        assert not gauge.display  # a new session has no figures yet
        live.llm.script(text("ok"))
        app.project = {"system_prompt": high}
        await type_line(pilot, "hi")
        await idle(app, pilot)
        assert text_of(gauge) == "{ctx 80%}"
        assert gauge.has_class("-high")

    drive(live, scenario, new=True)


def test_the_gauge_is_shown_when_resuming(make_live: Callable[..., Live]) -> None:
    live = make_live(EONYX_LLM_CONTEXT_WINDOW="1000")
    session_id = seed(live, "y" * 2900)
    percent = live.api("GET", f"/sessions/{session_id}/context")["percent"]
    assert 90 <= percent < 100

    async def scenario(app: ChatApp, pilot: Pilot[None]) -> None:
        gauge = app.query_one(Gauge)
        assert text_of(gauge) == f"{{ctx {math.floor(percent)}%}}"
        assert gauge.has_class("-alarm")

    drive(live, scenario)


# -- turns -----------------------------------------------------------------------------------


def test_a_streamed_answer_with_a_tool_step_and_a_memory_write(live: Live) -> None:
    live.rt.tools.register(Tool("clock", "Tell the time", {"type": "object"}, lambda c, a: "12:00"))
    live.llm.script(
        tool_calls(
            tool_call("clock", {"city": "Oslo"}),
            tool_call("manage_memory", {"action": "add", "content": "Lives in Oslo"}),
            content="Let me look.",
        ),
        text("It is **noon**:\n\n```python\nprint('12:00')\n```\n", chunk_size=3),
    )

    async def scenario(app: ChatApp, pilot: Pilot[None]) -> None:
        await type_line(pilot, "What time is it in Oslo?")
        await idle(app, pilot)
        shown = entries(app)
        assert shown[0] == ("user", "What time is it in Oslo?")
        assert shown[1] == ("answer", "Let me look.")
        assert shown[2] == ("step", '✓ clock({"city": "Oslo"})')
        assert shown[3][0] == "step"
        assert shown[3][1].startswith("✓ manage_memory(")
        assert shown[4] == ("memory", "memory: added 'Lives in Oslo' to MEMORY.md")
        assert shown[5] == ("answer", "It is **noon**:\n\n```python\nprint('12:00')\n```\n")
        step = app.query(StepEntry).first()
        assert step.collapsed
        assert "result:\n12:00" in text_of(step.query_one(".step-body", Static))
        # the answer is Markdown with a highlighted code block, and it can be liked
        answer = app.query(AnswerEntry).last()
        assert answer.query("MarkdownFence")
        assert answer.message_id is not None
        assert live.llm.completions[-1].streamed

    drive(live, scenario)


def test_a_streamed_token_holding_unicode_line_breaks_arrives_whole(live: Live) -> None:
    answer = "one\u2028two\u2029three\x85four"  # line breaks to str.splitlines, not to JSON
    live.llm.script(text(answer, chunk_size=3))

    async def scenario(app: ChatApp, pilot: Pilot[None]) -> None:
        await type_line(pilot, "break my lines")
        await idle(app, pilot)
        assert entries(app) == [("user", "break my lines"), ("answer", answer)]
        assert live.llm.completions[-1].streamed

    drive(live, scenario)


def test_a_model_failure_shows_the_reason_and_ctrl_r_retries(live: Live) -> None:
    live.llm.script(error(400, "This model's maximum context length is 8192 tokens"))

    async def scenario(app: ChatApp, pilot: Pilot[None]) -> None:
        await type_line(pilot, "a long question")
        await idle(app, pilot)
        kind, message = entries(app)[-1]
        assert kind == "error"
        assert "'default' refused the request (HTTP 400)" in message
        assert "maximum context length" not in message  # the provider's words: in the log
        assert "Ctrl+R" in message
        assert app.can_retry
        assert app.session is not None
        session_id = app.session["id"]
        assert live.transcript(session_id) == [("user", "a long question")]

        live.llm.script(text("A short answer."))
        await pilot.press("ctrl+r")
        await idle(app, pilot)
        assert entries(app)[-1] == ("answer", "A short answer.")
        assert [kind for kind, _ in entries(app)].count("user") == 1  # not sent twice
        assert live.transcript(session_id) == [
            ("user", "a long question"),
            ("assistant", "A short answer."),
        ]
        await pilot.press("ctrl+r")
        await idle(app, pilot)
        assert live.transcript(session_id)[-1] == ("assistant", "A short answer.")

    drive(live, scenario)


def test_a_refused_first_message_goes_back_into_the_prompt(make_live: Callable[..., Live]) -> None:
    """Seen before: a too-long first message left `titling…` in the header for good and the
    text was gone. Nothing was saved: the text is back in the box, the session is new again."""
    live = make_live(EONYX_LLM_CONTEXT_WINDOW="1000")
    too_long = "word " * 2000

    async def scenario(app: ChatApp, pilot: Pilot[None]) -> None:
        await type_line(pilot, too_long)
        await idle(app, pilot)
        kind, message = entries(app)[-1]
        assert kind == "error"
        assert "(message_too_long)" in message
        assert message.endswith("your message is back in the box")
        assert ("user", too_long) not in entries(app)
        assert app.query_one("#prompt", Input).value == too_long
        assert app.session is None
        assert header_title(app) == "new session"
        assert live.session_ids() == []

        live.llm.script(text("short is fine"))
        await type_line(pilot, "a short one")
        await idle(app, pilot)
        assert app.session is not None
        assert live.transcript(app.session["id"]) == [
            ("user", "a short one"),
            ("assistant", "short is fine"),
        ]

    drive(live, scenario, new=True)


def test_typing_stops_at_the_message_limit_and_names_it(live: Live) -> None:
    async def scenario(app: ChatApp, pilot: Pilot[None]) -> None:
        prompt = app.query_one("#prompt", Input)
        prompt.value = "a" * (MAX_MESSAGE_CHARS - 3)
        prompt.cursor_position = len(prompt.value)
        await pilot.press(*"bcdefg")
        await pilot.pause()
        assert prompt.value == "a" * (MAX_MESSAGE_CHARS - 3) + "bcd"
        told = [n.message for n in app._notifications]
        assert told == ["a message holds at most 200,000 characters: the rest was not typed"]

    drive(live, scenario, new=True)


def test_a_message_that_never_reached_the_server_stays_in_the_prompt(live: Live) -> None:
    """Seen before: after an outage the app offered Ctrl+R, which answered nothing_to_retry,
    and the typed text was gone. Now the header says the server is unreachable and the text
    waits in the box until it can be sent."""
    session_id = seed(live, "first answer")

    async def scenario(app: ChatApp, pilot: Pilot[None]) -> None:
        served = app.api.http.base_url
        app.api.http.base_url = "http://127.0.0.1:9/api/v1"  # nothing listens there
        await type_line(pilot, "are you there?")
        await idle(app, pilot)
        kind, message = entries(app)[-1]
        assert kind == "error"
        assert message.startswith("cannot reach Eonyx")
        assert "Ctrl+R" not in message
        assert app.query_one("#prompt", Input).value == "are you there?"
        offline = app.query_one("#offline", Static)
        assert offline.display
        assert "cannot reach" in text_of(offline)
        await pilot.press("ctrl+r")  # nothing was saved: nothing to answer
        assert live.transcript(session_id)[-1] == ("assistant", "first answer")

        app.api.http.base_url = served
        live.llm.script(text("here now"))
        app.query_one("#prompt", Input).focus()
        await pilot.press("enter")
        await idle(app, pilot)
        assert entries(app)[-1] == ("answer", "here now")
        assert not offline.display
        assert live.transcript(session_id)[-2:] == [
            ("user", "are you there?"),
            ("assistant", "here now"),
        ]

    drive(live, scenario)


def test_reopening_an_unanswered_message_offers_ctrl_r(live: Live) -> None:
    session_id = live.api("POST", "/sessions", json={})["id"]
    live.llm.script(error(500, "the model is down"))
    response = httpx.post(
        f"{live.url}/api/v1/sessions/{session_id}/turns",
        json={"content": "still there?"},
        headers=live.user.headers,
    )
    assert response.status_code == 502

    async def scenario(app: ChatApp, pilot: Pilot[None]) -> None:
        assert entries(app)[-1] == (
            "info",
            "your last message has no answer yet: Ctrl+R answers it now",
        )
        live.llm.script(text("Back again."))
        await pilot.press("ctrl+r")
        await idle(app, pilot)
        assert entries(app)[-1] == ("answer", "Back again.")
        assert live.transcript(session_id) == [
            ("user", "still there?"),
            ("assistant", "Back again."),
        ]

    drive(live, scenario, session_id=session_id)


@pytest.mark.parametrize("key", ["escape", "ctrl+c"])
def test_stopping_a_stream_keeps_what_was_saved(live: Live, key: str) -> None:
    live.llm.script(text("word " * 400, chunk_size=5, chunk_delay=0.02))

    async def scenario(app: ChatApp, pilot: Pilot[None]) -> None:
        await type_line(pilot, "tell me a long story")
        await until(pilot, lambda: app.query(AnswerEntry), "the answer to start")
        assert app.streaming
        await type_line(pilot, "/new")  # would replace the conversation under the answer
        await until(pilot, lambda: entries(app)[-1][0] == "error", "the refusal")
        assert entries(app)[-1][1] == "/new: an answer is still coming; Esc stops it first"
        await pilot.press(key)
        await idle(app, pilot)
        assert not app.streaming
        assert app.return_code is None
        kind, message = entries(app)[-1]
        assert kind == "info"
        assert message.startswith("stopped: your message is saved")
        assert app.session is not None
        session_id = app.session["id"]
        assert live.transcript(session_id)[0] == ("user", "tell me a long story")

        # The stream is closed: the server lets go of the session and the next turn works.
        live.llm.script(text("Short now."))
        await pilot.press("ctrl+r")
        await idle(app, pilot)
        assert entries(app)[-1] == ("answer", "Short now.")
        assert live.transcript(session_id) == [
            ("user", "tell me a long story"),
            ("assistant", "Short now."),
        ]

    drive(live, scenario)


def test_a_message_can_be_liked_with_its_live_status(live: Live) -> None:
    seed(live, "Use ruff for lint.")

    async def scenario(app: ChatApp, pilot: Pilot[None]) -> None:
        await pilot.press("ctrl+up")
        answer = app.focused
        assert isinstance(answer, AnswerEntry)
        assert answer.message_id
        await pilot.press("l")
        await until(pilot, lambda: answer.like_status == "saving", "the like to be saving")
        assert text_of(answer.query_one(".like", Static)) == "♥ saving…"
        assert app.session is not None
        items = live.api("GET", f"/sessions/{app.session['id']}/messages")["items"]
        assert items[-1]["like"]["status"] == "saving"
        user = app.query(UserEntry).first()
        assert user.like_status == "saving"  # both messages of the liked turn

        # the server's like.updated event, as the curation job sends it when done
        app.on_server_event(
            {
                "type": "like.updated",
                "session_id": app.session["id"],
                "message_ids": [user.message_id, answer.message_id],
                "status": "saved",
            }
        )
        await pilot.pause()
        assert text_of(answer.query_one(".like", Static)) == "♥ saved"
        await pilot.press("l")  # a second press takes the like back
        await until(pilot, lambda: answer.like_status is None, "the like to go")
        items = live.api("GET", f"/sessions/{app.session['id']}/messages")["items"]
        assert "like" not in items[-1]

    drive(live, scenario, live_events=False)


# -- slash commands --------------------------------------------------------------------------


def test_typing_a_slash_lists_the_commands_and_tab_completes(live: Live) -> None:
    async def scenario(app: ChatApp, pilot: Pilot[None]) -> None:
        menu = app.query_one("#commands", OptionList)
        assert not menu.display
        await pilot.press("/")
        assert menu.display
        assert menu.option_count == 9
        await pilot.press("r", "e")
        listed = [menu.get_option_at_index(i).id for i in range(menu.option_count)]
        assert listed == ["rename", "regenerate"]
        await pilot.press("n")
        assert [menu.get_option_at_index(i).id for i in range(menu.option_count)] == ["rename"]
        await pilot.press("tab")
        assert app.query_one("#prompt", Input).value == "/rename "

    drive(live, scenario)


def test_new_rename_help_and_an_unknown_command(live: Live) -> None:
    seed(live, "hello")

    async def scenario(app: ChatApp, pilot: Pilot[None]) -> None:
        assert app.session is not None
        first = app.session["id"]
        await type_line(pilot, "/rename Parser work")
        await idle(app, pilot)
        assert live.api("GET", f"/sessions/{first}")["title"] == "Parser work"
        assert header_title(app) == "Parser work"
        assert entries(app)[-1] == ("info", "renamed to 'Parser work'")

        await type_line(pilot, "/rename")
        await idle(app, pilot)
        assert entries(app)[-1][0] == "error"
        assert "/rename <title>" in entries(app)[-1][1]

        await type_line(pilot, "/frobnicate")
        await idle(app, pilot)
        kind, message = entries(app)[-1]
        assert kind == "error"
        assert message.startswith("unknown command /frobnicate")
        known = "/sessions, /new, /clear, /rename, /regenerate, /fork, /export, /help, /quit"
        assert known in message

        await type_line(pilot, "/help")
        await idle(app, pilot)
        assert "`/rename <title>`" in entries(app)[-1][1]
        assert "Ctrl+S" in entries(app)[-1][1]
        await pilot.pause()
        drawn = app.export_screenshot()  # what the Markdown shows, not its source
        assert "eonyx-&lt;id&gt;.md" in drawn
        assert "`r`: rename" in entries(app)[-1][1]  # the manager's keys as they are typed

        await type_line(pilot, "/new")
        await idle(app, pilot)
        assert app.session is None
        assert entries(app) == []
        live.llm.script(text("fresh"))
        await type_line(pilot, "a new topic")
        await idle(app, pilot)
        assert app.session is not None
        assert app.session["id"] != first
        assert live.transcript(app.session["id"]) == [
            ("user", "a new topic"),
            ("assistant", "fresh"),
        ]

        await type_line(pilot, "/quit")
        await until(pilot, lambda: app.return_code == 0, "the app to quit")

    drive(live, scenario)


def test_clear_wipes_the_history_and_keeps_id_and_title(live: Live) -> None:
    session_id = seed(live, "one", "two")
    live.api("PATCH", f"/sessions/{session_id}", json={"title": "Keep me"})

    async def scenario(app: ChatApp, pilot: Pilot[None]) -> None:
        await type_line(pilot, "/clear")  # asks first, as `eonyx sessions clear` does
        await until(pilot, lambda: isinstance(app.screen, Confirm), "the question")
        await pilot.press("n")
        await idle(app, pilot)
        assert entries(app)[-1] == ("info", "not cleared")
        assert len(live.transcript(session_id)) == 4

        await type_line(pilot, "/clear")
        await until(pilot, lambda: isinstance(app.screen, Confirm), "the question")
        await pilot.press("y")
        await idle(app, pilot)
        assert entries(app)[-1][0] == "info"
        assert entries(app)[-1][1].startswith("cleared")
        assert live.transcript(session_id) == []
        assert live.api("GET", f"/sessions/{session_id}")["title"] == "Keep me"
        assert app.session is not None
        assert app.session["id"] == session_id
        assert header_title(app) == "Keep me"

    drive(live, scenario)


def test_fork_continues_in_a_copy(live: Live) -> None:
    origin = seed(live, "the original answer")

    async def scenario(app: ChatApp, pilot: Pilot[None]) -> None:
        await type_line(pilot, "/fork")
        await idle(app, pilot)
        assert app.session is not None
        assert app.session["id"] != origin
        fork = app.session["id"]
        assert live.transcript(fork) == live.transcript(origin)
        assert ("answer", "the original answer") in entries(app)
        live.llm.script(text("only in the fork"))
        await type_line(pilot, "try something risky")
        await idle(app, pilot)
        assert live.transcript(fork)[-1] == ("assistant", "only in the fork")
        assert live.transcript(origin)[-1] == ("assistant", "the original answer")

    drive(live, scenario)


def test_export_writes_the_markdown_under_the_current_directory(live: Live, tmp_path: Path) -> None:
    session_id = seed(live, "an answer worth keeping")
    workdir = tmp_path / "project"
    workdir.mkdir()

    async def scenario(app: ChatApp, pilot: Pilot[None]) -> None:
        await type_line(pilot, "/export")
        await idle(app, pilot)
        path = workdir / ".eonyx" / "exports" / f"eonyx-{session_id}.md"
        assert entries(app)[-1] == ("info", f"exported to {path}")
        exported = path.read_text()
        assert "q0" in exported
        assert "an answer worth keeping" in exported
        served = live.api("GET", f"/sessions/{session_id}/export", params={"format": "markdown"})
        assert without_export_time(exported) == without_export_time(served)

    drive(live, scenario, workdir=workdir)


def without_export_time(markdown: str) -> str:
    """The transcript minus its 'exported from Eonyx <minute>' line, which two exports a
    minute boundary apart would tell apart."""
    return "\n".join(line for line in markdown.splitlines() if "exported from Eonyx" not in line)


# -- the session manager ---------------------------------------------------------------------


async def open_manager(app: ChatApp, pilot: Pilot[None], key: str = "ctrl+s") -> SessionManager:
    await pilot.press(key)
    await until(pilot, lambda: isinstance(app.screen, SessionManager), "the session manager")
    manager = app.screen
    assert isinstance(manager, SessionManager)
    await until(pilot, lambda: not manager.workers_in("list"), "the list")
    return manager


def rows(manager: SessionManager) -> list[str]:
    table = manager.query_one(DataTable)
    return [str(table.get_row_at(i)[0]) for i in range(table.row_count)]


def test_manager_lists_in_the_servers_order_and_enter_opens(live: Live) -> None:
    older = seed(live, "older answer")
    live.api("PATCH", f"/sessions/{older}", json={"title": "Pinned one", "pinned": True})
    newer = seed(live, "newer answer")
    live.api("PATCH", f"/sessions/{newer}", json={"title": "Recent one"})
    live.api("PATCH", f"/sessions/{older}", json={"title": "Pinned one!"})  # moves nothing
    newer_title = seed(live, "second answer")  # newest of all: the list is by last message
    live.api("PATCH", f"/sessions/{newer_title}", json={"title": "Newest one"})

    async def scenario(app: ChatApp, pilot: Pilot[None]) -> None:
        manager = await open_manager(app, pilot)
        shown = rows(manager)
        assert shown == ["* Pinned one!", "Newest one", "Recent one"]
        await pilot.press("down")
        assert manager.query_one(DataTable).get_row_at(1)[2].plain == "2"
        await pilot.press("down", "enter")
        await until(pilot, lambda: not isinstance(app.screen, SessionManager))
        await idle(app, pilot)
        assert app.session is not None
        assert app.session["id"] == newer
        assert entries(app)[-1] == ("answer", "newer answer")

    drive(live, scenario)


def test_manager_keys_rename_pin_archive_delete(live: Live) -> None:
    first = seed(live, "a")
    second = seed(live, "b")

    async def scenario(app: ChatApp, pilot: Pilot[None]) -> None:
        manager = await open_manager(app, pilot)
        assert manager.selected() == second
        await pilot.press("r")
        await until(pilot, lambda: isinstance(app.screen, Prompt))
        app.screen.query_one(Input).value = "Renamed here"
        await pilot.press("enter")
        await until(pilot, lambda: rows(manager)[0] == "Renamed here", "the renamed row")
        assert live.api("GET", f"/sessions/{second}")["title"] == "Renamed here"
        assert header_title(app) == "Renamed here"  # the open session's header follows

        await pilot.press("down", "p")
        await until(pilot, lambda: rows(manager)[0].startswith("* "), "the pinned row on top")
        assert live.api("GET", f"/sessions/{first}")["pinned"] is True
        assert manager.selected() == first

        await pilot.press("a")
        await until(pilot, lambda: len(rows(manager)) == 1, "the archived row to go")
        assert live.api("GET", f"/sessions/{first}")["archived"] is True

        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, Confirm))
        await pilot.press("n")
        await pilot.pause()
        assert rows(manager) == ["Renamed here"]
        assert second in live.session_ids()
        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, Confirm))
        await pilot.press("y")
        await until(pilot, lambda: rows(manager) == [], "the deleted row to go")
        assert second not in live.session_ids()
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, SessionManager))
        await idle(app, pilot)
        assert app.session is None  # the open session was deleted: a new one starts

    drive(live, scenario)


def test_manager_fork_key(live: Live) -> None:
    origin = seed(live, "to be copied")

    async def scenario(app: ChatApp, pilot: Pilot[None]) -> None:
        manager = await open_manager(app, pilot)
        await pilot.press("f")
        await until(pilot, lambda: len(rows(manager)) == 2, "the fork's row")
        fork = manager.selected()
        assert fork not in (None, origin)
        assert live.transcript(str(fork)) == live.transcript(origin)

    drive(live, scenario)


def test_manager_search_by_title(live: Live) -> None:
    parser = seed(live, "x")
    live.api("PATCH", f"/sessions/{parser}", json={"title": "Parser rewrite"})
    other = seed(live, "y")
    live.api("PATCH", f"/sessions/{other}", json={"title": "Holiday plans"})

    async def scenario(app: ChatApp, pilot: Pilot[None]) -> None:
        manager = await open_manager(app, pilot)
        assert len(rows(manager)) == 2
        await pilot.press("slash")
        assert manager.query_one("#search", Input).has_focus
        await pilot.press(*"parser", "enter")
        await until(pilot, lambda: rows(manager) == ["Parser rewrite"], "the search result")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, SessionManager))

        await type_line(pilot, "/sessions holiday")
        await until(pilot, lambda: isinstance(app.screen, SessionManager))
        manager = app.screen
        assert isinstance(manager, SessionManager)
        await until(pilot, lambda: rows(manager) == ["Holiday plans"], "the /sessions search")

    drive(live, scenario)


def test_sessions_search_covers_message_text(live: Live) -> None:
    seed(live, "the tokenizer needs a rewrite")
    seed(live, "unrelated")

    async def scenario(app: ChatApp, pilot: Pilot[None]) -> None:
        await type_line(pilot, "/sessions tokenizer")
        await until(pilot, lambda: isinstance(app.screen, SessionManager))
        manager = app.screen
        assert isinstance(manager, SessionManager)
        await until(pilot, lambda: len(rows(manager)) == 1, "one session found by its text")

    drive(live, scenario)


def test_a_hit_in_the_text_shows_its_snippet_with_the_word_form_found_marked(live: Live) -> None:
    """As the web client does: the title, and under it where the text matched."""
    hit = seed(live, "so the tokenizers need a rewrite")
    live.api("PATCH", f"/sessions/{hit}", json={"title": "Parsing"})
    titled = seed(live, "unrelated")
    live.api("PATCH", f"/sessions/{titled}", json={"title": "Tokenizer notes"})

    async def scenario(app: ChatApp, pilot: Pilot[None]) -> None:
        await type_line(pilot, "/sessions tokenizer")
        await until(pilot, lambda: isinstance(app.screen, SessionManager))
        manager = app.screen
        assert isinstance(manager, SessionManager)
        await until(pilot, lambda: len(rows(manager)) == 2, "both sessions found")
        table = manager.query_one(DataTable)
        cells = {str(table.get_row_at(n)[0]).split("\n")[0]: table.get_row_at(n)[0] for n in (0, 1)}
        text_hit, title_hit = cells["Parsing"], cells["Tokenizer notes"]
        assert text_hit.plain == "Parsing\nso the tokenizers need a rewrite"
        assert marked(text_hit) == ["tokenizers"]  # the form found, whole
        assert table.rows[RowKey(hit)].height == 2  # the snippet's own line
        assert title_hit.plain == "Tokenizer notes"  # a title hit: marked in the title
        assert marked(title_hit) == ["Tokenizer"]

    drive(live, scenario)


def marked(cell: Any) -> list[str]:
    """The spans of a cell the manager marks as found."""
    return [
        cell.plain[span.start : span.end] for span in cell.spans if "reverse" in str(span.style)
    ]


def test_manager_loads_pages_as_you_scroll(make_live: Callable[..., Live]) -> None:
    live = make_live(EMPTY_SESSIONS_PER_USER="0")  # 120 sessions without a message
    for number in range(120):
        live.api("POST", "/sessions", json={"title": f"session {number:03}"})

    async def scenario(app: ChatApp, pilot: Pilot[None]) -> None:
        manager = await open_manager(app, pilot)
        table = manager.query_one(DataTable)
        assert table.row_count == 50
        await pilot.press("end")
        await until(pilot, lambda: table.row_count == 100, "the second page")
        await pilot.press("end")
        await until(pilot, lambda: table.row_count == 120, "the last page")
        assert manager.next_cursor is None
        assert rows(manager)[0] == "session 119"
        assert rows(manager)[-1] == "session 000"

    drive(live, scenario, new=True)


def pending_title(live: Live, session_id: str) -> None:
    """As the title job leaves a session it has not titled yet."""
    session_service.append_meta(
        live.rt, live.user.user_id, session_id, {"title": None, "title_pending": True}
    )


def titled(live: Live, session_id: str, title: str) -> None:
    """As the title job finishes: the title on disk, then the event for the clients."""
    session_service.append_meta(
        live.rt, live.user.user_id, session_id, {"title": title, "title_pending": False}
    )
    event_bus.publish(live.rt.redis, live.user.user_id, SessionTitle(session_id, title))


def test_a_pending_title_updates_live_from_the_events_socket(live: Live) -> None:
    session_id = seed(live, "an answer")
    pending_title(live, session_id)

    async def scenario(app: ChatApp, pilot: Pilot[None]) -> None:
        await until(pilot, lambda: app.events_live, "the events socket")
        assert header_title(app) == "titling…"
        manager = await open_manager(app, pilot)
        assert rows(manager) == ["titling…"]
        titled(live, session_id, "Answer title")
        await until(pilot, lambda: rows(manager) == ["Answer title"], "the pushed title")
        await pilot.press("escape")
        assert header_title(app) == "Answer title"

    drive(live, scenario)


def test_without_the_socket_pending_titles_are_refreshed(live: Live) -> None:
    session_id = seed(live, "an answer")
    pending_title(live, session_id)

    async def scenario(app: ChatApp, pilot: Pilot[None]) -> None:
        assert not app.events_live
        manager = await open_manager(app, pilot)
        assert rows(manager) == ["titling…"]
        session_service.append_meta(
            live.rt, live.user.user_id, session_id, {"title": "Polled", "title_pending": False}
        )
        await until(pilot, lambda: rows(manager) == ["Polled"], "the refreshed list")
        await pilot.press("escape")
        await until(pilot, lambda: header_title(app) == "Polled", "the refreshed header")

    drive(live, scenario, live_events=False)
