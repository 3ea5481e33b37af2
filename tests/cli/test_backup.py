"""`eonyx backup` and `eonyx restore` on SQLite and PostgreSQL, and `eonyx db copy` from a
pilot's SQLite into PostgreSQL: what a user had before (sessions, their messages, folders,
memory, logins, the model catalog) is what they find after, through the API."""

from __future__ import annotations

import io
import json
import secrets
import stat
import tarfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner, Result
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy.engine import make_url

from api.app import create_app
from api.context import runtime_of
from cli.command import main
from shared.backup import dumps
from shared.core.settings import Settings
from tests.conftest import PG_URL, Account, Backend, create_account, make_settings
from tests.fake_llm import FakeLLM, text
from workers.queue import celery_jobs

API = "/api/v1"
PASSWORD = "correct horse"  # create_account's


@contextmanager
def serving(settings: Settings) -> Iterator[Flask]:
    app = create_app(settings, jobs_queue=celery_jobs(settings))
    runtime_of(app).db.migrate()
    try:
        yield app
    finally:
        runtime_of(app).close()


def llm_env(fake_llm: FakeLLM) -> dict[str, str]:
    return {"EONYX_LLM_BASE_URL": fake_llm.base_url, "EONYX_LLM_MODEL": "fake-model"}


def env_of(settings: Settings) -> dict[str, str]:
    return {
        "DATA_DIR": str(settings.data_dir),
        "DATABASE_URL": settings.database_url,
        "REDIS_URL": settings.redis_url or "",
        "HOME": str(settings.data_dir.parent),
    }


def eonyx(settings: Settings, *args: str) -> Result:
    return CliRunner(env=env_of(settings)).invoke(main, list(args))


def call(client: FlaskClient, who: Account, method: str, path: str, **body: Any) -> Any:
    response = client.open(f"{API}{path}", method=method, json=body or None, headers=who.headers)
    assert response.status_code < 300, response.get_json()
    return response.get_json()


def fill(app: Flask, llm: FakeLLM) -> tuple[Account, Account]:
    """A store as a pilot leaves it: an admin with a model catalog, a user with an API key,
    a folder, two sessions (one with a turn), and a remembered preference."""
    rt, client = runtime_of(app), app.test_client()
    admin = create_account(rt, "root", admin=True)
    alice = create_account(rt, "alice", api=True)
    offering = {"id": "big", "base_url": "http://127.0.0.1:9/v1", "model": "big-model"}
    call(client, admin, "POST", "/models/offerings", **offering)
    call(client, admin, "PUT", "/models/roles/session_title", offering_id="big")
    work = call(client, alice, "POST", "/folders", name="Work", color="blue")
    filed = call(client, alice, "POST", "/sessions", title="Filed", folder_id=work["id"])
    llm.script(text("Tea it is."))
    call(client, alice, "POST", f"/sessions/{filed['id']}/turns", content="Tea or coffee?")
    call(client, alice, "POST", "/sessions", title="Loose")
    call(client, alice, "POST", "/memory/user/entries", action="add", content="Prefers tea")
    return admin, alice


def seen_by(app: Flask, who: Account) -> dict[str, Any]:
    """What `who` sees of their store through the API."""
    client = app.test_client()
    sessions = call(client, who, "GET", "/sessions")["items"]
    return {
        "sessions": sorted((s["id"], s["title"], s["folder_id"]) for s in sessions),
        "messages": {
            s["id"]: [
                (m["role"], m["content"])
                for m in call(client, who, "GET", f"/sessions/{s['id']}/messages")["items"]
            ]
            for s in sessions
        },
        "folders": [(f["name"], f["color"]) for f in call(client, who, "GET", "/folders")["items"]],
        "profile": call(client, who, "GET", "/memory/user")["content"],
        "roles": {r["role"]: r["offering_id"] for r in call(client, who, "GET", "/models/roles")},
    }


def logs_in(app: Flask, username: str) -> bool:
    body = {"username": username, "password": PASSWORD}
    return app.test_client().post(f"{API}/auth/login", json=body).status_code == 200


@pytest.fixture
def restore_target(backend: Backend, tmp_path: Path) -> Iterator[Callable[[str], Settings]]:
    """Settings of an empty store: a new DATA_DIR, and a new SQLite file or a new PostgreSQL
    database (whose schema the restore creates, under the source's name)."""
    created: list[str] = []

    def build(name: str) -> Settings:
        url = f"sqlite:///{tmp_path / name / 'eonyx.db'}"
        if backend.name == "services":
            database = f"eonyx_restore_{secrets.token_hex(4)}"
            with psycopg.connect(PG_URL, autocommit=True) as conn:
                conn.execute(f"CREATE DATABASE {database}")
            created.append(database)
            url = make_url(backend.database_url).set(database=database).render_as_string(False)
        return make_settings(tmp_path / name, Backend(backend.name, url, backend.redis_url))

    yield build
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        for database in created:
            conn.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")


@pytest.fixture
def source(backend: Backend, tmp_path: Path, fake_llm: FakeLLM) -> Settings:
    return make_settings(tmp_path / "source", backend, **llm_env(fake_llm))


def test_a_restored_store_answers_as_the_backed_up_one(
    source: Settings,
    restore_target: Callable[[str], Settings],
    fake_llm: FakeLLM,
    tmp_path: Path,
) -> None:
    with serving(source) as app:
        admin, alice = fill(app, fake_llm)
        before = seen_by(app, alice), seen_by(app, admin)
        (source.data_dir / "run").mkdir(exist_ok=True)
        (source.data_dir / "run" / "server.pid").write_text("123")
        archive = tmp_path / "store.tar.gz"
        made = eonyx(source, "backup", str(archive))
        assert made.exit_code == 0, made.output
    assert "backup written to" in made.output
    assert stat.S_IMODE(archive.stat().st_mode) == 0o600
    with tarfile.open(archive) as written:
        names = written.getnames()
        manifest = json.load(written.extractfile("manifest.json"))  # type: ignore[arg-type]
    assert not any(n.startswith("data/run") or n.endswith("eonyx.db") for n in names)
    assert manifest["revision"]
    assert manifest["database"] in ("sqlite", "postgresql")

    target = restore_target("restored")  # with the source's model, as the server would be
    target = target.with_changes(llm_base_url=source.llm_base_url, llm_model=source.llm_model)
    restored = eonyx(target, "restore", str(archive))
    assert restored.exit_code == 0, restored.output
    assert "2 sessions indexed" in restored.output

    with serving(target) as app:
        assert (seen_by(app, alice), seen_by(app, admin)) == before  # the old tokens work
        assert logs_in(app, "alice")
        assert logs_in(app, "root")
        assert not logs_in(app, "mallory")
    users_dir = target.data_dir / "users"
    assert all(stat.S_IMODE(p.stat().st_mode) & 0o077 == 0 for p in users_dir.rglob("*"))


def test_a_store_that_holds_data_is_restored_into_only_with_force(
    source: Settings, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    archive = tmp_path / "store.tar.gz"
    with serving(source) as app:
        _admin, alice = fill(app, fake_llm)
        before = seen_by(app, alice)
        assert eonyx(source, "backup", str(archive)).exit_code == 0
        call(app.test_client(), alice, "POST", "/sessions", title="After the backup")
        after = seen_by(app, alice)

        refused = eonyx(source, "restore", str(archive))
        assert refused.exit_code == 1
        assert "the store is not empty (its database holds 2 account(s)" in refused.output
        assert "--force" in refused.output
        assert seen_by(app, alice) == after
        runtime_of(app).db.dispose()  # the server is stopped before a restore

        forced = eonyx(source, "restore", "--force", str(archive))
        assert forced.exit_code == 0, forced.output
    with serving(source) as app:
        assert seen_by(app, alice) == before


@pytest.fixture
def pilot(tmp_path: Path) -> Settings:
    """A small SQLite store with one account."""
    settings = make_settings(tmp_path / "pilot")
    assert eonyx(settings, "users", "create", "ada", "--password", PASSWORD).exit_code == 0
    return settings


def rewritten(
    archive: Path, out: Path, *, extra: tarfile.TarInfo | None = None, revision: str = ""
) -> Path:
    """A copy of `archive`, with one more member or another schema revision in its manifest."""
    with tarfile.open(archive) as old, tarfile.open(out, "w:gz") as new:
        for info in old.getmembers():
            content = old.extractfile(info) if info.isfile() else None
            if info.name == "manifest.json" and content is not None and revision:
                body = json.dumps(json.load(content) | {"revision": revision}).encode()
                info.size, content = len(body), io.BytesIO(body)
            new.addfile(info, content)
        if extra is not None:
            new.addfile(extra, io.BytesIO(b"evil" * (extra.size > 0)))
    return out


def member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.size = kind, link, 0 if link else 4
    return info


@pytest.mark.parametrize(
    "bad",
    [
        member("../evil.txt"),
        member("/tmp/evil.txt"),
        member("data/../../evil.txt"),
        member("data/users/link", tarfile.SYMTYPE, "/etc"),
        member("elsewhere.txt"),
    ],
)
def test_an_archive_member_outside_the_store_restores_nothing(
    pilot: Settings, tmp_path: Path, bad: tarfile.TarInfo
) -> None:
    archive = tmp_path / "good.tar.gz"
    assert eonyx(pilot, "backup", str(archive)).exit_code == 0
    target = make_settings(tmp_path / "target" / "data")
    result = eonyx(target, "restore", str(rewritten(archive, tmp_path / "bad.tar.gz", extra=bad)))
    assert result.exit_code == 1
    assert f"member {bad.name!r} is not a file inside the store: nothing was" in result.output
    assert not list(tmp_path.rglob("evil.txt"))
    assert not Path("/tmp/evil.txt").exists()
    assert not (target.data_dir / "eonyx.db").exists()
    assert not (target.data_dir / "users").exists()


def test_an_archive_from_a_newer_schema_is_refused(pilot: Settings, tmp_path: Path) -> None:
    archive = tmp_path / "good.tar.gz"
    assert eonyx(pilot, "backup", str(archive)).exit_code == 0
    target = make_settings(tmp_path / "target")
    newer = rewritten(archive, tmp_path / "newer.tar.gz", revision="0999")
    result = eonyx(target, "restore", str(newer))
    assert result.exit_code == 1
    assert "comes from a newer Eonyx schema" in result.output
    assert "revision 0999" in result.output
    assert not (target.data_dir / "eonyx.db").exists()


def test_a_backup_written_to_stdout_restores(pilot: Settings, tmp_path: Path) -> None:
    made = CliRunner(env=env_of(pilot)).invoke(main, ["backup", "-"])
    assert made.exit_code == 0, made.stderr
    assert "backup written to stdout" in made.stderr
    archive = tmp_path / "piped.tar.gz"
    archive.write_bytes(made.stdout_bytes)
    target = make_settings(tmp_path / "target")
    assert eonyx(target, "restore", str(archive)).exit_code == 0
    assert "ada" in eonyx(target, "users", "list").stdout


def test_the_postgresql_tools_get_no_password_on_their_command_line() -> None:
    url = "postgresql+psycopg://eonyx:s3cr%40t@db:5433/eonyx?options=-csearch_path%3Dpilot"
    target, env = dumps.libpq(url)
    assert target == "postgresql://eonyx@db:5433/eonyx?options=-csearch_path%3Dpilot"
    assert env == {"PGPASSWORD": "s3cr@t"}
    assert dumps.postgres_schema(url) == "pilot"
    assert dumps.postgres_schema(url.replace("%3Dpilot", "%3D%22%24user%22,public")) == "public"
    assert dumps.postgres_schema("postgresql+psycopg://eonyx@db/eonyx") is None


def test_a_file_that_is_no_backup_is_refused(tmp_path: Path) -> None:
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"not a tar")
    result = eonyx(make_settings(tmp_path / "target"), "restore", str(junk))
    assert result.exit_code == 1
    assert "is not a backup archive" in result.output


@pytest.fixture
def empty_postgres(services: None) -> Iterator[str]:
    """A new, empty PostgreSQL schema (what an operator makes for the copy)."""
    schema = f"eonyx_copy_{secrets.token_hex(4)}"
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    url = PG_URL.replace("postgresql://", "postgresql+psycopg://", 1)
    yield f"{url}?options=-csearch_path%3D{schema}"
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


def test_a_pilot_moves_from_sqlite_to_postgresql(
    empty_postgres: str, embedded_redis: str, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    data = tmp_path / "pilot"
    sqlite = make_settings(data, REDIS_URL=embedded_redis, **llm_env(fake_llm))
    with serving(sqlite) as app:
        admin, alice = fill(app, fake_llm)
        before = seen_by(app, alice), seen_by(app, admin)

    copied = eonyx(sqlite, "db", "copy", "--to", empty_postgres)
    assert copied.exit_code == 0, copied.output
    for line in ("users: 2 rows", "tokens: 2 rows", "folders: 1 row", "model_offerings: 1 row"):
        assert line in copied.output
    assert "session_index" not in copied.output  # rebuilt from the files, not copied
    assert "session index rebuilt from the files: 2 sessions" in copied.output
    assert "now set DATABASE_URL=" in copied.output

    postgres = sqlite.with_changes(database_url=empty_postgres)
    with serving(postgres) as app:
        assert (seen_by(app, alice), seen_by(app, admin)) == before  # SQLite's tokens work
        assert logs_in(app, "alice")
        # New rows take keys of their own next to the copied ones.
        carol = create_account(runtime_of(app), "carol", api=True)
        client = app.test_client()
        call(client, carol, "POST", "/folders", name="Home")
        session = call(client, alice, "POST", "/sessions", title="On PostgreSQL")
        fake_llm.script(text("Still here."))
        call(client, alice, "POST", f"/sessions/{session['id']}/turns", content="Hello?")
        assert len(call(client, alice, "GET", "/sessions")["items"]) == 3
        found = client.get(f"{API}/sessions?q=tea", headers=alice.headers).get_json()
        assert [item["title"] for item in found["items"]] == ["Filed"]  # the text is indexed
        assert call(client, alice, "POST", "/tokens", name="laptop")["token"]

    again = eonyx(sqlite, "db", "copy", "--to", empty_postgres)
    assert again.exit_code == 1
    assert "the PostgreSQL database is not empty (model_offerings, users," in again.output
