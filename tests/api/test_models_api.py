from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from flask.testing import FlaskClient
from sqlalchemy import event

from api.app import create_app
from api.context import runtime_of
from cli.command import main
from shared.core.clock import utcnow
from shared.core.errors import InvalidInput
from shared.db.orm import OfferingRow, RoleBinding
from shared.llm import models
from shared.runtime import Runtime
from tests.conftest import Account, Backend, create_account, make_settings, wait_for
from workers.queue import celery_jobs

API = "/api/v1"
OFFERING = {
    "id": "big",
    "base_url": "http://127.0.0.1:9/v1",
    "model": "big-model",
    "api_key_env": "EONYX_KEY_BIG",
    "context_window": 128000,
}


def test_admins_write_everyone_reads_and_no_key_value_is_returned(
    client: FlaskClient, admin: Account, alice: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EONYX_KEY_BIG", "sk-secret-value")
    url = f"{API}/models/offerings"
    assert client.post(url, json=OFFERING, headers=alice.headers).status_code == 403
    created = client.post(url, json=OFFERING, headers=admin.headers)
    assert created.status_code == 201
    shown = {**OFFERING, "max_output_tokens": None, "builtin": False}
    listed = client.get(url, headers=admin.headers)
    assert listed.get_json() == [{**shown, "api_key_set": True, "allowed_groups": []}]
    assert b"sk-secret-value" not in listed.data
    # a plain user is not told which variable holds the key, nor whether it is set
    del shown["api_key_env"]
    assert client.get(url, headers=alice.headers).get_json() == [shown]
    assert client.post(url, json=OFFERING, headers=admin.headers).status_code == 409


@pytest.mark.parametrize(
    "change",
    [
        {"base_url": "ftp://x"},
        {"id": "Bad Id"},
        {"context_window": 0},
        {"api_key": "sk-inline"},
        {"api_key_env": "lower-case"},
        {"id": "default"},
    ],
)
def test_bad_offerings_are_refused(client: FlaskClient, admin: Account, change: dict) -> None:
    response = client.post(
        f"{API}/models/offerings", json={**OFFERING, **change}, headers=admin.headers
    )
    assert 400 <= response.status_code < 500
    assert response.get_json()["error"]["message"]


def test_unset_roles_fall_back_to_the_chat_offering(
    client: FlaskClient, admin: Account, rt: Runtime
) -> None:
    client.post(f"{API}/models/offerings", json=OFFERING, headers=admin.headers)
    small = {**OFFERING, "id": "small", "model": "small-model"}
    client.post(f"{API}/models/offerings", json=small, headers=admin.headers)
    put = client.put(f"{API}/models/roles/chat", json={"offering_id": "big"}, headers=admin.headers)
    assert put.get_json() == {"role": "chat", "offering_id": "big", "explicit": True}
    client.put(
        f"{API}/models/roles/session_title", json={"offering_id": "small"}, headers=admin.headers
    )

    roles = {
        r["role"]: r for r in client.get(f"{API}/models/roles", headers=admin.headers).get_json()
    }
    assert roles["summarization"] == {
        "role": "summarization",
        "offering_id": "big",
        "explicit": False,
    }
    assert roles["session_title"]["offering_id"] == "small"
    with rt.db.session() as db:
        assert models.resolve(db, rt.settings, "user_memory_extraction").model == "big-model"
        assert models.resolve(db, rt.settings, "session_title").model == "small-model"


def test_an_unset_role_falls_back_to_the_chat_offering_again(
    client: FlaskClient, admin: Account, alice: Account, rt: Runtime
) -> None:
    client.post(f"{API}/models/offerings", json=OFFERING, headers=admin.headers)
    small = {**OFFERING, "id": "small", "model": "small-model"}
    client.post(f"{API}/models/offerings", json=small, headers=admin.headers)
    client.put(f"{API}/models/roles/chat", json={"offering_id": "big"}, headers=admin.headers)
    url = f"{API}/models/roles/session_title"
    client.put(url, json={"offering_id": "small"}, headers=admin.headers)

    unset = {"offering_id": None}
    assert client.put(url, json=unset, headers=alice.headers).status_code == 403
    assert client.get(url, headers=admin.headers).get_json()["offering_id"] == "small"
    cleared = client.put(url, json=unset, headers=admin.headers)
    assert cleared.status_code == 200
    assert cleared.get_json() == {"role": "session_title", "offering_id": "big", "explicit": False}
    assert client.get(url, headers=admin.headers).get_json() == cleared.get_json()
    with rt.db.session() as db:
        assert models.resolve(db, rt.settings, "session_title").model == "big-model"
    # unsetting a role that is not set changes nothing
    assert client.put(url, json=unset, headers=admin.headers).get_json()["offering_id"] == "big"
    poetry = client.put(f"{API}/models/roles/poetry", json=unset, headers=admin.headers)
    assert poetry.status_code == 404
    # there is nothing to delete: a role is a fixed name
    assert client.delete(url, headers=admin.headers).status_code == 405


def test_unknown_role_and_offering(client: FlaskClient, admin: Account) -> None:
    assert client.get(f"{API}/models/roles/poetry", headers=admin.headers).status_code == 404
    missing = client.put(
        f"{API}/models/roles/chat", json={"offering_id": "nope"}, headers=admin.headers
    )
    assert missing.status_code == 404


def test_env_variables_give_a_default_offering_for_every_role(
    tmp_path: Path, backend: Backend
) -> None:
    settings = make_settings(
        tmp_path / "d",
        backend,
        EONYX_LLM_BASE_URL="http://127.0.0.1:9/v1",
        EONYX_LLM_MODEL="m",
        EONYX_LLM_API_KEY="sk-env",
        EONYX_LLM_CONTEXT_WINDOW="8000",
    )
    app = create_app(settings, jobs_queue=celery_jobs(settings))
    rt: Runtime = runtime_of(app)
    rt.db.migrate()
    user = create_account(rt, "u")
    body = app.test_client().get(f"{API}/models/offerings", headers=user.headers).get_json()
    assert body == [
        {
            "id": "default",
            "base_url": "http://127.0.0.1:9/v1",
            "model": "m",
            "context_window": 8000,
            "max_output_tokens": None,
            "builtin": True,
        }
    ]
    with rt.db.session() as db:
        for role in models.ROLES:
            offering = models.resolve(db, settings, role)
            assert (offering.id, offering.api_key, offering.context_window) == (
                "default",
                "sk-env",
                8000,
            )
    rt.close()


def test_no_model_configured_is_a_clear_error(rt: Runtime) -> None:
    with rt.db.session() as db, pytest.raises(models.NoModel, match="EONYX_LLM_BASE_URL"):
        models.resolve(db, rt.settings, "chat")


def test_models_cli(tmp_path: Path, backend: Backend, rt: Runtime) -> None:
    env = {
        "DATA_DIR": str(rt.settings.data_dir),
        "DATABASE_URL": backend.database_url,
        "REDIS_URL": backend.redis_url,
        "EONYX_KEY_BIG": "sk-x",
    }
    runner = CliRunner(env=env)
    added = runner.invoke(
        main,
        [
            "models",
            "add",
            "big",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "big-model",
            "--api-key-env",
            "EONYX_KEY_BIG",
            "--context-window",
            "128000",
        ],
    )
    assert added.exit_code == 0, added.output
    listed = runner.invoke(main, ["models", "list"])
    assert (
        "big  big-model at http://127.0.0.1:9/v1  [128,000 tokens; key from EONYX_KEY_BIG]"
        in listed.output
    )
    assert "sk-x" not in listed.output
    assert runner.invoke(main, ["models", "role", "set", "summarization", "big"]).exit_code == 0
    roles = runner.invoke(main, ["models", "role", "list"]).output
    assert "summarization           big" in roles
    assert "session_title           (none)  (falls back to chat)" in roles
    bad = runner.invoke(main, ["models", "role", "set", "chat", "nope"])
    assert bad.exit_code == 1
    assert "no offering 'nope'" in bad.output


def test_a_catalog_change_by_another_process_reaches_every_process(
    tmp_path: Path, backend: Backend
) -> None:
    """Each process keeps the offerings it resolved; a change anywhere reaches them all (at
    once in the process that made it, over pub/sub in the others)."""
    settings = make_settings(
        tmp_path / "d", backend, EONYX_LLM_BASE_URL="http://127.0.0.1:9/v1", EONYX_LLM_MODEL="m"
    )
    with Runtime.build(settings) as server, Runtime.build(settings) as other:
        server.db.migrate()
        for process in (server, other):
            wait_for(lambda p=process: p.offerings.listener.live, 5, "the catalog listener")
        assert models.offering_for(server, "chat").model == "m"
        queries: list[str] = []
        event.listen(server.db.engine, "before_cursor_execute", lambda *a: queries.append(a[2]))
        assert models.offering_for(server, "chat").model == "m"
        assert queries == []  # kept: no database query
        with other.db.session() as db:
            models.add_offering(db, id="big", base_url="http://127.0.0.1:9/v1", model="big")
            models.set_role(db, other.settings, "chat", "big")
        wait_for(lambda: models.offering_for(server, "chat").model == "big", 5, "the change")
        assert models.offering_for(server, "summarization").model == "big"
        with other.db.session() as db:
            models.delete_offering(db, "big")
        wait_for(lambda: models.offering_for(server, "chat").model == "m", 5, "the deletion")
        with server.db.session() as db:  # and a change in the same process, seen at once
            models.add_offering(db, id="small", base_url="http://127.0.0.1:9/v1", model="s")
            models.set_role(db, server.settings, "summarization", "small")
        assert models.offering_for(server, "summarization").model == "s"


@pytest.mark.parametrize(
    "variable", ["HOME", "DATABASE_URL", "PATH", "EONYX_KEY_", "EONYX_KEYS", "eonyx_key_x"]
)
def test_api_key_env_must_be_a_variable_meant_for_keys(
    client: FlaskClient, admin: Account, variable: str
) -> None:
    body = {**OFFERING, "api_key_env": variable}
    response = client.post(f"{API}/models/offerings", json=body, headers=admin.headers)
    assert response.status_code == 422
    assert response.get_json()["error"]["message"].startswith("api_key_env: ")
    for allowed in ("EONYX_KEY_OPENAI", "EONYX_LLM_API_KEY"):
        body = {**OFFERING, "id": allowed.lower().replace("_", "-"), "api_key_env": allowed}
        assert (
            client.post(f"{API}/models/offerings", json=body, headers=admin.headers).status_code
            == 201
        )


def test_an_offering_naming_another_variable_is_never_sent_its_value(
    rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An offering added before the allow-list may name DATABASE_URL: it is refused, and the
    variable is not even read."""
    monkeypatch.setenv("DATABASE_URL", "postgresql://user:secret@db/eonyx")
    with rt.db.session() as db:
        db.add(
            OfferingRow(
                id="old",
                base_url="http://127.0.0.1:9/v1",
                model="m",
                api_key_env="DATABASE_URL",
                created_at=utcnow(),
            )
        )
        db.flush()
        db.add(RoleBinding(role="chat", offering_id="old"))
    with rt.db.session() as db, pytest.raises(models.NoModel, match="not allowed"):
        models.resolve(db, rt.settings, "chat")
    # the domain refuses it too (the CLI's `eonyx models add` goes straight to it)
    with rt.db.session() as db, pytest.raises(InvalidInput, match="api_key_env must be"):
        models.add_offering(
            db, id="x", base_url="http://127.0.0.1:9/v1", model="m", api_key_env="HOME"
        )


def test_url_credentials_and_the_key_variable_are_for_admins_only(
    client: FlaskClient, admin: Account, alice: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EONYX_KEY_BIG", "sk-secret-value")
    body = {**OFFERING, "base_url": "https://user:pw@llm.example/v1"}
    assert (
        client.post(f"{API}/models/offerings", json=body, headers=admin.headers).status_code == 201
    )
    seen_by_admin = client.get(f"{API}/models/offerings/big", headers=admin.headers).get_json()
    assert seen_by_admin["base_url"] == body["base_url"]
    assert seen_by_admin["api_key_env"] == "EONYX_KEY_BIG"
    assert seen_by_admin["api_key_set"]
    for url in (f"{API}/models/offerings/big", f"{API}/models/offerings"):
        shown = client.get(url, headers=alice.headers)
        seen = shown.get_json()
        seen = seen[0] if isinstance(seen, list) else seen
        assert seen["base_url"] == "https://***@llm.example/v1"
        assert "api_key_env" not in seen
        assert "api_key_set" not in seen
        for secret in (b"user:pw", b"EONYX_KEY_BIG", b"sk-secret-value"):
            assert secret not in shown.data


@pytest.mark.parametrize(
    ("base_url", "taken"),
    [
        ("http://127.0.0.1:65535/v1", True),
        ("https://llm.example/v1", True),
        ("http://localhost", True),
        ("http://[::1", False),
        ("http://:80/v1", False),
        ("ftp://llm.example/v1", False),
        ("http://llm.example:99999/v1", False),
        ("", False),
        # a query or fragment would land before the path: ...v1?key=sk/chat/completions
        ("https://llm.example/v1?key=sk-q", False),
        ("https://llm.example?api-version=2", False),
        ("https://llm.example/v1#top", False),
        ("https://llm.example/v1/?", False),
    ],
)
def test_base_url_is_an_http_url_with_a_host(
    client: FlaskClient, admin: Account, base_url: str, taken: bool
) -> None:
    body = {**OFFERING, "base_url": base_url, "api_key_env": None}
    response = client.post(f"{API}/models/offerings", json=body, headers=admin.headers)
    assert (response.status_code == 201) == taken, response.get_json()
    if not taken:
        assert response.status_code in (400, 422)
        assert "base_url" in response.get_json()["error"]["message"]
