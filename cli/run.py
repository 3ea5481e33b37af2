"""`eonyx run`: one chat turn from the console, against EONYX_URL with the saved token.

    eonyx run "message"                  a new session, one turn
    eonyx run -c "message"               continue the most recent session
    eonyx run -s ID "message"            continue a given session
    eonyx run -s ID --retry              answer the session's unanswered message again
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
`eonyx run -s ID --retry` answers it again. A session this command created is deleted again
when the turn failed before anything was saved in it (no model configured, a bad request).
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Any, cast

import click

from cli.api_client import MODEL_FAILED, SOURCE, ApiClient, ApiError, retry_hint
from cli.stream import gauge_level, gauge_text, memory_line, one_line, tool_call_line
from shared.chat.project_context import (
    choose_override,
    collect_agents_files,
    project_context_window,
    read_project_config,
    walk_up,
)
from shared.core.errors import EonyxError
from shared.core.text import printable

STEP_EVENTS = ("tool_call", "tool_result", "memory_write")


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
        override = choose_override(system_prompt, config.get("system_prompt"))
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


def echo_step(name: str, data: dict[str, Any]) -> None:
    """A tool step or memory write, one line on stderr (stdout keeps the answer alone)."""
    if name == "tool_call":
        line = click.style(f"· {tool_call_line(data)}", dim=True)
    elif name == "tool_result":
        line = click.style(f"  → {one_line(data.get('content'))}", dim=True)
    else:
        line = click.style(f"✎ {memory_line(data)}", fg="cyan")
    click.echo(line, err=True)


def stream_turn(client: ApiClient, session_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """A turn as server-sent events: print `token` text as it arrives, return `done`."""
    printed = ""

    def end_line() -> None:
        if printed and not printed.endswith("\n"):
            click.echo()

    try:
        for name, data in client.stream_turn(session_id, body):
            if name == "token":
                echo_token(data["text"])
                printed = (printed + data["text"])[-1:]
                continue
            end_line()
            printed = ""
            if name in STEP_EVENTS:
                echo_step(name, data)
            elif name == "done":
                return cast(dict[str, Any], data)
            elif name == "error":
                raise _streamed_error(data, session_id)
    except ApiError:
        end_line()
        raise
    raise AssertionError("the stream ends with done or error")


def _streamed_error(data: dict[str, Any], session_id: str) -> ApiError:
    """The `error` event of a stream that had started: a failed model call, most often."""
    error = data.get("error") or {}
    status = int(data.get("status") or MODEL_FAILED)
    return ApiError(
        status,
        printable(str(error.get("code", ""))),
        printable(str(error.get("message", "the turn failed"))),
        retry_hint(session_id) if status == MODEL_FAILED else None,
    )


def _discard_if_empty(client: ApiClient, session_id: str) -> None:
    """Delete a session this command created when the failed turn left nothing in it."""
    with contextlib.suppress(ApiError):  # best effort: the server also cleans up empty sessions
        item = client.request("GET", f"/sessions/{session_id}")
        if item and item.get("message_count") == 0:
            # Purged, not trashed: the user never saw this session.
            client.request("DELETE", f"/sessions/{session_id}", params={"purge": "true"})


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
    stream: bool | None,
    as_json: bool,
) -> None:
    """One chat turn: MESSAGE (or stdin) to a new session, the latest (-c) or a given one (-s).

    The AGENTS.md files from the working directory up to the project root are sent along,
    unless --system-prompt or eonyx.json's system_prompt replaces the prompt.
    """
    if continue_ and session_id:
        raise click.UsageError("give either -c or -s ID, not both")
    if retry and not (continue_ or session_id):
        raise click.UsageError("--retry needs the session: -s ID or -c")
    if retry and message is not None:
        raise click.UsageError("--retry answers the saved message again; give no MESSAGE")
    if as_json and stream:
        raise click.UsageError(
            "--json prints the finished turn; it cannot be combined with --stream"
        )
    body: dict[str, Any] = {"retry": True} if retry else {"content": read_message(message)}
    body |= project_part(system_prompt)
    streaming = (stdout_is_tty() if stream is None else stream) and not as_json

    client = ApiClient.from_config()
    created = False
    if continue_:
        latest = client.latest_session()
        if latest is None:
            raise click.ClickException("no session to continue: run `eonyx run MESSAGE` first")
        session_id = latest["id"]
    elif session_id is None:
        session_id = client.request("POST", "/sessions", json={"source": SOURCE})["id"]
        created = True
    assert session_id is not None

    try:
        turn = stream_turn(client, session_id, body) if streaming else client.turn(session_id, body)
    except ApiError:
        if created:
            _discard_if_empty(client, session_id)
        raise
    except KeyboardInterrupt:
        click.echo(
            f"\ninterrupted; if the answer was not saved, `eonyx run -s {session_id} --retry` "
            "asks again",
            err=True,
        )
        raise click.exceptions.Exit(130) from None

    if as_json:
        click.echo(json.dumps({"session_id": session_id, **turn}, ensure_ascii=False, indent=2))
        return
    if not streaming:
        print_answer(turn)
    print_footer(session_id, turn)
