"""Export and import of one session: a self-contained zip bundle, or a Markdown transcript.

A bundle (format version 1) holds

    manifest.json        {"format": "eonyx-session", "format_version": 1, "exported_at",
                          "session": {id, title, source, created_at, message_count, ...},
                          "files": {"conversation.jsonl": <sha256>, "images/<name>": ...}}
    conversation.jsonl   the messages (user, assistant, tool calls and results), one a line
    images/<sha256>.<ext> every image the messages reference

and nothing personal: no memory snapshot, no likes, no folder, no pin.

Import always creates a new session and never overwrites. The whole bundle is read and
checked before anything is written (`read_bundle`); a write that fails part way removes what
it wrote. The new session is unfiled, unpinned, without likes, with the importer's own memory
snapshot (as any new session), and records where it came from (`imported_from`).
Refused, each with a clear 4xx: not a zip; entries with `..`, absolute paths, symlinks or
unexpected names; a zip bomb (too many entries, too large uncompressed, too compressed, or an
entry larger than it claims); a missing or malformed manifest or record; a record naming a
missing image; an image that is not an image (or not the file its name hashes).
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import stat
import zipfile
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from shared.core.clock import isoformat, parse_time, utcnow
from shared.core.errors import InvalidInput, StorageError
from shared.core.messages import content_text
from shared.sessions import images, service
from shared.storage import index
from shared.storage.filestore import remove_tree
from shared.storage.orm import SessionRow
from shared.storage.session_store import SessionState, new_message_id

if TYPE_CHECKING:  # the runtime is passed in, never imported: it sits above this package
    from shared.accounts import Principal
    from shared.runtime import Runtime

FORMAT = "eonyx-session"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
CONVERSATION = "conversation.jsonl"
MAX_ENTRIES = 2000
MAX_RATIO = 200  # uncompressed / compressed, for an entry over RATIO_FROM bytes
RATIO_FROM = 1024 * 1024  # smaller entries cannot blow up whatever their ratio
MIN_UNCOMPRESSED_BUDGET = 100 * 1024 * 1024
MAX_MESSAGES = 100_000
ROLES = ("user", "assistant", "tool")
MESSAGE_ID_RE = re.compile(r"^[0-9a-f]{16}$")
KEPT_FIELDS = ("id", "role", "content", "created_at", "name", "tool_calls", "tool_call_id")


class BadBundle(InvalidInput):
    """A bundle refused on import; the message says what is wrong with it."""

    code = "invalid_bundle"


# -- export ---------------------------------------------------------------------------------


def _messages(state: SessionState) -> list[dict[str, Any]]:
    """The conversation as exported: message records with their own fields only."""
    out = []
    for record in state.messages:
        message = {key: record[key] for key in KEPT_FIELDS if key in record}
        if record.get("images"):
            message["images"] = list(record["images"])
        out.append(message)
    return out


def export_zip(rt: Runtime, principal: Principal, session_id: str) -> bytes:
    service.get_session(rt, principal, session_id)  # another user's: not found
    state, _ = rt.store.load(principal.user_id, session_id)
    messages = _messages(state)
    conversation = "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in messages).encode()
    files: dict[str, bytes] = {CONVERSATION: conversation}
    for message in messages:
        for name in message.get("images") or ():
            path = images.path_of(rt.store, principal.user_id, session_id, name)
            files[f"images/{name}"] = path.read_bytes()
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "exported_at": isoformat(utcnow()),
        "session": {
            "id": state.id,
            "title": state.title,
            "source": state.source,
            "created_at": isoformat(state.created_at),
            "updated_at": isoformat(state.updated_at),
            "message_count": state.message_count,
            "image_count": state.image_count,
        },
        "files": {name: hashlib.sha256(data).hexdigest() for name, data in files.items()},
    }
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as bundle:
        bundle.writestr(MANIFEST, json.dumps(manifest, ensure_ascii=False, indent=2))
        for name, data in files.items():
            # Images are compressed already: stored as they are.
            kind = zipfile.ZIP_STORED if name.startswith("images/") else zipfile.ZIP_DEFLATED
            bundle.writestr(name, data, compress_type=kind)
    return out.getvalue()


def export_markdown(rt: Runtime, principal: Principal, session_id: str) -> str:
    """A readable transcript: the title, then each message under its speaker and time."""
    service.get_session(rt, principal, session_id)
    state, _ = rt.store.load(principal.user_id, session_id)
    lines = [f"# {state.title or 'Untitled session'}", ""]
    lines += [f"_Session {state.id}, exported from Eonyx {_when(isoformat(utcnow()))} UTC._", ""]
    for message in state.messages:
        role = message.get("role")
        when = _when(message.get("created_at"))
        text = content_text(message.get("content")).strip()
        if role == "tool":
            lines += [f"**Tool result** `{message.get('name', '')}`", "", _fenced(text), ""]
            continue
        lines += [f"## {'You' if role == 'user' else 'Assistant'} · {when}", ""]
        if text:
            lines += [text, ""]
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            lines += [f"_Calls `{function.get('name')}`_", "", _fenced(function.get("arguments"))]
            lines.append("")
        for name in message.get("images") or ():
            lines += [f"![image](images/{name})", ""]
    return "\n".join(lines).rstrip() + "\n"


def _when(stamp: Any) -> str:
    try:
        return parse_time(stamp).strftime("%Y/%m/%d %H:%M")
    except (TypeError, ValueError):
        return ""


def _fenced(text: Any) -> str:
    body = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)
    fence = "```"
    while fence in body:
        fence += "`"
    return f"{fence}\n{body}\n{fence}"


# -- import ---------------------------------------------------------------------------------


@dataclass
class Bundle:
    """A bundle read and checked whole, ready to be saved."""

    manifest: dict[str, Any]
    messages: list[dict[str, Any]]
    images: dict[str, images.CheckedImage] = field(default_factory=dict)


def _check_entries(archive: zipfile.ZipFile, budget: int) -> dict[str, zipfile.ZipInfo]:
    entries = archive.infolist()
    if len(entries) > MAX_ENTRIES:
        raise BadBundle(f"the bundle has {len(entries)} entries; at most {MAX_ENTRIES}")
    total = 0
    found: dict[str, zipfile.ZipInfo] = {}
    for entry in entries:
        name = entry.filename
        parts = name.replace("\\", "/").split("/")
        if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name):
            raise BadBundle(f"entry {name!r} has an absolute path")
        if ".." in parts:
            raise BadBundle(f"entry {name!r} climbs out of the bundle (..)")
        if stat.S_ISLNK(entry.external_attr >> 16):
            raise BadBundle(f"entry {name!r} is a symbolic link")
        if entry.is_dir():
            continue
        if name != MANIFEST and name != CONVERSATION and not _is_image_entry(name):
            raise BadBundle(f"unexpected entry {name!r}")
        if name in found:
            raise BadBundle(f"entry {name!r} appears twice")
        ratio = entry.file_size / max(entry.compress_size, 1)
        if entry.file_size > RATIO_FROM and ratio > MAX_RATIO:
            raise BadBundle(f"entry {name!r} is compressed more than {MAX_RATIO}:1 (a zip bomb?)")
        total += entry.file_size
        if total > budget:
            raise BadBundle(f"the bundle unpacks to more than {budget} bytes")
        found[name] = entry
    return found


def _is_image_entry(name: str) -> bool:
    return name.startswith("images/") and bool(images.NAME_RE.match(name[len("images/") :]))


def _read(archive: zipfile.ZipFile, entry: zipfile.ZipInfo) -> bytes:
    """An entry's bytes, never more than its header claims (a lying header is a bomb)."""
    try:
        with archive.open(entry) as stream:
            data = stream.read(entry.file_size + 1)
    except (zipfile.BadZipFile, OSError, EOFError, RuntimeError, NotImplementedError) as exc:
        raise BadBundle(f"entry {entry.filename!r} cannot be read: {exc}") from None
    if len(data) > entry.file_size:
        raise BadBundle(f"entry {entry.filename!r} is larger than it claims (a zip bomb?)")
    return data


def _json_object(data: bytes, what: str) -> dict[str, Any]:
    try:
        value = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadBundle(f"{what} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise BadBundle(f"{what} must be a JSON object")
    return value


def _check_manifest(data: bytes) -> dict[str, Any]:
    manifest = _json_object(data, MANIFEST)
    if manifest.get("format") != FORMAT:
        raise BadBundle(f"{MANIFEST}: format must be {FORMAT!r}")
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        raise BadBundle(
            f"{MANIFEST}: format_version {version!r} is not supported (this server reads "
            f"{FORMAT_VERSION})"
        )
    session = manifest.get("session")
    if not isinstance(session, dict):
        raise BadBundle(f"{MANIFEST}: session must be an object")
    title = session.get("title")
    if title is not None and (not isinstance(title, str) or len(title) > service.TITLE_MAX):
        raise BadBundle(f"{MANIFEST}: session.title must be text of at most {service.TITLE_MAX}")
    files = manifest.get("files", {})
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise BadBundle(f"{MANIFEST}: files must map names to sha256 digests")
    return manifest


def _check_message(record: Any, line: int) -> dict[str, Any]:
    where = f"{CONVERSATION} line {line}"
    if not isinstance(record, dict):
        raise BadBundle(f"{where}: a record must be a JSON object")
    role = record.get("role")
    if role not in ROLES:
        raise BadBundle(f"{where}: role must be one of {', '.join(ROLES)}")
    content = record.get("content")
    if content is not None and not isinstance(content, (str, list)):
        raise BadBundle(f"{where}: content must be text, a list of parts or null")
    if isinstance(content, list) and not all(
        isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
        for p in content
    ):
        raise BadBundle(f"{where}: content parts must be text parts (images go in images/)")
    try:
        parse_time(record["created_at"])
    except (KeyError, TypeError, ValueError):
        raise BadBundle(f"{where}: created_at must be an ISO 8601 time") from None
    names = record.get("images") or []
    if not isinstance(names, list) or not all(
        isinstance(n, str) and images.NAME_RE.match(n) for n in names
    ):
        raise BadBundle(f"{where}: images must be a list of image names")
    calls = record.get("tool_calls")
    if calls is not None and (
        role != "assistant"
        or not isinstance(calls, list)
        or not all(isinstance(c, dict) for c in calls)
    ):
        raise BadBundle(f"{where}: tool_calls must be a list of objects on an assistant message")
    for key in ("name", "tool_call_id", "id"):
        if key in record and not isinstance(record[key], str):
            raise BadBundle(f"{where}: {key} must be text")
    message = {key: record[key] for key in KEPT_FIELDS if key in record}
    message["type"] = "message"
    if not MESSAGE_ID_RE.match(str(message.get("id", ""))):
        message["id"] = new_message_id()
    if names:
        message["images"] = names
    return message


def read_bundle(rt: Runtime, source: IO[bytes]) -> Bundle:
    """Read and check a whole bundle; BadBundle (400) for anything wrong with it."""
    try:
        archive = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError):
        raise BadBundle("the file is not a zip bundle", code="not_a_zip") from None
    with archive:
        budget = max(4 * rt.settings.session_import_max_bytes, MIN_UNCOMPRESSED_BUDGET)
        entries = _check_entries(archive, budget)
        if MANIFEST not in entries:
            raise BadBundle(f"the bundle has no {MANIFEST}", code="missing_manifest")
        manifest = _check_manifest(_read(archive, entries[MANIFEST]))
        if CONVERSATION not in entries:
            raise BadBundle(f"the bundle has no {CONVERSATION}")
        data = _read(archive, entries[CONVERSATION])
        _check_digest(manifest, CONVERSATION, data)
        try:
            lines = data.decode("utf-8").splitlines()
        except UnicodeDecodeError:
            raise BadBundle(f"{CONVERSATION} is not UTF-8 text") from None
        messages = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                raise BadBundle(f"{CONVERSATION} line {number} is not valid JSON") from None
            messages.append(_check_message(record, number))
            if len(messages) > MAX_MESSAGES:
                raise BadBundle(f"the bundle has more than {MAX_MESSAGES} messages")
        bundle = Bundle(manifest, messages)
        for name in sorted({n for m in messages for n in m.get("images", ())}):
            entry = entries.get(f"images/{name}")
            if entry is None:
                raise BadBundle(f"a message names image {name}, which the bundle lacks")
            raw = _read(archive, entry)
            _check_digest(manifest, f"images/{name}", raw)
            try:
                checked = images.check_image(
                    raw, rt.settings.max_image_bytes, label=f"images/{name}"
                )
            except InvalidInput as exc:
                raise BadBundle(exc.message, code=exc.code) from None
            if checked.name != name:
                raise BadBundle(f"images/{name} does not hold the image its name says")
            bundle.images[name] = checked
    return bundle


def _check_digest(manifest: dict[str, Any], name: str, data: bytes) -> None:
    expected = manifest.get("files", {}).get(name)
    if expected is not None and expected != hashlib.sha256(data).hexdigest():
        raise BadBundle(f"{name} does not match the manifest's digest (damaged?)")


def import_bundle(
    rt: Runtime, principal: Principal, source: IO[bytes]
) -> tuple[SessionRow, dict[str, Any]]:
    """A new session from a bundle (checked whole first); returns it and where it came from."""
    bundle = read_bundle(rt, source)
    original = bundle.manifest["session"]
    imported_from = {
        "session_id": str(original.get("id") or "")[:64] or None,
        "source": str(original.get("source") or "")[:16] or None,
        "exported_at": str(bundle.manifest.get("exported_at") or "")[:40] or None,
        "imported_at": isoformat(utcnow()),
    }
    title = " ".join(str(original.get("title") or "").split()) or None
    user_id = principal.user_id
    state, _ = rt.store.create(
        user_id,
        source=principal.source,
        extra={"snapshot": rt.memory.snapshot(user_id), "imported_from": imported_from},
    )
    try:
        images.save(rt.store, user_id, state.id, list(bundle.images.values()))
        # The title last, stamped now: the new session is listed first, like any new chat.
        meta = {"type": "meta", "at": isoformat(utcnow()), "set": {"title": title}}
        rt.store.append(user_id, state.id, [*bundle.messages, meta])
        loaded, info = rt.store.load(user_id, state.id, keep_messages=False)
        with rt.db.session() as db:
            index.record(db, loaded, info)
            row = index.get_row(db, user_id, state.id)
    except BaseException:
        _remove(rt, user_id, state.id)
        raise
    return row, imported_from


def _remove(rt: Runtime, user_id: str, session_id: str) -> None:
    """Undo a half-written import: the file, the images, the row."""
    path = rt.store.path(user_id, session_id)
    path.unlink(missing_ok=True)
    try:
        remove_tree(path.with_suffix(""))
    except StorageError:
        pass
    with rt.db.session() as db:
        index.forget(db, session_id)
