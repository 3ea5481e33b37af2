"""JSON for request bodies and encoded history: UTF-8 when it can be, exact always."""

from __future__ import annotations

import json

import pytest

from shared.core.encoding import encode_json


@pytest.mark.parametrize(
    "value",
    [
        {"content": "café ☕", "n": 1, "ok": True, "none": None},
        {"content": "half an emoji: \ud83d"},  # a lone surrogate: UTF-8 cannot hold it
        {"big": 2**70, "small": -(2**70)},  # past 64 bits, which orjson refuses
        [{"role": "user", "content": [{"type": "text", "text": "x"}]}],
    ],
    ids=["utf-8", "lone surrogate", "big integers", "nested"],
)
def test_encoded_json_reads_back_as_the_same_value(value: object) -> None:
    assert json.loads(encode_json(value)) == value


def test_text_is_written_as_utf_8_and_compact() -> None:
    assert encode_json({"a": "café", "b": [1, 2]}) == '{"a":"café","b":[1,2]}'.encode()
