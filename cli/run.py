"""`eonyx run`: one chat turn from the console, against EONYX_URL with the saved token.

    eonyx run "message"                  a new session, one turn
    eonyx run -c "message"               continue the most recent session
    eonyx run -s ID "message"            continue a given session
    eonyx run -s ID --retry              answer the session's unanswered message again
    eonyx run -c --regenerate            answer the last message again, replacing its answer
    echo "message" | eonyx run           the message from stdin (also with `-`)

Which session `-c` continues: the listing (`GET /sessions`) puts pinned sessions first, so its
first item is not necessarily the most recent one. `-c` takes the session with the latest
`updated_at` (ties broken by the sortable id) among the pinned ones and the first unpinned
one; pages are only fetched while everything seen so far is pinned, so this is one request in
practice and exact in every case. Archived sessions are not listed and never continued.

Project context: the CLI walks up from its own working directory with the server's discovery
code (`shared.chat.project_context`: AGENTS.md files outermost first, the walk stops at the
directory holding `eonyx.json` or `.git`) and sends the files as `project_context`. An
override beats them, with the server's precedence (`shared.prompt.choose_override`):
`--system-prompt` beats `system_prompt` in the project's `eonyx.json`, which beats the
generated prompt; when an override is in force it is sent as `system_prompt` and no
`project_context` is sent. A retry sends the same project part as a fresh turn would, so the
session's recorded project context does not change because of the retry.

Output: the answer goes to stdout; the session hint and the `{ctx N%}` gauge go to stderr (so
`eonyx run ... > answer.txt` keeps only the answer). A streamed turn also shows its tool
calls, their results and memory writes on stderr, one line each, as they happen. With stdout
on a terminal the answer streams (`stream: true`, server-sent events) unless `--no-stream`;
`--stream` forces it.
`--json` prints the whole turn response plus `session_id` as JSON on stdout and nothing else.
N is the server's percent rounded down, so a shown 80 is always highlighted; the gauge is
yellow from 80% (where compaction starts) and red from 90%.

Errors are click errors (exit 1) with the server's message and code. When the model failed
(HTTP 502) the user's message is already saved, and the error says that
`eonyx run -s ID --retry` answers it again. A new session is made by its first message
(`POST /sessions/turns`): one the server refused (no model configured, a bad request) leaves
no session behind, so there is nothing to clean up.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from cli.api_client import ApiClient, retry_hint
from cli.api_error import ApiError
from cli.stream import (
    MODEL_FAILED,
    STEPS,
    Step,
    gauge_level,
    gauge_text,
    memory_line,
    one_line,
    tool_call_line,
)
from shared.chat.project_context import (
    choose_override,
    collect_agents_files,
    project_context_window,
    project_system_prompt,
    read_project_config,
    walk_up,
)
from shared.core.errors import EonyxError
from shared.core.events import Done, SessionStarted, Token, ToolCall, ToolResult, TurnError
from shared.core.text import printable


def stdout_is_tty() -> bool:
    """Whether the answer goes to a terminal (streamed by default). Tests patch this."""
    return sys.stdout.isatty()


def echo_token(text: str) -> None:
    """Print one streamed piece of the answer at once (control characters escaped)."""
    click.echo(printable(text, multiline=True), nl=False)


def read_message(message: str | None) -> str:
    """The message argument, or stdin when it is `-` or absent and stdin is not a TTY."""
    if message == "-" or (message is None and not sys.stdin.isatty()):
        message = sys.stdin.read()
    if message is None:
        raise click.UsageError("give a message, or pipe one on stdin")
    if not message.strip():
        raise click.UsageError("the message is empty")
    return message


def project_part(system_prompt: str | None, cwd: Path | None = None) -> dict[str, Any]:
    """`system_prompt` (an override in force) or `project_context` (AGENTS.md files) for a
    turn, walked from `cwd` (default: the working directory) like the server walks."""
    try:
        walk = walk_up(cwd or Path.cwd())
        config = read_project_config(walk.project_root)
        window = project_context_window(config)
        bound = {"context_window": window} if window else {}
        override = choose_override(system_prompt, project_system_prompt(config))
        if override is not None:
            return {"system_prompt": override, **bound}
        return {"project_context": [f.to_dict() for f in collect_agents_files(walk)], **bound}
    except EonyxError as exc:
        raise click.ClickException(f"project context: {exc.message}") from None


def format_gauge(percent: float | None) -> str | None:
    """`{ctx N%}`, yellow and bold from 80%, red from 90%; None without a window."""
    text = gauge_text(percent)
    if text is None or percent is None:
        return None
    color = {"calm": None, "high": "yellow", "alarm": "red"}[gauge_level(percent)]
    return click.style(text, fg=color, bold=True) if color else text


def echo_step(step: Step) -> None:
    """A tool step or memory write, one line on stderr (stdout keeps the answer alone)."""
    if isinstance(step, ToolCall):
        line = click.style(f"· {tool_call_line(step)}", dim=True)
    elif isinstance(step, ToolResult):
        line = click.style(f"  → {one_line(step.message.get('content'))}", dim=True)
    else:
        line = click.style(f"✎ {memory_line(step.event)}", fg="cyan")
    click.echo(line, err=True)


class StreamedTurn:
    """A turn as server-sent events: `token` text printed as it arrives, steps on stderr;
    `session_id` is the one asked, or the one a first message made."""

    def __init__(self, client: ApiClient, session_id: str | None) -> None:
        self.client, self.session_id = client, session_id
        self.last = ""  # the last character printed of the answer

    def end_line(self) -> None:
        if self.last and self.last != "\n":
            click.echo()
        self.last = ""

    def run(self, body: dict[str, Any]) -> dict[str, Any]:
        """The turn's `done`; its `error` as an ApiError."""
        try:
            for event in self.client.stream_turn(self.session_id, body):
                if isinstance(event, Token):
                    echo_token(event.text)
                    self.last = (self.last + event.text)[-1:]
                    continue
                self.end_line()
                if isinstance(event, SessionStarted):
                    self.session_id = event.session_id
                elif isinstance(event, STEPS):
                    echo_step(event)
                elif isinstance(event, Done):
                    return dict(event.result)
                elif isinstance(event, TurnError):
                    raise streamed_error(event, self.session_id)
        except ApiError:
            self.end_line()
            raise
        raise AssertionError("the stream ends with done or error")


def streamed_error(failed: TurnError, session_id: str | None) -> ApiError:
    """The `error` event of a stream that had started: a failed model call, most often."""
    saved = failed.status == MODEL_FAILED and session_id is not None
    return ApiError(
        failed.status,
        printable(failed.error.code),
        printable(failed.error.message),
        retry_hint(session_id) if saved and session_id else None,
    )


def _answer(
    client: ApiClient, session_id: str | None, body: dict[str, Any], streaming: bool
) -> tuple[dict[str, Any], str]:
    """The turn, and its session (made by the turn when `session_id` is None)."""
    streamed = StreamedTurn(client, session_id)
    try:
        turn = streamed.run(body) if streaming else client.turn(session_id, body)
    except KeyboardInterrupt:
        where = streamed.session_id
        again = f"`eonyx run -s {where} --retry`" if where else "`eonyx run -c --retry`"
        click.echo(f"\ninterrupted; if the answer was not saved, {again} asks again", err=True)
        raise click.exceptions.Exit(130) from None
    made = streamed.session_id or turn.get("session_id") or session_id
    assert made is not None, "a first message's answer names its session"
    return turn, str(made)


def print_answer(turn: dict[str, Any]) -> None:
    content = (turn.get("assistant_message") or {}).get("content") or ""
    click.echo(printable(content, multiline=True).rstrip("\n"))


def print_footer(session_id: str, turn: dict[str, Any]) -> None:
    line = f"session {session_id} · continue with: eonyx run -s {session_id} MESSAGE"
    gauge = format_gauge((turn.get("context") or {}).get("percent"))
    if gauge:
        line += f"  {gauge}"
    click.echo(line, err=True)


@click.command()
@click.argument("message", required=False)
@click.option(
    "-c", "--continue", "continue_", is_flag=True, help="Continue the most recent session."
)
@click.option("-s", "--session", "session_id", metavar="ID", help="Continue this session.")
@click.option(
    "--system-prompt",
    metavar="TEXT",
    help="Replace the system prompt (beats eonyx.json; no AGENTS.md are sent).",
)
@click.option(
    "--retry", is_flag=True, help="Answer the session's unanswered message again (no MESSAGE)."
)
@click.option(
    "--regenerate",
    is_flag=True,
    help="Answer the session's last message again; the new answer replaces the old (no MESSAGE).",
)
@click.option(
    "--stream/--no-stream",
    default=None,
    help="Print the answer as it arrives (default: when stdout is a terminal).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the whole turn response as JSON.")
def run(
    message: str | None,
    continue_: bool,
    session_id: str | None,
    system_prompt: str | None,
    retry: bool,
    regenerate: bool,
    stream: bool | None,
    as_json: bool,
) -> None:
    """One chat turn: MESSAGE (or stdin) to a new session, the latest (-c) or a given one (-s).

    The AGENTS.md files from the working directory up to the project root are sent along,
    unless --system-prompt or eonyx.json's system_prompt replaces the prompt.
    """
    if continue_ and session_id:
        raise click.UsageError("give either -c or -s ID, not both")
    again = "--retry" if retry else "--regenerate" if regenerate else None
    if retry and regenerate:
        raise click.UsageError("give either --retry or --regenerate, not both")
    if again and not (continue_ or session_id):
        raise click.UsageError(f"{again} needs the session: -s ID or -c")
    if again and message is not None:
        raise click.UsageError(f"{again} answers the saved message again; give no MESSAGE")
    if as_json and stream:
        raise click.UsageError(
            "--json prints the finished turn; it cannot be combined with --stream"
        )
    body: dict[str, Any] = {"content": read_message(message)} if again is None else {}
    body |= {"retry": True} if retry else {"regenerate": True} if regenerate else {}
    body |= project_part(system_prompt)
    streaming = (stdout_is_tty() if stream is None else stream) and not as_json

    client = ApiClient.from_config()
    if continue_:
        latest = client.latest_session()
        if latest is None:
            raise click.ClickException("no session to continue: run `eonyx run MESSAGE` first")
        session_id = latest["id"]
    turn, session_id = _answer(client, session_id, body, streaming)
    if as_json:
        click.echo(json.dumps({"session_id": session_id, **turn}, ensure_ascii=False, indent=2))
        return
    if not streaming:
        print_answer(turn)
    print_footer(session_id, turn)
