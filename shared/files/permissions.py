"""Who may read the file store: the account that runs Eonyx, and nobody else.

DATA_DIR holds password hashes and the text of every message (eonyx.db and its full-text
index), the session files, memory files and images. Its files are created 0600 and its
folders 0700, whatever creates them: the server's entry points (`eonyx serve`, `eonyx worker`,
gunicorn's master, a standalone beat, the server-side commands) set the umask 077 before
anything is written, which covers what libraries create too (SQLite's WAL and SHM files, the
embedded Redis's append-only file, metrics files, the beat schedule), and the children they
start inherit it. Where Eonyx opens a file itself it names the mode as well (0600).

A store created before this (files 0644, folders 0755) is put right at start-up by
`secure_store`: group and other bits are removed from every file and folder under DATA_DIR
(symbolic links are left alone and not followed), with one log line saying how many changed.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from sqlalchemy.engine import make_url

from shared.core.settings import Settings

log = logging.getLogger(__name__)

PRIVATE_UMASK = 0o077
OPEN_BITS = 0o077  # group and other: read, write, execute


def private_umask() -> int:
    """Files and folders this process (and its children) creates are its owner's only.
    Returns the umask it replaces."""
    return os.umask(PRIVATE_UMASK)


@contextmanager
def private_files() -> Iterator[None]:
    """The private umask for one command run inside a longer-lived process (a test's)."""
    previous = private_umask()
    try:
        yield
    finally:
        os.umask(previous)


def make_private_dirs(path: Path) -> None:
    """`mkdir -p` with every folder it creates 0700, whatever the umask (Path.mkdir gives
    the mode to the last folder only)."""
    missing = []
    while not path.exists():
        missing.append(path)
        if path.parent == path:
            break
        path = path.parent
    for folder in reversed(missing):
        with suppress(FileExistsError):
            folder.mkdir(mode=0o700)


def restrict(root: Path, also: tuple[Path, ...] = ()) -> tuple[int, int]:
    """Remove group and other bits from `root`, everything under it and the files `also`
    names; symbolic links are neither changed nor followed. Returns (changed, failed): a
    path that cannot be changed (owned by another account, say) is counted, not raised."""
    changed = failed = 0

    def fix(path: str, mode: int) -> None:
        nonlocal changed, failed
        if mode & OPEN_BITS:
            try:
                os.chmod(path, stat.S_IMODE(mode) & ~OPEN_BITS, follow_symlinks=False)
                changed += 1
            except OSError:
                failed += 1

    def walk(folder: str) -> None:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            return
        for entry in entries:
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:
                continue
            if stat.S_ISLNK(mode):
                continue
            fix(entry.path, mode)
            if stat.S_ISDIR(mode):
                walk(entry.path)

    for path in (root, *also):
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            continue
        if not stat.S_ISLNK(mode):
            fix(str(path), mode)
            if path == root and stat.S_ISDIR(mode):
                walk(str(root))
    return changed, failed


def sqlite_files(database_url: str) -> tuple[Path, ...]:
    """The SQLite database's files (with its WAL and SHM), when it is a file."""
    if not database_url.startswith("sqlite"):
        return ()
    database = make_url(database_url).database
    if not database or database == ":memory:" or database.startswith("file:"):
        return ()
    path = Path(database)
    return (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm"))


def secure_store(settings: Settings) -> int:
    """At the start of a server process: the private umask, DATA_DIR made (0700) if it is
    missing, and the modes of an existing store put right, with one log line when any
    changed. Returns how many paths changed. Cheap when nothing is wrong: one lstat a path."""
    private_umask()
    make_private_dirs(settings.data_dir)
    outside = tuple(
        path
        for path in sqlite_files(settings.database_url)
        if not path.is_relative_to(settings.data_dir)
    )
    changed, failed = restrict(settings.data_dir, outside)
    if changed or failed:
        could_not = f"; {failed} could not be changed (not this account's?)" if failed else ""
        log.warning(
            "the store was readable by other accounts: removed group and other access from "
            "%d paths under %s%s",
            changed,
            settings.data_dir,
            could_not,
        )
    return changed
