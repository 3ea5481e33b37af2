"""Groups of people, and which groups may use which model (issue 39, item 3): the groups API
for administrators, offerings kept for groups (`allowed_groups`), what a user outside them
sees (`/v1/models`, `/api/v1/models/offerings`) and may not do (a turn naming the offering,
through the real `openai` client and the session turns API), and task models hidden from
plain users' `/v1/models`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest
from flask.testing import FlaskClient

from shared.accounts import groups
from shared.runtime import Runtime
from tests.api.conftest import Facade
from tests.conftest import Account, create_account

API = "/api/v1"


def test_groups_are_made_filled_renamed_and_deleted_by_administrators_only(
    client: FlaskClient, admin: Account, alice: Account, bob: Account
) -> None:
    as_admin = admin.headers
    made = client.post(f"{API}/groups", json={"name": " Research "}, headers=as_admin)
    assert made.status_code == 201
    group = made.get_json()
    assert group["name"] == "Research"
    assert group["members"] == []
    assert len(group["id"]) == 32
    url = f"{API}/groups/{group['id']}"

    # a plain user is refused every verb, as the rest of the admin API refuses them
    refused = client.get(f"{API}/users", headers=alice.headers)
    for method, path, body in (
        ("get", f"{API}/groups", None),
        ("post", f"{API}/groups", {"name": "mine"}),
        ("patch", url, {"name": "mine"}),
        ("put", f"{url}/members", {"user_ids": [alice.user_id]}),
        ("delete", url, None),
    ):
        answer = getattr(client, method)(path, json=body, headers=alice.headers)
        assert (answer.status_code, answer.get_json()) == (403, refused.get_json()), path

    assert (
        client.post(f"{API}/groups", json={"name": "Research"}, headers=as_admin).status_code == 409
    )
    blank = client.post(f"{API}/groups", json={"name": "   "}, headers=as_admin)
    assert blank.status_code == 422

    members = client.put(
        f"{url}/members", json={"user_ids": [bob.user_id, alice.user_id]}, headers=as_admin
    )
    assert members.status_code == 200
    assert [m["username"] for m in members.get_json()["members"]] == ["alice", "bob"]

    ghost = "f" * 32
    unknown = client.put(
        f"{url}/members", json={"user_ids": [alice.user_id, ghost]}, headers=as_admin
    )
    assert unknown.status_code == 422
    error = unknown.get_json()["error"]
    assert error["code"] == "unknown_users"
    assert ghost in error["message"]
    assert alice.user_id not in error["message"]
    listed = client.get(f"{API}/groups", headers=as_admin).get_json()
    assert [m["username"] for m in listed[0]["members"]] == ["alice", "bob"]  # unchanged

    other = client.post(f"{API}/groups", json={"name": "Sales"}, headers=as_admin).get_json()
    clash = client.patch(url, json={"name": "Sales"}, headers=as_admin)
    assert clash.status_code == 409
    assert clash.get_json()["error"]["code"] == "group_exists"
    renamed = client.patch(url, json={"name": "R&D"}, headers=as_admin)
    assert renamed.status_code == 200
    assert renamed.get_json()["name"] == "R&D"
    assert [g["name"] for g in client.get(f"{API}/groups", headers=as_admin).get_json()] == [
        "R&D",
        "Sales",
    ]

    assert client.delete(url, headers=as_admin).status_code == 204
    assert client.get(url, headers=as_admin).status_code == 404
    assert client.put(f"{url}/members", json={"user_ids": []}, headers=as_admin).status_code == 404
    remaining = client.get(f"{API}/groups", headers=as_admin).get_json()
    assert [g["id"] for g in remaining] == [other["id"]]


def test_a_group_claim_fills_groups_of_the_same_name(
    client: FlaskClient, rt: Runtime, admin: Account, alice: Account
) -> None:
    made = client.post(f"{API}/groups", json={"name": "engineering"}, headers=admin.headers)
    kept = client.post(f"{API}/groups", json={"name": "old-team"}, headers=admin.headers)
    client.put(
        f"{API}/groups/{kept.get_json()['id']}/members",
        json={"user_ids": [alice.user_id]},
        headers=admin.headers,
    )
    with rt.db.session() as db:
        mine = groups.set_groups_by_name(db, alice.user_id, ["engineering", "/eu/berlin", "x" * 99])
    assert {g.name for g in mine} == {"/eu/berlin", "engineering"}

    listed = {g["name"]: g for g in client.get(f"{API}/groups", headers=admin.headers).get_json()}
    assert set(listed) == {"/eu/berlin", "engineering", "old-team"}  # one made, none doubled
    assert listed["engineering"]["id"] == made.get_json()["id"]
    assert [m["username"] for m in listed["engineering"]["members"]] == ["alice"]
    assert listed["old-team"]["members"] == []  # the provider no longer names it


# -- who may use which model --------------------------------------------------------------


def _offering(facade: Facade, admin: Account, offering_id: str) -> None:
    body = {"id": offering_id, "base_url": facade.llm.base_url, "model": f"{offering_id}-model"}
    added = httpx.post(f"{facade.url}{API}/models/offerings", json=body, headers=admin.headers)
    assert added.status_code == 201, added.text


def _call(facade: Facade, method: str, path: str, who: Account, **kw: Any) -> httpx.Response:
    return httpx.request(method, f"{facade.url}{path}", headers=who.headers, timeout=30, **kw)


def _v1_models(facade: Facade, who: Account) -> list[str]:
    return sorted(m.id for m in facade.client(who.token).models.list())


def _offerings(facade: Facade, who: Account) -> list[str]:
    return sorted(o["id"] for o in _call(facade, "GET", f"{API}/models/offerings", who).json())


def _turn(facade: Facade, who: Account, offering: str) -> httpx.Response:
    session = _call(facade, "POST", f"{API}/sessions", who, json={}).json()["id"]
    return _call(
        facade,
        "POST",
        f"{API}/sessions/{session}/turns",
        who,
        json={"content": "hello", "offering": offering},
    )


@pytest.fixture
def team(make_facade: Callable[..., Facade]) -> tuple[Facade, Account, Account, Account]:
    """A served app with an administrator, a member of `research` and someone outside it;
    the offering `big` kept for `research`."""
    facade = make_facade()
    admin = create_account(facade.rt, "root", admin=True)
    member = create_account(facade.rt, "marie")
    outsider = facade.user
    _offering(facade, admin, "big")
    group = _call(facade, "POST", f"{API}/groups", admin, json={"name": "research"}).json()
    _call(
        facade,
        "PUT",
        f"{API}/groups/{group['id']}/members",
        admin,
        json={"user_ids": [member.user_id]},
    )
    kept = _call(
        facade,
        "PATCH",
        f"{API}/models/offerings/big",
        admin,
        json={"allowed_groups": [group["id"]]},
    )
    assert kept.status_code == 200, kept.text
    assert kept.json()["allowed_groups"] == [group["id"]]
    return facade, admin, member, outsider


def test_someone_outside_an_offerings_groups_neither_sees_nor_uses_it(
    team: tuple[Facade, Account, Account, Account],
) -> None:
    facade, admin, member, outsider = team

    assert _v1_models(facade, outsider) == ["default"]
    assert _offerings(facade, outsider) == ["default"]
    assert _call(facade, "GET", f"{API}/models/offerings/big", outsider).status_code == 404
    with pytest.raises(openai.NotFoundError):
        facade.client(outsider.token).models.retrieve("big")

    asked = len(facade.llm.completions)
    with pytest.raises(openai.PermissionDeniedError) as refused:
        facade.client(outsider.token).chat.completions.create(
            model="big", messages=[{"role": "user", "content": "hi"}]
        )
    assert refused.value.status_code == 403
    assert refused.value.code == "offering_not_allowed"
    assert refused.value.body["type"] == "permission_error"  # OpenAI's shape
    with pytest.raises(openai.PermissionDeniedError) as refused:
        facade.client(outsider.token).responses.create(model="big", input="hi")
    assert refused.value.code == "offering_not_allowed"
    # the refused /v1 requests left no session behind
    assert _call(facade, "GET", f"{API}/sessions", outsider).json()["items"] == []
    turn = _turn(facade, outsider, "big")
    assert turn.status_code == 403
    assert turn.json()["error"]["code"] == "offering_not_allowed"
    assert len(facade.llm.completions) == asked  # the model was never asked

    # the default, open to everyone, still answers the outsider
    answer = facade.client(outsider.token).chat.completions.create(
        model="default", messages=[{"role": "user", "content": "hi"}]
    )
    assert answer.choices[0].message.content


def test_members_and_administrators_see_and_use_a_kept_offering(
    team: tuple[Facade, Account, Account, Account],
) -> None:
    facade, admin, member, _ = team
    for who in (member, admin):
        assert _v1_models(facade, who) == ["big", "default"]
        assert _offerings(facade, who) == ["big", "default"]
        asked = len(facade.llm.completions)
        answer = facade.client(who.token).chat.completions.create(
            model="big", messages=[{"role": "user", "content": "hi"}]
        )
        assert answer.choices[0].message.content
        turn = _turn(facade, who, "big")
        assert turn.status_code == 200, turn.text
        models = [r.body["model"] for r in facade.llm.completions[asked:]]
        assert models == ["big-model", "big-model"]
    # a plain user is not told which groups an offering is kept for
    shown = _call(facade, "GET", f"{API}/models/offerings/big", member).json()
    assert "allowed_groups" not in shown


def test_access_changes_apply_to_the_next_request(
    team: tuple[Facade, Account, Account, Account],
) -> None:
    facade, admin, member, outsider = team
    groups_now = _call(facade, "GET", f"{API}/groups", admin).json()
    research = groups_now[0]["id"]
    assert _turn(facade, outsider, "big").status_code == 403  # kept: the answer is cached

    joined = _call(
        facade,
        "PUT",
        f"{API}/groups/{research}/members",
        admin,
        json={"user_ids": [member.user_id, outsider.user_id]},
    )
    assert joined.status_code == 200
    assert _turn(facade, outsider, "big").status_code == 200
    assert "big" in _v1_models(facade, outsider)

    _call(facade, "PUT", f"{API}/groups/{research}/members", admin, json={"user_ids": []})
    assert _turn(facade, outsider, "big").status_code == 403
    # the only group an offering allows cannot go: everyone would then use the offering
    in_use = _call(facade, "DELETE", f"{API}/groups/{research}", admin)
    assert in_use.status_code == 409
    assert in_use.json()["error"]["code"] == "group_in_use"

    unknown = _call(
        facade, "PATCH", f"{API}/models/offerings/big", admin, json={"allowed_groups": ["nope"]}
    )
    assert unknown.status_code == 422
    assert "nope" in unknown.json()["error"]["message"]
    assert (
        _call(
            facade, "PATCH", f"{API}/models/offerings/big", member, json={"allowed_groups": []}
        ).status_code
        == 403
    )
    opened = _call(
        facade, "PATCH", f"{API}/models/offerings/big", admin, json={"allowed_groups": []}
    )
    assert opened.json()["allowed_groups"] == []
    assert _turn(facade, outsider, "big").status_code == 200
    assert _offerings(facade, outsider) == ["big", "default"]


def test_task_models_are_not_offered_to_plain_users(make_facade: Callable[..., Facade]) -> None:
    facade = make_facade()
    admin = create_account(facade.rt, "root", admin=True)
    user = facade.user
    for offering_id in ("title", "extract", "chatty"):
        _offering(facade, admin, offering_id)
    for role, offering_id in (
        ("session_title", "title"),
        ("user_memory_extraction", "extract"),
        ("summarization", "default"),  # the chat's own offering too: it stays offered
    ):
        bound = _call(
            facade, "PUT", f"{API}/models/roles/{role}", admin, json={"offering_id": offering_id}
        )
        assert bound.status_code == 200, bound.text

    assert _v1_models(facade, user) == ["chatty", "default"]
    assert _v1_models(facade, admin) == ["chatty", "default", "extract", "title"]
    # once the chat itself uses one, it is offered again
    _call(facade, "PUT", f"{API}/models/roles/chat", admin, json={"offering_id": "title"})
    assert _v1_models(facade, user) == ["chatty", "default", "title"]
