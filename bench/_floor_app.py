"""The floor for bench_concurrency --floor: the cheapest turn-shaped endpoint the stack allows.

Flask, a marshmallow schema in and out, and one httpx call to the model (FLOOR_MODEL_URL), as
a turn does; no token check, no database, no Redis. Served by gunicorn with the same worker
class, workers and threads as `eonyx serve`, it says how far the stack itself lets a turn come
to the bare endpoint on this machine, and so how much of a turn's cost is Eonyx's own work.

With FLOOR_SESSIONS_DIR set (bench_concurrency --floor durable) it also keeps the one promise
the spec makes about every turn, durable before the answer: the user's message and the model's
answer are each appended to the client's JSONL file and fsynced, as two records. Nothing else:
no lock, no index, no torn-line repair. Not part of the application.
"""

from __future__ import annotations

import json
import os
from typing import Any

import httpx
import marshmallow as ma
from flask import Flask, request

app = Flask(__name__)
MODEL_URL = os.environ.get("FLOOR_MODEL_URL", "")
http = httpx.Client(timeout=30)
SESSIONS_DIR = os.environ.get("FLOOR_SESSIONS_DIR", "")


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
    if SESSIONS_DIR:
        append_durably(session, {"type": "message", "role": "user", "content": said["content"]})
    body = {"model": "quick-model", "messages": [{"role": "user", "content": said["content"]}]}
    answer = http.post(f"{MODEL_URL}/chat/completions", json=body)
    answer.raise_for_status()
    message = answer.json()["choices"][0]["message"]
    if SESSIONS_DIR:
        append_durably(session, {"type": "message", **message})
    return Message().dump(message)
