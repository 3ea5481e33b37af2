"""Accounts, tokens and the session index.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("username", sa.String(64), nullable=False, unique=True),
        sa.Column("password_hash", sa.String(256), nullable=False),
        sa.Column("is_admin", sa.Boolean, nullable=False),
        sa.Column("created_at", TZ, nullable=False),
    )
    op.create_table(
        "tokens",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column(
            "user_id", sa.String(32), sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("expires_at", TZ),
        sa.Column("revoked_at", TZ),
        sa.Column("last_used_at", TZ),
    )
    op.create_index("ix_tokens_user_id", "tokens", ["user_id"])
    op.create_table(
        "session_index",
        sa.Column("id", sa.String(40), primary_key=True),
        sa.Column("user_id", sa.String(32), nullable=False),
        sa.Column("title", sa.Text),
        sa.Column("title_pending", sa.Boolean, nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("temporary", sa.Boolean, nullable=False),
        sa.Column("pinned", sa.Boolean, nullable=False),
        sa.Column("archived", sa.Boolean, nullable=False),
        sa.Column("folder_id", sa.String(32)),
        sa.Column("message_count", sa.Integer, nullable=False),
        sa.Column("image_count", sa.Integer, nullable=False),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("updated_at", TZ, nullable=False),
        sa.Column("file_size", sa.BigInteger, nullable=False),
        sa.Column("file_mtime_ns", sa.BigInteger, nullable=False),
    )
    op.create_index(
        "ix_session_index_listing", "session_index", ["user_id", "pinned", "updated_at", "id"]
    )
    op.create_table(
        "index_state",
        sa.Column("user_id", sa.String(32), primary_key=True),
        sa.Column("built_at", TZ, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("index_state")
    op.drop_index("ix_session_index_listing", "session_index")
    op.drop_table("session_index")
    op.drop_index("ix_tokens_user_id", "tokens")
    op.drop_table("tokens")
    op.drop_table("users")
