"""How server-side commands find the running server's settings.

`eonyx serve` writes its effective settings to DATA_DIR/run/settings.json when it starts:
every variable of shared/core/settings.py with the value in force, minus the secrets (a
setting that is not shown in the settings' repr, such as EONYX_LLM_API_KEY, is left out; a
password in a URL is masked), with the server's pid, URL and the process groups of its
children. It also writes a pointer to that file, one per data directory, in
`~/.local/share/eonyx/run/servers/`, where `~` is the home directory of the user in the
password database, not $HOME: a shell with another HOME, XDG_DATA_HOME or DATA_DIR finds it
all the same. `eonyx serve` removes both when it stops.

A server-side command (`eonyx users`, `models`, `index`, `db`) uses the server running on its
own DATA_DIR when DATA_DIR is set. Without DATA_DIR it uses the one server running (found
through the pointers, or on the default data directory); when several run it refuses to
guess, lists them and asks for DATA_DIR. A pointer whose server is dead is ignored and
removed. Each variable the command's environment leaves unset takes the server's value. The
server's DATABASE_URL or REDIS_URL with a masked password cannot be used: the command asks
for the variable instead of silently using another database.
"""

from __future__ import annotations

import hashlib
import json
import os
import pwd
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from shared.core.clock import isoformat, utcnow
from shared.core.settings import VARIABLES, Settings, default_data_dir

RUN_FILE = "settings.json"
MASK = "***"
NEEDED = {"DATABASE_URL", "REDIS_URL"}  # without the server's own, a command acts elsewhere
SECRET_QUERY_KEYS = {"key", "api_key", "apikey", "token", "access_token", "password", "secret"}


@dataclass(frozen=True)
class RunningServer:
    """A running `eonyx serve` as its run file describes it."""

    path: Path
    pid: int
    url: str
    environment: dict[str, str]
    masked: frozenset[str]
    groups: dict[str, int]  # the children's process groups: {"HTTP server": pgid, ...}

    @property
    def data_dir(self) -> str:
        return self.environment.get("DATA_DIR", str(self.path.parent.parent))


def run_file(data_dir: Path) -> Path:
    return data_dir / "run" / RUN_FILE


def pointer_dir() -> Path:
    """In the user's real home (password database), whatever $HOME says."""
    try:
        home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    except KeyError:  # a uid without an entry (some containers): fall back to $HOME
        home = Path.home()
    return home / ".local" / "share" / "eonyx" / "run" / "servers"


def pointer_file(data_dir: Path) -> Path:
    """The pointer of the server on `data_dir`: one per data directory, so that a second
    server on another one does not redirect the first one's commands."""
    key = str(data_dir.expanduser().absolute())
    return pointer_dir() / f"{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"


# -- writing (eonyx serve) ---------------------------------------------------------------------


def mask_url(url: str) -> str:
    """`url` with a password and secret-looking query values replaced by ***; any other URL
    exactly as it was (`sqlite:////abs/path` must keep its four slashes)."""
    parts = urlsplit(url)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    secret_query = any(k.lower() in SECRET_QUERY_KEYS for k, _ in pairs)
    if not parts.password and not secret_query:
        return url
    netloc = parts.netloc
    if parts.password:
        netloc = f"{parts.username or ''}:{MASK}@{netloc.rsplit('@', 1)[1]}"
    query = urlencode(
        [(k, MASK if k.lower() in SECRET_QUERY_KEYS else v) for k, v in pairs], safe="*"
    )
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def settings_environment(settings: Settings) -> tuple[dict[str, str], set[str]]:
    """The variables that give `settings` again, without secrets; and which ones are masked."""
    secret_fields = {f.name for f in fields(Settings) if not f.repr}
    environment = {"DATA_DIR": str(settings.data_dir), "DATABASE_URL": settings.database_url}
    if settings.redis_url:
        environment["REDIS_URL"] = settings.redis_url
    for name, (field_name, _parse) in VARIABLES.items():
        value = getattr(settings, field_name)
        if value is not None and field_name not in secret_fields:
            environment[name] = _text(value)
    masked = set()
    for name, value in environment.items():
        if "://" in value and mask_url(value) != value:
            environment[name] = mask_url(value)
            masked.add(name)
    return environment, masked


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(data, out, indent=2)
        out.write("\n")
    partial.replace(path)


def write(settings: Settings, url: str, groups: Mapping[str, int] | None = None) -> list[Path]:
    """Record the running server's settings and point its data directory's pointer at them;
    returns the files written (a pointer that cannot be written is skipped: the run file is
    enough for commands on the same DATA_DIR). `groups` names the children's process groups,
    so that a later start can say what a killed server left running."""
    environment, masked = settings_environment(settings)
    path = run_file(settings.data_dir)
    info = {"pid": os.getpid(), "url": url, "started_at": isoformat(utcnow())}
    extra = {"groups": dict(groups or {}), "masked": sorted(masked)}
    _write_json(path, info | extra | {"environment": environment})
    written = [path]
    pointer = pointer_file(settings.data_dir)
    try:
        _write_json(pointer, info | {"run_file": str(path), "data_dir": str(settings.data_dir)})
        written.append(pointer)
    except OSError:
        pass
    return written


def remove(paths: list[Path]) -> None:
    """Remove what `write` wrote, unless another server has taken the file over since."""
    for path in paths:
        try:
            if json.loads(path.read_text()).get("pid") == os.getpid():
                path.unlink()
        except (OSError, ValueError):
            pass


# -- reading (server-side commands) ------------------------------------------------------------


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_any(path: Path) -> RunningServer | None:
    """The server a run file describes, alive or dead; None for no (or an unreadable) file."""
    try:
        data = json.loads(path.read_text())
        return RunningServer(
            path=path,
            pid=int(data["pid"]),
            url=str(data.get("url", "")),
            environment={str(k): str(v) for k, v in data["environment"].items()},
            masked=frozenset(data.get("masked", [])),
            groups={str(k): int(v) for k, v in (data.get("groups") or {}).items()},
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _read(path: Path) -> RunningServer | None:
    server = read_any(path)
    return server if server is not None and alive(server.pid) else None


def _pointed(pointer: Path) -> RunningServer | None:
    """The live server a pointer names; a pointer to none (dead, or its run file gone) is
    removed, so that it never counts again."""
    try:
        target = json.loads(pointer.read_text())["run_file"]
        server = _read(Path(target))
    except (OSError, ValueError, KeyError, TypeError):
        server = None
    if server is None:
        pointer.unlink(missing_ok=True)
    return server


def running_servers(environ: Mapping[str, str]) -> list[RunningServer]:
    """Every server running for this user: those the pointers name, and the one on the
    default data directory (which may have no pointer: one that could not be written)."""
    found: dict[Path, RunningServer] = {}
    own = _read(run_file(default_data_dir(environ)))
    if own is not None:
        found[own.path.absolute()] = own
    try:
        pointers = sorted(pointer_dir().glob("*.json"))
    except OSError:
        pointers = []
    for pointer in pointers:
        server = _pointed(pointer)
        if server is not None:
            found.setdefault(server.path.absolute(), server)
    return list(found.values())


class SeveralServers(Exception):
    """A command without DATA_DIR while more than one server runs: which one is meant?"""

    def __init__(self, servers: list[RunningServer]) -> None:
        listed = "\n".join(
            f"  DATA_DIR={server.data_dir}  {server.url}  (pid {server.pid})" for server in servers
        )
        super().__init__(
            f"{len(servers)} Eonyx servers are running; set DATA_DIR to the one to act on:\n"
            f"{listed}"
        )
        self.servers = servers


def find_server(environ: Mapping[str, str]) -> RunningServer | None:
    """The running server whose settings a command with `environ` should use, if any
    (SeveralServers when DATA_DIR is unset and more than one runs)."""
    data_dir = (environ.get("DATA_DIR") or "").strip()
    if data_dir:
        return _read(run_file(Path(data_dir).expanduser()))
    servers = running_servers(environ)
    if len(servers) > 1:
        raise SeveralServers(servers)
    return servers[0] if servers else None


class MaskedSetting(Exception):
    """The command would need a value the server did not write down (a secret)."""

    def __init__(self, name: str, server: RunningServer) -> None:
        super().__init__(
            f"the running server (pid {server.pid}) uses {name}="
            f"{server.environment.get(name, MASK)}, whose secret is not written down: "
            f"set {name} in this shell"
        )


def with_server_settings(
    environ: Mapping[str, str],
) -> tuple[dict[str, str], RunningServer | None]:
    """`environ` with every variable it leaves unset taken from the running server."""
    merged = dict(environ)
    server = find_server(environ)
    if server is None:
        return merged, None
    for name, value in server.environment.items():
        if (environ.get(name) or "").strip():
            continue
        if name in server.masked:
            if name in NEEDED:
                raise MaskedSetting(name, server)
            continue  # e.g. a model URL with a key in it: not what these commands act on
        merged[name] = value
    return merged, server
