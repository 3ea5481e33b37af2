"""Memory through the chat: the model's tools, the frozen snapshot, temporary chats and demo
mode, proof of writes, and the operator's memory panel."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from werkzeug.serving import make_server

from cli.command import main
from shared.memory.files import version_of
from tests.api import websockets
from tests.api.conftest import API, Chat, live_events
from tests.conftest import create_account
from tests.fake_llm import text, tool_call, tool_calls


def use_tool(chat: Chat, session_id: str, name: str, answer: str = "Done.", **args: object):
    """One turn in which the model calls a memory tool once, then answers."""
    chat.llm.script(tool_calls(tool_call(name, args)), text(answer))
    response = chat.turn(session_id, content=f"please use {name}")
    assert response.status_code == 200, response.get_json()
    return response.get_json(), chat.llm.requests[-1].messages[-1]["content"]


def file_of(chat: Chat, kind: str) -> str:
    return chat.rt.memory.read(kind, chat.user.user_id).content


def test_user_profile_tool_add_replace_remove_consolidate(chat: Chat) -> None:
    sid = chat.new_session()
    body, result = use_tool(chat, sid, "memory", action="add", content="Answer in English")
    assert result.startswith("Saved: added 'Answer in English' to USER.md. USER.md is now ")
    assert body["memory_writes"] == [
        {
            "type": "memory.updated",
            "file": "USER.md",
            "action": "added",
            "entry": "Answer in English",
        }
    ]
    use_tool(chat, sid, "memory", action="add", content="Prefers short answers")

    # A newer explicit preference replaces the conflicting one: still one line about language.
    body, result = use_tool(
        chat, sid, "memory", action="replace", old_text="in english", content="Answer in German"
    )
    assert "replaced 'Answer in English' with 'Answer in German'" in result
    assert file_of(chat, "user") == "- Answer in German\n- Prefers short answers\n"
    use_tool(chat, sid, "memory", action="add", content="Answer in French", supersedes="German")
    assert file_of(chat, "user") == "- Answer in French\n- Prefers short answers\n"

    use_tool(chat, sid, "memory", action="remove", old_text="short")
    assert file_of(chat, "user") == "- Answer in French\n"
    use_tool(
        chat,
        sid,
        "memory",
        action="consolidate",
        entries=["Answer in French", "answer in french", "Likes tables"],
    )
    assert file_of(chat, "user") == "- Answer in French\n- Likes tables\n"


def test_ambiguous_missing_and_duplicate_are_refused_and_change_nothing(chat: Chat) -> None:
    sid = chat.new_session()
    use_tool(chat, sid, "manage_memory", action="add", content="Run tests with uv run pytest")
    use_tool(chat, sid, "manage_memory", action="add", content="Run lint with ruff")
    before = chat.rt.memory.path("agent", chat.user.user_id).read_bytes()

    _, result = use_tool(chat, sid, "manage_memory", action="remove", old_text="Run")
    assert result.startswith("error: not saved: 2 entries contain 'run'")
    _, result = use_tool(
        chat, sid, "manage_memory", action="modify", old_text="docker", content="x"
    )
    assert result.startswith("error: not saved: no entry contains 'docker'")
    _, result = use_tool(chat, sid, "manage_memory", action="add", content="run lint with  ruff")
    assert "is already saved" in result
    assert chat.rt.memory.path("agent", chat.user.user_id).read_bytes() == before


def test_a_batch_is_all_or_nothing(chat: Chat) -> None:
    sid = chat.new_session()
    use_tool(chat, sid, "manage_memory", action="add", content="Project uses pnpm")
    before = file_of(chat, "agent")
    _, result = use_tool(
        chat,
        sid,
        "manage_memory",
        action="batch",
        operations=[
            {"action": "add", "content": "Node 22"},
            {"action": "modify", "old_text": "pnpm", "content": "Project uses pnpm 9"},
            {"action": "remove", "old_text": "yarn"},
        ],
    )
    assert "operation 3: no entry contains 'yarn'" in result
    assert "batch was not saved" in result
    assert file_of(chat, "agent") == before
    body, result = use_tool(
        chat,
        sid,
        "manage_memory",
        action="batch",
        operations=[
            {"action": "add", "content": "Node 22"},
            {"action": "modify", "old_text": "pnpm", "content": "Project uses pnpm 9"},
        ],
    )
    assert file_of(chat, "agent") == "- Project uses pnpm 9\n- Node 22\n"
    assert [w["action"] for w in body["memory_writes"]] == ["added", "replaced"]


def test_over_the_cap_the_model_is_told_the_counts(make_chat: Callable[..., Chat]) -> None:
    chat = make_chat(USER_CHAR_LIMIT="30")
    sid = chat.new_session()
    _, result = use_tool(chat, sid, "memory", action="add", content="x" * 40)
    assert "USER.md would be 43 characters, over its limit of 30" in result
    assert not chat.rt.memory.path("user", chat.user.user_id).exists()


def test_secrets_are_refused_by_rule_without_echo(chat: Chat) -> None:
    sid = chat.new_session()
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    _, result = use_tool(chat, sid, "manage_memory", action="add", content=f"token is {secret}")
    assert result.startswith("error: not saved:")
    assert secret[4:12] not in result
    assert not chat.rt.memory.path("agent", chat.user.user_id).exists()


def test_after_three_refusals_the_model_is_told_to_stop(chat: Chat) -> None:
    sid = chat.new_session()
    calls = [
        tool_call("memory", {"action": "remove", "old_text": f"nothing {n}"}) for n in range(4)
    ]
    chat.llm.script(tool_calls(*calls), text("Sorry."))
    chat.turn(sid, content="forget stuff")
    results = [m["content"] for m in chat.llm.requests[-1].messages if m["role"] == "tool"]
    assert "Stop trying" not in results[1]
    assert results[2].endswith("Stop trying to save memory in this turn and answer the user.")
    assert results[3] == (
        "error: not attempted. Stop trying to save memory in this turn and answer the user."
    )


def test_the_snapshot_is_frozen_for_the_session(chat: Chat) -> None:
    first = chat.new_session()
    use_tool(chat, first, "memory", action="add", content="Answer in German")
    # Learned mid-session: the same session's prompt is unchanged...
    chat.turn(first, content="hello again")
    assert "Answer in German" not in chat.llm.requests[-1].messages[0]["content"]
    # ...and the next session sees it, with its usage line, right after the identity.
    second = chat.new_session()
    chat.turn(second, content="hi")
    system = chat.llm.requests[-1].messages[0]["content"]
    assert (
        "<user-profile>\n- Answer in German\n\n(USER.md: 1% — 19/1,375 chars)\n</user-profile>"
        in system
    )
    assert system.index("Eonyx") < system.index("<user-profile>")

    # An operator edit mid-session does not change the running session either.
    chat.client.put(
        f"{API}/memory/agent", json={"content": "- Uses pnpm\n"}, headers=chat.user.headers
    )
    chat.turn(second, content="again")
    assert "<agent-memory>" not in chat.llm.requests[-1].messages[0]["content"]
    third = chat.new_session()
    chat.turn(third, content="hi")
    system = chat.llm.requests[-1].messages[0]["content"]
    assert system.index("<user-profile>") < system.index("<agent-memory>\n- Uses pnpm")


def test_a_fresh_memory_adds_nothing_to_the_prompt(chat: Chat) -> None:
    sid = chat.new_session()
    chat.turn(sid, content="hi")
    system = chat.llm.requests[-1].messages[0]["content"]
    assert "<user-profile>" not in system
    assert "<agent-memory>" not in system


def memory_bytes(chat: Chat) -> dict[str, bytes | None]:
    paths = {k: chat.rt.memory.path(k, chat.user.user_id) for k in ("user", "agent")}
    return {k: p.read_bytes() if p.exists() else None for k, p in paths.items()}


def test_temporary_chats_never_read_or_write_memory(chat: Chat) -> None:
    normal = chat.new_session()
    use_tool(chat, normal, "memory", action="add", content="Answer in German")
    before = memory_bytes(chat)
    temp = chat.client.post(
        f"{API}/sessions", json={"temporary": True}, headers=chat.user.headers
    ).get_json()["id"]
    chat.llm.script(tool_calls(tool_call("memory", {"action": "add", "content": "x"})), text("ok"))
    sent = len(chat.llm.requests)
    assert chat.turn(temp, content="remember x").status_code == 200
    assert len(chat.llm.requests) == sent + 1  # a tool call nobody offered is not run
    request = chat.llm.requests[-1]
    assert "tools" not in request.body  # no memory tools are offered
    assert "Answer in German" not in request.messages[0]["content"]
    assert memory_bytes(chat) == before
    listed = chat.client.get(f"{API}/sessions", headers=chat.user.headers).get_json()["items"]
    assert [s["id"] for s in listed] == [normal]


def test_demo_mode_offers_no_memory_tools(make_chat: Callable[..., Chat]) -> None:
    chat = make_chat(DEMO_MODE="true")
    sid = chat.new_session()
    chat.turn(sid, content="hi")
    assert "tools" not in chat.llm.requests[-1].body
    assert memory_bytes(chat) == {"user": None, "agent": None}


def test_memory_updated_is_pushed_over_the_events_socket(chat: Chat) -> None:
    with websockets.live(chat.app) as url:
        ws = websockets.connect(f"{url}?token={chat.user.token}")
        try:
            assert ws.next_json() == {"type": "ready"}
            sid = chat.new_session()
            use_tool(chat, sid, "memory", action="add", content="Answer in German")
            assert ws.next_json() == {
                "type": "memory.updated",
                "file": "USER.md",
                "action": "added",
                "entry": "Answer in German",
            }
        finally:
            ws.hang_up()
        seen, code = websockets.connect(f"{url}?token=nope").until_closed()
        assert [m["error"]["code"] for m in seen] == ["invalid_token"]
        assert code == 1008


# -- the memory panel --------------------------------------------------------------------


def test_panel_saves_exactly_as_written_with_a_backup_first(chat: Chat) -> None:
    url, headers = f"{API}/memory/user", chat.user.headers
    assert chat.client.get(url, headers=headers).get_json() == {
        "kind": "user",
        "name": "USER.md",
        "content": "",
        "chars": 0,
        "limit": 1375,
        "version": version_of(""),
    }
    # The operator's own words, secret-looking or not, are saved as written.
    written = "# About me\npassword=hunter2hunter2 is my test fixture\n"
    saved = chat.client.put(url, json={"content": written}, headers=headers).get_json()
    assert saved["content"] == written
    assert saved["chars"] == len(written)
    chat.client.put(url, json={"content": "- v2\n"}, headers=headers)
    backups = chat.client.get(f"{url}/backups", headers=headers).get_json()
    assert len(backups) == 1
    assert backups[0]["name"].startswith("USER.md.")

    restored = chat.client.post(f"{url}/backups/{backups[0]['name']}/restore", headers=headers)
    assert restored.get_json()["content"] == written
    assert len(chat.client.get(f"{url}/backups", headers=headers).get_json()) == 2
    missing = chat.client.post(f"{url}/backups/USER.md.nope/restore", headers=headers)
    assert missing.status_code == 404


def test_panel_refuses_only_over_the_limit(chat: Chat) -> None:
    response = chat.client.put(
        f"{API}/memory/agent", json={"content": "x" * 2201}, headers=chat.user.headers
    )
    assert response.status_code == 400
    assert "2,201 characters, over its limit of 2,200" in response.get_json()["error"]["message"]
    assert not chat.rt.memory.path("agent", chat.user.user_id).exists()


def test_panel_refuses_an_edit_of_a_file_that_changed_meanwhile(chat: Chat) -> None:
    url, headers = f"{API}/memory/agent", chat.user.headers
    shown = chat.client.get(url, headers=headers).get_json()
    saved = chat.client.put(
        url, json={"content": "- Uses pnpm\n", "version": shown["version"]}, headers=headers
    )
    assert saved.status_code == 200
    assert saved.get_json()["version"] == version_of("- Uses pnpm\n") != shown["version"]
    assert (
        chat.client.get(url, headers=headers).get_json()["version"] == saved.get_json()["version"]
    )

    # The model adds an entry while the panel still shows the version it read.
    sid = chat.new_session()
    use_tool(chat, sid, "manage_memory", action="add", content="Node 22")
    before = chat.rt.memory.path("agent", chat.user.user_id).read_bytes()
    backups = chat.client.get(f"{url}/backups", headers=headers).get_json()
    with live_events(chat) as seen:
        stale = chat.client.put(
            url,
            json={"content": "- Uses yarn\n", "version": saved.get_json()["version"]},
            headers=headers,
        )
    assert stale.status_code == 409
    assert stale.get_json()["error"]["code"] == "stale_version"
    assert chat.rt.memory.path("agent", chat.user.user_id).read_bytes() == before
    assert chat.client.get(f"{url}/backups", headers=headers).get_json() == backups
    assert seen == []

    # Without a version the edit is saved as before, over whatever is there.
    plain = chat.client.put(url, json={"content": "- Uses yarn\n"}, headers=headers)
    assert plain.status_code == 200
    assert file_of(chat, "agent") == "- Uses yarn\n"
    too_long = chat.client.put(url, json={"content": "x", "version": "v" * 65}, headers=headers)
    assert too_long.status_code == 422


def test_panel_edits_and_restores_are_pushed_to_the_users_clients(chat: Chat) -> None:
    url, headers = f"{API}/memory/user", chat.user.headers
    with live_events(chat) as seen:
        chat.client.put(url, json={"content": "- v1\n"}, headers=headers)
        chat.client.put(url, json={"content": "- v2\n"}, headers=headers)
    assert seen == [{"type": "memory.updated", "file": "USER.md", "action": "edited"}] * 2
    name = chat.client.get(f"{url}/backups", headers=headers).get_json()[0]["name"]
    with live_events(chat) as seen:
        restored = chat.client.post(f"{url}/backups/{name}/restore", headers=headers)
    assert restored.status_code == 200
    assert restored.get_json()["content"] == "- v1\n"
    assert seen == [{"type": "memory.updated", "file": "USER.md", "action": "restored"}]
    with live_events(chat) as seen:
        missing = chat.client.post(f"{url}/backups/USER.md.nope/restore", headers=headers)
    assert missing.status_code == 404
    assert seen == []


def test_everyone_reads_the_identity_and_only_admins_change_it(chat: Chat) -> None:
    url, user = f"{API}/memory/identity", chat.user.headers
    path = chat.rt.memory.path("identity", None)
    before = path.read_text()  # written at start from the default
    shown = chat.client.get(url, headers=user)
    assert shown.status_code == 200
    assert shown.get_json()["name"] == "IDENTITY.md"
    assert shown.get_json()["content"] == before

    assert chat.client.put(url, json={"content": "I am Bob."}, headers=user).status_code == 403
    assert chat.client.get(f"{url}/backups", headers=user).status_code == 403
    admin = create_account(chat.rt, "boss", admin=True)
    edited = chat.client.put(url, json={"content": "I am Eonyx."}, headers=admin.headers)
    assert edited.status_code == 200
    assert chat.client.get(url, headers=user).get_json()["content"] == "I am Eonyx."
    [backup] = chat.client.get(f"{url}/backups", headers=admin.headers).get_json()
    restore = f"{url}/backups/{backup['name']}/restore"
    assert chat.client.post(restore, headers=user).status_code == 403
    assert path.read_text() == "I am Eonyx."
    assert chat.client.post(restore, headers=admin.headers).get_json()["content"] == before
    assert path.read_text() == before


def test_each_user_sees_only_their_memory(chat: Chat) -> None:
    chat.client.put(f"{API}/memory/user", json={"content": "- mine\n"}, headers=chat.user.headers)
    other = create_account(chat.rt, "other")
    assert chat.client.get(f"{API}/memory/user", headers=other.headers).get_json()["content"] == ""
    assert chat.client.get(f"{API}/memory/diary", headers=other.headers).status_code == 404


@pytest.fixture
def live(chat: Chat) -> Iterator[str]:
    server = make_server("127.0.0.1", 0, chat.app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.port}"
    server.shutdown()
    server.server_close()


def cli_with_editor(chat: Chat, live: str, tmp_path: Path, script: str) -> CliRunner:
    """A CLI logged in as the chat's user whose $EDITOR is the shell `script` ($1: the file)."""
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\n" + script)
    editor.chmod(0o755)
    env = {
        "EONYX_URL": live,
        "EONYX_TOKEN": chat.user.token,
        "XDG_CONFIG_HOME": str(tmp_path),
        "EDITOR": str(editor),
    }
    return CliRunner(env=env)


def test_memory_cli_show_edit_backups(chat: Chat, live: str, tmp_path: Path) -> None:
    runner = cli_with_editor(chat, live, tmp_path, 'printf -- "- Answer in German\\n" >> "$1"\n')
    edited = runner.invoke(main, ["memory", "edit", "user"])
    assert edited.exit_code == 0, edited.output
    assert "saved USER.md: 19/1,375 chars" in edited.output
    shown = runner.invoke(main, ["memory", "show", "user"])
    assert shown.output.startswith("- Answer in German\n")
    runner.invoke(main, ["memory", "edit", "user"])
    backups = runner.invoke(main, ["memory", "backups", "user"])
    assert backups.exit_code == 0
    assert backups.output.startswith("USER.md.")


def test_memory_cli_edit_does_not_overwrite_a_change_made_meanwhile(
    chat: Chat, live: str, tmp_path: Path
) -> None:
    real = chat.rt.memory.path("user", chat.user.user_id)
    runner = cli_with_editor(  # while the person edits, the model saves something
        chat,
        live,
        tmp_path,
        f'mkdir -p "{real.parent}"\nprintf -- "- saved by the model\\n" > "{real}"\n'
        'printf -- "- typed by the person\\n" >> "$1"\n',
    )
    result = runner.invoke(main, ["memory", "edit", "user"])
    assert result.exit_code == 1
    assert "stale_version" in result.output
    assert real.read_text() == "- saved by the model\n"
