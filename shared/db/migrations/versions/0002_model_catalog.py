"""Model catalog: offerings and task roles.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "model_offerings",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("base_url", sa.String(500), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("api_key_env", sa.String(100)),
        sa.Column("context_window", sa.Integer),
        sa.Column("max_output_tokens", sa.Integer),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "model_roles",
        sa.Column("role", sa.String(40), primary_key=True),
        sa.Column(
            "offering_id",
            sa.String(64),
            sa.ForeignKey("model_offerings.id", ondelete="CASCADE"),
            nullable=False,
        ),
    )


def downgrade() -> None:
    op.drop_table("model_roles")
    op.drop_table("model_offerings")
