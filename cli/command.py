"""The `eonyx` command: one click group, one module per area.

Server-side commands (serve, worker, users, index, db, backup, restore) read the same settings
as the server; client commands (login, sessions, run, chat) talk HTTP to EONYX_URL with a
saved token. What the API refuses (`ApiError`, free of click) prints as a click error.

Each command's module is imported when the command is used, not when `eonyx` starts: the
server's stack (SQLAlchemy, Celery, Flask) takes seconds to import, and a client command such
as `eonyx chat` must not wait for it.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from importlib import import_module

import click

from cli import CommandError
from shared.core.release import eonyx_version
from shared.core.settings import SettingsError

# name -> "module:attribute"; a module's COMMANDS list must appear here whole (a test checks)
COMMAND_PATHS = {
    "serve": "cli.server:serve",
    "worker": "cli.server:worker",
    "users": "cli.server:users",
    "index": "cli.server:index_group",
    "db": "cli.server:db",
    "backup": "cli.backup:backup",
    "restore": "cli.backup:restore",
    "models": "cli.models:models_group",
    "login": "cli.client:login",
    "sessions": "cli.sessions:sessions",
    "run": "cli.run:run",
    "memory": "cli.memory:memory",
    "chat": "cli.chat.main:chat",
    "folders": "cli.folders:folders",
    "tokens": "cli.tokens:tokens",
    "mcp": "cli.mcp_command:mcp",
}


class LazyCommands(MutableMapping[str, click.Command]):
    """The group's commands, each imported on first lookup."""

    def __init__(self, paths: dict[str, str]) -> None:
        self.paths = dict(paths)
        self.loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self.loaded:
            module, _, attribute = self.paths[name].partition(":")
            self.loaded[name] = getattr(import_module(module), attribute)
        return self.loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        self.paths.setdefault(name, "")
        self.loaded[name] = command

    def __delitem__(self, name: str) -> None:
        del self.paths[name]
        self.loaded.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self.paths)

    def __len__(self) -> int:
        return len(self.paths)


class EonyxGroup(click.Group):
    def invoke(self, ctx: click.Context):  # type: ignore[no-untyped-def]
        try:
            return super().invoke(ctx)
        except SettingsError as exc:
            raise click.ClickException(f"configuration error: {exc}") from None
        except CommandError as exc:  # the API's refusal, as every click error prints (exit 1)
            raise click.ClickException(str(exc)) from None


@click.group(cls=EonyxGroup, commands=LazyCommands(COMMAND_PATHS))  # type: ignore[arg-type]
@click.version_option(version=eonyx_version(), prog_name="eonyx")
def main() -> None:
    """Eonyx: durable memory and sessions for an LLM chat agent."""
