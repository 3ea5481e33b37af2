"""JSON in and out, in one place.

Out: JSON as bytes, fast (orjson) and never failing on what the standard library can write.

In: `decode_json` is how Eonyx reads JSON that someone else wrote (a request body, a Teams
activity, a bundle's manifest and records, a listing cursor, a tool call's arguments). The
standard library's parser is lenient where a server must not be, and fails in ways that are
not `JSONDecodeError`:
- it recurses once per nesting level, so a deep text raises RecursionError (or worse): depth
  is counted first, without recursing (`json_too_deep`);
- an integer of more than `sys.get_int_max_str_digits()` digits (4,300) raises a plain
  ValueError; a float such as `1e999` becomes infinity, and `NaN`, `Infinity` are taken
  although JSON has no such numbers.
Each of these is refused with InvalidJSON (a 400 `invalid_json`), saying what was wrong.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable
from typing import Any

import orjson

from shared.core.errors import InvalidInput

MAX_JSON_DEPTH = 64  # no request, activity, bundle record or cursor nests more than a few levels
# A JSON string, or an unterminated one up to the end (so a search never restarts inside one).
_STRINGS = re.compile(rb'"(?:[^"\\]++|\\.)*+(?:"|\Z)', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


class InvalidJSON(InvalidInput):
    """JSON that Eonyx will not read: malformed, too deep, or with a number it cannot hold."""

    code = "invalid_json"


class _BadNumber(ValueError):
    """A number JSON cannot carry, found while parsing (raised from the parser's hooks)."""


def encode_json(
    value: Any, *, default: Callable[[Any], Any] | None = None, sort_keys: bool = False
) -> bytes:
    """Compact JSON as UTF-8; with ASCII escapes instead for what orjson refuses (a lone
    surrogate, say, from a model's answer, or an integer past 64 bits). With `default`,
    dates, datetimes and dataclasses go to it too, as they would with the json module."""
    options = orjson.OPT_SORT_KEYS if sort_keys else 0
    if default is not None:
        options |= orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
    try:
        return orjson.dumps(value, default=default, option=options)
    except TypeError:  # orjson.JSONEncodeError
        return json.dumps(
            value, default=default, sort_keys=sort_keys, separators=(",", ":")
        ).encode()


def json_too_deep(data: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether a JSON text nests arrays and objects more than `limit` levels deep. Counting
    the brackets is enough in the common case; otherwise strings are cut out and the
    brackets alone are walked, all at C speed but the last loop."""
    if data.count(b"[") + data.count(b"{") <= limit:
        return False
    depth = 0
    for byte in _STRINGS.sub(b"", data).translate(None, _NOT_BRACKETS):
        depth += 1 if byte in b"[{" else -1
        if depth > limit:
            return True
    return False


def _constant(name: str) -> Any:
    raise _BadNumber(f"{name} is not a JSON number")


def _float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        shown = text if len(text) <= 20 else text[:20] + "..."
        raise _BadNumber(f"the number {shown} is too large")
    return value


def decode_json(
    data: bytes | str, *, what: str = "the JSON body", depth: int = MAX_JSON_DEPTH
) -> Any:
    """`data` parsed, or InvalidJSON naming `what` and the problem. An empty text is
    malformed like any other: a caller for whom no body means something checks first."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if json_too_deep(raw, depth):
        raise InvalidJSON(f"{what} is nested more than {depth} levels deep")
    try:
        text = data if isinstance(data, str) else data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidJSON(f"{what} is not valid JSON (not UTF-8: {exc.reason})") from None
    try:
        return json.loads(text, parse_constant=_constant, parse_float=_float)
    except (json.JSONDecodeError, _BadNumber) as exc:
        raise InvalidJSON(f"{what} is not valid JSON ({exc})") from None
    except ValueError:  # int(): the only other ValueError the parser lets out
        limit = sys.get_int_max_str_digits()
        raise InvalidJSON(f"{what} holds an integer of more than {limit} digits") from None
    except RecursionError:  # a depth under the limit on a stack already deep: never expected
        raise InvalidJSON(f"{what} is nested too deeply") from None
