"""PostgreSQL's full-text engine (shared.index.tsvector.PostgresEngine): lexemes keyed by their
owner (migration 0015), and its two plans, the GIN index for a word in few of the user's texts
and a walk newest first for a common one, which must find the same texts."""

from __future__ import annotations

import pytest
from alembic import command
from sqlalchemy import text

from shared.core.clock import isoformat, utcnow
from shared.core.messages import new_message_id
from shared.db.database import alembic_config
from shared.index import tsvector
from shared.index.query import parse_query
from shared.runtime import Runtime
from shared.sessions import service as session_service
from tests.conftest import Account
from tests.shared.test_search import chat_in, found, me


@pytest.fixture(autouse=True)
def postgres_only(rt: Runtime) -> None:
    if rt.db.engine.dialect.name != "postgresql":
        pytest.skip("PostgreSQL's engine")


def candidates(rt: Runtime, who: Account, query: str, window: int, before: int | None = None):
    with rt.db.session() as db:
        return tsvector.POSTGRES.candidates(
            db, who.user_id, parse_query(query), before=before, window=window
        )


def tiers(rt: Runtime, who: Account, query: str, window: int) -> list[list[str]]:
    """Every matching text's body, a window at a time, as search reads them."""
    out: list[list[str]] = []
    before = None
    while True:
        rows = candidates(rt, who, query, window, before)
        out.append([row[4] for row in rows])
        if len(rows) < window:
            return out
        before = min(row[0] for row in rows)


def test_both_plans_read_the_same_texts_newest_first_and_only_the_owners(
    rt: Runtime, alice: Account, bob: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [f"heron {n}" if n % 3 else f"a plain line {n}" for n in range(30)]
    chat_in(rt, alice, "Birds", *lines)
    chat_in(rt, bob, "Bob's birds", *[f"herons too {n}" for n in range(30)])
    mine = [line for line in reversed(lines) if line.startswith("heron")]  # newest first
    expected = [mine[start : start + 4] for start in range(0, len(mine), 4)]
    if len(mine) % 4 == 0:
        expected.append([])

    by_gin = tiers(rt, alice, "heron", 4)  # 20 matches, under PROBE: the GIN index
    monkeypatch.setattr(tsvector, "PROBE", 3)  # "common": newest first, 5 windows...
    walked = tiers(rt, alice, "heron", 4)
    monkeypatch.setattr(tsvector, "WALK", 1)  # ...or 1, then the older rest from GIN
    walked_short = tiers(rt, alice, "heron", 4)
    assert by_gin == walked == walked_short == expected
    assert [row[4] for row in candidates(rt, bob, "heron", 100)][:2] == [
        "herons too 29",
        "herons too 28",
    ]
    assert candidates(rt, bob, "plain", 100) == []  # Alice's word, whichever plan


def test_a_word_too_long_for_a_keyed_lexeme_is_left_out_and_the_rest_found(
    rt: Runtime, alice: Account
) -> None:
    """to_tsvector keeps words up to 2,047 bytes; with the owner's key one of those would
    not fit a lexeme and the insert would fail: it is left out instead."""
    long_word = "x" * 2040
    made = chat_in(rt, alice, "Blob", f"{long_word} kestrel")
    assert found(rt, alice, "kestrel") == [made]
    assert found(rt, alice, "xxxx") == []


def test_texts_indexed_before_the_owner_keys_are_found_after_the_upgrade(
    rt: Runtime, alice: Account, bob: Account
) -> None:
    """Migration 0015 recomputes the column of the texts already there."""
    config = alembic_config()
    with rt.db.engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, "0014")
    try:
        made = chat_in(rt, alice, "Birds", "two pelicans and a pelicanlike shape")
        chat_in(rt, bob, "Bob's", "a pelican")
        with rt.db.session() as db:  # the session's messages in the old column's table
            texts = db.execute(
                text("SELECT count(*) FROM session_text WHERE tsv @@ 'pelicans'")
            ).scalar()
        assert texts == 1
    finally:
        rt.db.migrate()
    assert found(rt, alice, "pelican") == [made]
    session_service.append_records(
        rt,
        me(alice),
        made,
        [
            {
                "type": "message",
                "id": new_message_id(),
                "role": "user",
                "content": "and an osprey",
                "created_at": isoformat(utcnow()),
            }
        ],
    )
    assert found(rt, alice, "osprey") == [made]
    assert len(found(rt, bob, "pelican")) == 1
