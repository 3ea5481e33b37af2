"""session_index.imported: how an imported session came (`bundle` or `shared`), so the list
can mark imports as it marks forks (issue 42, item 6).

Rows written before this read null until the row is written again (a turn, a rename) or the
index is rebuilt from the files (`eonyx index rebuild --drop`), which marks them.

Revision ID: 0013
Revises: 0012
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("session_index") as batch:
        batch.add_column(sa.Column("imported", sa.String(16)))


def downgrade() -> None:
    with op.batch_alter_table("session_index") as batch:
        batch.drop_column("imported")
