"""The floor for bench_concurrency --floor: the cheapest turn-shaped endpoint the stack allows.

Flask, a marshmallow schema in and out, and one httpx call to the model (FLOOR_MODEL_URL), as
a turn does; no token check, no database, no Redis. Served by gunicorn with the same worker
class (gevent) and workers as `eonyx serve`, it says how far the stack itself lets a turn come
to the bare endpoint on this machine, and so how much of a turn's cost is Eonyx's own work.

With FLOOR_SESSIONS_DIR set (bench_concurrency --floor durable) it also keeps the one promise
the spec makes about every turn, durable before the answer: the user's message and the model's
answer are each appended to the client's JSONL file and fsynced, as two records.

With FLOOR_REDIS_URL and FLOOR_INDEX_DB set too (--floor complete) it does, at its cheapest,
the rest of what the spec asks of every turn: the session's turns one at a time across
processes (a Redis lock: SET NX PX, then a compare-and-delete script), the whole history sent
to the model (each message encoded once and kept in memory, as Eonyx keeps it), and the index
brought up to date with the turn in one SQLite transaction (the session's row: message count
and time; its two messages into an FTS5 table for search). Nothing else: no token check, no
prompt, no tools, no torn-line repair. Not part of the application.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import marshmallow as ma
from flask import Flask, request

app = Flask(__name__)
MODEL_URL = os.environ.get("FLOOR_MODEL_URL", "")
http = httpx.Client(timeout=30)
SESSIONS_DIR = os.environ.get("FLOOR_SESSIONS_DIR", "")
REDIS_URL = os.environ.get("FLOOR_REDIS_URL", "")
INDEX_DB = os.environ.get("FLOOR_INDEX_DB", "")
RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end"
INDEX_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (id TEXT PRIMARY KEY, messages INTEGER, updated REAL);
CREATE VIRTUAL TABLE IF NOT EXISTS texts USING fts5(session_id UNINDEXED, body);
"""


class Complete:
    """The lock, the history and the index of --floor complete."""

    def __init__(self) -> None:
        import redis

        self.redis = redis.Redis.from_url(REDIS_URL)
        self.release = self.redis.register_script(RELEASE)
        self.histories: dict[str, tuple[list[bytes], int]] = {}  # and the bytes read
        self.local = threading.local()

    @contextmanager
    def locked(self, session: str) -> Iterator[None]:
        key, token = f"floor:lock:{session}", secrets.token_hex(8)
        while not self.redis.set(key, token, nx=True, px=30_000):
            time.sleep(0.005)
        try:
            yield
        finally:
            self.release(keys=[key], args=[token])

    def history(self, session: str) -> list[bytes]:
        """The session's messages, each encoded once: what this process read before, and
        what the file has gained since (the other processes' turns), read from where it
        stopped."""
        known, offset = self.histories.get(session, ([], 0))
        path = os.path.join(SESSIONS_DIR, f"{session}.jsonl")
        if os.path.exists(path) and os.path.getsize(path) > offset:
            with open(path, "rb") as file:
                file.seek(offset)
                added = file.read()
            offset += len(added)
            known += [
                json.dumps({"role": r["role"], "content": r["content"]}).encode()
                for r in map(json.loads, added.splitlines())
            ]
        self.histories[session] = (known, offset)
        return known

    def index(self, session: str, count: int, texts: list[str]) -> None:
        db = getattr(self.local, "db", None)
        if db is None:
            db = self.local.db = sqlite3.connect(INDEX_DB, timeout=30, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(INDEX_SCHEMA)
        db.execute("BEGIN IMMEDIATE")
        db.execute(
            "INSERT INTO sessions VALUES (?, ?, ?) ON CONFLICT (id) DO UPDATE "
            "SET messages = excluded.messages, updated = excluded.updated",
            (session, count, time.time()),
        )
        db.executemany("INSERT INTO texts VALUES (?, ?)", [(session, t) for t in texts])
        db.execute("COMMIT")


COMPLETE = Complete() if REDIS_URL and INDEX_DB and SESSIONS_DIR else None


def append_durably(session: str, record: dict[str, Any]) -> None:
    path = os.path.join(SESSIONS_DIR, f"{session}.jsonl")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, json.dumps(record).encode() + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)


class TurnIn(ma.Schema):
    content = ma.fields.String(required=True)
    session = ma.fields.Integer(required=True)


class Message(ma.Schema):
    role = ma.fields.String()
    content = ma.fields.String()


@app.get("/healthz")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@app.post("/turn")
def turn() -> dict[str, Any]:
    said = TurnIn().load(request.get_json())
    session = str(said["session"])
    if COMPLETE is not None:
        with COMPLETE.locked(session):
            return complete_turn(COMPLETE, session, said["content"])
    if SESSIONS_DIR:
        append_durably(session, {"type": "message", "role": "user", "content": said["content"]})
    body = {"model": "quick-model", "messages": [{"role": "user", "content": said["content"]}]}
    answer = http.post(f"{MODEL_URL}/chat/completions", json=body)
    answer.raise_for_status()
    message = answer.json()["choices"][0]["message"]
    if SESSIONS_DIR:
        append_durably(session, {"type": "message", **message})
    return Message().dump(message)


def complete_turn(complete: Complete, session: str, content: str) -> dict[str, Any]:
    asked = {"role": "user", "content": content}
    append_durably(session, {"type": "message", **asked})
    history = complete.history(session)  # the message just written included
    body = b'{"model": "quick-model", "messages": [' + b", ".join(history) + b"]}"
    headers = {"Content-Type": "application/json"}
    answer = http.post(f"{MODEL_URL}/chat/completions", content=body, headers=headers)
    answer.raise_for_status()
    message = answer.json()["choices"][0]["message"]
    append_durably(session, {"type": "message", **message})
    complete.index(session, len(history) + 1, [content, message["content"]])
    return Message().dump(message)
