"""Helpers shared by the bench scripts: arguments, a throw-away workspace, data, statistics.

Not a test module and not imported by the application. Each bench script builds everything it
needs under a temporary directory (and, for PostgreSQL, a private schema) and removes it again.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

# The scripts run as `.venv/bin/python bench/bench_x.py`: make the project importable even
# when it is not installed in the interpreter running them.
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sqlalchemy import create_engine, text  # noqa: E402

from shared.accounts import people  # noqa: E402
from shared.core.clock import isoformat, utcnow  # noqa: E402
from shared.core.messages import new_message_id  # noqa: E402
from shared.db.database import Database  # noqa: E402
from shared.files.session_store import SessionStore  # noqa: E402

NS_PER_MS = 1_000_000


def base_parser(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--database-url",
        default=None,
        help="SQLAlchemy URL (default: a SQLite file in the temporary directory). A "
        "postgresql URL gets a private schema that is created and dropped by the script.",
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the temporary directory (prints its path)"
    )
    return parser


# --- workspace ---------------------------------------------------------------------------


def _with_search_path(url: str, schema: str) -> str:
    return url + ("&" if "?" in url else "?") + f"options=-csearch_path%3D{schema}"


@dataclass
class Workspace:
    root: Path
    data_dir: Path
    database_url: str
    backend: str  # "sqlite" or "postgresql"


@contextmanager
def workspace(database_url: str | None, *, keep: bool = False) -> Iterator[Workspace]:
    """A temporary DATA_DIR and a migrated, empty database; both removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix="eonyx-bench-"))
    data_dir = root / "data"
    data_dir.mkdir()
    schema: str | None = None
    admin_url = database_url
    if database_url is None:
        url = f"sqlite:///{root / 'eonyx.db'}"
    elif database_url.startswith("postgresql"):
        schema = f"eonyx_bench_{secrets.token_hex(4)}"
        engine = create_engine(database_url, isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            conn.execute(text(f"CREATE SCHEMA {schema}"))
        engine.dispose()
        url = _with_search_path(database_url, schema)
    else:
        url = database_url
    try:
        database = Database(url)
        database.migrate()
        database.dispose()
        backend = "postgresql" if url.startswith("postgresql") else url.split(":", 1)[0]
        yield Workspace(root, data_dir, url, backend)
    finally:
        if schema is not None and admin_url is not None:
            engine = create_engine(admin_url, isolation_level="AUTOCOMMIT")
            with engine.connect() as conn:
                conn.execute(text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
            engine.dispose()
        if keep:
            print(f"(kept {root})")
        else:
            shutil.rmtree(root, ignore_errors=True)


# --- data ----------------------------------------------------------------------------------

WORDS = (
    "deploy cache schema index rebuild memory token prompt summary folder redis postgres "
    "flask celery worker listing latency budget review draft plan outline recipe travel "
    "python sqlite fsync journal cursor page archive title model offering context window"
).split()


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


@dataclass
class DataReport:
    sessions: int
    seconds: float
    pinned: int
    archived: int
    temporary: int
    bytes_on_disk: int


def make_sessions(
    store: SessionStore, user_id: str, count: int, *, seed: int = 7, days: int = 60
) -> DataReport:
    """`count` sessions for one user, written through the real store (create + one append).

    Each gets 2-6 chat messages (one durable append), with times spread over the last `days`
    days so that "most recently updated" is not the creation order. About 1% are pinned, 3%
    archived (a meta record in the same append) and 0.5% temporary.
    """
    rng = random.Random(seed)
    now = utcnow()
    pinned = archived = temporary = 0
    started = time.perf_counter()
    for i in range(count):
        is_temp = rng.random() < 0.005
        state, _ = store.create(
            user_id, source="web", title=f"{sentence(rng, 4)[:-1]} #{i}", temporary=is_temp
        )
        temporary += is_temp
        moment = now - timedelta(seconds=rng.uniform(0, days * 86400))
        records: list[dict[str, Any]] = []
        for _ in range(rng.randint(1, 3)):
            for role in ("user", "assistant"):
                moment += timedelta(seconds=rng.uniform(1, 90))
                records.append(
                    {
                        "type": "message",
                        "id": new_message_id(),
                        "role": role,
                        "content": sentence(rng, rng.randint(8, 40 if role == "user" else 90)),
                        "created_at": isoformat(moment),
                    }
                )
        changes: dict[str, Any] = {}
        if rng.random() < 0.01:
            changes["pinned"] = True
            pinned += 1
        elif rng.random() < 0.03:
            changes["archived"] = True
            archived += 1
        if changes:
            moment += timedelta(seconds=5)
            records.append({"type": "meta", "at": isoformat(moment), "set": changes})
        store.append(user_id, state.id, records)
    seconds = time.perf_counter() - started
    size = sum(e.stat().st_size for e in os.scandir(store.sessions_dir(user_id)))
    return DataReport(count, seconds, pinned, archived, temporary, size)


def text_of_length(rng: random.Random, low: int, high: int) -> str:
    """Words of WORDS, cut to a length drawn from [low, high] characters."""
    target = rng.randint(low, high)
    parts: list[str] = []
    size = 0
    while size < target:
        part = sentence(rng, rng.randint(6, 18))
        parts.append(part)
        size += len(part) + 1
    return " ".join(parts)[:target]


def make_history(
    rng: random.Random, count: int, *, tool_every: int = 40, low: int = 200, high: int = 800
) -> list[dict[str, Any]]:
    """`count` message records of a realistic chat: user and assistant alternating, each
    `low`-`high` characters, and every `tool_every`-th turn an assistant tool call (one call,
    JSON arguments) and its tool result before the assistant's answer. Times one minute apart.
    """
    records: list[dict[str, Any]] = []
    moment = utcnow() - timedelta(minutes=count + 1)
    turn = 0

    def add(role: str, content: str | None, **extra: Any) -> None:
        nonlocal moment
        moment += timedelta(minutes=1)
        record = {
            "type": "message",
            "id": new_message_id(),
            "role": role,
            "content": content,
            "created_at": isoformat(moment),
        }
        records.append(record | extra)

    while len(records) < count:
        add("user", text_of_length(rng, low, high))
        turn += 1
        if turn % tool_every == 0 and count - len(records) >= 3:
            call_id = f"call_{new_message_id()}"
            arguments = {"query": sentence(rng, 5), "limit": rng.randint(1, 20)}
            call = {
                "id": call_id,
                "type": "function",
                "function": {"name": "search_notes", "arguments": json.dumps(arguments)},
            }
            add("assistant", None, tool_calls=[call])
            add("tool", text_of_length(rng, low, high), tool_call_id=call_id, name="search_notes")
        if len(records) < count:
            add("assistant", text_of_length(rng, low, high))
    return records


# --- statistics and output -----------------------------------------------------------------


def percentile(samples: list[int] | list[float], pct: float) -> float:
    """Nearest-rank percentile (p99 of 200 samples is the 198th smallest)."""
    ordered = sorted(samples)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return float(ordered[rank - 1])


def median(samples: list[int] | list[float]) -> float:
    return float(statistics.median(samples))


def ms(ns: float) -> str:
    return f"{ns / NS_PER_MS:.3f}"


def print_table(headers: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    line = "  ".join(
        h.ljust(widths[i]) if i == 0 else h.rjust(widths[i]) for i, h in enumerate(headers)
    )
    print(line)
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print(
            "  ".join(
                str(c).ljust(widths[i]) if i == 0 else str(c).rjust(widths[i])
                for i, c in enumerate(row)
            )
        )


def print_header(name: str, ws: Workspace, extra: str = "") -> None:
    print(f"== {name}  ({ws.backend}{', ' + extra if extra else ''})")
    print(f"   python {platform.python_version()}, {os.cpu_count()} cpu, data in {ws.data_dir}")


def verdict(checks: list[tuple[str, bool]]) -> int:
    """Print one line per target and the overall PASS/FAIL; returns the exit status."""
    for label, ok in checks:
        print(f"   target: {label}: {'met' if ok else 'MISSED'}")
    ok = all(passed for _, passed in checks)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def bench_account(rt: Any) -> tuple[people.Principal, str]:
    """A fresh user with a login token: (the principal, the bearer token)."""
    username = f"bench{secrets.token_hex(4)}"
    with rt.db.session() as db:
        user = people.create_user(db, username, "correct horse battery")
        row, token = people.login(db, username, "correct horse battery", timedelta(hours=1))
        return people.Principal(user.id, username, False, "web", row.id), token
