"""`/regenerate` in `eonyx chat` (issue 42): the last answer is asked for again and the new
one takes its place on screen, under Textual's pilot and in a real terminal (tmux)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.pilot import Pilot

from cli.chat.app import ChatApp
from shared.llm.tools import Tool
from tests.cli.conftest import Live
from tests.cli.test_chat import drive, entries, idle, seed, type_line
from tests.cli.test_chat_tmux import Terminal, quit_chat, start_chat, terminal
from tests.fake_llm import fake_llm, text, tool_call, tool_calls

__all__ = ["fake_llm", "terminal"]
pytestmark = pytest.mark.parametrize("backend", ["embedded"], indirect=True)


def test_regenerate_replaces_the_last_answer_on_screen(live: Live) -> None:
    live.rt.tools.register(
        Tool("clock", "Tell the time", {"type": "object"}, lambda context, args: "12:00")
    )
    session_id = seed(live, "first answer")
    live.llm.script(tool_calls(tool_call("clock", {})), text("It is noon."))
    live.api("POST", f"/sessions/{session_id}/turns", json={"content": "what time is it?"})

    async def scenario(app: ChatApp, pilot: Pilot[None]) -> None:
        shown = entries(app)
        assert shown[-2:] == [("step", shown[-2][1]), ("answer", "It is noon.")]
        live.llm.script(text("Noon, **exactly**."))
        await type_line(pilot, "/regenerate")
        await idle(app, pilot)
        assert entries(app) == [
            ("user", "q0"),
            ("answer", "first answer"),
            ("user", "what time is it?"),
            ("answer", "Noon, **exactly**."),
        ]
        assert live.transcript(session_id)[-2:] == [
            ("user", "what time is it?"),
            ("assistant", "Noon, **exactly**."),
        ]
        sent = live.llm.completions[-1].messages
        assert [m.get("content") for m in sent[1:]] == ["q0", "first answer", "what time is it?"]

    drive(live, scenario, session_id=session_id)


def test_a_refused_regenerate_keeps_the_answer_and_says_why(live: Live) -> None:
    """A new session has nothing to answer again: the command says so, nothing is sent."""

    async def scenario(app: ChatApp, pilot: Pilot[None]) -> None:
        await type_line(pilot, "/regenerate")
        await idle(app, pilot)
        assert entries(app)[-1] == (
            "error",
            "/regenerate: this session starts with your first message",
        )
        assert live.llm.completions == []

    drive(live, scenario, new=True)


@pytest.mark.slow
def test_regenerate_in_a_real_terminal(live: Live, terminal: Terminal, tmp_path: Path) -> None:
    session_id = seed(live, "The old answer.")
    exit_file = start_chat(live, terminal, tmp_path, "--session", session_id)
    terminal.wait_for("The old answer.")

    live.llm.script(text("A brand new answer."))
    terminal.type("/regenerate")
    screen = terminal.wait_for("A brand new answer.")
    assert "The old answer." not in screen
    assert "q0" in screen
    assert live.transcript(session_id) == [("user", "q0"), ("assistant", "A brand new answer.")]

    quit_chat(terminal, exit_file)
