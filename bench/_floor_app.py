"""The floor for bench_concurrency --floor: the cheapest turn-shaped endpoint the stack allows.

Flask, a marshmallow schema in and out, and one httpx call to the model (FLOOR_MODEL_URL), as
a turn does; no token check, no database, no Redis, no session file. Served by gunicorn with
the same worker class, workers and threads as `eonyx serve`, it says how far the stack itself
lets a turn come to the bare endpoint on this machine, and so how much of a turn's cost is
Eonyx's own work. Not part of the application.
"""

from __future__ import annotations

import os
from typing import Any

import httpx
import marshmallow as ma
from flask import Flask, request

app = Flask(__name__)
MODEL_URL = os.environ.get("FLOOR_MODEL_URL", "")
http = httpx.Client(timeout=30)


class TurnIn(ma.Schema):
    content = ma.fields.String(required=True)


class Message(ma.Schema):
    role = ma.fields.String()
    content = ma.fields.String()


@app.get("/healthz")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@app.post("/turn")
def turn() -> dict[str, Any]:
    said = TurnIn().load(request.get_json())
    body = {"model": "quick-model", "messages": [{"role": "user", "content": said["content"]}]}
    answer = http.post(f"{MODEL_URL}/chat/completions", json=body)
    answer.raise_for_status()
    return Message().dump(answer.json()["choices"][0]["message"])
