"""SQL models: accounts and tokens (the truth), and the session index (a cache of the files)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Boolean, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from shared.storage.db import Base


class User(Base):
    __tablename__ = "users"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    username: Mapped[str] = mapped_column(String(64), unique=True)
    password_hash: Mapped[str] = mapped_column(String(256))
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column()


class ApiToken(Base):
    """A login token (source `web`, expires) or a named API key (source `api`)."""

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


class SessionRow(Base):
    """One session's listing data, folded from its JSONL file; rebuildable at any time."""

    __tablename__ = "session_index"
    __table_args__ = (Index("ix_session_index_listing", "user_id", "pinned", "updated_at", "id"),)

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
    file_size: Mapped[int] = mapped_column(BigInteger)
    file_mtime_ns: Mapped[int] = mapped_column(BigInteger)


class IndexState(Base):
    """Marks a user's index as built; without a row, the next listing rebuilds it from files."""

    __tablename__ = "index_state"

    user_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    built_at: Mapped[datetime] = mapped_column()


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
