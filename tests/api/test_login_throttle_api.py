"""Failed logins are throttled per account and per client address (Redis counters, backoff),
answered 429 with Retry-After and a wait a person can read; other accounts are unaffected;
an unknown username costs the same password hash as a known one."""

from __future__ import annotations

import pytest
from flask.testing import FlaskClient

from shared.accounts import people
from shared.runtime import Runtime
from tests.conftest import Account, create_account

API = "/api/v1"


def login(client: FlaskClient, username: str, password: str, address: str = "192.0.2.1"):
    return client.post(
        f"{API}/auth/login",
        json={"username": username, "password": password},
        environ_base={"REMOTE_ADDR": address},
    )


def test_an_account_is_throttled_after_a_few_failures_and_others_are_not(
    client: FlaskClient, alice: Account, bob: Account
) -> None:
    free = people.ACCOUNT_POLICY.free
    for _ in range(free):
        assert login(client, "alice", "guess").status_code == 401
    blocking = login(client, "alice", "guess")  # this failure starts the first block
    assert blocking.status_code == 401
    assert "the next try must wait 2 seconds" in blocking.get_json()["error"]["message"]

    refused = login(client, "alice", "correct horse")  # even the right password waits
    assert refused.status_code == 429
    wait = int(refused.headers["Retry-After"])
    assert 1 <= wait <= people.ACCOUNT_POLICY.base
    error = refused.get_json()["error"]
    assert error["code"] == "too_many_logins"
    assert error["message"] == (
        f"too many failed logins for this account: try again in {people.wait_text(wait)}"
    )
    assert (
        login(client, "ALICE", "correct horse").status_code == 429
    )  # names are not case-sensitive
    # other accounts, from the same address, log in as usual
    assert login(client, "bob", "correct horse").status_code == 200


def test_a_client_address_guessing_many_accounts_is_throttled(
    client: FlaskClient, rt: Runtime, alice: Account
) -> None:
    for n in range(people.ADDRESS_POLICY.free + 1):
        assert login(client, f"user{n}", "guess", address="198.51.100.7").status_code == 401
    refused = login(client, "alice", "correct horse", address="198.51.100.7")
    assert refused.status_code == 429
    assert "from this address" in refused.get_json()["error"]["message"]
    assert login(client, "alice", "correct horse", address="203.0.113.9").status_code == 200


def test_a_success_forgets_the_accounts_failures(client: FlaskClient, alice: Account) -> None:
    for _ in range(people.ACCOUNT_POLICY.free):
        login(client, "alice", "guess")
    assert login(client, "alice", "correct horse").status_code == 200
    for _ in range(people.ACCOUNT_POLICY.free):
        assert login(client, "alice", "guess").status_code == 401  # free failures again


def test_an_unknown_username_costs_one_password_hash_like_a_known_one(
    client: FlaskClient, alice: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked: list[str] = []
    real = people.check_password_hash

    def counting(pwhash: str, password: str) -> bool:
        checked.append(pwhash.split("$", 1)[0])
        return real(pwhash, password)

    monkeypatch.setattr(people, "check_password_hash", counting)
    unknown = login(client, "nobody", "guess")
    known = login(client, "alice", "guess")
    assert unknown.get_json() == known.get_json()
    assert unknown.status_code == 401
    assert len(checked) == 2
    assert checked[0] == checked[1]


def test_throttled_attempts_are_refused_without_hashing(
    client: FlaskClient, rt: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    create_account(rt, "carol")
    for _ in range(people.ACCOUNT_POLICY.free + 1):
        login(client, "carol", "guess")
    checked: list[str] = []
    monkeypatch.setattr(people, "check_password_hash", lambda *a: checked.append("x"))
    for _ in range(50):
        assert login(client, "carol", "guess").status_code == 429
    assert checked == []
