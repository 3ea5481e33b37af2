"""The OpenAPI document says what the server enforces, and the server refuses what the
document does not allow: method, body, nesting, path shapes."""

from __future__ import annotations

import importlib
import pkgutil
import re
from typing import Any

import marshmallow as ma
import pytest
from flask.testing import FlaskClient

import api
from api.schemas import StrictSchema, Text
from shared.runtime import Runtime
from tests.conftest import Account, create_account, stored

API = "/api/v1"


@pytest.fixture
def spec(client: FlaskClient) -> dict[str, Any]:
    return client.get(f"{API}/openapi.json").get_json()


def _schema(spec: dict[str, Any], name: str) -> dict[str, Any]:
    return spec["components"]["schemas"][name]["properties"]


def test_a_405_says_which_methods_are_allowed(client: FlaskClient, alice: Account) -> None:
    response = client.put(f"{API}/sessions", headers=alice.headers)
    assert response.status_code == 405
    assert set(response.headers["Allow"].split(", ")) >= {"GET", "POST"}
    assert response.get_json()["error"]["code"] == "method_not_allowed"


def test_every_path_parameter_has_a_documented_shape(spec: dict[str, Any]) -> None:
    for path, item in spec["paths"].items():
        for parameter in item.get("parameters", []):
            schema = parameter["schema"]
            assert "pattern" in schema or "enum" in schema, (path, parameter["name"])


def test_the_rules_the_server_enforces_are_in_the_schemas(spec: dict[str, Any]) -> None:
    new_user = _schema(spec, "NewUser")
    assert new_user["username"]["pattern"] == "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
    assert (new_user["password"]["minLength"], new_user["password"]["maxLength"]) == (8, 1024)
    offering = _schema(spec, "NewOffering")
    assert offering["base_url"]["minLength"] == 1
    assert offering["base_url"]["pattern"]
    assert offering["api_key_env"]["pattern"].startswith("^(?:EONYX_KEY_")
    assert offering["id"]["pattern"] == "^[a-z0-9][a-z0-9_.-]{0,63}$"
    assert "pattern" in _schema(spec, "NewToken")["name"]
    assert "pattern" in _schema(spec, "NewSession")["title"]


def test_a_streamed_turn_is_documented_as_server_sent_events(spec: dict[str, Any]) -> None:
    ok = spec["paths"][f"{API}/sessions/{{session_id}}/turns"]["post"]["responses"]["200"]
    assert set(ok["content"]) == {"application/json", "text/event-stream"}


def test_a_request_that_needs_a_body_refuses_a_missing_one(
    client: FlaskClient, alice: Account, spec: dict[str, Any]
) -> None:
    missing = client.post(f"{API}/tokens", headers=alice.headers)
    assert missing.status_code == 422
    assert missing.get_json()["error"]["message"] == "this request needs a JSON body"
    session = client.post(f"{API}/sessions", headers=alice.headers)  # documented as optional
    assert session.status_code == 201
    assert spec["paths"][f"{API}/sessions"]["post"]["requestBody"]["required"] is False
    patch = client.patch(f"{API}/sessions/{session.get_json()['id']}", headers=alice.headers)
    assert patch.status_code == 422


def test_a_body_that_is_not_json_is_415(client: FlaskClient, alice: Account) -> None:
    response = client.post(
        f"{API}/sessions", data="title=x", content_type="text/plain", headers=alice.headers
    )
    assert response.status_code == 415
    assert response.get_json()["error"]["code"] == "unsupported_media_type"


@pytest.mark.parametrize("depth", [65, 1_000, 100_000])
def test_deeply_nested_json_is_400_even_before_login(client: FlaskClient, depth: int) -> None:
    body = "[" * depth + "]" * depth
    response = client.post(f"{API}/auth/login", data=body, content_type="application/json")
    assert response.status_code == 400
    assert response.get_json()["error"]["message"] == (
        "the request body is nested more than 64 levels deep"
    )


# A well-formed value for each path parameter: the body is read before any lookup.
PATH_VALUES = {
    "session_id": "20260705T091500-1a2b3c4d",
    "kind": "user",
    "role": "chat",
    "device_id": "laptop",
}
# JSON Python reads but cannot hold, or that JSON does not allow (each was a 500 when over
# Python's limit of 4,300 digits for an integer).
UNREADABLE_NUMBERS = {
    "a 4301-digit integer": "7" * 4301,
    "a negative 5000-digit integer": "-" + "7" * 5000,
    "an infinite float": "1e999",
    "NaN": "NaN",
    "Infinity": "-Infinity",
}


def _json_operations(spec: dict[str, Any]) -> list[tuple[str, str]]:
    found = []
    for path, item in spec["paths"].items():
        for method in {"post", "put", "patch", "delete"} & set(item):
            operation = item[method]
            content = (operation.get("requestBody") or {}).get("content") or {}
            if "application/json" in content:
                url = path
                for name in re.findall(r"{(\w+)}", path):
                    url = url.replace(f"{{{name}}}", PATH_VALUES.get(name, "0" * 32))
                found.append((method.upper(), url))
    return found


@pytest.mark.parametrize("number", list(UNREADABLE_NUMBERS), ids=list(UNREADABLE_NUMBERS))
def test_a_number_python_cannot_read_is_400_on_every_json_route_and_saves_nothing(
    client: FlaskClient,
    spec: dict[str, Any],
    alice: Account,
    admin: Account,
    rt: Runtime,
    number: str,
) -> None:
    operations = _json_operations(spec)
    assert ("POST", f"{API}/auth/login") in operations
    assert len(operations) >= 17
    key = create_account(rt, "integrator", api=True)  # the /v1 routes take API keys
    before = stored(rt)
    body = '{"content": "hi", "title": "t", "n": ' + UNREADABLE_NUMBERS[number] + "}"
    for method, url in operations:
        statuses = set()
        for headers in ({}, admin.headers, key.headers):
            response = client.open(
                url, method=method, data=body, content_type="application/json", headers=headers
            )
            statuses.add(response.status_code)
            if response.status_code in (401, 403):
                continue  # login and role checks come first where they are needed
            assert response.status_code == 400, (method, url, response.get_data(as_text=True))
            error = response.get_json()["error"]
            assert error["code"] == "invalid_json", (method, url, error)
            assert "the request body" in error["message"], error
        assert 400 in statuses, (method, url, statuses)
    assert stored(rt) == before


def test_nesting_inside_strings_does_not_count(client: FlaskClient, alice: Account) -> None:
    title = "[{" * 100
    response = client.post(f"{API}/sessions", json={"title": title}, headers=alice.headers)
    assert response.status_code == 201
    assert response.get_json()["title"] == title


def _input_schemas() -> list[type[ma.Schema]]:
    for module in pkgutil.walk_packages(api.__path__, "api."):
        importlib.import_module(module.name)
    found, todo = [], [StrictSchema]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


def test_every_string_a_client_sends_goes_through_the_text_rule() -> None:
    schemas = _input_schemas()
    assert len(schemas) > 10
    for schema in schemas:
        for name, field in schema._declared_fields.items():
            inner = field.inner if isinstance(field, ma.fields.List) else field
            if isinstance(inner, ma.fields.String):
                assert isinstance(inner, Text), f"{schema.__name__}.{name} is not a Text/Line"
