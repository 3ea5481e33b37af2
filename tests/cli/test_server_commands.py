"""Server-side commands: users and the index, on the same settings as the server."""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli import server
from cli.command import main
from shared.accounts import people
from shared.accounts.people import PASSWORD_RULE, USERNAME_RULE, Principal
from shared.core.clock import utcnow
from shared.core.errors import Unauthorized
from shared.core.settings import load_settings
from shared.db.database import Database
from shared.db.orm import User
from shared.runtime import Runtime
from shared.sessions import service as session_service
from tests.conftest import Account, Backend


def server_env(rt: Runtime, backend: Backend) -> dict[str, str]:
    return {
        "DATA_DIR": str(rt.settings.data_dir),
        "DATABASE_URL": backend.database_url,
        "REDIS_URL": backend.redis_url,
    }


def test_users_create_and_list(rt: Runtime, backend: Backend) -> None:
    runner = CliRunner(env=server_env(rt, backend))
    created = runner.invoke(
        main, ["users", "create", "ada"], input="long password\nlong password\n"
    )
    assert created.exit_code == 0, created.output
    assert "created user ada" in created.output
    again = runner.invoke(main, ["users", "create", "ada", "--password", "long password"])
    assert again.exit_code == 1
    assert "already exists" in again.output
    short = runner.invoke(main, ["users", "create", "bo", "--password", "short"])
    assert short.exit_code == 1
    assert "at least 8 and at most 1024 characters" in short.output
    assert "ada" in runner.invoke(main, ["users", "list"]).output


def test_index_rebuild_drop_restores_the_listing(
    rt: Runtime, backend: Backend, alice: Account
) -> None:
    me = Principal(alice.user_id, alice.username, False, "web", "")
    ids = {session_service.create_session(rt, me, rt.memory, title=f"t{n}").id for n in range(3)}
    result = CliRunner(env=server_env(rt, backend)).invoke(main, ["index", "rebuild", "--drop"])
    assert result.exit_code == 0, result.output
    assert "3 sessions: 3 re-read, 0 stale rows removed" in result.output
    rows, _ = session_service.list_sessions(rt, me)
    assert {r.id for r in rows} == ids


def test_an_invalid_setting_stops_with_the_variable_named(rt: Runtime, backend: Backend) -> None:
    env = server_env(rt, backend) | {"USER_CHAR_LIMIT": "lots"}
    result = CliRunner(env=env).invoke(main, ["users", "list"])
    assert result.exit_code == 1
    assert "configuration error: USER_CHAR_LIMIT must be a whole number" in result.output


def test_users_link_binds_a_teams_user(rt: Runtime, backend: Backend, alice: Account) -> None:
    from shared.integrations.teams import links

    runner = CliRunner(env=server_env(rt, backend))
    aad = "9F3B2C1D-0000-4A5B-8C7D-112233445566"
    linked = runner.invoke(main, ["users", "link", "alice", "--teams-aad-id", aad])
    assert linked.exit_code == 0, linked.output
    assert f"Teams user {aad} now chats as alice" in linked.output
    with rt.db.session() as db:
        user = links.linked_user(db, aad.lower())
        assert user is not None
        assert user.username == "alice"
    runner.invoke(main, ["users", "create", "bob", "--password", "long password"])
    moved = runner.invoke(main, ["users", "link", "bob", "--teams-aad-id", aad])
    assert moved.exit_code == 0
    assert "(was linked to alice)" in moved.output
    bad = runner.invoke(main, ["users", "link", "bob", "--teams-aad-id", "not-a-guid"])
    assert bad.exit_code == 1
    assert "not an Azure AD object id" in bad.output
    nobody = runner.invoke(main, ["users", "link", "nobody", "--teams-aad-id", aad])
    assert nobody.exit_code == 1
    assert "no user 'nobody'" in nobody.output


def test_a_worker_waits_until_the_api_has_migrated_the_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(server, "SCHEMA_POLL_SECONDS", 0.05)
    settings = load_settings({"DATA_DIR": str(tmp_path / "data"), "HOME": str(tmp_path)})
    settings.data_dir.mkdir(parents=True)
    database = Database(settings.database_url)
    assert not database.schema_is_current()
    migrating = threading.Timer(0.5, database.migrate)
    migrating.start()
    server._wait_for_schema(settings)  # returns once the migrations are in
    migrating.join()
    assert database.schema_is_current()
    database.dispose()
    said = capsys.readouterr().err
    assert said.count("waiting for the database schema: run `eonyx db upgrade`") == 1


def test_users_create_help_states_the_rules() -> None:
    shown = " ".join(CliRunner().invoke(main, ["users", "create", "--help"]).output.split())
    assert f"USERNAME: {USERNAME_RULE}" in shown
    assert f"Password: {PASSWORD_RULE}" in shown


def test_users_list_escapes_what_a_terminal_would_obey(rt: Runtime, backend: Backend) -> None:
    with rt.db.session() as db:  # a name from before the rules, written straight to the table
        db.add(User(id="f" * 32, username="evil\x1b[2J", password_hash="x", created_at=utcnow()))
    listed = CliRunner(env=server_env(rt, backend)).invoke(main, ["users", "list"])
    assert "evil\\x1b[2J" in listed.output
    assert "\x1b" not in listed.output


def test_index_rebuild_lists_the_files_it_could_not_index(
    rt: Runtime, backend: Backend, alice: Account
) -> None:
    me = Principal(alice.user_id, alice.username, False, "web", "")
    session_service.create_session(rt, me, rt.memory, title="fine")
    damaged = rt.store.path(alice.user_id, "20260101T000000-0000dead")
    damaged.write_text('{"type": "session"}\n')
    result = CliRunner(env=server_env(rt, backend)).invoke(main, ["index", "rebuild", "--drop"])
    assert result.exit_code == 0, result.output
    assert "2 sessions: 1 re-read, 0 stale rows removed" in result.output
    assert "1 not indexed (their files are kept as they are):" in result.output
    assert f"{alice.user_id}/20260101T000000-0000dead: session" in result.output


def test_users_passwd_disable_enable_delete(
    rt: Runtime, backend: Backend, alice: Account, admin: Account
) -> None:
    runner = CliRunner(env=server_env(rt, backend))
    pubsub = rt.redis.pubsub()  # type: ignore[union-attr]
    pubsub.subscribe(f"eonyx:auth:{alice.user_id}")
    assert pubsub.get_message(timeout=5)["type"] == "subscribe"

    def announced() -> int:
        count = 0
        while (message := pubsub.get_message(timeout=0.5)) is not None:
            count += message["type"] == "message"
        return count

    def works(token: str) -> bool:
        try:
            people.authenticate(rt.db, rt.tokens, token, now=utcnow(), cached=False)
        except Unauthorized:
            return False
        return True

    changed = runner.invoke(main, ["users", "passwd", "alice"], input="new password 1\n" * 2)
    assert changed.exit_code == 0, changed.output
    assert "password of alice changed; 1 sign-in or key ended" in changed.output
    assert not works(alice.token)
    assert announced() == 1
    with rt.db.session() as db:
        _, token = people.login(db, "alice", "new password 1", timedelta(hours=1))

    disabled = runner.invoke(main, ["users", "disable", "ALICE"])
    assert disabled.exit_code == 0
    assert f"disabled alice ({alice.user_id})" in disabled.output
    assert not works(token)
    assert announced() == 1
    listed = runner.invoke(main, ["users", "list"]).output
    assert f"{alice.user_id}  alice  (disabled)" in listed
    assert f"{admin.user_id}  root  (admin)" in listed
    enabled = runner.invoke(main, ["users", "enable", alice.user_id])
    assert enabled.exit_code == 0
    assert works(token)

    last = runner.invoke(main, ["users", "disable", "root"])
    assert last.exit_code == 1
    assert "last enabled administrator" in last.output
    missing = runner.invoke(main, ["users", "delete", "nobody", "--yes"])
    assert missing.exit_code == 1
    assert "no user 'nobody'" in missing.output

    user_dir = rt.store.users_dir / alice.user_id
    me = Principal(alice.user_id, "alice", False, "web", "")
    session_service.create_session(rt, me, rt.memory, title="kept?")
    assert user_dir.exists()
    kept = runner.invoke(main, ["users", "delete", "alice"], input="n\n")
    assert kept.exit_code == 1
    assert user_dir.exists()
    assert works(token)
    gone = runner.invoke(main, ["users", "delete", "alice"], input="y\n")
    assert gone.exit_code == 0, gone.output
    assert f"deleted alice ({alice.user_id}) and their data" in gone.output
    assert not user_dir.exists()
    assert not works(token)
    with rt.db.session() as db:
        assert db.get(User, alice.user_id) is None
    pubsub.close()
