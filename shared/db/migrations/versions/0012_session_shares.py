"""Read-only links to a snapshot of a session (issue 42, item 5): `session_shares`, one row
per shared session, holding the token and the copy of its messages; gone with the account.

Revision ID: 0012
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "session_shares",
        sa.Column("token", sa.String(64), primary_key=True),
        sa.Column("session_id", sa.String(40), nullable=False, unique=True),
        sa.Column(
            "user_id",
            sa.String(32),
            sa.ForeignKey("users.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("title", sa.Text(), nullable=True),
        sa.Column("messages", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_session_shares_user_id", "session_shares", ["user_id"])


def downgrade() -> None:
    op.drop_index("ix_session_shares_user_id", table_name="session_shares")
    op.drop_table("session_shares")
