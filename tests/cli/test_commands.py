"""The `eonyx` group: every command is there, and a client command loads no server stack."""

from __future__ import annotations

import subprocess
import sys

from cli import backup, client, mcp_command, memory, models, run, server, tokens
from cli.command import main


def test_every_command_of_every_module_is_registered() -> None:
    expected = [
        *server.COMMANDS,
        *backup.COMMANDS,
        *client.COMMANDS,
        *mcp_command.COMMANDS,
        *tokens.COMMANDS,
        models.models_group,
        memory.memory,
        run.run,
    ]
    for command in expected:
        assert command.name is not None
        assert main.commands[command.name] is command


def test_the_chat_client_starts_without_importing_the_server_stack() -> None:
    probe = (
        "import sys; from cli.command import main; main.commands['chat']; main.commands['run']; "
        "print(sorted(m for m in ('sqlalchemy', 'celery', 'flask') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_the_mcp_server_runs_without_importing_the_server_stack() -> None:
    """`eonyx mcp` is a client of the API: building its server, the stdio and the HTTP one,
    loads neither the database layer, nor Celery, nor Flask."""
    probe = (
        "import sys; from cli.command import main; main.commands['mcp']; main.commands['tokens']; "
        "from cli import mcp_http, mcp_server; mcp_http.http_app('http://127.0.0.1:1', "
        "stateless=True, host='127.0.0.1', sessions_per_key=2, key_check_seconds=1); "
        "mcp_server.build_server(mcp_server.Accesses('http://x', 't'), stdio=True); "
        "print(sorted(m for m in ('sqlalchemy', 'celery', 'flask') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"
