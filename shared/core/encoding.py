"""JSON as bytes, fast (orjson) and never failing on what the standard library can write."""

from __future__ import annotations

import json
from typing import Any

import orjson


def encode_json(value: Any) -> bytes:
    """Compact JSON as UTF-8; with ASCII escapes instead for what orjson refuses (a lone
    surrogate, say, from a model's answer, or an integer past 64 bits)."""
    try:
        return orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError
        return json.dumps(value, separators=(",", ":")).encode()
