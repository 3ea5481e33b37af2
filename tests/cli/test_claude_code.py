"""Claude Code pointed at Eonyx as docs/anthropic.md says (`ANTHROPIC_BASE_URL`, an Eonyx key
as `ANTHROPIC_AUTH_TOKEN`, an offering as its models, nonessential traffic off), in print
mode, with the fake model behind Eonyx: its conversation is one Eonyx session with memory,
and its own tools run through Eonyx's Messages API (issue 41, item 6).

What reached the model is read from the fake model's log, the sessions from Eonyx's API."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests import programs
from tests.api.conftest import Facade, make_facade
from tests.fake_llm import text, tool_call, tool_calls

__all__ = ["make_facade"]  # the fixture, for this module

pytestmark = [
    pytest.mark.slow,
    pytest.mark.parametrize("backend", ["embedded"], indirect=True),  # a program, not a store
]
TIMEOUT = 120  # seconds for one run: Claude Code starts slowly, the model is on loopback


def claude(facade: Facade, root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`claude -p ...` in `root/work`, with HOME in `root/home` (no settings of the machine's
    user reach it) and a dead proxy for anything but loopback."""
    command = programs.ensure(programs.CLAUDE_CODE)
    (root / "work").mkdir(parents=True, exist_ok=True)
    (root / "home").mkdir(exist_ok=True)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(root / "home"),
        "ANTHROPIC_BASE_URL": facade.url,
        "ANTHROPIC_AUTH_TOKEN": facade.user.token,
        "ANTHROPIC_MODEL": "default",
        "ANTHROPIC_SMALL_FAST_MODEL": "default",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "127.0.0.1",
    }
    return subprocess.run(
        [str(command), "-p", *args],
        env=env,
        cwd=root / "work",
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def roles(facade: Facade) -> list[str]:
    [row] = facade.sessions()
    return [role for role, _ in facade.transcript(row["id"])]


def test_a_continued_conversation_is_one_session_with_memory(
    make_facade: Callable[..., Facade], tmp_path: Path
) -> None:
    facade = make_facade()
    facade.llm.script(text("Hello, Ada."), text("You are Ada."))
    first = claude(facade, tmp_path, "My name is Ada.")
    assert (first.returncode, first.stdout.strip()) == (0, "Hello, Ada."), first.stderr
    again = claude(facade, tmp_path, "--continue", "What is my name?")
    assert (again.returncode, again.stdout.strip()) == (0, "You are Ada."), again.stderr
    assert roles(facade) == ["user", "assistant", "user", "assistant"]
    body = facade.llm.completions[-1].body
    names = {tool["function"]["name"] for tool in body["tools"]}
    assert {"memory", "Bash", "Write"} <= names  # Eonyx's memory beside Claude Code's tools
    assert "Claude Code" in body["messages"][0]["content"]  # its system prompt, as instructions
    said = [m["content"] for m in body["messages"][1:] if m["role"] == "assistant"]
    assert said == ["Hello, Ada."]


def test_claude_codes_own_tool_runs_and_the_answer_goes_on(
    make_facade: Callable[..., Facade], tmp_path: Path
) -> None:
    facade = make_facade()
    note = tmp_path / "work" / "note.txt"
    write = tool_call("Write", {"file_path": str(note), "content": "written through Eonyx\n"})
    facade.llm.script(tool_calls(write), text("The note is written."))
    run = claude(facade, tmp_path, "--allowedTools", "Write", "--", "Write a note.")
    assert (run.returncode, run.stdout.strip()) == (0, "The note is written."), run.stderr
    assert note.read_text() == "written through Eonyx\n"
    result = facade.llm.completions[-1].messages[-1]
    assert (result["role"], result["tool_call_id"]) == ("tool", write["id"])
    assert roles(facade) == ["user", "assistant", "tool", "assistant"]
