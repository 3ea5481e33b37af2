"""Server-side commands find the running server's settings (DATA_DIR/run/settings.json and
the pointer in the user's home), say where they act, and never learn its secrets."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli import main, runfile
from shared import accounts
from shared.core.settings import load_settings
from shared.storage.db import Database


@pytest.fixture(autouse=True)
def pointer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "passwd-home" / ".local" / "share" / "eonyx" / "run" / "server.json"
    monkeypatch.setattr(runfile, "pointer_file", lambda: path)
    return path


def server_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        "DATA_DIR": str(tmp_path / "server-data"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'elsewhere.db'}",
        "USER_CHAR_LIMIT": "999",
        "EONYX_LLM_API_KEY": "sk-secret",
        **extra,
    }


def shell(tmp_path: Path, name: str, **env: str) -> dict[str, str]:
    """Another shell's environment: its own HOME, nothing of the server's."""
    home = tmp_path / name
    home.mkdir(exist_ok=True)
    return {"HOME": str(home), **env}


def test_the_settings_written_give_the_same_settings_without_secrets(tmp_path: Path) -> None:
    settings = load_settings(server_env(tmp_path, EONYX_LLM_BASE_URL="https://x.test/v1?key=k1"))
    environment, masked = runfile.settings_environment(settings)
    assert "EONYX_LLM_API_KEY" not in environment
    assert masked == {"EONYX_LLM_BASE_URL"}
    assert environment["EONYX_LLM_BASE_URL"] == "https://x.test/v1?key=***"
    again = load_settings(environment | {"EONYX_LLM_BASE_URL": "https://x.test/v1?key=k1"})
    assert again == settings.with_changes(llm_api_key=None)


def test_a_shell_with_another_home_finds_the_server_through_the_pointer(
    tmp_path: Path, pointer: Path
) -> None:
    settings = load_settings(server_env(tmp_path))
    written = runfile.write(settings, "http://127.0.0.1:8000")
    assert written == [settings.data_dir / "run" / "settings.json", pointer]
    assert (settings.data_dir / "run" / "settings.json").stat().st_mode & 0o777 == 0o600

    environ, server = runfile.with_server_settings(shell(tmp_path, "other-home"))
    assert server is not None and server.pid == os.getpid()
    assert environ["DATA_DIR"] == str(settings.data_dir)
    assert environ["DATABASE_URL"] == settings.database_url
    assert "EONYX_LLM_API_KEY" not in environ
    # What the shell sets itself wins over the server's value.
    own = runfile.with_server_settings(shell(tmp_path, "other-home", USER_CHAR_LIMIT="5"))[0]
    assert own["USER_CHAR_LIMIT"] == "5" and own["DATABASE_URL"] == settings.database_url

    runfile.remove(written)
    assert not pointer.exists() and not written[0].exists()
    assert runfile.with_server_settings(shell(tmp_path, "other-home"))[1] is None


def test_a_shell_with_another_data_dir_does_not_take_that_servers_settings(
    tmp_path: Path,
) -> None:
    runfile.write(load_settings(server_env(tmp_path)), "http://127.0.0.1:8000")
    own_dir = str(tmp_path / "mine")
    environ, server = runfile.with_server_settings(shell(tmp_path, "h", DATA_DIR=own_dir))
    assert server is None and "DATABASE_URL" not in environ


def test_a_dead_servers_file_is_ignored(tmp_path: Path, pointer: Path) -> None:
    settings = load_settings(server_env(tmp_path))
    path = runfile.write(settings, "http://127.0.0.1:8000")[0]
    data = json.loads(path.read_text())
    path.write_text(json.dumps(data | {"pid": 2**22 + 12345}))  # above any pid_max: never alive
    assert runfile.with_server_settings(shell(tmp_path, "h"))[1] is None


def test_a_masked_database_password_is_asked_for(tmp_path: Path) -> None:
    url = "postgresql+psycopg://eonyx:s3cret@db.internal:5432/eonyx"
    runfile.write(load_settings(server_env(tmp_path, DATABASE_URL=url)), "http://h:8000")
    written = (tmp_path / "server-data" / "run" / "settings.json").read_text()
    assert "s3cret" not in written and "sk-secret" not in written
    with pytest.raises(runfile.MaskedSetting, match="set DATABASE_URL in this shell"):
        runfile.with_server_settings(shell(tmp_path, "h"))
    result = CliRunner(env=shell(tmp_path, "h")).invoke(main, ["users", "list"])
    assert result.exit_code == 1
    assert "DATABASE_URL=postgresql+psycopg://eonyx:***@db.internal" in result.output
    with_password = shell(tmp_path, "h", DATABASE_URL=f"sqlite:///{tmp_path / 'mine.db'}")
    assert runfile.with_server_settings(with_password)[1] is not None


def test_users_create_acts_on_the_servers_database_and_says_so(tmp_path: Path) -> None:
    settings = load_settings(server_env(tmp_path))
    runfile.write(settings, "http://127.0.0.1:8123")
    runner = CliRunner(env=shell(tmp_path, "other-home") | {"DATA_DIR": "", "DATABASE_URL": ""})
    result = runner.invoke(main, ["users", "create", "ada", "--password", "long password"])
    assert result.exit_code == 0, result.output
    assert "created user ada" in result.stdout
    assert (
        f"data directory {settings.data_dir}, database {settings.database_url} "
        f"(settings of the server at http://127.0.0.1:8123, pid {os.getpid()})"
    ) in result.stderr
    database = Database(settings.database_url)
    try:
        with database.session() as db:
            assert [u.username for u in accounts.list_users(db)] == ["ada"]
    finally:
        database.dispose()
