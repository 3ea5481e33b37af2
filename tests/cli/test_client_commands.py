"""`eonyx login` and `eonyx sessions` against a live server on loopback."""

from __future__ import annotations

import re
import stat
from pathlib import Path

from click.testing import CliRunner

from cli.command import main
from shared.accounts.people import ACCOUNT_POLICY
from shared.runtime import Runtime
from tests.cli.conftest import login
from tests.conftest import Account


def test_login_saves_a_private_token(runner: CliRunner, alice: Account, tmp_path: Path) -> None:
    result = login(runner)
    assert result.exit_code == 0, result.output
    assert "logged in to http://127.0.0.1:" in result.output
    config = tmp_path / "config" / "eonyx" / "config.json"
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert '"token": "eyx_' in config.read_text()


def test_wrong_password_is_a_clear_error(runner: CliRunner, alice: Account) -> None:
    result = login(runner, password="wrong")
    assert result.exit_code == 1
    assert "wrong username or password" in result.output
    assert "run `eonyx login`" not in result.output  # that is what the user just did


def test_a_throttled_login_says_how_long_to_wait(runner: CliRunner, alice: Account) -> None:
    for _ in range(ACCOUNT_POLICY.free + 1):
        login(runner, password="wrong")
    result = login(runner)
    assert result.exit_code == 1
    assert "too many failed logins for this account: try again in " in result.output


def test_the_servers_reason_for_a_refusal_is_printed(runner: CliRunner, alice: Account) -> None:
    login(runner)
    result = runner.invoke(main, ["sessions", "--search", "two\nlines"])
    assert result.exit_code == 1
    assert "q: contains a tab or line break (U+000A) at position 3" in result.output
    assert "invalid request: " not in result.output


def test_sessions_lists_id_date_count_and_title(runner: CliRunner, client, alice: Account) -> None:
    login(runner)
    created = client.post(
        "/api/v1/sessions", json={"title": "Parser work"}, headers=alice.headers
    ).get_json()
    client.post("/api/v1/sessions", json={"title": "Lunch plans"}, headers=alice.headers)

    result = runner.invoke(main, ["sessions"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert len(lines) == 2
    line = next(ln for ln in lines if created["id"] in ln)
    assert re.match(
        rf"^{created['id']}  \d{{4}}/\d{{2}}/\d{{2}} \d{{2}}:\d{{2}}\s+0  Parser work$", line
    ), line

    found = runner.invoke(main, ["sessions", "--search", "parser"])
    assert found.output.count("\n") == 1
    assert "Parser work" in found.output
    none = runner.invoke(main, ["sessions", "--search", "zebra"])
    assert "no sessions matching 'zebra'" in none.output


def test_sessions_escapes_control_characters_in_titles(
    runner: CliRunner, alice: Account, rt: Runtime
) -> None:
    """A title stored before the text rule (or by hand) cannot drive the terminal."""
    login(runner)
    rt.store.create(alice.user_id, source="web", title="\x1b[2J\x1b[31mred\x07 \u202eexe.txt")
    result = runner.invoke(main, ["sessions"])
    assert result.exit_code == 0, result.output
    assert "\\x1b[2J\\x1b[31mred\\x07 \\u202eexe.txt" in result.output
    assert not any(c in result.output for c in "\x1b\x07\u202e")


def test_sessions_delete_goes_to_the_trash_restore_and_purge(
    runner: CliRunner, client, alice: Account
) -> None:
    login(runner)
    created = client.post("/api/v1/sessions", json={"title": "bye"}, headers=alice.headers)
    session_id = created.get_json()["id"]
    result = runner.invoke(main, ["sessions", "delete", session_id])
    assert result.exit_code == 0
    assert f"deleted {session_id} (in the trash" in result.output
    assert runner.invoke(main, ["sessions"]).output.strip() == "no sessions"
    trash = runner.invoke(main, ["sessions", "--trash"]).output
    assert re.match(
        rf"^{session_id}  .*  bye  \(deleted \d{{4}}/\d{{2}}/\d{{2}} \d{{2}}:\d{{2}}\)$", trash
    )

    assert runner.invoke(main, ["sessions", "restore", session_id]).exit_code == 0
    assert session_id in runner.invoke(main, ["sessions"]).output
    assert runner.invoke(main, ["sessions", "--trash"]).output.strip() == "no sessions in the trash"

    refused = runner.invoke(main, ["sessions", "delete", session_id, "--purge"], input="n\n")
    assert refused.exit_code == 1
    assert session_id in runner.invoke(main, ["sessions"]).output
    purged = runner.invoke(main, ["sessions", "delete", session_id, "--purge", "--yes"])
    assert purged.exit_code == 0
    assert f"deleted {session_id} for good" in purged.output
    again = runner.invoke(main, ["sessions", "delete", session_id])
    assert again.exit_code == 1
    assert "session not found (not_found)" in again.output


def test_not_logged_in(runner: CliRunner) -> None:
    result = runner.invoke(main, ["sessions"])
    assert result.exit_code == 1
    assert "eonyx login" in result.output


def test_unreachable_server(tmp_path: Path) -> None:
    runner = CliRunner(
        env={
            "XDG_CONFIG_HOME": str(tmp_path),
            "EONYX_URL": "http://127.0.0.1:9",
            "EONYX_TOKEN": "eyx_x",
        }
    )
    result = runner.invoke(main, ["sessions"])
    assert result.exit_code == 1
    assert "cannot reach Eonyx at http://127.0.0.1:9" in result.output


def test_the_console_clients_load_no_server_module() -> None:
    """`eonyx run`, `eonyx chat` and the client commands talk to the API only: a remote
    team server works like a local one, and a laptop needs no database driver to use it."""
    import subprocess
    import sys

    clients = "cli.api_client cli.client cli.run cli.chat.app cli.sessions cli.folders"
    clients += " cli.memory cli.bundles"
    probe = (
        "import importlib, sys\n"
        f"for name in {clients.split()!r}: importlib.import_module(name)\n"
        "print('\\n'.join(sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.split()
    servers = ("sqlalchemy", "redis", "flask", "celery", "psycopg", "api", "workers")
    server_parts = ("files", "db", "index", "infra", "sessions", "accounts", "llm", "runtime")
    forbidden = [
        name
        for name in loaded
        if name.split(".")[0] in servers
        or (name.startswith("shared.") and name.split(".")[1] in server_parts)
    ]
    assert "cli.chat.app" in loaded
    assert forbidden == []


def test_memory_help_says_which_file_each_kind_is() -> None:
    shown = " ".join(CliRunner().invoke(main, ["memory", "--help"]).output.split())
    assert "user (the user profile, USER.md)" in shown
    assert "agent (the agent memory, MEMORY.md)" in shown
