"""`eonyx folders ...` and `eonyx sessions export|import` against a live server."""

from __future__ import annotations

import threading
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from werkzeug.serving import make_server

from cli.command import main
from tests.api.conftest import API, Chat, make_chat  # noqa: F401  (make_chat is a fixture)
from tests.fake_llm import text


@pytest.fixture
def chat(make_chat: Callable[..., Chat]) -> Chat:  # noqa: F811
    return make_chat()


@pytest.fixture
def runner(chat: Chat, tmp_path: Path) -> Iterator[CliRunner]:
    server = make_server("127.0.0.1", 0, chat.app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield CliRunner(
        env={
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "EONYX_URL": f"http://127.0.0.1:{server.port}",
            "EONYX_TOKEN": chat.user.token,
        }
    )
    server.shutdown()
    server.server_close()
    thread.join(5)


def run(runner: CliRunner, *args: str) -> str:
    result = runner.invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_folders_commands(runner: CliRunner, chat: Chat) -> None:
    assert run(runner, "folders", "list") == "no folders\n"
    work = run(runner, "folders", "create", "Work", "--color", "blue").split()[0]
    home = run(runner, "folders", "create", "Home").split()[0]
    assert run(runner, "folders", "list").splitlines() == [
        f"{work}    0  blue    Work",
        f"{home}    1  gray    Home",
    ]
    run(runner, "folders", "rename", home, "Household")
    run(runner, "folders", "color", home, "pink")
    assert run(runner, "folders", "order", home).splitlines() == [
        f"{home}    0  pink    Household",
        f"{work}    1  blue    Work",
    ]
    bad = runner.invoke(main, ["folders", "create", "X", "--color", "mauve"])
    assert bad.exit_code == 1
    assert "color" in bad.output
    missing = runner.invoke(main, ["folders", "delete", "f" * 32])
    assert missing.exit_code == 1
    assert "folder not found" in missing.output
    assert "unfiled" in run(runner, "folders", "delete", work)
    assert run(runner, "folders", "list").splitlines() == [f"{home}    0  pink    Household"]


def test_sessions_export_writes_markdown_under_the_current_directory_and_import_reads_a_zip(
    runner: CliRunner, chat: Chat, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = chat.new_session()
    chat.llm.script(text("Tea, mostly."))
    chat.turn(session_id, content="What do you drink?")
    monkeypatch.chdir(tmp_path)

    output = run(runner, "sessions", "export", session_id)
    written = tmp_path / ".eonyx" / "exports" / f"eonyx-{session_id}.md"
    assert str(Path(".eonyx/exports") / f"eonyx-{session_id}.md") in output
    transcript = written.read_text()
    assert transcript.startswith("# What do you drink?")
    assert "Tea, mostly." in transcript

    run(runner, "sessions", "export", session_id, "--format", "zip")
    bundle = tmp_path / ".eonyx" / "exports" / f"eonyx-{session_id}.zip"
    assert "manifest.json" in zipfile.ZipFile(bundle).namelist()

    imported = run(runner, "sessions", "import", str(bundle))
    assert imported.startswith("imported as ")
    assert "2 messages  What do you drink?" in imported
    new_id = imported.split()[2]
    assert new_id != session_id
    listed = chat.client.get(f"{API}/sessions", headers=chat.user.headers).get_json()["items"]
    assert [s["id"] for s in listed][0] == new_id

    (tmp_path / "notes.txt").write_text("not a bundle")
    refused = runner.invoke(main, ["sessions", "import", str(tmp_path / "notes.txt")])
    assert refused.exit_code == 1
    assert "not a zip" in refused.output
    gone = runner.invoke(main, ["sessions", "export", "20990101T000000-00000000"])
    assert gone.exit_code == 1
    assert "session not found" in gone.output
