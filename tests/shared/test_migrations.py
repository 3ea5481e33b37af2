"""The migrations and the ORM describe one schema: `alembic upgrade head` on an empty database
gives exactly the tables, columns and indexes of shared/db/orm.py (alembic's own comparison,
the one `alembic revision --autogenerate` runs), on SQLite and on PostgreSQL."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import psycopg
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from shared.db.database import Database
from shared.db.orm import Base
from tests.conftest import PG_URL, need_services

# The full-text engines' own objects (shared/index/fts5.py and tsvector.py), made by the
# migrations in SQL that the ORM does not model: SQLite's FTS5 table, its shadow tables and
# its vocabulary, PostgreSQL's generated tsvector column and its GIN index.
FULLTEXT_TABLES = ("session_text_fts", "session_words")
FULLTEXT_COLUMNS = {("session_text", "tsv")}
FULLTEXT_INDEXES = {"ix_session_text_tsv"}


def _ours(obj: Any, name: str | None, kind: str, reflected: bool, compare_to: Any) -> bool:
    if kind == "table" and name and name.startswith(FULLTEXT_TABLES):
        return False
    if kind == "column" and (obj.table.name, name) in FULLTEXT_COLUMNS:
        return False
    return not (kind == "index" and name in FULLTEXT_INDEXES)


def _differences(url: str) -> list[Any]:
    database = Database(url)
    try:
        database.migrate()
        with database.engine.connect() as connection:
            context = MigrationContext.configure(
                connection, opts={"include_object": _ours, "compare_type": True}
            )
            return list(compare_metadata(context, Base.metadata))
    finally:
        database.dispose()


def test_sqlite_migrations_give_the_orm_schema(tmp_path: Path) -> None:
    assert _differences(f"sqlite:///{tmp_path / 'eonyx.db'}") == []


def test_postgresql_migrations_give_the_orm_schema(services_problem: str | None) -> None:
    need_services(services_problem)
    schema = f"eonyx_migrations_{secrets.token_hex(4)}"
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    url = PG_URL.replace("postgresql://", "postgresql+psycopg://", 1)
    url += ("&" if "?" in url else "?") + f"options=-csearch_path%3D{schema}"
    try:
        assert _differences(url) == []
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
