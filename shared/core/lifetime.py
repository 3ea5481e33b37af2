"""Processes that die with their parent: Linux's parent-death signal (prctl PR_SET_PDEATHSIG).

`eonyx serve` starts gunicorn, a worker and an embedded Redis; they in turn start gunicorn's
workers and the worker's beat. When serve is killed outright (SIGKILL, the OOM killer) it
cannot stop them, and without this they would run on with parent 1, holding the port and the
Redis socket, so that a restart fails. Each process of the tree asks the kernel to kill it
when its parent goes, so a kill of serve takes the whole tree down in cascade.

The signal fires when the *thread* that forked the process ends, not the whole parent: so it
is asked for only where the fork happens on the parent's main thread (serve's main loop,
gunicorn's arbiter, the worker's start-up). It survives `execve`, so `preexec_fn` suffices
for a binary such as redis-server.

Elsewhere than Linux these are no-ops; serve's own stop still ends its children there.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1
_libc: ctypes.CDLL | None = None


def _prctl() -> Callable[..., int] | None:
    global _libc
    if not sys.platform.startswith("linux"):
        return None
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    prctl: Callable[..., int] = _libc.prctl
    return prctl


def die_with_parent(parent_pid: int, sig: int = signal.SIGKILL) -> None:
    """Have the kernel send `sig` to this process when its parent ends; if the parent
    (`parent_pid`) is already gone, end now: the signal would never come."""
    prctl = _prctl()
    if prctl is None:
        return
    if prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) != 0:
        return  # not allowed here (a sandbox): serve's own stop still covers the usual case
    if os.getppid() != parent_pid:
        os.kill(os.getpid(), sig)


def preexec_die_with_parent(sig: int = signal.SIGKILL) -> Callable[[], None]:
    """A `preexec_fn` for subprocess.Popen: the child dies with the calling process (call
    Popen from the main thread, see the module's docstring)."""
    parent = os.getpid()

    def preexec() -> None:
        die_with_parent(parent, sig)

    return preexec
