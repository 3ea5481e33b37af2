"""Storage quotas (issue 38): what a user stores, /me/usage, and writes refused past the quota."""

from __future__ import annotations

from flask.testing import FlaskClient

from tests.conftest import Account

API = "/api/v1"


def test_me_usage_shows_what_the_user_stores_and_their_quota(
    client: FlaskClient, alice: Account
) -> None:
    response = client.get(f"{API}/me/usage", headers=alice.headers)
    assert response.status_code == 200
    storage = response.get_json()["storage"]
    assert storage["used_bytes"] == 0
    assert storage["quota_bytes"] == 5 * 1024**3  # STORAGE_QUOTA_BYTES' default
    assert set(storage["by_kind"]) == {
        "sessions",
        "images",
        "trash",
        "memory",
        "memory_backups",
        "other",
    }
    created = client.post(f"{API}/sessions", json={"title": "notes"}, headers=alice.headers)
    assert created.status_code == 201
    storage = client.get(f"{API}/me/usage", headers=alice.headers).get_json()["storage"]
    assert storage["used_bytes"] == storage["by_kind"]["sessions"] > 0
