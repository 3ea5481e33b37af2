"""How many bytes of DATA_DIR a user's data takes: measured from disk, and kept as a running
figure so that a write can be checked against the user's quota without walking the tree.

What is counted is every regular file under `users/<user-id>/`, by kind:

    sessions        users/<id>/sessions/<sid>.jsonl and <sid>/summary.json of live sessions
    images          users/<id>/sessions/<sid>/images/*, of live sessions
    trash           a session in the trash: its transcript, images and summary
    memory          users/<id>/.agent/USER.md and MEMORY.md
    memory_backups  users/<id>/.agent/backups/* (a copy before every memory write)
    other           anything else under the user's directory (a write's temporary file)
    shares          the snapshots of the user's shared links: kept in the database, not on
                    disk, so `measure` leaves them at zero and the quota's owner adds them
                    (shared.accounts.storage)

Sizes are apparent sizes (`st_size`, what `du -b` adds up), and a file with several names
(a fork's images are hard links to the original's) is counted once, under the first kind
above that names it: a live session's image shared with a session in the trash is an image,
not trash. Directories themselves, the deployment's files (IDENTITY.md, locks, the embedded
Redis) and the database are not counted; exports are streamed, never stored.

The running figure lives in Redis (a hash per user, shared by every process and replica),
or, without Redis, in a table of this process. Writes add what they wrote (`add`); anything
that frees space forgets the figure (`forget`), so the next check measures again. A figure
is kept at most RECONCILE_SECONDS before it is measured again from disk, which corrects any
drift (a write that was not added, two processes measuring at once).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from stat import S_ISREG

import redis

from shared.core import registry

log = logging.getLogger(__name__)

KINDS = ("sessions", "images", "trash", "memory", "memory_backups", "other", "shares")
RECONCILE_SECONDS = 3600
# HINCRBY only a figure that exists: a missing one is measured from disk at the next check.
_ADD = """
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2])
  return 1
end
return 0
"""


def measure(user_dir: Path, trashed: Collection[str] = ()) -> dict[str, int]:
    """Bytes by kind (every kind of KINDS, zero included) of the files under `user_dir`;
    `trashed`: ids of the user's sessions in the trash."""
    rank = {kind: n for n, kind in enumerate(KINDS)}
    found: dict[tuple[int, int], tuple[str, int]] = {}  # (device, inode) -> (kind, size)
    for folder, _, names in os.walk(user_dir):
        parts = Path(folder).relative_to(user_dir).parts
        for name in names:
            try:
                stat = os.lstat(os.path.join(folder, name))
            except FileNotFoundError:
                continue  # removed while we walked
            if not S_ISREG(stat.st_mode):
                continue  # a symlink or a socket is no data of the user's
            kind = kind_of((*parts, name), trashed)
            key = (stat.st_dev, stat.st_ino)
            known = found.get(key)
            if known is None or rank[kind] < rank[known[0]]:
                found[key] = (kind, stat.st_size)
    totals = dict.fromkeys(KINDS, 0)
    for kind, size in found.values():
        totals[kind] += size
    return totals


def kind_of(parts: tuple[str, ...], trashed: Collection[str]) -> str:
    """The kind of the file at `parts` (its path under the user's directory)."""
    if parts[0] == "sessions" and len(parts) >= 2:
        if len(parts) == 2:
            if not parts[1].endswith(".jsonl"):
                return "other"
            session_id = parts[1][: -len(".jsonl")]
        else:
            session_id = parts[1]
        if session_id in trashed:
            return "trash"
        return "images" if len(parts) >= 4 and parts[2] == "images" else "sessions"
    if parts[0] == ".agent" and len(parts) >= 2:
        if parts[1] == "backups":
            return "memory_backups"
        if len(parts) == 2 and parts[1].endswith(".md"):
            return "memory"
    return "other"


class UsageMeter:
    """The running figures: `get` measures (with `measure_user`) when there is none."""

    def __init__(self, client: redis.Redis | None, *, keep: int = RECONCILE_SECONDS) -> None:
        self.client = client
        self.keep = keep
        self._lock = threading.Lock()
        self._table: dict[str, tuple[float, dict[str, int]]] = {}

    def get(self, user_id: str, measure_user: Callable[[], Mapping[str, int]]) -> dict[str, int]:
        """The user's bytes by kind: the running figure, or a new measurement kept for
        RECONCILE_SECONDS."""
        if self.client is not None:
            try:
                raw = self.client.hgetall(registry.STORAGE_USAGE + user_id)
            except redis.RedisError as exc:  # measured every time until Redis answers
                log.warning("storage figures measured from disk, Redis failed: %s", exc)
                return {kind: int(measure_user().get(kind, 0)) for kind in KINDS}
            if raw:
                return {kind: int(raw.get(kind.encode(), 0)) for kind in KINDS}
        else:
            with self._lock:
                at, figures = self._table.get(user_id, (0.0, {}))
            if figures and time.monotonic() - at < self.keep:
                return dict(figures)
        return self.reconcile(user_id, measure_user)

    def reconcile(
        self, user_id: str, measure_user: Callable[[], Mapping[str, int]]
    ) -> dict[str, int]:
        """Measure again from disk and keep that as the running figure."""
        figures = {kind: int(measure_user().get(kind, 0)) for kind in KINDS}
        if self.client is not None:
            key = registry.STORAGE_USAGE + user_id
            try:
                with self.client.pipeline() as pipe:
                    pipe.delete(key)
                    pipe.hset(key, mapping=figures)  # type: ignore[arg-type]
                    pipe.expire(key, self.keep)
                    pipe.execute()
            except redis.RedisError as exc:
                log.warning("storage figures not kept, Redis failed: %s", exc)
        else:
            with self._lock:
                self._table[user_id] = (time.monotonic(), dict(figures))
        return figures

    def add(self, user_id: str, kind: str, size: int) -> None:
        """`size` bytes of `kind` were written (a figure not kept is measured later)."""
        if size <= 0:
            return
        if self.client is not None:
            try:
                self.client.eval(_ADD, 1, registry.STORAGE_USAGE + user_id, kind, size)
            except redis.RedisError as exc:  # the figure lags until measured again
                log.warning("storage figure of %s not updated, Redis failed: %s", user_id, exc)
            return
        with self._lock:
            at, figures = self._table.get(user_id, (0.0, {}))
            if figures:
                figures[kind] = figures.get(kind, 0) + size

    def forget(self, user_id: str) -> None:
        """Space was freed (or moved between kinds): measure again at the next check."""
        if self.client is not None:
            try:
                self.client.delete(registry.STORAGE_USAGE + user_id)
            except redis.RedisError:
                log.exception("could not forget the storage figure of %s", user_id)
            return
        with self._lock:
            self._table.pop(user_id, None)
