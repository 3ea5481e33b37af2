"""Fair use: a per-user storage quota and monthly token budget (NULL: the deployment's
default, STORAGE_QUOTA_BYTES and MONTHLY_TOKEN_BUDGET), and `token_usage`, the tokens each
user's model calls used, summed per month, offering and role (the model's own counts).

Revision ID: 0010
Revises: 0009
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("storage_quota_bytes", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("monthly_token_budget", sa.BigInteger(), nullable=True))
    op.create_table(
        "token_usage",
        sa.Column(
            "user_id",
            sa.String(32),
            sa.ForeignKey("users.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("month", sa.String(7), primary_key=True),
        sa.Column("offering", sa.String(100), primary_key=True),
        sa.Column("role", sa.String(32), primary_key=True),
        sa.Column("calls", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("prompt_tokens", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("completion_tokens", sa.BigInteger(), nullable=False, server_default="0"),
    )
    op.create_index("ix_token_usage_month", "token_usage", ["month", "user_id"])


def downgrade() -> None:
    op.drop_index("ix_token_usage_month", table_name="token_usage")
    op.drop_table("token_usage")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("monthly_token_budget")
        batch.drop_column("storage_quota_bytes")
