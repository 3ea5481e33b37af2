"""How `eonyx chat` reads a typed line and what it offers as you type `/`."""

from __future__ import annotations

from pathlib import Path

from cli.chat import actions, commands
from cli.chat.app import ChatApp


def test_a_line_is_a_command_or_a_message() -> None:
    assert commands.parse("/rename  Parser work ") == commands.Parsed("rename", "Parser work")
    assert commands.parse("/SESSIONS tokenizer") == commands.Parsed("sessions", "tokenizer")
    assert commands.parse("/quit") == commands.Parsed("quit", "")
    assert commands.parse("hello /there") == commands.Parsed(None, "hello /there")
    assert commands.parse("//etc/hosts is a file") == commands.Parsed(None, "/etc/hosts is a file")


def test_completions_follow_what_is_typed() -> None:
    assert [c.name for c in commands.completions("/")] == list(commands.NAMES)
    assert [c.name for c in commands.completions("/f")] == ["fork"]
    assert commands.completions("/fork now") == []  # an argument is being typed
    assert commands.completions("hello") == []


def test_an_unknown_command_lists_the_known_ones() -> None:
    message = commands.unknown("frob")
    assert message.startswith("unknown command /frob;")
    for name in commands.NAMES:
        assert f"/{name}" in message


def test_what_each_command_needs_before_it_runs() -> None:
    """While an answer streams, the commands that replace the conversation wait; before the
    first message there is no session to rename, clear, fork or export."""
    streaming = [
        name
        for name, command in commands.BY_NAME.items()
        if commands.refusal(command, streaming=True, in_session=True)
    ]
    assert streaming == ["new", "clear", "regenerate", "fork"]
    new_session = [
        name
        for name, command in commands.BY_NAME.items()
        if commands.refusal(command, streaming=False, in_session=False)
    ]
    assert new_session == ["clear", "rename", "regenerate", "fork", "export"]
    clear = commands.BY_NAME["clear"]
    refused = commands.refusal(clear, streaming=True, in_session=False)
    assert refused == "/clear: an answer is still coming; Esc stops it first"


def test_every_command_is_run_by_the_app_or_an_action_on_the_conversation(
    tmp_path: Path,
) -> None:
    on_the_conversation = actions.on_the_conversation(tmp_path)
    for name in commands.NAMES:
        by_app = hasattr(ChatApp, f"{name}_command")
        assert by_app != (name in on_the_conversation), name
