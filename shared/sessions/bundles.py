"""Export and import of one session: a self-contained zip bundle, or a Markdown transcript.

A bundle (format version 1) holds

    manifest.json        {"format": "eonyx-session", "format_version": 1, "exported_at",
                          "session": {id, title, source, created_at, message_count, ...},
                          "files": {"conversation.jsonl": <sha256>, "images/<name>": ...}}
    conversation.jsonl   the messages (user, assistant, tool calls and results), one a line
    images/<sha256>.<ext> every image the messages reference

and nothing personal: no memory snapshot, no likes, no folder, no pin.

Import always creates a new session and never overwrites. The whole bundle is checked
before anything is written (`check_bundle`), then written; a write that fails part way
removes what it wrote. Neither pass holds the bundle in memory: the conversation streams out
of the zip a line at a time, images are read one at a time, and records are written (and
made searchable, like any session's) in batches. The new session is unfiled, unpinned,
without likes, with the importer's own memory snapshot (as any new session), and records
where it came from (`imported_from`).

Records are held to the message format of shared.core.messages (a malformed tool call is
refused, not left for the Markdown export to trip on) and to the text rule
(shared.core.text): a title or an identifier with a character it refuses is refused; message
text loses such characters (it holds what models and tools wrote, kept as written in
Eonyx's own sessions, so an exported session always imports again).

Refused, each with a clear 4xx: not a zip; entries with `..`, absolute paths, symlinks or
unexpected names; a zip bomb (too many entries, too large uncompressed, too compressed, or an
entry larger than it claims); a conversation over SESSION_IMPORT_MAX_SESSION_BYTES unpacked
or a record over SESSION_IMPORT_MAX_RECORD_BYTES (413); a missing or malformed manifest or
record (deep or unreadable JSON included); a record naming a missing image; an image that is
not an image (or not the file its name hashes).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import re
import stat
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, NotRequired, TypedDict, cast

from shared.accounts import storage
from shared.core import text as text_rule
from shared.core.clock import isoformat, parse_time, utcnow
from shared.core.encoding import InvalidJSON, decode_json
from shared.core.errors import InvalidInput, StorageError, TooLarge
from shared.core.messages import (
    MessageRecord,
    content_text,
    message_chars,
    meta_record,
    new_message_id,
    tool_call_parts,
    tool_call_problem,
)
from shared.db.orm import SessionRow
from shared.files.filestore import remove_tree
from shared.files.session_store import SessionState
from shared.index import sync
from shared.sessions import image_store, service
from shared.sessions.needs import SessionsRuntime

if TYPE_CHECKING:  # the runtime is passed in, never imported: it sits above this package
    from shared.accounts.people import Principal

FORMAT = "eonyx-session"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
CONVERSATION = "conversation.jsonl"
MAX_ENTRIES = 2000
MAX_RATIO = 200  # uncompressed / compressed, for an entry over RATIO_FROM bytes
RATIO_FROM = 1024 * 1024  # smaller entries cannot blow up whatever their ratio
MIN_UNCOMPRESSED_BUDGET = 100 * 1024 * 1024
MAX_MESSAGES = 100_000
BATCH_CHARS = 4 * 1024 * 1024  # message text written (and indexed) at a time on import
ROLES = ("user", "assistant", "tool")
MESSAGE_ID_RE = re.compile(r"^[0-9a-f]{16}$")
KEPT_FIELDS = ("id", "role", "content", "created_at", "name", "tool_calls", "tool_call_id")


class BadBundle(InvalidInput):
    """A bundle refused on import; the message says what is wrong with it."""

    code = "invalid_bundle"


class ManifestSession(TypedDict, total=False):
    """What the manifest says of the session exported (an imported one may say less)."""

    id: str
    title: str | None
    source: str
    created_at: str
    updated_at: str
    message_count: int
    image_count: int


class Manifest(TypedDict):
    format: str
    format_version: int
    exported_at: NotRequired[str]
    session: ManifestSession
    files: NotRequired[dict[str, str]]  # entry name -> sha256


class ImportedFrom(TypedDict):
    """Where an imported session came from, as its header keeps it."""

    session_id: str | None
    source: str | None
    exported_at: str | None
    imported_at: str


# -- export ---------------------------------------------------------------------------------


def _messages(state: SessionState) -> list[MessageRecord]:
    """The conversation as exported: message records with their own fields only."""
    out = []
    for record in state.messages:
        fields: Mapping[str, Any] = record
        message = cast(MessageRecord, {key: fields[key] for key in KEPT_FIELDS if key in fields})
        if record.get("images"):
            message["images"] = list(record["images"])
        out.append(message)
    return out


def export_zip(rt: SessionsRuntime, principal: Principal, session_id: str) -> bytes:
    service.get_session(rt, principal, session_id)  # another user's: not found
    state, _ = rt.store.load(principal.user_id, session_id)
    messages = _messages(state)
    conversation = "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in messages).encode()
    files: dict[str, bytes] = {CONVERSATION: conversation}
    for message in messages:
        for name in message.get("images") or ():
            path = image_store.path_of(rt.store, principal.user_id, session_id, name)
            files[f"images/{name}"] = path.read_bytes()
    manifest: Manifest = {
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


def export_markdown(rt: SessionsRuntime, principal: Principal, session_id: str) -> str:
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
        for call in message.get("tool_calls") or ():  # any shape: older imports kept any
            name, arguments = tool_call_parts(call)
            lines += [f"_Calls `{name}`_", "", _fenced(arguments), ""]
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
    """A bundle checked whole, ready to be saved: its conversation is read again, record by
    record, when it is written (`records`); only what the write needs is kept."""

    archive: zipfile.ZipFile
    entries: dict[str, zipfile.ZipInfo]
    manifest: Manifest
    title: str | None
    messages: int = 0
    # name -> the image without its bytes (read again when saved, one at a time)
    images: dict[str, image_store.CheckedImage] = field(default_factory=dict)


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
    return name.startswith("images/") and bool(image_store.NAME_RE.match(name[len("images/") :]))


READ_ERRORS = (zipfile.BadZipFile, OSError, EOFError, RuntimeError, NotImplementedError)


def _read(archive: zipfile.ZipFile, entry: zipfile.ZipInfo) -> bytes:
    """An entry's bytes, never more than its header claims (a lying header is a bomb)."""
    try:
        with archive.open(entry) as stream:
            data = stream.read(entry.file_size + 1)
    except READ_ERRORS as exc:
        raise BadBundle(f"entry {entry.filename!r} cannot be read: {exc}") from None
    if len(data) > entry.file_size:
        raise BadBundle(f"entry {entry.filename!r} is larger than it claims (a zip bomb?)")
    return data


def _json_object(data: bytes, what: str) -> dict[str, object]:
    try:
        value = decode_json(data, what=what)
    except InvalidJSON as exc:
        raise BadBundle(exc.message) from None
    if not isinstance(value, dict):
        raise BadBundle(f"{what} must be a JSON object")
    return value


def _check_manifest(data: bytes) -> Manifest:
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
    return cast(Manifest, manifest)  # its other fields are read as they may be (str(...))


def _title(manifest: Manifest) -> str | None:
    """The session's title, held to the text rule as a title set any other way."""
    title = " ".join(str(manifest["session"].get("title") or "").split()) or None
    if title is not None:
        found = text_rule.problem(title, single_line=True)
        if found is not None:
            raise BadBundle(f"{MANIFEST}: session.title {found}", code="invalid_text")
    return title


def _clean(value: Any) -> Any:
    """Message text without the characters the text rule refuses (a transcript holds what
    models and tools wrote, which Eonyx keeps as written: an exported session always imports
    again, and what it imports is text the rule allows)."""
    if isinstance(value, str):
        return text_rule.strip_forbidden(value)
    if isinstance(value, list):
        return [_clean(item) for item in value]
    if isinstance(value, dict):
        return {key: _clean(item) for key, item in value.items()}
    return value


def _one_line(value: Any, what: str) -> None:
    found = text_rule.problem(value, single_line=True) if isinstance(value, str) else None
    if found is not None:
        raise BadBundle(f"{what} {found}", code="invalid_text")


def _check_message(record: Any, line: int) -> MessageRecord:
    """A record of the conversation as Eonyx keeps messages (shared.core.messages), or
    BadBundle naming the line and what is wrong."""
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
        isinstance(n, str) and image_store.NAME_RE.match(n) for n in names
    ):
        raise BadBundle(f"{where}: images must be a list of image names")
    calls = record.get("tool_calls")
    if calls is not None and (role != "assistant" or not isinstance(calls, list)):
        raise BadBundle(f"{where}: tool_calls must be a list of calls on an assistant message")
    for number, call in enumerate(calls or ()):
        problem = tool_call_problem(call)
        if problem is not None:
            raise BadBundle(f"{where}: tool_calls[{number}] {problem}")
        _one_line(call.get("id"), f"{where}: tool_calls[{number}].id")
        _one_line(call["function"]["name"], f"{where}: tool_calls[{number}].function.name")
    for key in ("name", "tool_call_id", "id"):
        if key in record and not isinstance(record[key], str):
            raise BadBundle(f"{where}: {key} must be text")
    for key in ("name", "tool_call_id"):  # a malformed `id` is replaced, not refused
        _one_line(record.get(key), f"{where}: {key}")
    message = cast(
        MessageRecord, {key: _clean(record[key]) for key in KEPT_FIELDS if key in record}
    )
    message["type"] = "message"
    if names:
        message["images"] = names
    return message


def _lines(archive: zipfile.ZipFile, entry: zipfile.ZipInfo, most: int) -> Iterator[bytes]:
    """The conversation's lines, one at a time and each of at most `most` bytes (its line
    break aside): TooLarge (413) for a longer record, BadBundle when the entry is damaged."""
    try:
        with archive.open(entry) as stream:
            number = 0
            while line := stream.readline(most + 2):
                number += 1
                if len(line.rstrip(b"\r\n")) > most:
                    raise TooLarge(
                        f"{CONVERSATION} line {number} is a record of more than {most} bytes "
                        "(SESSION_IMPORT_MAX_RECORD_BYTES)",
                        code="record_too_large",
                    )
                yield line
    except READ_ERRORS as exc:
        raise BadBundle(f"entry {entry.filename!r} cannot be read: {exc}") from None


def _records(rt: SessionsRuntime, bundle: Bundle) -> Iterator[MessageRecord]:
    """Each message of the conversation, checked, read as it streams out of the zip."""
    entry = bundle.entries[CONVERSATION]
    digest = hashlib.sha256()
    count = 0
    for number, line in enumerate(
        _lines(bundle.archive, entry, rt.settings.session_import_max_record_bytes), 1
    ):
        digest.update(line)
        if not line.strip():
            continue
        try:
            record = decode_json(line, what=f"{CONVERSATION} line {number}")
        except InvalidJSON as exc:
            raise BadBundle(exc.message) from None
        count += 1
        if count > MAX_MESSAGES:
            raise BadBundle(f"the bundle has more than {MAX_MESSAGES} messages")
        yield _check_message(record, number)
    _check_digest(bundle.manifest, CONVERSATION, digest.hexdigest())


def check_bundle(rt: SessionsRuntime, archive: zipfile.ZipFile) -> Bundle:
    """Read and check a whole bundle without keeping it: BadBundle (400) for anything wrong
    with it, TooLarge (413) for a conversation or a record over its setting."""
    budget = max(4 * rt.settings.session_import_max_bytes, MIN_UNCOMPRESSED_BUDGET)
    entries = _check_entries(archive, budget)
    if MANIFEST not in entries:
        raise BadBundle(f"the bundle has no {MANIFEST}", code="missing_manifest")
    manifest = _check_manifest(_read(archive, entries[MANIFEST]))
    if CONVERSATION not in entries:
        raise BadBundle(f"the bundle has no {CONVERSATION}")
    most = rt.settings.session_import_max_session_bytes
    if entries[CONVERSATION].file_size > most:  # a zip never unpacks past its header
        raise TooLarge(
            f"{CONVERSATION} unpacks to {entries[CONVERSATION].file_size} bytes; a session "
            f"imports up to {most} (SESSION_IMPORT_MAX_SESSION_BYTES)",
            code="session_too_large",
        )
    bundle = Bundle(archive, entries, manifest, _title(manifest))
    names: set[str] = set()
    for message in _records(rt, bundle):
        bundle.messages += 1
        names.update(message.get("images", ()))
    for name in sorted(names):
        entry = entries.get(f"images/{name}")
        if entry is None:
            raise BadBundle(f"a message names image {name}, which the bundle lacks")
        checked = _image(rt, bundle, name)
        bundle.images[name] = dataclasses.replace(checked, data=b"")
    return bundle


def _image(rt: SessionsRuntime, bundle: Bundle, name: str) -> image_store.CheckedImage:
    raw = _read(bundle.archive, bundle.entries[f"images/{name}"])
    _check_digest(bundle.manifest, f"images/{name}", hashlib.sha256(raw).hexdigest())
    try:
        checked = image_store.check_image(raw, rt.settings.max_image_bytes, label=f"images/{name}")
    except InvalidInput as exc:
        raise BadBundle(exc.message, code=exc.code) from None
    if checked.name != name:
        raise BadBundle(f"images/{name} does not hold the image its name says")
    return checked


def _check_digest(manifest: Manifest, name: str, digest: str) -> None:
    expected = manifest.get("files", {}).get(name)
    if expected is not None and expected != digest:
        raise BadBundle(f"{name} does not match the manifest's digest (damaged?)")


def _open(source: IO[bytes]) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(source)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError):
        raise BadBundle("the file is not a zip bundle", code="not_a_zip") from None


def read_bundle(rt: SessionsRuntime, source: IO[bytes]) -> Bundle:
    """Check a bundle (as an import does first) and close it: BadBundle or TooLarge."""
    with _open(source) as archive:
        return check_bundle(rt, archive)


def import_bundle(
    rt: SessionsRuntime, principal: Principal, memory: service.MemorySnapshots, source: IO[bytes]
) -> tuple[SessionRow, ImportedFrom]:
    """A new session from a bundle. The bundle is checked whole first; then the conversation
    is read again as it is written, a batch of records at a time, each batch made searchable
    as it is saved: neither pass holds more than a batch, whatever the session's size. The
    session takes the importer's memory snapshot from `memory` (the caller's `rt.memory`)."""
    with _open(source) as archive:
        bundle = check_bundle(rt, archive)
        # What the session will take: its conversation and images, as they unpack.
        unpacked = sum(e.file_size for name, e in bundle.entries.items() if name != MANIFEST)
        storage.check(rt, principal.user_id, unpacked)
        original = bundle.manifest["session"]
        imported_from: ImportedFrom = {
            "session_id": str(original.get("id") or "")[:64] or None,
            "source": str(original.get("source") or "")[:16] or None,
            "exported_at": str(bundle.manifest.get("exported_at") or "")[:40] or None,
            "imported_at": isoformat(utcnow()),
        }
        user_id = principal.user_id
        state, _ = rt.store.create(
            user_id,
            source=principal.source,
            extra={"snapshot": memory.snapshot(user_id), sync.IMPORTED_FROM: imported_from},
        )
        try:
            for name, checked in bundle.images.items():
                image = dataclasses.replace(
                    checked, data=_read(archive, bundle.entries[f"images/{name}"])
                )
                if image.name != name:  # the archive changed under us
                    raise BadBundle(f"images/{name} does not hold the image its name says")
                image_store.save(rt.store, user_id, state.id, [image])
            _write_messages(rt, state, _records(rt, bundle))
            # The title last, stamped now: the new session is listed first, like any new chat.
            meta = meta_record({"title": bundle.title})
            info = service.append_unlisted(rt, user_id, state.id, [meta])
            state.apply(meta, keep_messages=False)  # folded as written: never read back whole
            with rt.db.session() as db:
                sync.record(db, state, info)
                row = sync.get_row(db, user_id, state.id)
        except BaseException:
            _remove(rt, user_id, state.id)
            raise
    return row, imported_from


def _write_messages(
    rt: SessionsRuntime, state: SessionState, records: Iterator[MessageRecord]
) -> None:
    """Append the records in batches of about BATCH_CHARS, each made searchable as it is
    saved, and fold them into `state` (without keeping them). A message id that is missing,
    malformed or already used gets a new one."""
    seen: set[str] = set()
    batch: list[MessageRecord] = []
    size = 0
    for message in records:
        if not MESSAGE_ID_RE.match(str(message.get("id", ""))) or message["id"] in seen:
            message["id"] = new_message_id()
        seen.add(message["id"])
        batch.append(message)
        state.apply(message, keep_messages=False)
        size += message_chars(message)
        if size >= BATCH_CHARS:
            _save_batch(rt, state, batch)
            batch, size = [], 0
    _save_batch(rt, state, batch)


def _save_batch(rt: SessionsRuntime, state: SessionState, batch: list[MessageRecord]) -> None:
    if batch:
        service.append_unlisted(rt, state.user_id, state.id, batch)


def _remove(rt: SessionsRuntime, user_id: str, session_id: str) -> None:
    """Undo a half-written import: the file, the images, the row and its text."""
    path = rt.store.path(user_id, session_id)
    path.unlink(missing_ok=True)
    with contextlib.suppress(StorageError):
        remove_tree(path.with_suffix(""))
    with rt.db.session() as db:
        sync.forget(db, session_id)
