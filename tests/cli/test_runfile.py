"""Server-side commands find the running server's settings (DATA_DIR/run/settings.json and
a pointer per data directory in the user's home), say where they act, never learn its
secrets, and refuse to guess between two servers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli import runfile
from cli.command import main
from shared.accounts import people
from shared.core.settings import load_settings
from shared.db.database import Database


@pytest.fixture(autouse=True)
def pointers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "passwd-home" / ".local" / "share" / "eonyx" / "run" / "servers"
    monkeypatch.setattr(runfile, "pointer_dir", lambda: path)
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
    url = "https://proxy:k1@x.test/v1"  # credentials in the URL: masked like the key
    settings = load_settings(server_env(tmp_path, EONYX_LLM_BASE_URL=url))
    environment, masked = runfile.settings_environment(settings)
    assert "EONYX_LLM_API_KEY" not in environment
    assert masked == {"EONYX_LLM_BASE_URL"}
    assert environment["EONYX_LLM_BASE_URL"] == "https://proxy:***@x.test/v1"
    again = load_settings(environment | {"EONYX_LLM_BASE_URL": url})
    assert again == settings.with_changes(llm_api_key=None)


def test_a_shell_with_another_home_finds_the_server_through_the_pointer(
    tmp_path: Path, pointers: Path
) -> None:
    settings = load_settings(server_env(tmp_path))
    written = runfile.write(settings, "http://127.0.0.1:8000")
    pointer = runfile.pointer_file(settings.data_dir)
    assert written == [settings.data_dir / "run" / "settings.json", pointer]
    assert pointer.parent == pointers
    assert (settings.data_dir / "run" / "settings.json").stat().st_mode & 0o777 == 0o600

    environ, server = runfile.with_server_settings(shell(tmp_path, "other-home"))
    assert server is not None
    assert server.pid == os.getpid()
    assert environ["DATA_DIR"] == str(settings.data_dir)
    assert environ["DATABASE_URL"] == settings.database_url
    assert "EONYX_LLM_API_KEY" not in environ
    # What the shell sets itself wins over the server's value.
    own = runfile.with_server_settings(shell(tmp_path, "other-home", USER_CHAR_LIMIT="5"))[0]
    assert own["USER_CHAR_LIMIT"] == "5"
    assert own["DATABASE_URL"] == settings.database_url

    runfile.remove(written)
    assert not pointer.exists()
    assert not written[0].exists()
    assert runfile.with_server_settings(shell(tmp_path, "other-home"))[1] is None


def test_a_shell_with_another_data_dir_does_not_take_that_servers_settings(
    tmp_path: Path,
) -> None:
    runfile.write(load_settings(server_env(tmp_path)), "http://127.0.0.1:8000")
    own_dir = str(tmp_path / "mine")
    environ, server = runfile.with_server_settings(shell(tmp_path, "h", DATA_DIR=own_dir))
    assert server is None
    assert "DATABASE_URL" not in environ


def test_a_dead_servers_file_is_ignored_and_its_pointer_removed(
    tmp_path: Path, pointers: Path
) -> None:
    settings = load_settings(server_env(tmp_path))
    path = runfile.write(settings, "http://127.0.0.1:8000")[0]
    as_if_run_by(path, DEAD_PID)
    assert runfile.with_server_settings(shell(tmp_path, "h"))[1] is None
    assert not list(pointers.iterdir())


DEAD_PID = 2**22 + 12345  # above any pid_max: never alive


def as_if_run_by(run_file: Path, pid: int) -> None:
    run_file.write_text(json.dumps(json.loads(run_file.read_text()) | {"pid": pid}))


@pytest.fixture
def other_server() -> Iterator[int]:
    """The pid of another live process, to stand for a second `eonyx serve`."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield process.pid
    process.kill()
    process.wait()


def test_two_servers_keep_a_pointer_each_and_a_command_without_data_dir_refuses_to_guess(
    tmp_path: Path, pointers: Path, other_server: int
) -> None:
    first = load_settings(server_env(tmp_path, DATA_DIR=str(tmp_path / "one")))
    second = load_settings(server_env(tmp_path, DATA_DIR=str(tmp_path / "two")))
    runfile.write(first, "http://127.0.0.1:8001")
    as_if_run_by(runfile.write(second, "http://127.0.0.1:8002")[0], other_server)
    assert len(list(pointers.iterdir())) == 2  # the second did not overwrite the first's

    with pytest.raises(runfile.SeveralServers) as raised:
        runfile.with_server_settings(shell(tmp_path, "h"))
    message = str(raised.value)
    assert "2 Eonyx servers are running; set DATA_DIR to the one to act on" in message
    assert f"DATA_DIR={tmp_path / 'one'}  http://127.0.0.1:8001  (pid {os.getpid()})" in message
    assert f"DATA_DIR={tmp_path / 'two'}  http://127.0.0.1:8002  (pid {other_server})" in message
    result = CliRunner(env=shell(tmp_path, "h")).invoke(main, ["users", "list"])
    assert result.exit_code == 1
    assert "set DATA_DIR" in result.output

    # DATA_DIR names one: that one's settings, whatever else runs.
    chosen = shell(tmp_path, "h", DATA_DIR=str(tmp_path / "two"))
    environ, server = runfile.with_server_settings(chosen)
    assert server is not None
    assert server.pid == other_server
    assert environ["DATA_DIR"] == str(tmp_path / "two")

    # One of them dies: the other is the one running, and the dead one's pointer goes.
    as_if_run_by(runfile.run_file(second.data_dir), DEAD_PID)
    environ, server = runfile.with_server_settings(shell(tmp_path, "h"))
    assert server is not None
    assert environ["DATA_DIR"] == str(tmp_path / "one")
    assert list(pointers.iterdir()) == [runfile.pointer_file(first.data_dir)]


def test_a_masked_database_password_is_asked_for(tmp_path: Path) -> None:
    url = "postgresql+psycopg://eonyx:s3cret@db.internal:5432/eonyx"
    runfile.write(load_settings(server_env(tmp_path, DATABASE_URL=url)), "http://h:8000")
    written = (tmp_path / "server-data" / "run" / "settings.json").read_text()
    assert "s3cret" not in written
    assert "sk-secret" not in written
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
            assert [u.username for u in people.list_users(db)] == ["ada"]
    finally:
        database.dispose()
