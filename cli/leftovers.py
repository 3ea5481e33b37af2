"""What a server on the same DATA_DIR left behind, checked before `eonyx serve` starts.

A server stopped with Ctrl+C removes its run files; one that was killed outright cannot. Its
children die with it (shared/core/lifetime.py), so what normally remains are files: the run
file, its pointer, the embedded Redis's socket. Those are removed. A server still running
on the data directory, or processes of a dead one still alive (a kernel without the
parent-death signal, a child stuck in the kernel), are not killed: serve names them, with
their command lines, and stops.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from cli import runfile
from cli.processes import command_line, group_members


@dataclass(frozen=True)
class Cleared:
    """What a start removed of a dead server's: the files, and that server's pid."""

    pid: int
    files: list[Path]


class StillRunning(Exception):
    """Something of an earlier server runs on this data directory; the message says what."""


def _is_server(pid: int) -> bool:
    """Whether `pid` is an `eonyx serve` (a reused pid after a reboot is someone else)."""
    if not runfile.alive(pid):
        return False
    line = command_line(pid)
    return not line or " serve" in line  # no /proc: trust the pid


def clear(data_dir: Path) -> Cleared | None:
    """Remove a dead server's run files on `data_dir`; StillRunning if a server, or what a
    dead one started, still runs there."""
    path = runfile.run_file(data_dir)
    server = runfile.read_any(path)
    if server is None:
        if path.exists():  # unreadable: half written on a full disk, say
            path.unlink(missing_ok=True)
            return Cleared(0, [path])
        return None
    if _is_server(server.pid):
        raise StillRunning(
            f"Eonyx already runs on {data_dir} at {server.url} (pid {server.pid}): "
            f"stop it first (Ctrl+C in its terminal, or `kill {server.pid}`)"
        )
    left = [(name, pid) for name, pgid in server.groups.items() for pid in group_members(pgid)]
    if left:
        lines = "\n".join(f"  {pid}  {name}: {command_line(pid) or '?'}" for name, pid in left)
        pids = " ".join(str(pid) for _, pid in left)
        raise StillRunning(
            f"the Eonyx server that ran on {data_dir} (pid {server.pid}) is gone, but "
            f"processes it started still run:\n{lines}\nstop them first: kill {pids}"
        )
    removed = []
    for stale in (path, runfile.pointer_file(data_dir)):
        try:
            stale.unlink()
        except FileNotFoundError:
            continue
        except OSError:
            pass
        removed.append(stale)
    return Cleared(server.pid, removed)
