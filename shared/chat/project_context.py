"""Project context: finding AGENTS.md files, the project root and its `eonyx.json`.

This module owns the one discovery routine used on both sides of the HTTP contract:

- the server walks a `cwd` under PROJECTS_DIR (`resolve_cwd` + `discover_agents_files` with
  `boundary=PROJECTS_DIR`, or `load_server_context` for both plus `eonyx.json`);
- a client (the CLI) walks its own working directory with `discover_agents_files` and sends
  the result as `project_context`, which the server checks with `validate_project_context`.

Walk rules (spec, "AGENTS.md: project instructions"):

- Start at the working directory and go up one directory at a time, collecting `AGENTS.md`
  at every level.
- Stop at the first directory that holds `eonyx.json` (the project root) or `.git` (a
  directory or a file, as in worktrees and submodules); that directory is included. Without
  either marker the walk ends at the filesystem root. With a `boundary` (PROJECTS_DIR) the
  walk never goes above it: the boundary is the last directory visited.
- Files come back outermost first, nearest last; each `ContextFile.path` is POSIX-style and
  relative to the directory where the walk stopped ("AGENTS.md",
  "services/billing/AGENTS.md").

Limits (the same numbers bound discovery and a client's `project_context`, so whatever the
CLI collects with this code is always accepted by the server):

- One file: at most `MAX_AGENTS_FILE_BYTES` (64 KiB) of UTF-8. A larger AGENTS.md found on
  disk is *truncated*, not refused: the kept text plus `TRUNCATION_MARKER` fit in 64 KiB, so
  the model still sees the head of the file and learns that the rest is missing. A client
  item over the limit is refused (`InvalidInput`); the client is expected to truncate.
- All files together: at most `MAX_CONTEXT_FILES` (32) files and `MAX_CONTEXT_TOTAL_BYTES`
  (256 KiB). Discovery spends this budget nearest-first, because the nearest file is the
  most specific to the work at hand: the file that overflows is truncated to what is left,
  files farther out are dropped, and a warning is logged.

Safety: with a `boundary`, an AGENTS.md (or eonyx.json) that is a symlink resolving outside
the boundary is skipped and never opened. Files are opened by their resolved path with
O_NOFOLLOW and O_NONBLOCK and must be regular files, so a FIFO or device named AGENTS.md
cannot hang or feed a turn. Unreadable files are skipped with a warning; discovery never
fails because of one bad AGENTS.md. Without a boundary (a client's own machine) symlinks are
followed freely: the user may keep a shared AGENTS.md anywhere.
"""

from __future__ import annotations

import codecs
import logging
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Literal

from shared.core.encoding import InvalidJSON, decode_json
from shared.core.errors import InvalidInput
from shared.core.text import check, strip_forbidden

if TYPE_CHECKING:  # the console clients walk projects with this module, without the files layer
    from shared.files.session_state import SessionState

log = logging.getLogger(__name__)

AGENTS_FILENAME = "AGENTS.md"
PROJECT_CONFIG_FILENAME = "eonyx.json"
GIT_MARKER = ".git"

KIB = 1024
MAX_AGENTS_FILE_BYTES = 64 * KIB
MAX_CONTEXT_FILES = 32
MAX_CONTEXT_TOTAL_BYTES = 256 * KIB
MAX_CONTEXT_PATH_CHARS = 1024
MAX_WINDOW = 10_000_000  # tokens: no model has more
MAX_PROJECT_CONFIG_BYTES = 256 * KIB
MAX_CWD_CHARS = 4096
TRUNCATION_MARKER = "\n\n[... truncated by Eonyx: the rest of this AGENTS.md was not loaded]"
_MARKER_BYTES = len(TRUNCATION_MARKER.encode())
_DRIVE_RE = re.compile(r"^[A-Za-z]:")
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
)

StopReason = Literal["project", "git", "boundary", "filesystem_root"]
# The session's meta key for the project context its last turn used (a ProjectInput record of
# shared.chat.context): a turn records it when it changes, and the next ones read it back.
PROJECT_CONTEXT = "project_context"


def project_context_of(state: SessionState) -> Mapping[str, object] | None:
    """The project context the session's last turn recorded (None: none recorded yet), as
    the file holds it: `ProjectInput.from_record` reads it warily."""
    from shared.files.session_state import meta_mapping

    return meta_mapping(state, PROJECT_CONTEXT)


@dataclass(frozen=True)
class ContextFile:
    """One AGENTS.md: `path` relative to where the walk stopped (POSIX style), its text."""

    path: str
    content: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "content": self.content}


@dataclass(frozen=True)
class ProjectWalk:
    """The directories one walk visited and why it stopped.

    `directories` runs nearest first (`directories[0]` is the start, `directories[-1]` is
    `top`). `top` is where the walk stopped; context paths are relative to it.
    """

    start: Path
    top: Path
    stop: StopReason
    directories: tuple[Path, ...]

    @property
    def project_root(self) -> Path | None:
        """The directory holding `eonyx.json`, when the walk stopped at one."""
        return self.top if self.stop == "project" else None


@dataclass(frozen=True)
class ProjectContext:
    """What the server gathers for a `cwd`: the directory, the walk, files and config."""

    directory: Path
    walk: ProjectWalk
    files: list[ContextFile]
    config: Mapping[str, object]  # eonyx.json as its author wrote it

    @property
    def system_prompt(self) -> str | None:
        """`eonyx.json`'s `system_prompt`, when the project sets one."""
        return project_system_prompt(self.config)


def _within(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def _utf8_size(text: str) -> int:
    return len(text.encode("utf-8", errors="surrogatepass"))


def _cut_utf8(data: bytes, limit: int) -> str:
    """`data` decoded, cut to at most `limit` bytes including `TRUNCATION_MARKER`."""
    keep = max(0, limit - _MARKER_BYTES)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    # final=False holds back a multi-byte character split by the cut instead of mangling it.
    return decoder.decode(data[:keep], final=False) + TRUNCATION_MARKER


def _read_capped(path: Path, *, limit: int, boundary: Path | None) -> bytes | None:
    """Up to `limit + 1` bytes of a regular file, or None (missing, unsafe, unreadable).

    The path is resolved first; with a boundary the real file must lie inside it. The real
    path is then opened without following a last-moment symlink and without blocking.
    """
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError):  # missing, a dangling link or a link loop
        return None
    if boundary is not None and not _within(real, boundary):
        log.warning("not reading %s: it points outside %s", path, boundary)
        return None
    try:
        fd = os.open(real, _OPEN_FLAGS)
    except OSError as exc:
        log.warning("cannot open %s: %s", path, exc.strerror or exc)
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            log.warning("not reading %s: not a regular file", path)
            return None
        chunks: list[bytes] = []
        remaining = limit + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 64 * KIB))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)
    except OSError as exc:
        log.warning("cannot read %s: %s", path, exc.strerror or exc)
        return None
    finally:
        os.close(fd)


def _decode(data: bytes, limit: int) -> tuple[str, bool]:
    """(text, truncated): UTF-8 without a BOM, cut with the marker when over `limit`."""
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    if len(data) > limit:
        return _cut_utf8(data, limit), True
    return data.decode("utf-8", errors="replace"), False


def _resolve_start(start: Path, boundary: Path | None) -> tuple[Path, Path | None]:
    real_boundary = None
    if boundary is not None:
        try:
            real_boundary = boundary.resolve(strict=True)
        except (OSError, RuntimeError):
            raise InvalidInput(
                "the projects directory does not exist", code="invalid_cwd"
            ) from None
    try:
        real_start = start.resolve(strict=True)
    except (OSError, RuntimeError):
        raise InvalidInput(f"directory {str(start)!r} does not exist", code="invalid_cwd") from None
    if not real_start.is_dir():
        raise InvalidInput(f"{str(start)!r} is not a directory", code="invalid_cwd")
    if real_boundary is not None and not _within(real_start, real_boundary):
        raise InvalidInput("the directory is outside the projects directory", code="invalid_cwd")
    return real_start, real_boundary


def walk_up(start: Path, *, boundary: Path | None = None) -> ProjectWalk:
    """Visit `start` and its parents by the walk rules (see the module docstring).

    Raises `InvalidInput` when `start` is missing, not a directory, or outside `boundary`.
    """
    real_start, real_boundary = _resolve_start(start, boundary)
    visited: list[Path] = []
    directory = real_start
    while True:
        visited.append(directory)
        reason: StopReason | None = None
        if os.path.lexists(directory / PROJECT_CONFIG_FILENAME):
            reason = "project"
        elif os.path.lexists(directory / GIT_MARKER):
            reason = "git"
        elif real_boundary is not None and directory == real_boundary:
            reason = "boundary"
        elif directory.parent == directory:
            reason = "filesystem_root"
        if reason is not None:
            return ProjectWalk(real_start, directory, reason, tuple(visited))
        directory = directory.parent


def find_project_root(start: Path, *, boundary: Path | None = None) -> Path | None:
    """The directory holding `eonyx.json` that a walk from `start` stops at, if any.

    None when the walk stopped at `.git`, the boundary or the filesystem root first.
    """
    return walk_up(start, boundary=boundary).project_root


def collect_agents_files(walk: ProjectWalk, *, boundary: Path | None = None) -> list[ContextFile]:
    """The AGENTS.md files along `walk`, outermost first, within the size budget."""
    real_boundary = boundary.resolve() if boundary is not None else None
    found: list[ContextFile] = []  # nearest first while collecting
    budget = MAX_CONTEXT_TOTAL_BYTES
    for directory in walk.directories:
        candidate = directory / AGENTS_FILENAME
        if not os.path.lexists(candidate):
            continue
        if len(found) >= MAX_CONTEXT_FILES or budget <= _MARKER_BYTES:
            log.warning("context budget spent: %s and files above it are left out", candidate)
            break
        limit = min(MAX_AGENTS_FILE_BYTES, budget)
        data = _read_capped(candidate, limit=limit, boundary=real_boundary)
        if data is None:
            continue
        content, truncated = _decode(data, limit)
        # a stray control character in a file on disk is dropped, as the API would refuse it
        content = strip_forbidden(content)
        if truncated:
            log.warning("%s is larger than %d bytes; it was truncated", candidate, limit)
        relative = candidate.relative_to(walk.top).as_posix()
        found.append(ContextFile(relative, content))
        budget -= _utf8_size(content)
    found.reverse()
    return found


def discover_agents_files(start: Path, *, boundary: Path | None = None) -> list[ContextFile]:
    """Every AGENTS.md from the walk's top down to `start`: outermost first, nearest last.

    `boundary` is PROJECTS_DIR on the server (never walk above it, never read a file that
    resolves outside it) and None for a client walking its own directory.
    """
    return collect_agents_files(walk_up(start, boundary=boundary), boundary=boundary)


def resolve_cwd(projects_dir: Path | None, cwd: str) -> Path:
    """The real directory a request's `cwd` names under PROJECTS_DIR.

    A relative `cwd` is relative to PROJECTS_DIR; an absolute one must lie inside it. Raises
    `InvalidInput` when PROJECTS_DIR is not configured (or missing), when `cwd` is outside it
    (lexically or through a symlink), missing, or not a directory. Whether a path outside
    exists is never revealed: containment is checked before existence.
    """
    if projects_dir is None:
        raise InvalidInput(
            "cwd is not available: PROJECTS_DIR is not configured on this server",
            code="cwd_unavailable",
        )
    if not isinstance(cwd, str) or not cwd.strip():
        raise InvalidInput("cwd must be a non-empty string", code="invalid_cwd")
    if "\0" in cwd or len(cwd) > MAX_CWD_CHARS:
        raise InvalidInput("cwd is not a valid path", code="invalid_cwd")
    try:
        root = projects_dir.resolve(strict=True)
    except (OSError, RuntimeError):
        raise InvalidInput(
            "cwd is not available: the projects directory does not exist",
            code="cwd_unavailable",
        ) from None
    if not root.is_dir():
        raise InvalidInput(
            "cwd is not available: the projects directory is not a directory",
            code="cwd_unavailable",
        )
    configured = Path(os.path.abspath(projects_dir))
    candidate = Path(os.path.normpath(configured / cwd))  # an absolute cwd replaces the root
    if not (_within(candidate, configured) or _within(candidate, root)):
        raise InvalidInput(f"cwd {cwd!r} is outside the projects directory", code="invalid_cwd")
    try:
        real = candidate.resolve()
    except (OSError, RuntimeError):
        raise InvalidInput(f"cwd {cwd!r} cannot be resolved", code="invalid_cwd") from None
    if not _within(real, root):
        raise InvalidInput(
            f"cwd {cwd!r} leads outside the projects directory through a symlink",
            code="invalid_cwd",
        )
    if not real.exists():
        raise InvalidInput(f"cwd {cwd!r} does not exist", code="invalid_cwd")
    if not real.is_dir():
        raise InvalidInput(f"cwd {cwd!r} is not a directory", code="invalid_cwd")
    return real


def read_project_config(root: Path | None, *, boundary: Path | None = None) -> dict[str, object]:
    """The parsed `eonyx.json` of a project root; `{}` when there is none (or root is None).

    Raises `InvalidInput` (code `invalid_project_config`) for a file that is too large, not
    valid JSON, not an object, or has a `system_prompt` that is not a string. With a boundary
    a symlinked eonyx.json resolving outside it is treated as absent.
    """
    if root is None:
        return {}
    path = root / PROJECT_CONFIG_FILENAME
    if not os.path.lexists(path):
        return {}
    real_boundary = boundary.resolve() if boundary is not None else None
    data = _read_capped(path, limit=MAX_PROJECT_CONFIG_BYTES, boundary=real_boundary)
    if data is None:
        return {}
    if len(data) > MAX_PROJECT_CONFIG_BYTES:
        raise InvalidInput(
            f"{PROJECT_CONFIG_FILENAME} is larger than {MAX_PROJECT_CONFIG_BYTES // KIB} KiB",
            code="invalid_project_config",
        )
    try:
        config = decode_json(data.decode("utf-8-sig"), what=PROJECT_CONFIG_FILENAME)
    except UnicodeDecodeError:
        raise InvalidInput(
            f"{PROJECT_CONFIG_FILENAME} is not UTF-8 text", code="invalid_project_config"
        ) from None
    except InvalidJSON as exc:
        raise InvalidInput(exc.message, code="invalid_project_config") from None
    if not isinstance(config, dict):
        raise InvalidInput(
            f"{PROJECT_CONFIG_FILENAME} must hold a JSON object", code="invalid_project_config"
        )
    project_system_prompt(config)  # refuse a malformed field early, with a clear message
    project_context_window(config)
    return config


def project_context_window(config: Mapping[str, object]) -> int | None:
    """`context_window` from a parsed eonyx.json: the project's own bound on the model's
    window, in tokens (the smaller of it and the offering's applies); None when absent."""
    value = config.get("context_window")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_WINDOW:
        raise InvalidInput(
            f"{PROJECT_CONFIG_FILENAME}: context_window must be a whole number of tokens "
            f"from 1 to {MAX_WINDOW:,}",
            code="invalid_project_config",
        )
    return value


def project_system_prompt(config: Mapping[str, object]) -> str | None:
    """`system_prompt` from a parsed eonyx.json; None when absent, null or blank."""
    value = config.get("system_prompt")
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(
            f"{PROJECT_CONFIG_FILENAME}: system_prompt must be a string",
            code="invalid_project_config",
        )
    return value if value.strip() else None


def choose_override(request_prompt: str | None, project_config_prompt: str | None) -> str | None:
    """The override in force: the request's prompt, else eonyx.json's, else None (generate).

    Blank strings count as not given.
    """
    if _given_text(request_prompt):
        return request_prompt
    if _given_text(project_config_prompt):
        return project_config_prompt
    return None


def _given_text(text: str | None) -> bool:
    return text is not None and text.strip() != ""


def load_server_context(projects_dir: Path | None, cwd: str) -> ProjectContext:
    """Everything the server needs for a request's `cwd`: resolve it, walk, read files and
    the project's eonyx.json, all confined to PROJECTS_DIR."""
    directory = resolve_cwd(projects_dir, cwd)
    assert projects_dir is not None  # resolve_cwd refused None
    walk = walk_up(directory, boundary=projects_dir)
    files = collect_agents_files(walk, boundary=projects_dir)
    config = read_project_config(walk.project_root, boundary=projects_dir)
    return ProjectContext(directory=directory, walk=walk, files=files, config=config)


def _check_context_path(path: object, index: int) -> str:
    where = f"project_context[{index}].path"
    if not isinstance(path, str) or not path:
        raise InvalidInput(f"{where} must be a non-empty string", code="invalid_project_context")
    if len(path) > MAX_CONTEXT_PATH_CHARS:
        raise InvalidInput(f"{where} is too long", code="invalid_project_context")
    if "\\" in path or any(ord(c) < 32 or c == "\x7f" for c in path):
        raise InvalidInput(
            f"{where} must be a POSIX path ('/' separators, no control characters)",
            code="invalid_project_context",
        )
    if path.startswith("/") or _DRIVE_RE.match(path):
        raise InvalidInput(f"{where} must be a relative path", code="invalid_project_context")
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise InvalidInput(
            f"{where} must be a normalized relative path (no '..', '.' or empty parts)",
            code="invalid_project_context",
        )
    if parts[-1] != AGENTS_FILENAME:
        raise InvalidInput(
            f"{where} must name an {AGENTS_FILENAME} file", code="invalid_project_context"
        )
    return PurePosixPath(path).as_posix()


def validate_project_context(items: object) -> list[ContextFile]:
    """A client's `project_context` (`[{path, content}, ...]`, outermost first) as files.

    Each path must be relative, POSIX, normalized (no '..') and end in AGENTS.md; paths are
    unique; each content is a string of at most 64 KiB UTF-8; at most 32 items and 256 KiB in
    total. Anything else raises `InvalidInput` naming the offending item. None means [].
    The client's order is kept (the contract says outermost first).
    """
    if items is None:
        return []
    if not isinstance(items, list):
        raise InvalidInput("project_context must be a list", code="invalid_project_context")
    if len(items) > MAX_CONTEXT_FILES:
        raise InvalidInput(
            f"project_context has {len(items)} files; at most {MAX_CONTEXT_FILES} are accepted",
            code="invalid_project_context",
        )
    files: list[ContextFile] = []
    seen: set[str] = set()
    total = 0
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise InvalidInput(
                f"project_context[{index}] must be an object with path and content",
                code="invalid_project_context",
            )
        path = _check_context_path(item.get("path"), index)
        if path in seen:
            raise InvalidInput(
                f"project_context[{index}].path repeats {path!r}", code="invalid_project_context"
            )
        seen.add(path)
        content = item.get("content")
        if not isinstance(content, str):
            raise InvalidInput(
                f"project_context[{index}].content must be a string",
                code="invalid_project_context",
            )
        check(content, f"project_context[{index}].content")
        size = _utf8_size(content)
        if size > MAX_AGENTS_FILE_BYTES:
            raise InvalidInput(
                f"project_context[{index}] ({path}) is larger than "
                f"{MAX_AGENTS_FILE_BYTES // KIB} KiB",
                code="invalid_project_context",
            )
        total += size
        if total > MAX_CONTEXT_TOTAL_BYTES:
            raise InvalidInput(
                f"project_context is larger than {MAX_CONTEXT_TOTAL_BYTES // KIB} KiB in total",
                code="invalid_project_context",
            )
        files.append(ContextFile(path, content))
    return files
