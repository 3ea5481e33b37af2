"""API keys limited to scopes: `tokens.scopes` (space-separated, shared.accounts.SCOPES).
NULL is full access, so every token made before keeps what it had.

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tokens") as batch:
        batch.add_column(sa.Column("scopes", sa.String(200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("tokens") as batch:
        batch.drop_column("scopes")
