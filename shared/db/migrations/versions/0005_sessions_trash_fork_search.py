"""Session management: trash and forks in the index, exact listing cursors, full-text search.

- session_index: deleted_at (the trash), forked_from, seq (the owner's change number);
- index_state: seq and generation (listing cursors);
- session_moves: a row's sort key before each write, for cursors (kept a day);
- session_text: the searchable text, indexed by FTS5 on SQLite (kept by the code, see
  shared/index/fulltext.py) and by a generated tsvector column with a GIN index on
  PostgreSQL.

The index is a cache of the session files: it is emptied here, so each user's next listing
(or the periodic reconcile) rebuilds it from the files, search text included.

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)
ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

SQLITE_FTS = [
    """CREATE VIRTUAL TABLE session_text_fts USING fts5(
        body, user_id, role, content='session_text', content_rowid='id',
        tokenize='unicode61 remove_diacritics 0', detail='column')""",
]
POSTGRES_FTS = [
    """ALTER TABLE session_text ADD COLUMN tsv tsvector
        GENERATED ALWAYS AS (to_tsvector('simple', body)) STORED""",
    "CREATE INDEX ix_session_text_tsv ON session_text USING gin (tsv)",
]


def upgrade() -> None:
    op.execute("DELETE FROM session_index")
    op.execute("DELETE FROM index_state")
    with op.batch_alter_table("session_index") as batch:
        batch.add_column(sa.Column("deleted_at", TZ))
        batch.add_column(sa.Column("forked_from", sa.String(40)))
        batch.add_column(sa.Column("seq", sa.BigInteger, nullable=False, server_default="0"))
        batch.create_index("ix_session_index_deleted", ["deleted_at"])
    with op.batch_alter_table("index_state") as batch:
        batch.add_column(sa.Column("seq", sa.BigInteger, nullable=False, server_default="0"))
        batch.add_column(sa.Column("generation", sa.String(16), nullable=False, server_default=""))
    op.create_table(
        "session_moves",
        sa.Column("id", ID, primary_key=True, autoincrement=True),
        sa.Column("user_id", sa.String(32), nullable=False),
        sa.Column("session_id", sa.String(40), nullable=False),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.Column("pinned", sa.Boolean),
        sa.Column("updated_at", TZ),
        sa.Column("at", TZ, nullable=False),
    )
    op.create_index("ix_session_moves_user_seq", "session_moves", ["user_id", "seq"])
    op.create_index("ix_session_moves_at", "session_moves", ["at"])
    op.create_table(
        "session_text",
        sa.Column("id", ID, primary_key=True, autoincrement=True),
        sa.Column("user_id", sa.String(32), nullable=False),
        sa.Column("session_id", sa.String(40), nullable=False),
        sa.Column("message_id", sa.String(40), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.UniqueConstraint("session_id", "message_id", name="uq_session_text_message"),
    )
    op.create_index("ix_session_text_user", "session_text", ["user_id", "id"])
    dialect = op.get_bind().dialect.name
    for statement in SQLITE_FTS if dialect == "sqlite" else POSTGRES_FTS:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TABLE IF EXISTS session_text_fts")
    op.drop_table("session_text")
    op.drop_table("session_moves")
    with op.batch_alter_table("index_state") as batch:
        batch.drop_column("generation")
        batch.drop_column("seq")
    with op.batch_alter_table("session_index") as batch:
        batch.drop_index("ix_session_index_deleted")
        batch.drop_column("seq")
        batch.drop_column("forked_from")
        batch.drop_column("deleted_at")
