"""Each API process keeps recently checked tokens; a change of who may act as a user reaches
every process's cache, and a process without a live subscription asks the database."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import event, update

from api.app import create_app
from shared.core.clock import utcnow
from shared.db.orm import ApiToken
from tests.conftest import Account, Backend, make_settings, runtime, wait_for

API = "/api/v1"


@pytest.fixture
def replica(tmp_path: Path, backend: Backend, app: Flask) -> Iterator[Flask]:
    """A second API process on the same database, Redis and data directory."""
    other = create_app(make_settings(tmp_path / "data", backend))
    yield other
    runtime(other).close()


def statements(app: Flask) -> list[str]:
    """The SQL statements the app's engine runs from now on."""
    seen: list[str] = []
    event.listen(runtime(app).db.engine, "before_cursor_execute", lambda *a: seen.append(a[2]))
    return seen


def answers(client: FlaskClient, account: Account) -> int:
    return client.get(f"{API}/sessions", headers=account.headers).status_code


def test_a_known_token_is_checked_without_the_database(
    app: Flask, client: FlaskClient, alice: Account
) -> None:
    wait_for(lambda: runtime(app).tokens.listener.live, 5, "the token cache's subscription")
    assert answers(client, alice) == 200
    seen = statements(app)
    assert answers(client, alice) == 200
    assert not [sql for sql in seen if "tokens" in sql]


def test_a_token_revoked_on_one_replica_is_refused_by_the_other(
    app: Flask, client: FlaskClient, replica: Flask, alice: Account
) -> None:
    other = replica.test_client()
    wait_for(lambda: runtime(replica).tokens.listener.live, 5, "the replica's subscription")
    assert answers(other, alice) == 200  # now in the replica's cache
    assert client.post(f"{API}/auth/logout", headers=alice.headers).status_code == 204
    assert answers(client, alice) == 401  # at once where it was revoked
    wait_for(lambda: answers(other, alice) == 401, 5, "the replica to refuse the token")


def test_without_a_subscription_every_request_asks_the_database(
    app: Flask, client: FlaskClient, alice: Account
) -> None:
    """No subscription (no Redis, or it went away), no cache: a change that nobody
    announced is seen at once."""
    runtime(app).tokens.close()  # as when nothing can be heard
    assert answers(client, alice) == 200
    with runtime(app).db.session() as db:
        db.execute(update(ApiToken).values(revoked_at=utcnow()))
    assert answers(client, alice) == 401
