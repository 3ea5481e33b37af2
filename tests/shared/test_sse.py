"""The one SSE codec (shared/core/sse.py): what it writes any reader keeps whole, and it reads
what servers send however the body is cut into chunks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from shared.core import sse
from shared.core.sse import Event

AWKWARD = [
    "line\u2028separator",
    "paragraph\u2029separator",
    "next\x85line",
    "crlf\r\nand lf\n and cr\r",
    "form\x0cfeed, vertical\x0btab, \x1c\x1d\x1e separators",
    "data: not a field\n\nevent: nor an event",
    ": not a comment",
    "émoji 🦊 and CJK 漢字",
    "",
]


def decode_all(body: bytes, size: int) -> list[Event]:
    decoder = sse.Decoder()
    events: list[Event] = []
    for start in range(0, len(body), size):
        events.extend(decoder.feed(body[start : start + size]))
    return events + decoder.end()


@pytest.mark.parametrize("text", AWKWARD)
def test_awkward_text_survives_a_round_trip_and_any_line_splitting_reader(text: str) -> None:
    data = {"text": text, "nested": [text]}
    encoded = sse.encode(data, "token")
    assert encoded.count("\n") == 3  # event line, data line, blank line: nothing else breaks
    # What httpx's iter_lines and Python's splitlines see: one event, its JSON whole.
    lines = encoded.splitlines()
    assert lines == [lines[0], lines[1], ""]
    assert lines[0] == "event: token"
    assert json.loads(lines[1].removeprefix("data: ")) == data
    [event] = sse.iter_events([encoded.encode()])
    assert event == Event("token", event.data)
    assert event.json() == data


def test_an_httpx_stream_read_with_the_decoder_keeps_u2028_whole() -> None:
    body = sse.encode({"text": "a\u2028b"}, "token") + sse.encode({"ok": True}, "done")
    response = httpx.Response(200, content=body.encode())
    events = list(sse.iter_events(response.iter_bytes()))
    assert [(e.name, e.json()) for e in events] == [
        ("token", {"text": "a\u2028b"}),
        ("done", {"ok": True}),
    ]


def test_text_framing_splits_lines_into_data_lines() -> None:
    assert sse.frame("[DONE]") == "data: [DONE]\n\n"
    [event] = sse.iter_events([sse.frame("one\ntwo\r\nthree", "note").encode()])
    assert event == Event("note", "one\ntwo\nthree")


def test_crlf_comments_multiline_data_other_fields_and_unnamed_events() -> None:
    body = (
        b"\xef\xbb\xbf: keep-alive\r\n"
        b"retry: 1000\r\nid: 7\r\n"
        b"data: first\r\ndata:second\r\n\r\n"
        b'event: named\ndata: {"a": 1}\n\n'
        b"event: no data\n\n"  # no data: not an event
        b"data\n\n"  # a field without a colon: empty data
    )
    events = list(sse.iter_events([body]))
    assert events == [
        Event("message", "first\nsecond"),
        Event("named", '{"a": 1}'),
        Event("message", ""),
    ]


def test_a_body_ended_without_its_blank_line_still_gives_its_event() -> None:
    assert list(sse.iter_events([b"data: 1\n\ndata: [DONE]"])) == [
        Event("message", "1"),
        Event("message", "[DONE]"),
    ]
    assert list(sse.iter_events([b"data: last\r\n"])) == [Event("message", "last")]
    assert list(sse.iter_events([b""])) == []


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 64])
def test_chunks_cut_anywhere_inside_utf8_characters_and_crlf(size: int) -> None:
    texts = ["漢字🦊é", "a\u2028b\u2029c\x85d", "plain"]
    body = "".join(sse.encode({"text": t}, "token") for t in texts).replace("\n", "\r\n")
    raw = body.encode()
    events = decode_all(raw, size)
    assert [e.json()["text"] for e in events] == texts
    assert {e.name for e in events} == {"token"}


def test_a_decoder_fed_byte_by_byte_returns_each_event_once_complete() -> None:
    decoder = sse.Decoder()
    body = sse.encode({"n": 1}).encode()
    got = [decoder.feed(body[i : i + 1]) for i in range(len(body))]
    assert all(found == [] for found in got[:-1])
    assert got[-1] == [Event("message", '{"n":1}')]
    assert decoder.end() == []


VECTORS = json.loads((Path(__file__).parents[1] / "sse_vectors.json").read_text("utf-8"))["vectors"]


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_the_shared_vectors_decode_as_the_web_client_decodes_them(vector: dict[str, Any]) -> None:
    """tests/sse_vectors.json, which the web client's decoder meets too (tests/web)."""
    expected = [Event(name, data) for name, data in vector.get("python", vector)["events"]]
    decoder = sse.Decoder()
    events = [e for chunk in vector["chunks"] for e in decoder.feed(chunk.encode())]
    assert events + decoder.end() == expected
    body = "".join(vector["chunks"]).encode()
    for size in (1, 2, 3, 5, 7):
        assert decode_all(body, size) == expected
