"""The memory files: the deployment's identity and, per user, the user profile (USER.md)
and the agent memory about the work (MEMORY.md), named as in docs/glossary.md.

    DATA_DIR/.agent/IDENTITY.md                 the persona, first block of every prompt
    users/<user-id>/.agent/USER.md              how to help the user, <= USER_CHAR_LIMIT
    users/<user-id>/.agent/MEMORY.md            facts about the work, <= MEMORY_CHAR_LIMIT
    users/<user-id>/.agent/backups/             a timestamped copy before every write

The user profile and the agent memory are lists of independent entries, one per line
(`- entry`). Every automated write (the chat's tools, extraction, curation) goes through
`MemoryStore.update`: under a lock that holds across processes and hosts it reads the file,
applies the change, runs the safety filter (each new entry, then the whole file, so a secret
split over entries is refused), checks the cap (refusing, never truncating), backs up the
previous file and replaces it atomically. A version check (the hash of the
content the change was computed from) stops a writer whose lock expired from overwriting a
newer file. The operator's own edits (`save`) skip the filter: only the size limit applies to
them.

The memory panel goes through `read_for`, `edit`, `backups_for` and `restore`, which decide
what a caller may touch (everyone reads the identity, only admins change it; USER.md and
MEMORY.md are the caller's own) and push `memory.updated` to the user's clients.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypedDict, cast

import redis

from shared.accounts.people import Principal
from shared.core import registry
from shared.core.errors import Conflict, Forbidden, InvalidInput, NotFound, StorageError
from shared.core.events import MemoryUpdated
from shared.core.settings import Settings
from shared.files.filestore import atomic_write, backup_file
from shared.files.session_state import SessionState, meta_mapping
from shared.infra import event_bus
from shared.infra.locks import Locks
from shared.safety.checks import ensure_safe_entries

# The built-in identity: what IDENTITY.md holds when it is missing or blank.
DEFAULT_IDENTITY = """\
You are Eonyx, a capable and candid assistant with durable memory across conversations.

- Be accurate. Say plainly when you do not know something or cannot verify it; never invent
  facts, file contents, command output or sources.
- Be direct and concise. Lead with the answer, then the reasoning the user needs.
- Follow the project's instructions below when they are present; where instructions conflict,
  the more specific one (nearer to the working directory) wins, and the user's explicit
  request wins over both unless it is unsafe.
- Use what you remember about the user and earlier work to help, but treat it as possibly out
  of date and prefer what the user says now.
- When you use tools, do only what was asked; ask before any action that is destructive or
  hard to undo."""

log = logging.getLogger(__name__)
# A file's kind is its name in the API (`/memory/<kind>`) and in lock names, kept for the
# clients that use it; the code says which file it means with these constants.
Kind = Literal["identity", "user", "agent"]
IDENTITY: Kind = "identity"
USER_PROFILE: Kind = "user"
AGENT_MEMORY: Kind = "agent"
KINDS: tuple[Kind, ...] = (IDENTITY, USER_PROFILE, AGENT_MEMORY)
FILE_NAMES = {IDENTITY: "IDENTITY.md", USER_PROFILE: "USER.md", AGENT_MEMORY: "MEMORY.md"}
IDENTITY_LIMIT = 20_000
BACKUPS_KEPT = 50
SNAPSHOT = "snapshot"  # the session header's key for `MemoryStore.snapshot` taken at its start


class MemorySnapshot(TypedDict, total=False):
    """What a session's prompt shows of the memory, taken when it starts (None: off)."""

    user_profile: str | None
    agent_memory: str | None


def snapshot_of(state: SessionState) -> MemorySnapshot | None:
    """The memory a session took when it started (`{user_profile, agent_memory}`); None for
    a temporary chat."""
    return cast(MemorySnapshot | None, meta_mapping(state, SNAPSHOT))


class MemoryRefused(InvalidInput):
    """A write the rules refuse (cap, duplicate, ambiguous or missing entry, filter)."""

    code = "memory_refused"


class StaleVersion(Conflict):
    """The file changed since the writer read it."""

    code = "stale_version"


@dataclass(frozen=True)
class MemoryFile:
    kind: Kind
    content: str
    limit: int
    version: str

    @property
    def chars(self) -> int:
        return len(self.content)

    @property
    def entries(self) -> list[str]:
        return parse_entries(self.content)

    @property
    def name(self) -> str:
        return FILE_NAMES[self.kind]


def version_of(content: str) -> str:
    return hashlib.sha256(content.encode()).hexdigest()[:16]


def parse_entries(content: str) -> list[str]:
    """One entry per non-empty line; a leading `- ` or `* ` bullet is not part of it."""
    entries = []
    for line in content.splitlines():
        text = line.strip()
        if text[:2] in ("- ", "* "):
            text = text[2:].strip()
        if text:
            entries.append(text)
    return entries


def render_entries(entries: list[str]) -> str:
    return "".join(f"- {entry}\n" for entry in entries)


def usage_line(chars: int, limit: int) -> str:
    """`67% — 1,474/2,200 chars`: how much room the model has left."""
    return f"{chars * 100 // limit}% — {chars:,}/{limit:,} chars"


class MemoryStore:
    def __init__(
        self,
        settings: Settings,
        locks: Locks,
        *,
        lock_ttl: float = 30.0,
        live: Callable[[], Settings] | None = None,
    ) -> None:
        self.settings = settings
        self.locks = locks
        self.lock_ttl = lock_ttl  # a writer stalled longer loses the lock (version check)
        # The settings with an administrator's run-time switches (shared.accounts.live_settings)
        self.live = live or (lambda: settings)
        self._identity: tuple[tuple[int, int, int] | None, str] | None = None

    # -- where and how big ------------------------------------------------------------------

    def path(self, kind: Kind, user_id: str | None) -> Path:
        if kind == IDENTITY:
            return self.settings.data_dir / ".agent" / FILE_NAMES[kind]
        if user_id is None:
            raise ValueError("a user's memory needs the user's id")
        return self.settings.data_dir / "users" / user_id / ".agent" / FILE_NAMES[kind]

    def limit(self, kind: Kind) -> int:
        return {
            IDENTITY: IDENTITY_LIMIT,
            USER_PROFILE: self.settings.user_char_limit,
            AGENT_MEMORY: self.settings.memory_char_limit,
        }[kind]

    def backups_dir(self, kind: Kind, user_id: str | None) -> Path:
        return self.path(kind, user_id).parent / "backups"

    def read(self, kind: Kind, user_id: str | None = None) -> MemoryFile:
        try:
            content = self.path(kind, user_id).read_text(encoding="utf-8")
        except FileNotFoundError:
            content = DEFAULT_IDENTITY if kind == IDENTITY else ""
        return MemoryFile(kind, content, self.limit(kind), version_of(content))

    # -- writes ------------------------------------------------------------------------------

    def update(
        self,
        kind: Kind,
        user_id: str,
        change: Callable[[list[str]], list[str]],
    ) -> tuple[MemoryFile, MemoryFile]:
        """Apply `change` to the entries under the lock; returns (before, after).

        `change` raises MemoryRefused to refuse. The new content is filtered and capped
        before anything is written; an unchanged result writes nothing.
        """
        with self.locks.hold(f"{registry.MEMORY_LOCK}{user_id}:{kind}", wait=30, ttl=self.lock_ttl):
            before = self.read(kind, user_id)
            entries = change(list(before.entries))
            content = render_entries(entries)
            if content == before.content or entries == before.entries:
                return before, before
            ensure_safe_entries(entries, before.entries)  # each new entry, then the whole file
            self._check_limit(kind, content)
            after = self._replace(kind, user_id, content, base_version=before.version)
        return before, after

    def save(
        self, kind: Kind, user_id: str | None, content: str, *, base_version: str | None = None
    ) -> MemoryFile:
        """The operator's edit: saved exactly as written; only the size limit applies. With
        `base_version`, a file changed since that version is refused with StaleVersion."""
        self._check_limit(kind, content)
        with self.locks.hold(f"{registry.MEMORY_LOCK}{user_id}:{kind}", wait=30, ttl=self.lock_ttl):
            if base_version is None:
                base_version = self.read(kind, user_id).version
            return self._replace(kind, user_id, content, base_version=base_version)

    def write_if_unchanged(
        self, kind: Kind, user_id: str, content: str, base_version: str
    ) -> MemoryFile:
        """Replace the file only if it is still at `base_version` (a writer's stale view of
        a file someone else changed meanwhile is refused with StaleVersion)."""
        with self.locks.hold(f"{registry.MEMORY_LOCK}{user_id}:{kind}", wait=30, ttl=self.lock_ttl):
            return self._replace(kind, user_id, content, base_version=base_version)

    def _check_limit(self, kind: Kind, content: str) -> None:
        limit = self.limit(kind)
        if len(content) > limit:
            raise MemoryRefused(
                f"{FILE_NAMES[kind]} would be {len(content):,} characters, over its limit of "
                f"{limit:,}; nothing was saved",
                code="memory_full",
            )

    def _replace(
        self, kind: Kind, user_id: str | None, content: str, *, base_version: str
    ) -> MemoryFile:
        path = self.path(kind, user_id)
        current = self.read(kind, user_id)
        if current.version != base_version:
            raise StaleVersion(f"{FILE_NAMES[kind]} changed meanwhile; read it again")
        path.parent.mkdir(parents=True, exist_ok=True)
        backup_file(path, self.backups_dir(kind, user_id))
        atomic_write(path, content.encode("utf-8"))
        self._prune_backups(kind, user_id)
        return MemoryFile(kind, content, self.limit(kind), version_of(content))

    # -- backups -----------------------------------------------------------------------------

    def backups(self, kind: Kind, user_id: str | None) -> list[str]:
        directory = self.backups_dir(kind, user_id)
        prefix = FILE_NAMES[kind] + "."
        try:
            names = [p.name for p in directory.iterdir() if p.name.startswith(prefix)]
        except FileNotFoundError:
            return []
        return sorted(names, reverse=True)

    def restore(self, kind: Kind, user_id: str | None, name: str) -> MemoryFile:
        """Put a backup back (the current file is itself backed up first)."""
        if name not in self.backups(kind, user_id):
            raise NotFound(f"no backup {name!r}")
        content = (self.backups_dir(kind, user_id) / name).read_text(encoding="utf-8")
        return self.save(kind, user_id, content)

    def _prune_backups(self, kind: Kind, user_id: str | None) -> None:
        for name in self.backups(kind, user_id)[BACKUPS_KEPT:]:
            (self.backups_dir(kind, user_id) / name).unlink(missing_ok=True)

    # -- what a session sees ------------------------------------------------------------------

    def snapshot(self, user_id: str) -> dict[str, str | None]:
        """The user profile and agent memory as a new session's prompt shows them. A session keeps
        this snapshot for its whole life, so its prompt is stable across processes and
        reloads; what is learned meanwhile applies from the next session."""
        switches = self.live()
        return {
            "user_profile": self._for_prompt(USER_PROFILE, user_id)
            if switches.user_profile_enabled
            else None,
            "agent_memory": self._for_prompt(AGENT_MEMORY, user_id)
            if switches.agent_memory_enabled
            else None,
        }

    def _for_prompt(self, kind: Kind, user_id: str) -> str | None:
        file = self.read(kind, user_id)
        if not file.entries:
            return None  # an empty file adds nothing to the prompt
        return f"{file.content.rstrip()}\n\n({file.name}: {usage_line(file.chars, file.limit)})"

    # -- identity ----------------------------------------------------------------------------

    def identity(self) -> str:
        """The identity as the file holds it now: kept in the process, and read again when
        the file changed (an edit replaces it: a new inode and mtime), so an administrator's
        edit applies to the next prompt of every process without a restart."""
        stamp = self._identity_stamp()
        kept = self._identity
        if kept is not None and kept[0] == stamp:
            return kept[1]
        text = self.ensure_identity()
        if stamp is None:  # written just now, or unreadable
            stamp = self._identity_stamp()
        self._identity = (stamp, text)
        return text

    def _identity_stamp(self) -> tuple[int, int, int] | None:
        try:
            found = self.path(IDENTITY, None).stat()
        except OSError:
            return None
        return (found.st_mtime_ns, found.st_ino, found.st_size)

    def ensure_identity(self) -> str:
        """The identity for this process: the file, regenerated from the default when it was
        deleted; on a read-only store the built-in default, and the service still boots."""
        path = self.path(IDENTITY, None)
        try:
            return path.read_text(encoding="utf-8")
        except FileNotFoundError:
            pass
        except OSError as exc:
            log.warning("cannot read %s (%s); using the built-in identity", path, exc.strerror)
            return DEFAULT_IDENTITY
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, DEFAULT_IDENTITY.encode("utf-8"))
        except (OSError, StorageError) as exc:
            log.warning("cannot write %s (%s); using the built-in identity", path, exc)
        return DEFAULT_IDENTITY


# -- the memory panel: who may touch which file ----------------------------------------------


def _file_for(principal: Principal, kind: str, *, change: bool) -> tuple[Kind, str | None]:
    """The file `kind` means for `principal`: the deployment's identity (anyone reads it, only
    admins change it or see its backups), or the caller's own USER.md or MEMORY.md."""
    if kind == IDENTITY:
        if change and not principal.is_admin:
            raise Forbidden("the identity is edited by administrators")
        return IDENTITY, None
    if kind == USER_PROFILE:
        return USER_PROFILE, principal.user_id
    if kind == AGENT_MEMORY:
        return AGENT_MEMORY, principal.user_id
    raise NotFound(f"no memory {kind!r}; choose identity, user or agent")


def read_for(store: MemoryStore, principal: Principal, kind: str) -> MemoryFile:
    return store.read(*_file_for(principal, kind, change=False))


def edit(
    store: MemoryStore,
    client: redis.Redis | None,
    principal: Principal,
    kind: str,
    content: str,
    version: str | None = None,
) -> MemoryFile:
    """The operator's edit, saved as written (see `MemoryStore.save`). With `version` (what
    the editor was showing), a file changed meanwhile is refused with StaleVersion and left
    as it is."""
    file_kind, user_id = _file_for(principal, kind, change=True)
    saved = store.save(file_kind, user_id, content, base_version=version)
    _announce(client, user_id, saved, "edited")
    return saved


def backups_for(store: MemoryStore, principal: Principal, kind: str) -> list[str]:
    return store.backups(*_file_for(principal, kind, change=True))


def restore(
    store: MemoryStore, client: redis.Redis | None, principal: Principal, kind: str, name: str
) -> MemoryFile:
    """Put the backup `name` back (the current file is backed up first)."""
    file_kind, user_id = _file_for(principal, kind, change=True)
    restored = store.restore(file_kind, user_id, name)
    _announce(client, user_id, restored, "restored")
    return restored


def _announce(
    client: redis.Redis | None, user_id: str | None, file: MemoryFile, action: str
) -> None:
    if user_id is not None:  # the identity has no user to tell (it applies after a restart)
        event_bus.publish(client, user_id, MemoryUpdated(file.name, action))
