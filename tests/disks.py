"""Disks that fail for real: a small tmpfs, filled up or remounted read-only. Mounting needs
root (as in CI); tests that use these skip elsewhere (`needs_root`)."""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")


@contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    """`path` (created) as a tmpfs of `size` (`24m`), unmounted at the end."""
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        if subprocess.run(["umount", str(path)], capture_output=True).returncode:
            subprocess.run(["umount", "-l", str(path)], check=False)


def fill(directory: Path) -> None:
    """Write until the disk refuses, in big then small pieces, so that no block is left."""
    for number, piece in enumerate((1 << 20, 4096, 64)):
        try:
            with open(directory / f"ballast-{number}", "wb") as out:
                while True:
                    out.write(b"\0" * piece)
                    out.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc  # noqa: PT017 - a fixture's check, not a test


def empty(directory: Path) -> None:
    """Room again: what `fill` wrote, removed."""
    for ballast in directory.glob("ballast-*"):
        ballast.unlink()


@contextmanager
def read_only(mountpoint: Path) -> Iterator[None]:
    """The tmpfs at `mountpoint` read-only for a while (no file may be open for writing)."""
    subprocess.run(["mount", "-o", "remount,ro", str(mountpoint)], check=True)
    try:
        yield
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(mountpoint)], check=True)
