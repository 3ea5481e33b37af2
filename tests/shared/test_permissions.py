"""The store's modes: files 0600 and folders 0700, and an older store put right at start-up
with one log line (shared/files/permissions.py)."""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.core.settings import load_settings
from shared.files.permissions import secure_store
from shared.runtime import Runtime


@pytest.fixture
def usual_umask() -> Iterator[None]:
    """A process that has not been through an entry point yet (022, the usual default);
    the test's own umask comes back afterwards (secure_store changes it for good)."""
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def open_paths(root: Path) -> list[str]:
    """Every path under root (root too) that its group or others may use."""
    found = [] if not mode(root) & 0o077 else ["."]
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            if not path.is_symlink() and mode(path) & 0o077:
                found.append(f"{path.relative_to(root)} {oct(mode(path))}")
    return found


def old_store(root: Path) -> dict[str, Path]:
    """A store as an older Eonyx left it: folders 0755, files 0644, a script 0755."""
    made = {
        "db": root / "eonyx.db",
        "wal": root / "eonyx.db-wal",
        "session": root / "users" / "u1" / "sessions" / "20260705T091500-1a2b3c4d.jsonl",
        "memory": root / "users" / "u1" / ".agent" / "MEMORY.md",
        "tool": root / "run" / "hook.sh",
    }
    for path in made.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
        path.chmod(0o644)
    made["tool"].chmod(0o755)
    for folder, dirs, _ in os.walk(root):
        for name in dirs:
            (Path(folder) / name).chmod(0o755)
    root.chmod(0o755)
    return made


def test_an_old_store_is_made_private_and_said_in_one_line(
    tmp_path: Path, usual_umask: None, caplog: pytest.LogCaptureFixture
) -> None:
    data = tmp_path / "data"
    made = old_store(data)
    outside = tmp_path / "elsewhere.txt"  # a link out of the store is not followed
    outside.write_text("not ours")
    outside.chmod(0o644)
    (data / "link").symlink_to(outside)
    settings = load_settings({"HOME": str(tmp_path), "DATA_DIR": str(data)})

    with caplog.at_level(logging.INFO, logger="shared.files.permissions"):
        changed = secure_store(settings)

    assert open_paths(data) == []
    assert changed == 11  # 6 folders (data, users, u1, sessions, .agent, run) and 5 files
    assert mode(made["session"]) == 0o600
    assert mode(made["tool"]) == 0o700
    assert mode(data / "users") == 0o700
    assert mode(outside) == 0o644
    [line] = caplog.records
    assert line.levelno == logging.WARNING
    assert f"from {changed} paths under {data}" in line.getMessage()

    caplog.clear()
    assert secure_store(settings) == 0  # nothing left to change: nothing said
    assert caplog.records == []
    # and what the process creates from now on is private too (the umask)
    (data / "users" / "u2" / "sessions").mkdir(parents=True)
    (data / "users" / "u2" / "sessions" / "new.jsonl").write_text("{}\n")
    assert open_paths(data) == []


def test_a_fresh_store_has_no_group_or_other_bits(tmp_path: Path, usual_umask: None) -> None:
    """Built by the runtime without an entry point's umask: the data directory and the
    SQLite database (with its WAL and SHM) are still private."""
    data = tmp_path / "new" / "data"
    settings = load_settings({"HOME": str(tmp_path), "DATA_DIR": str(data)})
    with Runtime.build(settings) as rt:
        rt.db.migrate()
        assert (data / "eonyx.db-wal").exists()
        assert (data / "eonyx.db-shm").exists()
        assert mode(data) == mode(data.parent) == 0o700
        for name in ("eonyx.db", "eonyx.db-wal", "eonyx.db-shm"):
            assert mode(data / name) == 0o600, name
