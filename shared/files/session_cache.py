"""Folded session states kept in memory, so a turn reads only what was appended since.

Session files only grow (appends under the file's lock), except that a whole-file rewrite
(a clear, an import) replaces the file, and an append repairs a torn last line or cuts back
a failed write. An entry remembers which file it folded (device and inode), how far (the
byte offset just after the last complete line), and the last bytes it folded. A read opens
the file and takes its size from the open descriptor, then:

- same file, at least as long, and its bytes just before the offset still the ones folded:
  only the bytes after the offset are read and folded, whichever process appended them;
- anything else (another inode after a rewrite, a shorter file, other bytes where the
  folded ones were): the file is read and folded from the start.

Only complete lines are folded; a torn or still-growing last line is read again next time.
Every process has its own cache and checks the file on every read, so no process ever needs
to tell another that a file changed. Memory is bounded: entries are evicted least recently
used first once the bytes folded by all entries pass the budget.

Threads: the map is guarded by one lock, held only to find, insert or evict an entry; each
entry has a lock of its own, held while it is brought up to date. Callers get a copy
(`SessionState.copy`) that they may change freely.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from shared.files.filestore import parse_lines, read_range
from shared.files.session_state import SessionState, fold

log = logging.getLogger(__name__)
TAIL_BYTES = 256  # folded bytes kept to recognise the file at the offset
Key = tuple[str, str]  # (user id, session id)


@dataclass
class _Entry:
    key: Key
    device: int
    inode: int
    offset: int  # bytes folded: just after the last complete line read
    lines: int  # complete lines folded (to number a bad line in the log)
    tail: bytes  # the last TAIL_BYTES folded bytes
    state: SessionState
    cost: int = 0  # what the cache counts for it (changed only under the cache's lock)
    broken: bool = False  # a record failed to apply: the state is half folded, never use it
    lock: threading.Lock = field(default_factory=threading.Lock)


class SessionCache:
    """Per-process cache of folded session states, bounded by `budget` folded bytes
    (0 keeps nothing: every read folds the whole file)."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._entries: OrderedDict[Key, _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self._bytes = 0

    @property
    def size(self) -> int:
        """Bytes folded by the entries held now."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def read(
        self, key: Key, fd: int, stat: os.stat_result, name: str, *, keep_messages: bool = True
    ) -> tuple[SessionState, os.stat_result]:
        """The state of the open file `fd` (the caller's copy) and the stat it goes with:
        `stat`, or a newer one when another thread already folded further than `stat`.
        ValueError/KeyError when the file does not fold (no header, a broken one)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
        if entry is not None and (entry.device, entry.inode) == (stat.st_dev, stat.st_ino):
            with entry.lock:
                if stat.st_size < entry.offset:
                    stat = os.fstat(fd)  # the file grew since we looked: look again
                if self._extend(entry, fd, stat.st_size, name):
                    return entry.state.copy(keep_messages=keep_messages), stat
        if not keep_messages and entry is None:
            return self._fold(fd, stat.st_size, name, keep_messages=False)[0], stat
        entry = self._load(key, fd, stat, name)
        state = entry.state.copy(keep_messages=keep_messages)  # before others can extend it
        self._insert(entry)
        return state, stat

    def forget(self, key: Key) -> None:
        with self._lock:
            entry = self._entries.pop(key, None)
            if entry is not None:
                self._bytes -= entry.cost

    def _extend(self, entry: _Entry, fd: int, size: int, name: str) -> bool:
        """Fold what was appended since the entry's offset; False if the file is not the
        one folded any more (shorter, or other bytes before the offset)."""
        if entry.broken or size < entry.offset:
            return False
        start = entry.offset - len(entry.tail)
        data = read_range(fd, start, size)
        if not data.startswith(entry.tail):
            return False
        new = data[len(entry.tail) :]
        records, used = parse_lines(new, name, entry.lines + 1)
        if not used:
            return True
        try:
            for record in records:
                entry.state.apply(record)
        except Exception:
            entry.broken = True
            self._drop(entry)  # half applied: never serve it, nor apply the rest twice
            raise
        entry.offset += used
        entry.lines += new.count(b"\n", 0, used)
        entry.tail = data[: len(entry.tail) + used][-TAIL_BYTES:]
        with self._lock:
            if self._entries.get(entry.key) is entry:
                self._bytes += entry.offset - entry.cost
                entry.cost = entry.offset
                self._evict()
        return True

    def _load(self, key: Key, fd: int, stat: os.stat_result, name: str) -> _Entry:
        state, used, data = self._fold(fd, stat.st_size, name, keep_messages=True)
        return _Entry(
            key,
            stat.st_dev,
            stat.st_ino,
            used,
            data.count(b"\n", 0, used),
            data[max(0, used - TAIL_BYTES) : used],
            state,
        )

    @staticmethod
    def _fold(
        fd: int, size: int, name: str, *, keep_messages: bool
    ) -> tuple[SessionState, int, bytes]:
        data = read_range(fd, 0, size)
        records, used = parse_lines(data, name)
        if used < len(data):
            log.info("ignoring torn last line of %s", name)
        return fold(records, keep_messages=keep_messages), used, data

    def _insert(self, entry: _Entry) -> None:
        with self._lock:
            old = self._entries.pop(entry.key, None)
            if old is not None:
                self._bytes -= old.cost
            if entry.offset > self.budget:
                return  # it alone would pass the budget: kept by nobody
            entry.cost = entry.offset
            self._entries[entry.key] = entry
            self._bytes += entry.cost
            self._evict()

    def _drop(self, entry: _Entry) -> None:
        with self._lock:
            if self._entries.get(entry.key) is entry:
                del self._entries[entry.key]
                self._bytes -= entry.cost

    def _evict(self) -> None:
        """Drop least recently used entries past the budget (the caller holds the lock)."""
        while self._bytes > self.budget and self._entries:
            _, entry = self._entries.popitem(last=False)
            self._bytes -= entry.cost
