"""A team run from the browser: groups and their members, which groups may use an offering
(none listed: everyone), invites, sign-in identities from an OpenID provider (issuer, sub),
deployment settings an administrator changes at run time, and a password an administrator
reset (`users.must_change_password`).

Revision ID: 0011
Revises: 0010
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

TZ = sa.DateTime(timezone=True)


def _user(column: str, *, ondelete: str = "CASCADE", nullable: bool = False) -> sa.Column[str]:
    foreign = sa.ForeignKey("users.id", ondelete=ondelete)
    return sa.Column(column, sa.String(32), foreign, nullable=nullable)


def upgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.add_column(
            sa.Column("must_change_password", sa.Boolean(), nullable=False, server_default="0")
        )
    op.create_table(
        "groups",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("name", sa.String(64), nullable=False, unique=True),
        sa.Column("created_at", TZ, nullable=False),
    )
    op.create_table(
        "group_members",
        sa.Column(
            "group_id",
            sa.String(32),
            sa.ForeignKey("groups.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column(
            "user_id",
            sa.String(32),
            sa.ForeignKey("users.id", ondelete="CASCADE"),
            primary_key=True,
        ),
    )
    op.create_index("ix_group_members_user_id", "group_members", ["user_id"])
    op.create_table(
        "offering_groups",
        sa.Column(
            "offering_id",
            sa.String(64),
            sa.ForeignKey("model_offerings.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column(
            "group_id",
            sa.String(32),
            sa.ForeignKey("groups.id", ondelete="CASCADE"),
            primary_key=True,
        ),
    )
    op.create_table(
        "invites",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("is_admin", sa.Boolean(), nullable=False, server_default="0"),
        _user("created_by", ondelete="SET NULL", nullable=True),
        sa.Column("created_at", TZ, nullable=False),
        sa.Column("expires_at", TZ, nullable=False),
        sa.Column("used_at", TZ, nullable=True),
        _user("used_by", ondelete="SET NULL", nullable=True),
    )
    op.create_table(
        "user_identities",
        sa.Column("issuer", sa.String(255), primary_key=True),
        sa.Column("subject", sa.String(255), primary_key=True),
        _user("user_id"),
        sa.Column("created_at", TZ, nullable=False),
    )
    op.create_index("ix_user_identities_user_id", "user_identities", ["user_id"])
    op.create_table(
        "deployment_settings",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("updated_at", TZ, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("deployment_settings")
    op.drop_index("ix_user_identities_user_id", table_name="user_identities")
    op.drop_table("user_identities")
    op.drop_table("invites")
    op.drop_table("offering_groups")
    op.drop_index("ix_group_members_user_id", table_name="group_members")
    op.drop_table("group_members")
    op.drop_table("groups")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("must_change_password")
