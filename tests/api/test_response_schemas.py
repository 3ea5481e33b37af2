"""Response schemas (api.schemas.Schema) dump what marshmallow's generic path dumps: the same
keys and values for every kind of field and object the API hands them, listed sessions and
search results included."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from unittest.mock import patch

import marshmallow as ma
from flask.testing import FlaskClient

from api.schemas import Schema
from api.sessions.schemas import SessionPageSchema
from api.sessions.views import SearchItem
from shared.index.listing import Filters
from shared.runtime import Runtime
from shared.sessions import service as sessions
from tests.api.test_session_listing_api import me
from tests.conftest import Account

API = "/api/v1"


def generic(schema: ma.Schema, obj: Any, many: bool = False) -> Any:
    """What marshmallow's own path makes of `obj` with this schema, nested schemas too."""
    with patch.object(Schema, "_serialize", ma.Schema._serialize):
        return schema.dump(obj, many=many)


class Inner(Schema):
    n = ma.fields.Integer()
    word = ma.fields.String(allow_none=True)


class Shout(ma.fields.String):
    def _serialize(self, value: Any, attr: Any, obj: Any, **kwargs: Any) -> Any:
        return None if value is None else str(value).upper()


class Everything(Schema):
    text = ma.fields.String()
    shouted = Shout()
    nothing = ma.fields.String(allow_none=True)
    flag = ma.fields.Boolean()
    count = ma.fields.Integer()
    count_text = ma.fields.Integer(as_string=True)
    ratio = ma.fields.Float()
    when = ma.fields.AwareDateTime()
    renamed = ma.fields.String(data_key="renamedKey")
    via = ma.fields.String(attribute="source_name")
    dotted = ma.fields.Integer(attribute="inner.n")
    defaulted = ma.fields.String(dump_default="fallback")
    called = ma.fields.Method("describe")
    nested = ma.fields.Nested(Inner, allow_none=True)
    listed = ma.fields.List(ma.fields.Nested(Inner))
    absent = ma.fields.String()

    def describe(self, obj: Any) -> str:
        return f"{type(obj).__name__} with {len(vars(obj)) if hasattr(obj, '__dict__') else 0}"


@dataclass
class Thing:
    text: Any = "plain"
    shouted: Any = "quiet"
    nothing: Any = None
    flag: Any = True
    count: Any = 7
    count_text: Any = 8
    ratio: Any = 0.25
    when: Any = datetime(2026, 12, 4, 8, 0, 1, 250, tzinfo=UTC)
    renamed: Any = "r"
    source_name: Any = "s"
    inner: Any = field(default_factory=lambda: {"n": 3, "word": None})
    nested: Any = field(default_factory=lambda: {"n": 1, "word": "one"})
    listed: Any = field(default_factory=lambda: [{"n": 2, "word": "two"}, {"n": 5}])


class Word(str):
    pass


def test_every_kind_of_field_dumps_as_marshmallow_does() -> None:
    schema = Everything()
    odd = Thing(
        text=Word("a str subclass"),
        flag=1,  # not a bool: the field makes it one
        count=True,  # not an int: the field makes it 1
        ratio=3,  # an int where a float goes
        nested=None,
        listed=[],
    )
    as_dict = {key: value for key, value in vars(Thing()).items() if key != "renamed"}
    for obj in (Thing(), odd, as_dict, {}):
        assert schema.dump(obj) == generic(schema, obj), obj
    assert schema.dump([Thing(), odd], many=True) == generic(schema, [Thing(), odd], many=True)
    dumped = schema.dump(odd)
    assert (dumped["count"], type(dumped["ratio"])) == (1, float)
    assert (dumped["count_text"], dumped["shouted"]) == ("8", "QUIET")
    assert (dumped["defaulted"], "absent" in dumped) == ("fallback", False)
    assert (dumped["renamedKey"], dumped["via"], dumped["dotted"]) == ("r", "s", 3)


def test_listed_sessions_and_search_results_dump_as_marshmallow_does(
    client: FlaskClient, alice: Account, rt: Runtime
) -> None:
    for title in ("alpha notes", "beta notes"):
        created = client.post(f"{API}/sessions", json={"title": title}, headers=alice.headers)
        assert created.status_code == 201, created.get_json()
    pinned = created.get_json()["id"]
    client.patch(f"{API}/sessions/{pinned}", json={"pinned": True}, headers=alice.headers)
    client.delete(f"{API}/sessions/{pinned}", headers=alice.headers)

    schema = SessionPageSchema()
    for trash in (False, True):
        filters = Filters(None, False, trash, None)
        items, cursor = sessions.list_sessions(rt, me(alice), limit=50, filters=filters)
        page = {"items": items, "next_cursor": cursor}
        assert schema.dump(page) == generic(schema, page)
        listed = client.get(f"{API}/sessions?trash={str(trash).lower()}", headers=alice.headers)
        assert listed.get_json() == generic(schema, page)
    found, cursor = sessions.search_sessions(rt, me(alice), "notes", limit=50)
    page = {"items": [SearchItem(f) for f in found], "next_cursor": cursor}
    assert page["items"], "the search finds the session that is not in the trash"
    assert schema.dump(page) == generic(schema, page)
    assert client.get(f"{API}/sessions?q=notes", headers=alice.headers).get_json() == generic(
        schema, page
    )
