"""The metrics folder is the process's own (issue 38, item 5): a folder another local account
planted where the processes sum their metrics (a link to DATA_DIR, a folder writable by all)
is refused, and nothing outside a folder the process owns is ever deleted."""

from __future__ import annotations

import os
import runpy
from pathlib import Path

import pytest

from shared.core import metrics

GUNICORN_CONF = Path(__file__).parents[2] / "api" / "gunicorn_conf.py"
NOBODY = 65534


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A data directory with the database a planted link would point the deletion at."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "eonyx.db").write_bytes(b"every account")
    (data / "backup.db").write_bytes(b"a copy")
    return data


def planted_link(tmp_path: Path, target: Path) -> Path:
    link = tmp_path / "shm" / "eonyx-metrics-planted"
    link.parent.mkdir()
    link.symlink_to(target)
    return link


def planted_folder(tmp_path: Path) -> Path:
    """A folder someone else made and anyone may write to."""
    folder = tmp_path / "shm" / "eonyx-metrics-open"
    folder.mkdir(parents=True)
    folder.chmod(0o777)
    (folder / "counter_1.db").write_bytes(b"forged")
    if os.geteuid() == 0:
        os.chown(folder, NOBODY, NOBODY)
    return folder


def test_a_planted_link_is_refused_and_its_target_keeps_its_files(
    tmp_path: Path, data_dir: Path
) -> None:
    link = planted_link(tmp_path, data_dir)
    with pytest.raises(metrics.UnsafeDirectory, match="symbolic link"):
        metrics.empty_directory(link)
    assert (data_dir / "eonyx.db").read_bytes() == b"every account"
    assert (data_dir / "backup.db").read_bytes() == b"a copy"


def test_a_folder_others_may_write_to_is_refused(tmp_path: Path) -> None:
    folder = planted_folder(tmp_path)
    with pytest.raises(metrics.UnsafeDirectory, match=r"belongs to uid|others may write"):
        metrics.private_directory(folder)
    with pytest.raises(metrics.UnsafeDirectory):
        metrics.empty_directory(folder)
    assert (folder / "counter_1.db").read_bytes() == b"forged"  # not ours: left alone
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    mine.chmod(0o777)
    with pytest.raises(metrics.UnsafeDirectory, match="others may write"):
        metrics.private_directory(mine)


def test_a_named_folder_is_made_private_and_only_its_own_db_files_are_removed(
    tmp_path: Path, data_dir: Path
) -> None:
    folder = tmp_path / "run" / "metrics"
    assert metrics.private_directory(folder) == folder
    assert folder.stat().st_mode & 0o777 == 0o700
    (folder / "histogram_7.db").write_bytes(b"a previous run")
    (folder / "notes.txt").write_bytes(b"kept")
    (folder / "linked.db").symlink_to(data_dir / "eonyx.db")  # the link goes, not its target
    metrics.empty_directory(folder)
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]
    assert (data_dir / "eonyx.db").read_bytes() == b"every account"


def test_a_new_folder_has_a_random_private_name() -> None:
    first, second = metrics.new_directory(), metrics.new_directory()
    try:
        assert first != second
        for made in (first, second):
            assert made.name.startswith("eonyx-metrics-")
            assert made.stat().st_mode & 0o777 == 0o700
            assert made.stat().st_uid == os.geteuid()
        if os.access("/dev/shm", os.W_OK):
            assert first.parent == Path("/dev/shm")
    finally:
        first.rmdir()
        second.rmdir()


def test_gunicorn_refuses_a_planted_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, data_dir: Path
) -> None:
    """gunicorn's start-up hook, as the compose stack's api runs it: a named folder that is a
    link, or someone else's, stops gunicorn with a message naming it."""
    monkeypatch.setenv("METRICS_TOKEN", "a-token-of-24-characters")
    conf = runpy.run_path(str(GUNICORN_CONF))
    link = planted_link(tmp_path, data_dir)
    for planted, said in ((link, "symbolic link"), (planted_folder(tmp_path), "refusing")):
        monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(planted))
        with pytest.raises(SystemExit, match=said):
            conf["on_starting"](None)
    assert sorted(p.name for p in data_dir.iterdir()) == ["backup.db", "eonyx.db"]
