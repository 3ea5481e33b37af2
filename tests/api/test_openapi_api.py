"""The OpenAPI document says what the server enforces, and the server refuses what the
document does not allow: method, body, nesting, path shapes."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import marshmallow as ma
import pytest
from flask.testing import FlaskClient

import api
from api.schemas import StrictSchema, Text
from tests.conftest import Account

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
    assert offering["base_url"]["minLength"] == 1 and offering["base_url"]["pattern"]
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
        "the JSON body is nested more than 64 levels deep"
    )


def test_nesting_inside_strings_does_not_count(client: FlaskClient, alice: Account) -> None:
    title = "[{" * 100
    response = client.post(f"{API}/sessions", json={"title": title}, headers=alice.headers)
    assert response.status_code == 201 and response.get_json()["title"] == title


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
