"""SQLite: `session_words`, each user's vocabulary of the full-text index, so a search for a
word's forms names them (`"otter" OR "otters"`) instead of asking FTS5 for a prefix, which
gathers the whole doclist of every word it starts (shared/index/fts5.py). Filled here
from the texts already indexed; PostgreSQL's GIN index keeps its own vocabulary.

The rule for what is kept (`vocabulary_of`) is copied here as it stands at this revision,
so this migration keeps doing what it did when the rule changes.

Revision ID: 0014
Revises: 0013
"""

import re

from alembic import op
from sqlalchemy import text

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

_WORD = re.compile(r"[^\W_]+")


def _words(body: str) -> set[str]:
    return {w for w in _WORD.findall(body.lower()) if w[:3].isalpha() and len(w) <= 100}


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        return
    op.execute(
        "CREATE TABLE session_words (user_id VARCHAR(32) NOT NULL, word TEXT NOT NULL, "
        "PRIMARY KEY (user_id, word)) WITHOUT ROWID"
    )
    insert = text("INSERT OR IGNORE INTO session_words (user_id, word) VALUES (:u, :w)")
    last = 0
    while True:
        rows = bind.execute(
            text(
                "SELECT id, user_id, body FROM session_text WHERE id > :last ORDER BY id LIMIT 5000"
            ),
            {"last": last},
        ).all()
        if not rows:
            return
        pairs = {(user_id, word) for _id, user_id, body in rows for word in _words(body)}
        if pairs:
            bind.execute(insert, [{"u": u, "w": w} for u, w in pairs])
        last = rows[-1][0]


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute("DROP TABLE session_words")
