"""The model catalog: offerings (where a model is served) and task roles (which offering a
task uses).

An unset role falls back to the chat's own offering. With EONYX_LLM_BASE_URL and
EONYX_LLM_MODEL set, an offering `default` exists (it lives in the settings, not in SQL) and
serves every role that nothing else serves. API keys are never stored: an offering names the
environment variable that holds its key, looked up on the host that makes the call.

Only variables meant for keys may be named (`EONYX_KEY_*`, and `EONYX_LLM_API_KEY`), so an
offering can never send another of the server's variables (DATABASE_URL, HOME...) as a
bearer token. What a plain user sees of an offering leaves out the variable, whether it is
set, and any credentials in `base_url` (userinfo, query values): `OfferingInfo.shown_to`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import NotRequired, TypedDict
from urllib.parse import urlsplit, urlunsplit

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from shared.core import text
from shared.core.clock import utcnow
from shared.core.errors import Conflict, EonyxError, InvalidInput, NotFound
from shared.core.settings import Settings
from shared.db.orm import OfferingGroup, OfferingRow, RoleBinding
from shared.llm.client import Offering
from shared.llm.needs import LlmRuntime
from shared.llm.offering_cache import mark_changed

ROLES = (
    "chat",
    "session_title",
    "user_memory_extraction",
    "agent_memory_curation",
    "summarization",
)
DEFAULT_ID = "default"
DEFAULT_KEY_ENV = "EONYX_LLM_API_KEY"
OFFERING_ID_RE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
OFFERING_ID_RULE = (
    "1-64 lower-case letters, digits, '.', '_' or '-', starting with a letter or digit"
)
API_KEY_ENV_PATTERN = rf"^(?:EONYX_KEY_[A-Z0-9_]{{1,90}}|{DEFAULT_KEY_ENV})$"
API_KEY_ENV_RE = re.compile(API_KEY_ENV_PATTERN)
API_KEY_ENV_RULE = (
    f"the name of an environment variable that starts with EONYX_KEY_ (upper-case letters, "
    f"digits and '_'), or {DEFAULT_KEY_ENV}"
)
_URL_TEXT = text.SINGLE_LINE_CLASS
# scheme://[userinfo@]host[:port][/path]: a host name or IPv4 address. No query string or
# fragment: the client appends /chat/completions to the URL, which would put them before it.
BASE_URL_PATTERN = (
    rf"^https?://(?:[^\s/?#@\[\]{_URL_TEXT}]*@)?[^\s/?#@:\[\]{_URL_TEXT}]+(?::[0-9]{{1,5}})?"
    rf"(?:/[^\s?#{_URL_TEXT}]*)?$"
)
BASE_URL_RE = re.compile(BASE_URL_PATTERN)
BASE_URL_RULE = (
    "base_url must be an http(s) URL with a host and at most a path, such as https://host/v1 "
    "(no query string or fragment: /chat/completions is appended to it)"
)


class NoModel(EonyxError):
    """No offering serves a role: the operator has to add one."""

    code = "no_model"


class OfferingView(TypedDict):
    """An offering as the API shows it; the key's variable, whether it is set, and the
    groups only to administrators."""

    id: str
    base_url: str
    model: str
    api_key_env: NotRequired[str | None]
    api_key_set: NotRequired[bool]
    context_window: int | None
    max_output_tokens: int | None
    builtin: bool
    allowed_groups: NotRequired[tuple[str, ...]]


@dataclass(frozen=True)
class OfferingInfo:
    """An offering as the API shows it: never the key, only whether one is available."""

    id: str
    base_url: str
    model: str
    api_key_env: str | None
    api_key_set: bool
    context_window: int | None
    max_output_tokens: int | None
    builtin: bool
    allowed_groups: tuple[str, ...] = ()  # group ids; none: everyone may use it (llm.access)

    def shown_to(self, *, admin: bool) -> OfferingView:
        """The offering as the API shows it to an admin, or to a plain user: then without
        the key's variable, whether it is set, and credentials in the URL."""
        shown: OfferingView = {
            "id": self.id,
            "base_url": self.base_url if admin else redact_url(self.base_url),
            "model": self.model,
            "context_window": self.context_window,
            "max_output_tokens": self.max_output_tokens,
            "builtin": self.builtin,
        }
        if admin:
            shown["api_key_env"], shown["api_key_set"] = self.api_key_env, self.api_key_set
            shown["allowed_groups"] = self.allowed_groups
        return shown


def redact_url(url: str) -> str:
    """`url` without credentials: userinfo, and the value of every query parameter, become
    `***` (query values are where providers put keys: `?key=`, `?api_key=`, `?token=`)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "***"
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rpartition("@")[2]
    query = "&".join(
        f"{name}=***" if sep else name
        for name, sep, _ in (item.partition("=") for item in parts.query.split("&") if item)
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def check_base_url(base_url: str) -> str:
    """An http(s) URL with a host and at most a path, or InvalidInput."""
    text.check(base_url, "base_url", single_line=True)
    try:
        parts = urlsplit(base_url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError as exc:
        raise InvalidInput(f"base_url is not a URL: {exc}") from None
    if not BASE_URL_RE.fullmatch(base_url) or not parts.hostname:
        raise InvalidInput(BASE_URL_RULE, code="invalid_base_url")
    return base_url


def _env_offering(settings: Settings) -> OfferingInfo | None:
    if not (settings.llm_base_url and settings.llm_model):
        return None
    return OfferingInfo(
        id=DEFAULT_ID,
        base_url=settings.llm_base_url,
        model=settings.llm_model,
        api_key_env=DEFAULT_KEY_ENV,
        api_key_set=bool(settings.llm_api_key),
        context_window=settings.llm_context_window,
        max_output_tokens=None,
        builtin=True,
    )


def _info(row: OfferingRow, env: Mapping[str, str]) -> OfferingInfo:
    return OfferingInfo(
        id=row.id,
        base_url=row.base_url,
        model=row.model,
        api_key_env=row.api_key_env,
        api_key_set=bool(row.api_key_env and env.get(row.api_key_env)),
        context_window=row.context_window,
        max_output_tokens=row.max_output_tokens,
        builtin=False,
    )


def list_offerings(db: Session, settings: Settings) -> list[OfferingInfo]:
    allowed: dict[str, list[str]] = {}
    for offering_id, group_id in db.execute(
        select(OfferingGroup.offering_id, OfferingGroup.group_id).order_by(OfferingGroup.group_id)
    ):
        allowed.setdefault(offering_id, []).append(group_id)
    rows = [
        replace(_info(row, os.environ), allowed_groups=tuple(allowed.get(row.id, ())))
        for row in db.scalars(select(OfferingRow).order_by(OfferingRow.id))
    ]
    builtin = _env_offering(settings)
    return ([builtin] if builtin else []) + rows


def get_offering(db: Session, settings: Settings, offering_id: str) -> OfferingInfo:
    for info in list_offerings(db, settings):
        if info.id == offering_id:
            return info
    raise NotFound(f"no offering {offering_id!r}")


def add_offering(
    db: Session,
    *,
    id: str,
    base_url: str,
    model: str,
    api_key_env: str | None = None,
    context_window: int | None = None,
    max_output_tokens: int | None = None,
) -> OfferingInfo:
    if not OFFERING_ID_RE.fullmatch(id):
        raise InvalidInput(f"an offering id is {OFFERING_ID_RULE}")
    if id == DEFAULT_ID:
        raise Conflict("'default' is the offering configured by EONYX_LLM_* variables")
    check_base_url(base_url)
    text.check(model, "model", single_line=True)
    if not model.strip() or len(model) > 200:
        raise InvalidInput("model must be the provider's model name (1-200 characters)")
    if api_key_env is not None and not API_KEY_ENV_RE.fullmatch(api_key_env):
        raise InvalidInput(f"api_key_env must be {API_KEY_ENV_RULE}", code="bad_api_key_env")
    for name, value in (
        ("context_window", context_window),
        ("max_output_tokens", max_output_tokens),
    ):
        if value is not None and value < 1:
            raise InvalidInput(f"{name} must be a positive number of tokens")
    if db.get(OfferingRow, id) is not None:
        raise Conflict(f"offering {id!r} already exists", code="offering_exists")
    row = OfferingRow(
        id=id,
        base_url=base_url.rstrip("/"),
        model=model,
        api_key_env=api_key_env,
        context_window=context_window,
        max_output_tokens=max_output_tokens,
        created_at=utcnow(),
    )
    db.add(row)
    db.flush()
    mark_changed(db)
    return _info(row, os.environ)


def delete_offering(db: Session, offering_id: str) -> None:
    row = db.get(OfferingRow, offering_id) if OFFERING_ID_RE.fullmatch(offering_id) else None
    if row is None:
        raise NotFound(f"no offering {offering_id!r}")
    db.execute(delete(RoleBinding).where(RoleBinding.offering_id == offering_id))
    db.delete(row)
    mark_changed(db)


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise NotFound(f"no role {role!r}; roles are {', '.join(ROLES)}")


def set_role(db: Session, settings: Settings, role: str, offering_id: str) -> None:
    _check_role(role)
    get_offering(db, settings, offering_id)
    mark_changed(db)
    if offering_id == DEFAULT_ID:
        # The built-in offering is not a row; binding to it means "no explicit binding".
        db.execute(delete(RoleBinding).where(RoleBinding.role == role))
        return
    db.merge(RoleBinding(role=role, offering_id=offering_id))


def clear_role(db: Session, role: str) -> None:
    """Drop the role's explicit binding: it falls back to the chat's offering again (for
    `chat` itself: the built-in `default`, when the environment gives one)."""
    _check_role(role)
    mark_changed(db)
    db.execute(delete(RoleBinding).where(RoleBinding.role == role))


def role_bindings(db: Session, settings: Settings) -> dict[str, tuple[str | None, bool]]:
    """role -> (offering id that serves it or None, whether it is set explicitly)."""
    explicit = {b.role: b.offering_id for b in db.scalars(select(RoleBinding))}
    chat = explicit.get("chat") or (DEFAULT_ID if _env_offering(settings) else None)
    return {role: (explicit.get(role) or chat, role in explicit) for role in ROLES}


def resolve(db: Session, settings: Settings, role: str) -> Offering:
    """The offering that serves `role`, with its API key read from this host's environment."""
    _check_role(role)
    offering_id, _ = role_bindings(db, settings)[role]
    if offering_id is None:
        raise NoModel(
            "no model is configured: set EONYX_LLM_BASE_URL and EONYX_LLM_MODEL, "
            "or add an offering and bind the chat role to it"
        )
    return _offering(db, settings, offering_id, role)


def _offering(db: Session, settings: Settings, offering_id: str, role: str | None) -> Offering:
    if offering_id == DEFAULT_ID and (builtin := _env_offering(settings)) is not None:
        return Offering(
            id=DEFAULT_ID,
            base_url=builtin.base_url,
            model=builtin.model,
            api_key=settings.llm_api_key,
            context_window=builtin.context_window,
        )
    row = db.get(OfferingRow, offering_id)
    if row is None:
        if role is None:
            raise NotFound(f"no offering {offering_id!r}", code="model_not_found")
        raise NoModel(f"role {role} names offering {offering_id!r}, which no longer exists")
    if row.api_key_env is not None and not API_KEY_ENV_RE.fullmatch(row.api_key_env):
        # Added before the allow-list: its variable is never read, let alone sent.
        raise NoModel(
            f"offering {row.id!r} takes its key from {row.api_key_env}, which is not allowed: "
            f"api_key_env must be {API_KEY_ENV_RULE}; an admin must add the offering again"
        )
    return Offering(
        id=row.id,
        base_url=row.base_url,
        model=row.model,
        api_key=os.environ.get(row.api_key_env) if row.api_key_env else None,
        context_window=row.context_window,
        max_output_tokens=row.max_output_tokens,
    )


def offering_for(rt: LlmRuntime, role: str) -> Offering:
    """The offering that serves `role`: the one this process keeps (`offering_cache`), else
    looked up in a database session of its own that is closed before the caller talks to
    the model (never hold one across a model call)."""

    def lookup() -> Offering:
        with rt.db.session() as db:
            return resolve(db, rt.settings, role)

    return replace(rt.offerings.get(role, lookup), role=role)


def offering_named(rt: LlmRuntime, offering_id: str) -> Offering:
    """The offering with this id (NotFound otherwise), in a database session of its own."""
    with rt.db.session() as db:
        return _offering(db, rt.settings, offering_id, None)
