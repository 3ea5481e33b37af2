"""Child processes of `eonyx serve`: each in a process group of its own, stopped as a group,
and (the worker) started again with backoff when it dies.

A process group, because a child has children too: the worker runs beat as a process of its
own, and gunicorn has its workers. Stopping only the leader, or restarting only the leader
after a kill, would leave the others running (a second beat would schedule everything twice).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from shared.core.lifetime import preexec_die_with_parent

BACKOFF = (1.0, 2.0, 4.0, 8.0, 16.0, 30.0)  # seconds before restart, after 1, 2, ... failures
STEADY_SECONDS = 60.0  # a child that ran this long before dying starts again at once


def group_members(pgid: int) -> list[int]:
    """The processes of the group that still run (zombies do not count: they are done), from
    /proc; where there is none, [pgid] while the group has any process."""
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return []
        return [pgid]
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:  # state, ppid, pgrp
            found.append(int(entry.name))
    return sorted(found)


def group_alive(pgid: int) -> bool:
    """Whether any process of the group still runs."""
    return bool(group_members(pgid))


def command_line(pid: int) -> str:
    """A process's command line, as ps shows it ("" when it is gone or unreadable)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    return raw.rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace")


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


class Child:
    """One command run as the leader of a new session (so also of a new process group), that
    the kernel kills when serve dies (shared/core/lifetime.py): start it from serve's main
    thread."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        env: dict[str, str],
        pass_fds: Sequence[int] = (),
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.env = env
        self.pass_fds = tuple(pass_fds)
        self.process: subprocess.Popen[bytes] | None = None
        self.started = 0.0

    def start(self) -> None:
        self.process = subprocess.Popen(
            self.argv,
            env=self.env,
            pass_fds=self.pass_fds,
            start_new_session=True,
            preexec_fn=preexec_die_with_parent(),
        )
        self.started = time.monotonic()

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def exit_code(self) -> int | None:
        """None while the leader runs."""
        return self.process.poll() if self.process else None

    def signal_group(self, sig: int) -> None:
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, sig)

    def stop(self, grace: float, force: threading.Event | None = None) -> None:
        """SIGTERM to the whole group; SIGKILL to what is left after `grace` seconds (or at
        once when `force` is set, a second Ctrl+C)."""
        if self.process is None:
            return
        pgid = self.process.pid
        self.signal_group(signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and not (force and force.is_set()):
            self.process.poll()  # reap the leader, so it does not count as running
            if not group_alive(pgid):
                break
            time.sleep(0.05)
        self.signal_group(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(10)


class Supervised:
    """A child started again when it dies: after 1 s, then 2, 4, ... up to 30 s while it
    keeps dying young; its group is killed first (whatever the leader left behind)."""

    def __init__(self, child: Child, say: Callable[[str], None]) -> None:
        self.child = child
        self.say = say
        self.failures = 0
        self.restart_at: float | None = None
        self.restarts = 0

    def start(self) -> None:
        self.child.start()

    def check(self) -> None:
        """Called every fraction of a second by serve's main loop."""
        now = time.monotonic()
        if self.restart_at is not None:
            if now >= self.restart_at:
                self.restart_at = None
                self.restarts += 1
                self.child.start()
            return
        code = self.child.exit_code()
        if code is None:
            return
        self.child.signal_group(signal.SIGKILL)
        ran = now - self.child.started
        self.failures = 1 if ran >= STEADY_SECONDS else self.failures + 1
        delay = BACKOFF[min(self.failures, len(BACKOFF)) - 1]
        self.say(f"the {self.child.name} {describe_exit(code)}; starting it again in {delay:g} s")
        self.restart_at = now + delay

    def stop(self, grace: float, force: threading.Event | None = None) -> None:
        self.restart_at = None
        self.child.stop(grace, force)
