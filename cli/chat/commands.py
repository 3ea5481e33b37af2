"""The slash commands of `eonyx chat`: their names, usage and help, and how a line is read.

A line that starts with `/` is a command; `//text` sends `/text` as a message. The app runs
the commands (cli/chat/app.py); this module only knows what they are called and says so.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    name: str
    usage: str
    help: str

    @property
    def switches(self) -> bool:
        """It replaces the conversation, or its last answer: refused while an answer is still
        coming."""
        return self.name in SWITCHING

    @property
    def needs_session(self) -> bool:
        """It acts on the open session: refused in a new one, before its first message."""
        return self.name in ON_THE_SESSION


COMMANDS = (
    Command("sessions", "/sessions [query]", "the session manager, searched over titles and text"),
    Command("new", "/new", "start a new session"),
    Command("clear", "/clear", "wipe this session's history, once confirmed (keeps id and title)"),
    Command("rename", "/rename <title>", "rename this session"),
    Command("regenerate", "/regenerate", "ask again for the last answer: the new one replaces it"),
    Command("fork", "/fork", "copy this session into a new one and continue there"),
    Command("export", "/export", "write `.eonyx/exports/eonyx-<id>.md` under this directory"),
    Command("help", "/help", "commands and keys"),
    Command("quit", "/quit", "leave (the session stays on the server)"),
)
SWITCHING = frozenset({"new", "clear", "regenerate", "fork"})
ON_THE_SESSION = frozenset({"clear", "rename", "regenerate", "fork", "export"})
BY_NAME = {command.name: command for command in COMMANDS}
NAMES = tuple(BY_NAME)

KEYS = (
    ("Enter", "send the message (or run the /command)"),
    ("Tab", "complete a /command"),
    ("Esc, Ctrl+C", "stop the answer being streamed"),
    ("Ctrl+R", "answer the last message again after a failure or a stop"),
    ("Ctrl+S", "the session manager"),
    ("Ctrl+Up / Ctrl+Down", "select a message; then l likes it (remember this turn)"),
    ("Ctrl+Q", "quit"),
)
MANAGER_KEYS = (
    ("Enter", "open"),
    ("r", "rename"),
    ("f", "fork"),
    ("d", "delete (to the trash, after a confirmation)"),
    ("p", "pin or unpin"),
    ("a", "archive or unarchive"),
    ("/", "search titles and text"),
    ("Esc", "back"),
)


@dataclass(frozen=True)
class Parsed:
    """A typed line: a command with its argument text, or a message."""

    command: str | None
    argument: str


def parse(line: str) -> Parsed:
    text = line.strip()
    if text.startswith("//"):
        return Parsed(None, line.strip()[1:])
    if not text.startswith("/"):
        return Parsed(None, line)
    name, _, argument = text[1:].partition(" ")
    return Parsed(name.lower(), argument.strip())


def completions(prefix: str) -> list[Command]:
    """The commands a line being typed may become (`/` alone: all of them)."""
    if not prefix.startswith("/") or " " in prefix:
        return []
    typed = prefix[1:].lower()
    return [command for command in COMMANDS if command.name.startswith(typed)]


def refusal(command: Command, *, streaming: bool, in_session: bool) -> str | None:
    """Why `command` cannot run now, or None when it can."""
    if command.switches and streaming:
        return f"/{command.name}: an answer is still coming; Esc stops it first"
    if command.needs_session and not in_session:
        return f"/{command.name}: this session starts with your first message"
    return None


def unknown(name: str) -> str:
    known = ", ".join(f"/{n}" for n in NAMES)
    return f"unknown command /{name}; the commands are {known}"


def help_text() -> str:
    """The /help text, as Markdown."""
    lines = ["**Commands**", ""]
    lines += [f"- `{c.usage}`: {c.help}" for c in COMMANDS]
    lines += ["", "**Keys**", ""]
    lines += [f"- `{key}`: {what}" for key, what in KEYS]
    lines += ["", "**In the session manager**", ""]
    lines += [f"- `{key}`: {what}" for key, what in MANAGER_KEYS]
    return "\n".join(lines)
