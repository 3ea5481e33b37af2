"""SQL models: accounts and tokens (the truth), and the session index (a cache of the files):
listing rows, the moves that keep cursors exact, and the text that search runs over."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from shared.db.database import Base


class User(Base):
    __tablename__ = "users"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    username: Mapped[str] = mapped_column(String(64), unique=True)
    password_hash: Mapped[str] = mapped_column(String(256))
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column()
    # A disabled account keeps its data and tokens, but none of them is accepted until an
    # administrator enables it again.
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)
    # Fair use (shared.usage): NULL is the deployment's default (STORAGE_QUOTA_BYTES,
    # MONTHLY_TOKEN_BUDGET); 0 a budget of none.
    storage_quota_bytes: Mapped[int | None] = mapped_column(BigInteger)
    monthly_token_budget: Mapped[int | None] = mapped_column(BigInteger)
    # An administrator reset the password: the next sign-in must choose a new one.
    must_change_password: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")


class TokenUsage(Base):
    """Tokens one user's model calls used in a month (`YYYY-MM`, UTC), per offering and role,
    as the model reported them (an estimate when it reported none). Background jobs are
    charged to the user they serve."""

    __tablename__ = "token_usage"
    __table_args__ = (Index("ix_token_usage_month", "month", "user_id"),)

    user_id: Mapped[str] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    month: Mapped[str] = mapped_column(String(7), primary_key=True)
    offering: Mapped[str] = mapped_column(String(100), primary_key=True)
    role: Mapped[str] = mapped_column(String(32), primary_key=True)
    calls: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    prompt_tokens: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    completion_tokens: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")


class ApiToken(Base):
    """A login token (source `web`, expires), a browser sign-in behind the session cookie
    (source `browser`, expires) or a named API key (source `api`)."""

    __tablename__ = "tokens"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    source: Mapped[str] = mapped_column(String(16))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column()
    expires_at: Mapped[datetime | None] = mapped_column()
    revoked_at: Mapped[datetime | None] = mapped_column()
    last_used_at: Mapped[datetime | None] = mapped_column()
    # An API key's scopes, space-separated (shared.accounts.SCOPES); NULL: full access.
    scopes: Mapped[str | None] = mapped_column(String(200))


class SessionRow(Base):
    """One session's listing data, folded from its JSONL file; rebuildable at any time."""

    __tablename__ = "session_index"
    __table_args__ = (
        Index("ix_session_index_listing", "user_id", "pinned", "updated_at", "id"),
        Index("ix_session_index_deleted", "deleted_at"),  # the trash sweep's scan
    )

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(32))
    title: Mapped[str | None] = mapped_column(Text)
    title_pending: Mapped[bool] = mapped_column(Boolean, default=False)
    source: Mapped[str] = mapped_column(String(16))
    temporary: Mapped[bool] = mapped_column(Boolean, default=False)
    pinned: Mapped[bool] = mapped_column(Boolean, default=False)
    archived: Mapped[bool] = mapped_column(Boolean, default=False)
    folder_id: Mapped[str | None] = mapped_column(String(32))
    message_count: Mapped[int] = mapped_column(Integer, default=0)
    image_count: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column()
    updated_at: Mapped[datetime] = mapped_column()
    deleted_at: Mapped[datetime | None] = mapped_column()  # in the trash since
    forked_from: Mapped[str | None] = mapped_column(String(40))
    # How an imported session came: `bundle` (a .zip import), `shared` (a shared link forked).
    imported: Mapped[str | None] = mapped_column(String(16))
    file_size: Mapped[int] = mapped_column(BigInteger)
    file_mtime_ns: Mapped[int] = mapped_column(BigInteger)
    # The owner's change number (IndexState.seq) of this row's last write: listing cursors
    # tell rows unchanged since their first page from rows that moved.
    seq: Mapped[int] = mapped_column(BigInteger, default=0)


class IndexState(Base):
    """Marks a user's index as built; without a row, the next listing rebuilds it from files.

    `seq` counts the user's index writes (every writer bumps it first, which also serialises
    them per user); `generation` changes when the index is dropped, so older cursors expire.
    """

    __tablename__ = "index_state"

    user_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    built_at: Mapped[datetime] = mapped_column()
    seq: Mapped[int] = mapped_column(BigInteger, default=0)
    generation: Mapped[str] = mapped_column(String(16), default="")


class SessionMove(Base):
    """A row's sort key (pinned, updated_at) just before the write numbered `seq`; NULLs when
    the write created the row. Kept for a day, the life of a listing cursor."""

    __tablename__ = "session_moves"
    __table_args__ = (Index("ix_session_moves_user_seq", "user_id", "seq"),)

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(32))
    session_id: Mapped[str] = mapped_column(String(40))
    seq: Mapped[int] = mapped_column(BigInteger)
    pinned: Mapped[bool | None] = mapped_column(Boolean)
    updated_at: Mapped[datetime | None] = mapped_column()
    at: Mapped[datetime] = mapped_column(index=True)


class SessionText(Base):
    """The searchable text of a session: one row per message (user, assistant, tool result)
    and one for its title (`message_id` ""). SQLite indexes `body` with FTS5, PostgreSQL with
    a tsvector column and a GIN index; both are made by the migration, beside this table."""

    __tablename__ = "session_text"
    __table_args__ = (
        UniqueConstraint("session_id", "message_id", name="uq_session_text_message"),
        Index("ix_session_text_user", "user_id", "id"),
    )

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(32))
    session_id: Mapped[str] = mapped_column(String(40))
    message_id: Mapped[str] = mapped_column(String(40))
    role: Mapped[str] = mapped_column(String(16))
    body: Mapped[str] = mapped_column(Text)


class OfferingRow(Base):
    """A model a task can use: where it is served and how big its window is.

    The API key itself is never stored: `api_key_env` names the environment variable that
    holds it on the hosts that call the model.
    """

    __tablename__ = "model_offerings"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    base_url: Mapped[str] = mapped_column(String(500))
    model: Mapped[str] = mapped_column(String(200))
    api_key_env: Mapped[str | None] = mapped_column(String(100))
    context_window: Mapped[int | None] = mapped_column(Integer)
    max_output_tokens: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column()


class RoleBinding(Base):
    """Which offering serves a task role (chat, session_title, summarization, ...)."""

    __tablename__ = "model_roles"

    role: Mapped[str] = mapped_column(String(40), primary_key=True)
    offering_id: Mapped[str] = mapped_column(ForeignKey("model_offerings.id", ondelete="CASCADE"))


class TeamsUserLink(Base):
    """Which account a Teams user (by Azure AD object id) chats as."""

    __tablename__ = "teams_user_links"

    aad_object_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column()


class SessionBinding(Base):
    """The session an outside conversation continues: a Teams conversation, or the history
    an OpenAI-style client resends. `key` is a SHA-256 (hex) of the outside identity."""

    __tablename__ = "session_bindings"

    user_id: Mapped[str] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    channel: Mapped[str] = mapped_column(String(16), primary_key=True)
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    session_id: Mapped[str] = mapped_column(String(40))
    updated_at: Mapped[datetime] = mapped_column()


class ApiResponse(Base):
    """A response of the Responses API: the session it was given in, and its body as sent
    (for `previous_response_id` and GET /v1/responses/<id>)."""

    __tablename__ = "api_responses"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    session_id: Mapped[str] = mapped_column(String(40))
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column()


class Folder(Base):
    """A user's folder of sessions. Sessions name their folder in their own files
    (`folder_id`); deleting a folder unfiles them first."""

    __tablename__ = "folders"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    color: Mapped[str | None] = mapped_column(String(32))  # a palette name; repaired on read
    position: Mapped[int | None] = mapped_column(Integer)  # 0, 1, 2...; repaired on read
    created_at: Mapped[datetime] = mapped_column()
    updated_at: Mapped[datetime] = mapped_column()


class DeviceUiState(Base):
    """What one device remembers of the sidebar: which folders and sections are collapsed."""

    __tablename__ = "device_ui_state"

    user_id: Mapped[str] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    device_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    state: Mapped[str] = mapped_column(Text)  # JSON: {"sections": {...}, "folders": {...}}
    updated_at: Mapped[datetime] = mapped_column()


class Group(Base):
    """People who share access: to offerings (OfferingGroup), filled by hand or from an
    OpenID provider's `groups` claim (a group of the same name)."""

    __tablename__ = "groups"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column()


class GroupMember(Base):
    __tablename__ = "group_members"

    group_id: Mapped[str] = mapped_column(
        ForeignKey("groups.id", ondelete="CASCADE"), primary_key=True
    )
    user_id: Mapped[str] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True, index=True
    )


class OfferingGroup(Base):
    """An offering only these groups may use; an offering with no row: everyone."""

    __tablename__ = "offering_groups"

    offering_id: Mapped[str] = mapped_column(
        ForeignKey("model_offerings.id", ondelete="CASCADE"), primary_key=True
    )
    group_id: Mapped[str] = mapped_column(
        ForeignKey("groups.id", ondelete="CASCADE"), primary_key=True
    )


class Invite(Base):
    """A link an administrator made: whoever opens it first chooses a username and password.
    Only the SHA-256 of its secret is kept, as for tokens."""

    __tablename__ = "invites"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")
    created_by: Mapped[str | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column()
    expires_at: Mapped[datetime] = mapped_column()
    used_at: Mapped[datetime | None] = mapped_column()
    used_by: Mapped[str | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))


class UserIdentity(Base):
    """A sign-in from an OpenID provider: the provider's (issuer, sub) names the account."""

    __tablename__ = "user_identities"

    issuer: Mapped[str] = mapped_column(String(255), primary_key=True)
    subject: Mapped[str] = mapped_column(String(255), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column()


class DeploymentSetting(Base):
    """A behaviour switch an administrator set at run time (JSON value); the environment's
    value holds until one is set."""

    __tablename__ = "deployment_settings"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column()


class SessionShare(Base):
    """A read-only link to a copy of a session's conversation as it stood when shared
    (shared.sessions.shares). `messages` is that copy (JSON), written once and never changed:
    the owner's later turns, edits or deletion do not reach it. The token is kept as is, not
    hashed: the snapshot it opens is in the same row, so a hash would hide nothing from a
    reader of the database, while the owner could no longer be shown their link again."""

    __tablename__ = "session_shares"

    token: Mapped[str] = mapped_column(String(64), primary_key=True)
    session_id: Mapped[str] = mapped_column(String(40), unique=True)  # one link per session
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    title: Mapped[str | None] = mapped_column(Text)
    messages: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column()
