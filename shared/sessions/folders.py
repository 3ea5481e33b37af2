"""Folders of sessions: create, rename, recolor, reorder, delete; and what each device keeps
of the sidebar (which folders and sections are collapsed).

Folders are SQL rows; a session names its folder in its own file (`folder_id`), so deleting a
folder unfiles its sessions first (their files, then the index) and never deletes one.

Reads heal what they find: a color outside the palette becomes the default, and positions
that are missing, repeated or gapped are renumbered 0, 1, 2... in the order they describe
(missing last, ties by age), written back in the same transaction. A broken stored value is
never an error.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Mapping
from typing import TYPE_CHECKING, TypedDict

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from shared.core.clock import utcnow
from shared.core.errors import Conflict, InvalidInput, NotFound
from shared.db.orm import DeviceUiState, Folder
from shared.sessions import service
from shared.sessions.needs import SessionsRuntime

if TYPE_CHECKING:  # the runtime is passed in, never imported: it sits above this package
    from shared.accounts.people import Principal

# The preset palette: names the API takes and gives, with the color a client shows.
PALETTE: dict[str, str] = {
    "gray": "#6b7280",
    "red": "#ef4444",
    "orange": "#f97316",
    "amber": "#f59e0b",
    "green": "#22c55e",
    "teal": "#14b8a6",
    "blue": "#3b82f6",
    "indigo": "#6366f1",
    "purple": "#a855f7",
    "pink": "#ec4899",
}
DEFAULT_COLOR = "gray"
NAME_MAX = 100
MAX_FOLDERS = 500
SECTIONS = ("folders", "chats")
DEVICE_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
FOLDER_ID_RE = re.compile(r"^[0-9a-f]{32}$")  # secrets.token_hex(16)


def palette() -> list[dict[str, str]]:
    return [{"name": name, "hex": value} for name, value in PALETTE.items()]


def _name(name: str) -> str:
    name = " ".join(str(name).split())
    if not name:
        raise InvalidInput("a folder needs a name", code="invalid_folder_name")
    if len(name) > NAME_MAX:
        raise InvalidInput(f"a folder name has at most {NAME_MAX} characters")
    return name


def _color(color: str | None) -> str:
    if color is None:
        return DEFAULT_COLOR
    if color not in PALETTE:
        raise InvalidInput(
            f"color must be one of the palette: {', '.join(PALETTE)}", code="invalid_color"
        )
    return color


def _healed(db: Session, user_id: str) -> list[Folder]:
    """The user's folders in their order, with broken colors and positions repaired."""
    folders = list(db.scalars(select(Folder).where(Folder.user_id == user_id)))
    folders.sort(key=lambda f: (f.position is None, f.position or 0, f.created_at, f.id))
    for position, folder in enumerate(folders):
        if folder.position != position:
            folder.position = position
        if folder.color not in PALETTE:
            folder.color = DEFAULT_COLOR
    return folders


def _owned(db: Session, user_id: str, folder_id: str) -> Folder:
    service.check_folder(db, user_id, folder_id)  # another user's folder is not found
    return db.get_one(Folder, folder_id)


def list_folders(rt: SessionsRuntime, principal: Principal) -> list[Folder]:
    with rt.db.session() as db:
        return _healed(db, principal.user_id)


def create_folder(
    rt: SessionsRuntime, principal: Principal, name: str, color: str | None = None
) -> Folder:
    with rt.db.session() as db:
        folders = _healed(db, principal.user_id)
        if len(folders) >= MAX_FOLDERS:
            raise Conflict(f"at most {MAX_FOLDERS} folders", code="too_many_folders")
        now = utcnow()
        folder = Folder(
            id=secrets.token_hex(16),
            user_id=principal.user_id,
            name=_name(name),
            color=_color(color),
            position=len(folders),
            created_at=now,
            updated_at=now,
        )
        db.add(folder)
        return folder


class FolderChanges(TypedDict, total=False):
    name: str
    color: str | None


def update_folder(
    rt: SessionsRuntime, principal: Principal, folder_id: str, changes: FolderChanges
) -> Folder:
    """Rename and/or recolor."""
    with rt.db.session() as db:
        _healed(db, principal.user_id)
        folder = _owned(db, principal.user_id, folder_id)
        if "name" in changes:
            folder.name = _name(changes["name"])
        if "color" in changes:
            folder.color = _color(changes["color"])
        folder.updated_at = utcnow()
        return folder


def reorder_folders(rt: SessionsRuntime, principal: Principal, ids: list[str]) -> list[Folder]:
    """The folders in `ids` first, in that order; any not named (made meanwhile on another
    device) keep their order after them."""
    if len(set(ids)) != len(ids):
        raise InvalidInput("a folder is named twice in the order", code="invalid_order")
    with rt.db.session() as db:
        folders = _healed(db, principal.user_id)
        by_id = {folder.id: folder for folder in folders}
        missing = [folder_id for folder_id in ids if folder_id not in by_id]
        if missing:
            raise NotFound(f"folder not found: {missing[0]}", code="folder_not_found")
        ordered = [by_id[i] for i in ids] + [f for f in folders if f.id not in set(ids)]
        for position, folder in enumerate(ordered):
            folder.position = position
        return ordered


def delete_folder(rt: SessionsRuntime, principal: Principal, folder_id: str) -> int:
    """Delete a folder; its sessions become unfiled (never deleted). Returns how many."""
    user_id = principal.user_id
    with rt.db.session() as db:
        _owned(db, user_id, folder_id)
    # The files first: a crash in between leaves the folder, and deleting it again finishes.
    unfiled = 0
    for session_id in service.session_ids_in_folder(rt, user_id, folder_id):
        try:
            service.append_meta(rt, user_id, session_id, {"folder_id": None})
            unfiled += 1
        except NotFound:
            continue  # deleted meanwhile
    with rt.db.session() as db:
        folder = db.get(Folder, folder_id)
        if folder is not None:
            db.delete(folder)
            db.flush()
            _healed(db, user_id)
    return unfiled


# -- the sidebar state of one device -------------------------------------------------------


def _device(device_id: str) -> str:
    if not DEVICE_ID_RE.match(device_id):
        raise InvalidInput(
            "a device id is 1 to 64 letters, digits or . _ : -", code="invalid_device_id"
        )
    return device_id


class UiStateChanges(TypedDict, total=False):
    sections_collapsed: dict[str, bool]
    folders_collapsed: dict[str, bool]


class UiState(TypedDict):
    sections_collapsed: dict[str, bool]
    folders_collapsed: dict[str, bool]


class DeviceUiStateView(UiState):
    """A device's whole sidebar state, as `GET /devices/<id>/ui-state` shows it."""

    device_id: str


def _flag(value: object, default: bool) -> bool:
    return value if isinstance(value, bool) else default


def _resolve(stored: Mapping[str, object], folder_ids: list[str]) -> UiState:
    """The whole state a client needs: every section and every folder of the user, defaults
    where nothing (or nonsense) is stored: sections expanded, folders collapsed."""
    given_sections, given_folders = stored.get("sections"), stored.get("folders")
    sections: Mapping[str, object] = given_sections if isinstance(given_sections, dict) else {}
    folders: Mapping[str, object] = given_folders if isinstance(given_folders, dict) else {}
    return {
        "sections_collapsed": {name: _flag(sections.get(name), False) for name in SECTIONS},
        "folders_collapsed": {fid: _flag(folders.get(fid), True) for fid in folder_ids},
    }


def _stored(
    db: Session, user_id: str, device_id: str
) -> tuple[DeviceUiState | None, dict[str, object]]:
    """The device's row and what it stores (JSON written by `put_ui_state`, read warily)."""
    row = db.get(DeviceUiState, (user_id, device_id))
    try:
        data = json.loads(row.state) if row else {}
    except ValueError:
        data = {}
    return row, data if isinstance(data, dict) else {}


def get_ui_state(rt: SessionsRuntime, principal: Principal, device_id: str) -> DeviceUiStateView:
    device_id = _device(device_id)
    with rt.db.session() as db:
        folder_ids = [f.id for f in _healed(db, principal.user_id)]
        _, data = _stored(db, principal.user_id, device_id)
    return {"device_id": device_id, **_resolve(data, folder_ids)}


def put_ui_state(
    rt: SessionsRuntime, principal: Principal, device_id: str, changes: UiStateChanges
) -> DeviceUiStateView:
    """Set the sections and folders named in `changes` (others keep their state); folder
    ids that are not the user's are ignored."""
    device_id = _device(device_id)
    with rt.db.session() as db:
        folder_ids = [f.id for f in _healed(db, principal.user_id)]
        row, data = _stored(db, principal.user_id, device_id)
        state = _resolve(data, folder_ids)
        state["sections_collapsed"].update(changes.get("sections_collapsed") or {})
        state["folders_collapsed"].update(
            {k: v for k, v in (changes.get("folders_collapsed") or {}).items() if k in folder_ids}
        )
        text = json.dumps(
            {"sections": state["sections_collapsed"], "folders": state["folders_collapsed"]}
        )
        if row is None:
            try:
                with db.begin_nested():  # two first writes of one device: the second updates
                    db.add(
                        DeviceUiState(
                            user_id=principal.user_id,
                            device_id=device_id,
                            state=text,
                            updated_at=utcnow(),
                        )
                    )
            except IntegrityError:
                row = db.get(DeviceUiState, (principal.user_id, device_id))
        if row is not None:
            row.state, row.updated_at = text, utcnow()
    return {"device_id": device_id, **state}
