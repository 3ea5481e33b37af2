"""SQLite's FTS5 table takes texts in batches: `session_text_fts_state.indexed_upto`, the
highest `session_text` id it holds (shared/index/fulltext.py). Every text there now is
indexed, so the watermark starts at the newest. PostgreSQL keeps its tsvector column itself.

Revision ID: 0009
Revises: 0008
"""

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute("CREATE TABLE session_text_fts_state (indexed_upto INTEGER NOT NULL)")
    op.execute(
        "INSERT INTO session_text_fts_state (indexed_upto) "
        "SELECT coalesce(max(id), 0) FROM session_text"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    # Every text indexed again at once, as before this revision.
    op.execute(
        "INSERT INTO session_text_fts (rowid, body, user_id, role) "
        "SELECT id, body, user_id, role FROM session_text "
        "WHERE id > (SELECT indexed_upto FROM session_text_fts_state)"
    )
    op.execute("DROP TABLE session_text_fts_state")
