"""The model catalog: offerings (where a model is served) and task roles (which offering a
task uses).

An unset role falls back to the chat's own offering. With EONYX_LLM_BASE_URL and
EONYX_LLM_MODEL set, an offering `default` exists (it lives in the settings, not in SQL) and
serves every role that nothing else serves. API keys are never stored: an offering names the
environment variable that holds its key, looked up on the host that makes the call.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from shared.core.clock import utcnow
from shared.core.errors import Conflict, EonyxError, InvalidInput, NotFound
from shared.core.settings import Settings
from shared.llm.client import Offering
from shared.llm.offering_cache import mark_changed
from shared.storage.orm import OfferingRow, RoleBinding

if TYPE_CHECKING:  # the runtime is passed in, never imported: it sits above this package
    from shared.runtime import Runtime

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
ENV_NAME_RE = re.compile(r"^[A-Z_][A-Z0-9_]{0,99}$")


class NoModel(EonyxError):
    """No offering serves a role: the operator has to add one."""

    code = "no_model"


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
    rows = [
        _info(row, os.environ) for row in db.scalars(select(OfferingRow).order_by(OfferingRow.id))
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
    if not OFFERING_ID_RE.match(id):
        raise InvalidInput("offering ids are 1-64 lower-case letters, digits, '.', '_' or '-'")
    if id == DEFAULT_ID:
        raise Conflict("'default' is the offering configured by EONYX_LLM_* variables")
    if not base_url.startswith(("http://", "https://")):
        raise InvalidInput("base_url must be an http(s) URL")
    if api_key_env is not None and not ENV_NAME_RE.match(api_key_env):
        raise InvalidInput("api_key_env must name an environment variable, such as OPENAI_API_KEY")
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
    row = db.get(OfferingRow, offering_id)
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
    return Offering(
        id=row.id,
        base_url=row.base_url,
        model=row.model,
        api_key=os.environ.get(row.api_key_env) if row.api_key_env else None,
        context_window=row.context_window,
        max_output_tokens=row.max_output_tokens,
    )


def offering_for(rt: Runtime, role: str) -> Offering:
    """The offering that serves `role`: the one this process keeps (`offering_cache`), else
    looked up in a database session of its own that is closed before the caller talks to
    the model (never hold one across a model call)."""

    def lookup() -> Offering:
        with rt.db.session() as db:
            return resolve(db, rt.settings, role)

    return rt.offerings.get(role, lookup)


def offering_named(rt: Runtime, offering_id: str) -> Offering:
    """The offering with this id (NotFound otherwise), in a database session of its own."""
    with rt.db.session() as db:
        return _offering(db, rt.settings, offering_id, None)
