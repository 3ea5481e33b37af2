"""Durable file primitives: the only place that writes bytes under DATA_DIR.

- `locked`: an exclusive `flock` on a file, held by whoever appends, rewrites or deletes it.
- `durable_append`: append + fsync under that lock; repairs a torn last line first; on
  failure the file is cut back to its previous length, so it stays valid.
- `atomic_write`: temp file, fsync, rename, fsync of the directory.
- `link_tree`: a durable copy of a directory by hard links, for files never changed in
  place (a fork's images).
- `backup_file`: a timestamped copy taken before a whole-file rewrite.
- `read_jsonl`: records of a JSONL file, ignoring a torn last line; `parse_lines` and
  `read_range` do the same for a part of a file (an incremental read).
- `safe_path`: joins parts under a root and refuses anything that would escape it.
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import secrets
import shutil
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from shared.core.errors import InvalidInput, StorageError
from shared.files.permissions import make_private_dirs

log = logging.getLogger(__name__)
_TAIL_CHUNK = 64 * 1024


def safe_path(root: Path, *parts: str) -> Path:
    """`root/parts...`, refusing empty parts, separators, dot-dirs and anything escaping root."""
    for part in parts:
        if not part or part in (".", "..") or "/" in part or "\\" in part or "\0" in part:
            raise InvalidInput(f"invalid path component {part!r}", code="invalid_id")
    path = root.joinpath(*parts)
    resolved_root = root.resolve()
    if not path.resolve().is_relative_to(resolved_root):
        raise InvalidInput("path escapes the data directory", code="invalid_id")
    return path


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def encode_records(records: Iterable[Mapping[str, Any]]) -> bytes:
    """JSONL as UTF-8. A record holding a lone surrogate (say, from a model's answer) cannot be
    UTF-8, so that record is written with JSON's ASCII escapes instead: still the exact text."""
    return b"".join(_encode_record(record) for record in records)


def _encode_record(record: Mapping[str, Any]) -> bytes:
    line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
    try:
        return line.encode()
    except UnicodeEncodeError:
        return (json.dumps(record, separators=(",", ":")) + "\n").encode()


def _end_of_last_complete_line(fd: int, size: int) -> int:
    """Offset just after the last b"\\n" in the file (0 when there is none)."""
    end = size
    while end > 0:
        start = max(0, end - _TAIL_CHUNK)
        chunk = os.pread(fd, end - start, start)
        cut = chunk.rfind(b"\n")
        if cut >= 0:
            return start + cut + 1
        end = start
    return 0


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


@contextmanager
def locked(path: Path, *, create: bool = False) -> Iterator[int]:
    """An fd of `path` open for reading and appending, under an exclusive `flock`.

    The lock lives on the file itself, so it excludes every process that opens the same file
    (other containers on the same volume included) at the cost of one system call. A file
    unlinked while we waited for its lock raises FileNotFoundError, as if it were never there;
    a file atomically replaced meanwhile (a cleared session) is locked again under its new
    inode, so a waiting writer appends to the file that is there now.
    """
    flags = os.O_RDWR | os.O_APPEND | (os.O_CREAT | os.O_EXCL if create else 0)
    while True:
        try:
            fd = os.open(path, flags, 0o600)
        except FileNotFoundError:
            raise  # the caller knows what a missing file means (usually: no such session)
        except OSError as exc:
            raise StorageError(
                f"cannot open {path.name} for writing: {os.strerror(exc.errno or 0)}"
            ) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if os.fstat(fd).st_nlink == 0:
                if _replaced(path, fd):
                    continue  # the finally closes this fd; open the new file
                raise FileNotFoundError(
                    errno.ENOENT, "deleted while waiting for its lock", str(path)
                )
            yield fd
            return
        finally:
            os.close(fd)  # closing releases the flock


def _replaced(path: Path, fd: int) -> bool:
    """Whether `path` now names another file than the (unlinked) one open as `fd`."""
    try:
        current = path.stat()
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (current.st_dev, current.st_ino) != (mine.st_dev, mine.st_ino)


def durable_append(path: Path, data: bytes, *, create: bool = False) -> os.stat_result:
    """Append `data` (whole lines) to `path` under its lock and fsync before returning.

    A torn last line left by a crash is cut off first. If the write or the fsync fails the
    file is truncated back to where it was and `StorageError` is raised; a file this call
    created is removed again (under its lock), so a failed create leaves no empty file.
    """
    with locked(path, create=create) as fd:
        try:
            stat = append_locked(fd, path, data)
        except StorageError:
            if create:
                path.unlink(missing_ok=True)
            raise
    if create:
        try:
            fsync_dir(path.parent)
        except OSError as exc:
            raise StorageError(f"could not save {path.name}: {exc.strerror or exc}") from exc
    return stat


def append_locked(fd: int, path: Path, data: bytes) -> os.stat_result:
    """`durable_append` for a caller that already holds the lock (`locked(path)` gave `fd`)."""
    size = os.fstat(fd).st_size
    if size and os.pread(fd, 1, size - 1) != b"\n":
        good = _end_of_last_complete_line(fd, size)
        log.warning("repairing torn last line of %s (%d bytes dropped)", path, size - good)
        os.ftruncate(fd, good)
        size = good
    try:
        _write_all(fd, data)
        os.fsync(fd)
    except OSError as exc:
        _restore_length(fd, size)
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        raise StorageError(f"could not save to {path.name}: {reason}") from exc
    return os.fstat(fd)


def _restore_length(fd: int, size: int) -> None:
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
    except OSError:
        log.exception("could not cut a failed append back to %d bytes", size)


def atomic_write(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so that readers see the old file or the new one, never a mix."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        raise StorageError(f"could not save {path.name}: {reason}") from exc


def link_tree(source: Path, target: Path, *, skip: tuple[str, ...] = ()) -> bool:
    """A copy of the files of `source` (recursively) at `target`, leaving out top-level names
    in `skip`, for files that never change once written (a session's images, named by their
    SHA-256): each file of `target` is a hard link to the one of `source`, so the copy takes
    no space and each name can be removed on its own (the data goes with the last name).
    A file that cannot be linked (another file system, one without links) is copied. False
    when there is no `source`; on failure the partial copy is removed and StorageError
    raised."""
    if not source.is_dir():
        return False
    try:
        for folder, _, files in os.walk(source):
            here = Path(folder)
            if here != source and here.relative_to(source).parts[0] in skip:
                continue
            there = target / here.relative_to(source)
            make_private_dirs(there)
            for name in files:
                if here == source and name in skip:
                    continue
                try:
                    os.link(here / name, there / name)
                except OSError as exc:
                    if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
                        raise
                    atomic_write(there / name, (here / name).read_bytes())
            fsync_dir(there)
        fsync_dir(target.parent)
    except (OSError, StorageError) as exc:
        shutil.rmtree(target, ignore_errors=True)
        reason = exc.strerror if isinstance(exc, OSError) else exc.message
        raise StorageError(f"could not link {source.name}: {reason or exc}") from exc
    return True


def timestamp() -> str:
    """UTC time as `YYYYMMDDTHHMMSS-ffffffZ`: sortable and safe in a file name."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S-%fZ")


def backup_file(path: Path, backups_dir: Path) -> Path | None:
    """Copy `path` to `backups_dir/<name>.<timestamp>` (durably); None when there is no file."""
    if not path.exists():
        return None
    target = backups_dir / f"{path.name}.{timestamp()}"
    try:
        make_private_dirs(backups_dir)
        atomic_write(target, path.read_bytes())
    except OSError as exc:
        raise StorageError(f"could not back up {path.name}: {exc.strerror}") from exc
    return target


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The records of a JSONL file. A torn last line is ignored; a bad middle line is logged."""
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        log.info("ignoring torn last line of %s", path)
    records, _ = parse_lines(data, path.name)
    return records


def parse_lines(data: bytes, name: str, first_line: int = 1) -> tuple[list[dict[str, Any]], int]:
    """The records of the complete lines of `data`, and how many bytes those lines take (up
    to the last b"\n"): what follows is a torn or still-growing last line, left for later.
    A complete line that is not a JSON object is logged (with its number, counting from
    `first_line`) and skipped."""
    end = data.rfind(b"\n") + 1
    lines = data[:end].split(b"\n")
    lines.pop()  # b"" after the last newline
    try:  # one parse for the whole file; line by line only when some line is bad
        parsed = json.loads(b"[" + b",".join(line for line in lines if line.strip()) + b"]")
        return [record for record in parsed if isinstance(record, dict)], end
    except ValueError:
        pass
    records: list[dict[str, Any]] = []
    for number, line in enumerate(lines, first_line):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            log.warning("skipping unreadable line %d of %s", number, name)
            continue
        if isinstance(record, dict):
            records.append(record)
    return records, end


def read_range(fd: int, start: int, end: int) -> bytes:
    """Bytes [start, end) of an open file (fewer if it is shorter now)."""
    chunks: list[bytes] = []
    while start < end:
        chunk = os.pread(fd, end - start, start)
        if not chunk:
            break
        chunks.append(chunk)
        start += len(chunk)
    return b"".join(chunks)


def remove_tree(path: Path) -> None:
    try:
        shutil.rmtree(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            raise StorageError(f"could not remove {path.name}: {exc.strerror}") from exc
