"""Path parameters of a known shape: URL converters that the routes use and the OpenAPI
document describes (`pattern`, `enum`).

A segment that does not have the shape never reaches a view: it is a 404 like any other URL
that names nothing. The shapes come from the domain that makes the ids.
"""

from __future__ import annotations

from typing import Any

from flask import Flask
from flask_smorest import Api
from werkzeug.routing import BaseConverter

from shared.accounts.groups import GROUP_ID_RE
from shared.accounts.people import TOKEN_ID_RE, USER_ID_RE
from shared.files.session_store import SESSION_ID_RE
from shared.integrations.responses import RESPONSE_ID_RE
from shared.llm.models import OFFERING_ID_RE
from shared.sessions.folders import DEVICE_ID_RE, FOLDER_ID_RE
from shared.sessions.image_store import NAME_RE as IMAGE_NAME_RE
from shared.sessions.shares import TOKEN_PATTERN


def _bare(pattern: str) -> str:
    """A `^...$` pattern as a converter's regex (werkzeug anchors it itself)."""
    return pattern.removeprefix("^").removesuffix("$")


class SessionId(BaseConverter):
    regex = _bare(SESSION_ID_RE.pattern)


class MessageId(BaseConverter):
    regex = r"[A-Za-z0-9_-]{1,64}"


class TokenId(BaseConverter):
    regex = _bare(TOKEN_ID_RE.pattern)


class UserId(BaseConverter):
    regex = _bare(USER_ID_RE.pattern)


class GroupId(BaseConverter):
    regex = _bare(GROUP_ID_RE.pattern)


class OfferingId(BaseConverter):
    regex = _bare(OFFERING_ID_RE.pattern)


class ModelId(BaseConverter):
    """Any model name an OpenAI client may ask `/v1/models/{id}` about (`gpt-4o`,
    `org/model:tag`): one not an offering's id is the facade's 404 `model_not_found`."""

    regex = r"[A-Za-z0-9][A-Za-z0-9_.:/@+-]{0,255}"


class ResponseId(BaseConverter):
    regex = _bare(RESPONSE_ID_RE.pattern)


class BackupName(BaseConverter):
    regex = r"(?:IDENTITY|USER|MEMORY)\.md\.[0-9A-Za-z_.-]{1,64}"


class JobId(BaseConverter):
    regex = r"[0-9a-f-]{36}"


class FolderId(BaseConverter):
    regex = _bare(FOLDER_ID_RE.pattern)


class DeviceId(BaseConverter):
    regex = _bare(DEVICE_ID_RE.pattern)


class InviteSecret(BaseConverter):
    """The secret of an invite link (shared.accounts.invites: `secrets.token_urlsafe`)."""

    regex = r"[A-Za-z0-9_-]{16,128}"


class ShareToken(BaseConverter):
    """The token of a read-only link (shared.sessions.shares)."""

    regex = TOKEN_PATTERN


class ImageName(BaseConverter):
    regex = _bare(IMAGE_NAME_RE.pattern).replace("(png|", "(?:png|")


CONVERTERS: dict[str, type[BaseConverter]] = {
    "session_id": SessionId,
    "message_id": MessageId,
    "token_id": TokenId,
    "user_id": UserId,
    "offering_id": OfferingId,
    "group_id": GroupId,
    "model_id": ModelId,
    "response_id": ResponseId,
    "backup_name": BackupName,
    "job_id": JobId,
    "folder_id": FolderId,
    "device_id": DeviceId,
    "image_name": ImageName,
    "invite_secret": InviteSecret,
    "share_token": ShareToken,
}


def _document(converter: BaseConverter) -> dict[str, Any]:
    return {"type": "string", "pattern": f"^{converter.regex}$"}


def register_converters(app: Flask, api: Api) -> None:
    """Before the blueprints: their routes name these converters."""
    for name, converter in CONVERTERS.items():
        app.url_map.converters[name] = converter
        api.register_converter(converter, _document)
