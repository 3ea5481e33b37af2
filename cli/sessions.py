"""`eonyx sessions`: list, search, read and manage sessions through the API (EONYX_URL).

    eonyx sessions [list] [--search Q] [--archived | --trash] [--folder ID] [--source S] [--all]
    eonyx sessions show ID
    eonyx sessions rename ID TITLE | pin | unpin | archive | unarchive ID
    eonyx sessions move ID (--folder FOLDER_ID | --unfiled)
    eonyx sessions fork ID [--title T] [--from MESSAGE_ID]
    eonyx sessions clear ID [--yes]
    eonyx sessions delete ID [--purge [--yes]] | restore ID

The order is the server's (pinned first, then by the last message), the same as the web
client's; times are local, `YYYY/MM/DD HH:mm`; `show` prints each message's id (for
`fork --from`). Errors print the server's reason.
"""

from __future__ import annotations

from typing import Any

import click

from cli import bundles
from cli.api_client import ApiClient, counted, format_time
from shared.core.messages import content_text
from shared.core.text import printable

SOURCES = ("web", "api", "teams", "cli", "mcp")  # as the server lists them (GET /sessions?source=)

SHOWN_SOURCES = ("api", "teams", "cli", "mcp")  # badges: the session did not start in the web UI


def _page_options(command: Any) -> Any:
    options = [
        click.option(
            "--search",
            "query",
            help='Search titles and message text (word forms match; "word": exactly).',
        ),
        click.option("--archived", is_flag=True, help="The archived sessions."),
        click.option("--trash", is_flag=True, help="The sessions in the trash."),
        click.option("--folder", "folder_id", help="A folder's sessions (`none`: unfiled)."),
        click.option("--source", type=click.Choice(SOURCES), help="Only sessions from there."),
        click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 200)),
        click.option("--all", "every", is_flag=True, help="Every page, not only the first."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@click.group(invoke_without_command=True)
@_page_options
@click.pass_context
def sessions(ctx: click.Context, **options: Any) -> None:
    """List sessions: id, date, message count, title (pinned ones marked *)."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(sessions_list, **options)


@sessions.command("list")
@_page_options
def sessions_list(
    query: str | None,
    archived: bool,
    trash: bool,
    folder_id: str | None,
    source: str | None,
    limit: int,
    every: bool,
) -> None:
    """List sessions: id, date, message count, title (pinned ones marked *)."""
    if archived and trash:
        raise click.UsageError("--archived and --trash are two different lists; pick one")
    filters: dict[str, Any] = {"archived": archived, "trash": trash}
    filters |= {k: v for k, v in {"folder_id": folder_id, "source": source}.items() if v}
    cursor = None
    client = ApiClient.from_config()
    shown = 0
    while True:
        page = client.list_sessions(query, cursor, limit, **filters)
        for item in page["items"]:
            click.echo(_line(item))
            if item.get("match", {}).get("role", "title") != "title":  # a title shows itself
                click.echo("    " + _highlighted(item["snippet"]))
        shown += len(page["items"])
        if not page["next_cursor"]:
            break
        if not every:
            click.echo(f"(more: add --all to see all the {_what(trash, archived)})", err=True)
            break
        cursor = page["next_cursor"]
    if not shown:
        what = _what(trash, archived)
        click.echo(f"no {what}" + (f" matching {printable(repr(query))}" if query else ""))


def _what(trash: bool, archived: bool) -> str:
    return "sessions in the trash" if trash else "archived sessions" if archived else "sessions"


def _line(item: dict[str, Any]) -> str:
    pin = "*" if item["pinned"] else " "
    title = printable(item["title"]) if item["title"] else "(untitled)"
    if item["source"] in SHOWN_SOURCES:
        title = f"[{item['source']}] {title}"
    line = (
        f"{item['id']}  {format_time(item['updated_at'])}  {item['message_count']:>5}{pin} {title}"
    )
    if item.get("deleted_at"):
        line += f"  (deleted {format_time(item['deleted_at'])})"
    return line


def _highlighted(snippet: dict[str, Any]) -> str:
    text, parts, at = snippet["text"], [], 0
    for start, end in snippet["highlights"]:
        shown = printable(text[start:end])
        parts += [printable(text[at:start]), click.style(shown, bold=True, fg="yellow")]
        at = end
    return "".join(parts) + printable(text[at:])


@sessions.command("show")
@click.argument("session_id")
def sessions_show(session_id: str) -> None:
    """Print a session's transcript."""
    client = ApiClient.from_config()
    item = client.session(session_id)
    messages = client.messages(session_id)
    title = printable(item["title"]) if item["title"] else "(untitled)"
    click.echo(click.style(title, bold=True) + f"  {item['id']}")
    facts = [
        f"source {item['source']}",
        f"created {format_time(item['created_at'])}",
        f"updated {format_time(item['updated_at'])}",
        counted(item["message_count"], "message"),
    ]
    if item.get("forked_from"):
        facts.append(f"forked from {item['forked_from']}")
    facts += [name for name in ("pinned", "archived") if item[name]]
    if item.get("deleted_at"):
        facts.append(f"in the trash since {format_time(item['deleted_at'])}")
    click.echo(" · ".join(facts))
    for message in messages:
        click.echo()
        click.echo(_transcript_entry(message))


def _transcript_entry(message: dict[str, Any]) -> str:
    when = format_time(message["created_at"]) if message.get("created_at") else ""
    role = message["role"]
    tool = printable(str(message.get("name") or ""))
    who = {"user": "you", "tool": f"tool {tool}".rstrip()}.get(role, role)
    # The id, for `eonyx sessions fork ID --from MESSAGE_ID`.
    lines = [
        click.style(f"[{when}] {who}:", bold=True) + click.style(f"  {message['id']}", dim=True)
    ]
    text = printable(content_text(message.get("content")), multiline=True)
    if text:
        lines.append(text)
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        call_text = f"{function.get('name')}({function.get('arguments', '')})"
        lines.append(f"  → {printable(call_text)}")
    return "\n".join(lines)


def _patch(session_id: str, body: dict[str, Any], done: str) -> None:
    item = ApiClient.from_config().update_session(session_id, **body)
    click.echo(f"{done} {item['id']}")


@sessions.command("rename")
@click.argument("session_id")
@click.argument("title", nargs=-1, required=True)
def sessions_rename(session_id: str, title: tuple[str, ...]) -> None:
    """Rename a session; the title then never changes by itself."""
    item = ApiClient.from_config().update_session(session_id, title=" ".join(title))
    click.echo(f"renamed {item['id']}: {printable(item['title'] or '(untitled)')}")


@sessions.command("pin")
@click.argument("session_id")
def sessions_pin(session_id: str) -> None:
    """Pin a session to the top of the list."""
    _patch(session_id, {"pinned": True}, "pinned")


@sessions.command("unpin")
@click.argument("session_id")
def sessions_unpin(session_id: str) -> None:
    """Unpin a session."""
    _patch(session_id, {"pinned": False}, "unpinned")


@sessions.command("move")
@click.argument("session_id")
@click.option("--folder", "folder_id", help="Into this folder (`eonyx folders` lists them).")
@click.option("--unfiled", is_flag=True, help="Out of its folder.")
def sessions_move(session_id: str, folder_id: str | None, unfiled: bool) -> None:
    """File a session into a folder, or take it out of its folder."""
    if (folder_id is None) == (not unfiled):
        raise click.UsageError("give --folder FOLDER_ID or --unfiled (one of them)")
    item = ApiClient.from_config().update_session(session_id, folder_id=folder_id)
    where = f"into folder {item['folder_id']}" if item["folder_id"] else "out of its folder"
    click.echo(f"moved {item['id']} {where}")


@sessions.command("archive")
@click.argument("session_id")
def sessions_archive(session_id: str) -> None:
    """Move a session out of the list into the archive (`sessions --archived`)."""
    _patch(session_id, {"archived": True}, "archived")


@sessions.command("unarchive")
@click.argument("session_id")
def sessions_unarchive(session_id: str) -> None:
    """Bring an archived session back to the list."""
    _patch(session_id, {"archived": False}, "unarchived")


@sessions.command("fork")
@click.argument("session_id")
@click.option("--title", help="The fork's title (default: the original's, then ' (fork)').")
@click.option("--from", "message_id", help="Copy up to this message (default: all).")
def sessions_fork(session_id: str, title: str | None, message_id: str | None) -> None:
    """Copy a session into a new one (a save point); the original stays as it is."""
    body = {k: v for k, v in {"title": title, "message_id": message_id}.items() if v is not None}
    item = ApiClient.from_config().fork(session_id, **body)
    title = printable(item["title"] or "(untitled)")
    counts = counted(item["message_count"], "message")
    click.echo(f"forked {session_id} into {item['id']} ({counts}): {title}")


@sessions.command("clear")
@click.argument("session_id")
@click.option("--yes", "-y", is_flag=True, help="Do not ask first.")
def sessions_clear(session_id: str, yes: bool) -> None:
    """Wipe a session's history, keeping its id and title."""
    if not yes:
        click.confirm(f"Clear every message of {session_id}? This cannot be undone", abort=True)
    ApiClient.from_config().clear(session_id)
    click.echo(f"cleared {session_id}")


@sessions.command("delete")
@click.argument("session_id")
@click.option("--purge", is_flag=True, help="Remove at once instead of moving to the trash.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask before a purge.")
def sessions_delete(session_id: str, purge: bool, yes: bool) -> None:
    """Move a session to the trash (restorable for 30 days), or purge it."""
    if purge and not yes:
        click.confirm(f"Remove {session_id} for good? This cannot be undone", abort=True)
    ApiClient.from_config().delete_session(session_id, purge=purge)
    if purge:
        click.echo(f"deleted {session_id} for good")
    else:
        click.echo(f"deleted {session_id} (in the trash for 30 days: `eonyx sessions restore`)")


@sessions.command("restore")
@click.argument("session_id")
def sessions_restore(session_id: str) -> None:
    """Bring a session back from the trash."""
    ApiClient.from_config().restore_session(session_id)
    click.echo(f"restored {session_id}")


bundles.register(sessions)  # export and import
