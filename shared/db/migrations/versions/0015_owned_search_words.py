"""PostgreSQL: each user's words are their own lexemes in `session_text.tsv` (issue 42).

A search is one user's, but a GIN lexeme's posting list holds every user's texts: a prefix
(`walrus:*`, the default) gathered every user's matches into a bitmap (500,000 of them for
a word in 25% of a team's 2,000,000 texts: 116 ms), which was then rechecked against the
user row by row. Now every lexeme starts with the owner's key, the first KEY_CHARS hex
digits of md5(user_id) (fixed length, so no key and word run into another's), and a prefix
query `<key>walrus:*` reads that user's matches only. The key is not unique: the query still
checks user_id, a collision costs time, never a wrong hit. Positions are left out: nothing
reads them (no phrase queries; ranking and snippets are computed in Python), and they were
40% of the column. A lexeme too long for a tsvector with the key (to_tsvector keeps words
up to 2,047 bytes) is left out, as to_tsvector leaves out longer ones.

The column is recomputed on upgrade: the table is rewritten under its exclusive lock (a few
minutes per 2,000,000 texts on two cores, estimated from building the column alone: the
keyed and plain columns together took five), and searches and index writes wait for it.

Revision ID: 0015
Revises: 0014
"""

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

KEY_CHARS = 8  # as shared/index/tsvector.py's OWNER_KEY_CHARS at this revision

WORDS_FUNCTION = """
CREATE OR REPLACE FUNCTION session_text_words(owner text, body text) RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT array_to_tsvector(ARRAY(
        SELECT owner || lexeme
        FROM unnest(tsvector_to_array(to_tsvector('simple'::regconfig, body))) AS lexeme
        WHERE octet_length(lexeme) <= 2000))
$$"""
OWNED = f"session_text_words(left(md5(user_id), {KEY_CHARS}), body)"
PLAIN = "to_tsvector('simple', body)"


def _column(expression: str) -> list[str]:
    return [
        "DROP INDEX IF EXISTS ix_session_text_tsv",
        # One ALTER: the table is rewritten once.
        "ALTER TABLE session_text DROP COLUMN tsv, ADD COLUMN tsv tsvector "
        f"GENERATED ALWAYS AS ({expression}) STORED",
        "CREATE INDEX ix_session_text_tsv ON session_text USING gin (tsv)",
    ]


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for statement in [WORDS_FUNCTION, *_column(OWNED)]:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for statement in _column(PLAIN):
        op.execute(statement)
    op.execute("DROP FUNCTION session_text_words(text, text)")
