"""What the slash commands of `eonyx chat` do to the open conversation: /help, /new,
/rename, /clear, /fork and /export (cli/chat/commands.py names them and says when each may
run; the app runs /sessions and /quit itself, which are about the app, not the session).

Each takes the conversation and the command's argument; what the server refuses comes out
as an ApiError, which the app shows as `/<name>: <reason>`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from cli.chat import commands
from cli.chat.conversation import Conversation
from cli.chat.manager import Confirm

Action = Callable[[Conversation, str], Awaitable[None]]


async def help_text(conversation: Conversation, _argument: str) -> None:
    await conversation.show_answer(commands.help_text())


async def new(conversation: Conversation, _argument: str) -> None:
    await conversation.open(None)


async def rename(conversation: Conversation, title: str) -> None:
    if not title:
        await conversation.say("/rename needs the new title: /rename <title>", "error")
        return
    renamed = await conversation.api.update_session(conversation.open_id, title=title)
    conversation.session = renamed
    await conversation.say(f"renamed to {renamed['title']!r}")


async def clear(conversation: Conversation, _argument: str) -> None:
    question = "Wipe this session's history? Its id and title stay; this cannot be undone."
    if not await conversation.app.push_screen_wait(Confirm(question)):
        await conversation.say("not cleared")
        return
    api, session_id = conversation.api, conversation.open_id
    await api.clear(session_id)
    await conversation.open(await api.session(session_id))
    await conversation.say("cleared: the history is wiped; the id and title stay")


async def fork(conversation: Conversation, _argument: str) -> None:
    origin = (conversation.session or {}).get("title") or "untitled"
    await conversation.open(await conversation.api.fork(conversation.open_id))
    await conversation.say(f"forked {origin!r}: you are in the copy now")


def export(workdir: Path) -> Action:
    """/export writes `.eonyx/exports/eonyx-<id>.md` under `workdir`."""

    async def write(conversation: Conversation, _argument: str) -> None:
        session_id = conversation.open_id
        text = await conversation.api.export_markdown(session_id)
        folder = workdir / ".eonyx" / "exports"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"eonyx-{session_id}.md"
        path.write_text(text, encoding="utf-8")
        await conversation.say(f"exported to {path}")

    return write


def on_the_conversation(workdir: Path) -> dict[str, Action]:
    """The commands of this module by name."""
    return {
        "help": help_text,
        "new": new,
        "rename": rename,
        "clear": clear,
        "fork": fork,
        "export": export(workdir),
    }
